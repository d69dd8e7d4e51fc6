"""Property tests: every parser either succeeds or raises a CollkitError subclass, whatever it
is given (random text and bytes, mutated valid inputs, huge numbers, unicode). A mutated
schedule that still parses must re-export to a text that parses to the same schedule.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import collkit
from collkit import _core, io
from collkit.collectives import COLLECTIVES
from collkit.errors import CollkitError
from collkit.sim import Distribution, Topology, parse_distribution, parse_topology
from collkit.sim.topology import KINDS as TOPOLOGY_KINDS

# COLLKIT_PROPERTY_EXAMPLES=5000 for a longer hunt than the suite's default.
SETTINGS = settings(
    max_examples=int(os.environ.get("COLLKIT_PROPERTY_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

RD5 = collkit.generate("allreduce:rd", P=5, count=3)
VALID = {
    "text": io.to_text(RD5),
    "goal": io.to_goal(RD5),
    "json": io.to_json(collkit.generate("allreduce:rd", P=3, count=2)),
}
# Several CPUs and NICs, and a rank with wildcard receives (one tag), as LogGOPSim writes them.
WILDCARD_GOAL = """num_ranks 3
rank 0 {
a: recv 8b from -1 tag 1 cpu 1
b: recv 8b from 2 tag -1 nic 2
c: calc 50 cpu 3
c requires a
}
rank 1 { s: send 8b to 0 tag 1 cpu 2 nic 1
}
rank 2 { s: send 8b to 0 tag 1
}
"""

PLAIN_GOAL = """num_ranks 2
rank 0 {
l1: send 16b to 1 tag 5
l2: calc 10
l2 requires l1
l3: recv 4b from 1 tag 2
l3 irequires l2
}
rank 1 {
a: recv 16b from 0 tag 5
b: send 4b to 0 tag 2
b requires a
}
"""

PARSERS: dict[str, Callable[[Any], object]] = {
    "text": io.from_text,
    "goal": io.from_goal,
    "json": io.from_json,
    "name": collkit.parse_name,
    "algorithm": collkit.Algorithm,
    "size": collkit.parse_size,
}


def succeeds_or_collkit_error(parse: Callable[[Any], object], data: Any) -> object | None:
    """The parser's result, or None if it raised a CollkitError; anything else fails."""
    try:
        return parse(data)
    except CollkitError as e:
        assert str(e), "a collkit error must say what is wrong"
        return None


# Text without lone surrogates (a Python str that cannot be UTF-8 is a different problem; the
# schedule parsers take it anyway, see test_lone_surrogates_are_format_errors).
any_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)
tokens = st.sampled_from(
    [
        "rank",
        "send",
        "recv",
        "reduce",
        "copy",
        "compute",
        "sleep",
        "after",
        "stage",
        "scratch",
        "in",
        "out",
        "s0",
        "s250",
        "[",
        "]",
        ":",
        "=",
        "+",
        ",",
        "to",
        "from",
        "ns",
        "b",
        "tag",
        "{",
        "}",
        "num_ranks",
        "calc",
        "requires",
        "irequires",
        "cpu",
        "nic",
        "//",
        "/*",
        "*/",
        "#",
        "\n",
        " ",
        "\t",
        "\r",
        "-1",
        "0",
        "1",
        "7",
        "65536",
        "2147483648",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775809",
        "1" * 40,
        '"',
        "\\x",
        "é",
        "∑",
        "\x00",
        "allreduce",
        "collective",
        "P",
        "count",
        "elem_size",
        "root",
        "algorithm",
        "(",
        ")",
        "KiB",
        "MB",
        ".",
        "e9",
    ]
)
token_soup = st.lists(tokens, max_size=60).map("".join)


@pytest.mark.parametrize("name", sorted(PARSERS))
@SETTINGS
@given(data=st.one_of(any_text, token_soup))
def test_random_text(name: str, data: str) -> None:
    succeeds_or_collkit_error(PARSERS[name], data)


@pytest.mark.parametrize("name", ["text", "goal", "json"])
@SETTINGS
@given(data=st.binary(max_size=300))
def test_random_bytes(name: str, data: bytes) -> None:
    succeeds_or_collkit_error(PARSERS[name], data)


@pytest.mark.parametrize("name", ["text", "goal", "json"])
def test_lone_surrogates_are_format_errors(name: str) -> None:
    with pytest.raises(collkit.ScheduleFormatError):
        PARSERS[name]("collective \ud800")


# ---- mutations of valid inputs ----------------------------------------------------------------


@st.composite
def mutated_lines(draw: st.DrawFn, text: str) -> str:
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "replace_token", "edit_chars"]))
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "replace_token":
            words = lines[i].split(" ")
            k = draw(st.integers(0, len(words) - 1))
            replacement = st.one_of(tokens, st.integers().map(str), any_text.map(lambda t: t[:5]))
            words[k] = draw(replacement)
            lines[i] = " ".join(words)
        else:
            line = lines[i]
            c = draw(st.integers(0, len(line)))
            kind = draw(st.sampled_from(["delete", "insert", "replace"]))
            ch = draw(
                st.one_of(
                    st.characters(blacklist_categories=("Cs",)),
                    st.sampled_from(list("0123456789:[]-+,#/ \t")),
                )
            )
            if kind == "delete":
                lines[i] = line[:c] + line[c + 1 :]
            elif kind == "insert":
                lines[i] = line[:c] + ch + line[c:]
            else:
                lines[i] = line[:c] + ch + line[c + 1 :]
    return "\n".join(lines) + "\n"


def check_reexport(s: collkit.Schedule) -> None:
    """Whatever parsed must survive every format exactly."""
    for fmt in ("text", "json", "goal"):
        assert io.loads(io.dumps(s, fmt), fmt) == s


@SETTINGS
@given(
    text=st.one_of(
        mutated_lines(VALID["text"]), mutated_lines(io.to_text(io.from_goal(WILDCARD_GOAL)))
    )
)
def test_mutated_text(text: str) -> None:
    s = succeeds_or_collkit_error(io.from_text, text)
    if s is not None:
        assert isinstance(s, collkit.Schedule)
        check_reexport(s)


@SETTINGS
@given(
    text=st.one_of(
        mutated_lines(VALID["goal"]), mutated_lines(PLAIN_GOAL), mutated_lines(WILDCARD_GOAL)
    )
)
def test_mutated_goal(text: str) -> None:
    s = succeeds_or_collkit_error(io.from_goal, text)
    if s is not None:
        assert isinstance(s, collkit.Schedule)
        check_reexport(s)


@SETTINGS
@given(text=mutated_lines(VALID["json"]))
def test_mutated_json_text(text: str) -> None:
    s = succeeds_or_collkit_error(io.from_json, text)
    if s is not None:
        assert isinstance(s, collkit.Schedule)
        check_reexport(s)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | any_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=12,
)


@st.composite
def mutated_json(draw: st.DrawFn) -> str:
    doc = json.loads(VALID["json"])
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["top", "ops"]))
        target = doc if where == "top" or not isinstance(doc.get("ops"), dict) else doc["ops"]
        key = draw(st.sampled_from([*sorted(target), "extra"]))
        action = draw(st.sampled_from(["delete", "replace", "element"]))
        if action == "delete":
            target.pop(key, None)
        elif action == "element" and isinstance(target.get(key), list) and target[key]:
            i = draw(st.integers(0, len(target[key]) - 1))
            target[key][i] = draw(st.one_of(st.integers(-(2**70), 2**70), json_values))
        else:
            target[key] = draw(json_values)
    return json.dumps(doc, allow_nan=True)


@SETTINGS
@given(text=mutated_json())
def test_mutated_json_structure(text: str) -> None:
    s = succeeds_or_collkit_error(io.from_json, text)
    if s is not None:
        check_reexport(s)


def _streamed(text: str) -> collkit.Schedule | None:
    """The simulator's streaming JSON reader over the same text, in a file."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "s.json"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        core = succeeds_or_collkit_error(_core.load_json_file, str(path))
    return None if core is None else collkit.Schedule(cast(_core.Schedule, core))


@SETTINGS
@given(text=st.one_of(mutated_json(), mutated_lines(VALID["json"])))
def test_streaming_json_reader_agrees(text: str) -> None:
    # Both readers end in a schedule or a CollkitError; where both read one, it is the same.
    a = succeeds_or_collkit_error(io.from_json, text)
    b = _streamed(text)
    if a is not None and b is not None:
        assert a == b


# ---- numbers ----------------------------------------------------------------------------------

huge = st.one_of(
    st.integers(-(2**80), 2**80),
    st.sampled_from([2**31, 2**31 - 1, 2**32, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64]),
)


@SETTINGS
@given(
    P=huge,
    count=huge,
    elem=huge,
    root=huge,
    peer=huge,
    off=huge,
    length=huge,
    stage=huge,
    dep=huge,
    ns=huge,
)
def test_numbers_in_text(
    P: int,
    count: int,
    elem: int,
    root: int,
    peer: int,
    off: int,
    length: int,
    stage: int,
    dep: int,
    ns: int,
) -> None:
    text = (
        f"collective allreduce\nP {P}\ncount {count}\nelem_size {elem}\nroot {root}\n"
        f"rank 0 scratch {length}\n  0: send s0[{off}:{length}] to {peer}  after {dep}"
        f"  stage {stage}\n  1: compute {ns}ns\n"
    )
    s = succeeds_or_collkit_error(io.from_text, text)
    if s is not None:
        check_reexport(s)


# The one limit of a buffer (and of any region of one): 2^48 elements, fewer than 2^63 bytes.
LIMIT_EDGES = [0, 1, 2**48 - 1, 2**48, 2**48 + 1, 2**60, 2**62, 2**63 - 1, 2**63, 2**64]
lengths = st.one_of(st.integers(0, 2**65), st.sampled_from(LIMIT_EDGES))
elem_sizes = st.one_of(
    st.integers(1, 2**31 - 1), st.sampled_from([1, 8, 32767, 32768, 32769, 2**20, 2**31 - 1])
)


def _fits(n: int, elem: int) -> bool:
    return 0 <= n <= 2**48 and n * elem < 2**63


@SETTINGS
@given(length=lengths, scratch=lengths, count=lengths, elem=elem_sizes)
# 2^63 - 8 bytes: the largest message that fits, whose double rounds to 2^63 (unchecked: -2^63)
@example(length=(2**63 - 1) // 32769, scratch=(2**63 - 1) // 32769, count=1, elem=32769)
def test_region_sizes_fit_a_buffer_or_are_refused(
    length: int, scratch: int, count: int, elem: int
) -> None:
    # unchecked: `send in[0:2^60]` was read, and the simulator printed "bytes sent -2^63"
    text = (
        f"collective allreduce\nP 2\ncount {count}\nelem_size {elem}\n"
        f"rank 0 scratch {scratch}\n  0: send s0[0:{length}] to 1\n"
        f"rank 1\n  0: recv out[0:{length}] from 0\n"
    )
    fits = _fits(length, elem) and _fits(scratch, elem) and _fits(count, elem)
    if not fits:  # the limit named (or, past 2^63, the number itself refused)
        with pytest.raises(
            collkit.ScheduleFormatError, match=r"at most 2\^48 elements|>= 0|64-bit"
        ):
            io.from_text(text)
        return
    s = io.from_text(text)
    check_reexport(s)
    res = collkit.simulate(s, model="postal", alpha="1us")
    # never wrapped (the engine sums in doubles: exact to 2^53, then within a rounding)
    assert res.bytes_sent >= 0 and abs(res.bytes_sent - length * elem) <= length * elem / 2**52


@SETTINGS
@given(n=huge, unit=st.sampled_from(["", "B", "K", "KiB", "MB", "GiB", "TiB", "e3", ".5KiB"]))
def test_numbers_in_sizes(n: int, unit: str) -> None:
    v = succeeds_or_collkit_error(collkit.parse_size, f"{n}{unit}")
    if v is not None:
        assert isinstance(v, int) and 0 <= v < 2**63


@SETTINGS
@given(bytes_=huge, peer=huge, tag=huge, ns=huge, P=huge)
def test_numbers_in_goal(bytes_: int, peer: int, tag: int, ns: int, P: int) -> None:
    assume(P < 2**20)  # a valid num_ranks needs that many rank blocks
    blocks = "".join(f"rank {r} {{\n}}\n" for r in range(1, max(1, min(P, 4))))
    text = (
        f"num_ranks {P}\nrank 0 {{\nl1: send {bytes_}b to {peer} tag {tag}\n"
        f"l2: calc {ns}\nl3: recv {bytes_}b from {peer} tag {tag}\n}}\n{blocks}"
    )
    s = succeeds_or_collkit_error(io.from_goal, text)
    if s is not None:
        check_reexport(s)


@SETTINGS
@given(args=st.lists(st.one_of(tokens, huge.map(str), any_text.map(lambda t: t[:6])), max_size=6))
def test_algorithm_names(args: list[str]) -> None:
    name = "allreduce:rd(" + ",".join(args) + ")"
    succeeds_or_collkit_error(collkit.parse_name, name)
    succeeds_or_collkit_error(collkit.Algorithm, name)


# Names whose parameters are names (allreduce:hier(intra=reduce:binomial, ...)): well-formed ones
# built recursively, then mutated by a character; hostile pieces mixed in.
name_pieces = st.sampled_from(
    [
        "allreduce:rd",
        "allreduce:ring",
        "allreduce:rm(a4)",
        "allreduce:rabenseifner",
        "reduce:binomial",
        "reduce:knomial(k=3)",
        "bcast:binomial",
        "bcast:pipeline(seg=1KiB)",
        "alltoall:bruck(r=3)",
        "barrier:tree",
        "allreduce:nope",
        "nope:rd",
        "4",
        "a8",
    ]
)
nested_names = st.recursive(
    name_pieces,
    lambda inner: st.tuples(
        st.sampled_from(["intra", "inter", "bcast", "r", "k", ""]),
        inner,
        st.sampled_from(["intra", "inter", "bcast"]),
        inner,
    ).map(lambda t: f"allreduce:hier({t[0]}{'=' if t[0] else ''}{t[1]},{t[2]}={t[3]})"),
    max_leaves=12,
)


@st.composite
def mutated_names(draw: st.DrawFn) -> str:
    name = draw(nested_names)
    for _ in range(draw(st.integers(0, 3))):
        c = draw(st.integers(0, len(name)))
        ch = draw(st.sampled_from([*"():,= \t", "allreduce:", "é", "\x00", ""]))
        name = name[:c] + ch + name[c + draw(st.integers(0, 1)) :]
    return name


@SETTINGS
@given(name=mutated_names())
def test_nested_algorithm_names(name: str) -> None:
    """Anything parses or is a CollkitError with a caret; what resolves has a canonical name
    that resolves to the same algorithm and keeps its parts."""
    succeeds_or_collkit_error(collkit.parse_name, name)
    try:
        a = collkit.Algorithm(name)
    except CollkitError as e:
        assert "^" in str(e) or "name" in str(e), str(e)
        return
    again = collkit.Algorithm(a.canonical)
    assert again == a and again.params == a.params


@pytest.mark.parametrize("name", ["name", "algorithm", "size"])
def test_lone_surrogates_in_names(name: str) -> None:
    succeeds_or_collkit_error(PARSERS[name], "allreduce:\ud800")


# ---- random valid schedules -------------------------------------------------------------------

ALGORITHMS = ["x", '""', '"a b"', '"\u00e9\\x01 # not a comment"']
KINDS = ["send", "recv", "reduce1", "reduce2", "copy", "compute", "sleep"]


@st.composite
def region(draw: st.DrawFn, bufs: list[str], length: int) -> str:
    start = draw(st.integers(-(2**63), 2**63 - 1 - length))
    return f"{draw(st.sampled_from(bufs))}[{start}:{start + length}]"


@st.composite
def op_body(draw: st.DrawFn, P: int, bufs: list[str], most: int) -> str:
    """An op; a region holds at most `most` elements (a buffer's limit, 2^48 and 2^63 B)."""
    kind = draw(st.sampled_from(KINDS))
    if kind in ("compute", "sleep"):
        return f"{kind} {draw(st.integers(0, 2**63 - 1))}ns"
    length = draw(st.integers(0, most))
    dst = draw(region(bufs, length))
    if kind in ("send", "recv"):
        word = "to" if kind == "send" else "from"
        return f"{kind} {dst} {word} {draw(st.integers(0, P - 1))}"
    src = draw(region(bufs, length))
    name = dst.split("[")[0]
    if kind == "copy":
        return f"copy {dst} = {src}"
    return (
        f"reduce {dst} = {src} + {name}" if kind == "reduce1" else f"reduce {dst} = {name} + {src}"
    )


@st.composite
def schedule_texts(draw: st.DrawFn) -> str:
    """A random schedule that the text parser must accept: every field anywhere in its range."""
    P = draw(st.integers(1, 4))
    elem = draw(st.integers(1, 2**31 - 1))
    most = min(2**48, (2**63 - 1) // elem)  # elements a buffer may hold (buffer_fits)
    head = [
        f"collective {draw(st.sampled_from(COLLECTIVES))}",
        f"algorithm {draw(st.sampled_from(ALGORITHMS))}",
        f"P {P}",
        f"count {draw(st.integers(0, most))}",
        f"elem_size {elem}",
        f"root {draw(st.integers(0, P - 1))}",
    ]
    lines = ["# collkit schedule v1", *draw(st.permutations(head))]
    for r in range(P):
        scratch = draw(st.lists(st.integers(0, most), max_size=3))
        lines.append(f"rank {r}" + "".join(f" {e}" for e in ["scratch", *scratch] if scratch))
        bufs = ["in", "out"] + [f"s{k}" for k in range(len(scratch))]
        n = draw(st.integers(0, 6))
        for i in range(n):
            line = f"  {i}: {draw(op_body(P, bufs, most))}"
            deps = draw(st.lists(st.integers(0, n - 1), max_size=3))
            if deps:
                line += "  after " + ",".join(map(str, deps))
            line += f"  stage {draw(st.integers(0, 65535))}"
            lines.append(line)
    return "\n".join(lines) + "\n"


@SETTINGS
@given(text=schedule_texts())
def test_random_valid_schedules_round_trip(text: str) -> None:
    s = io.from_text(text)
    check_reexport(s)


# ---- the simulator's specs: kind(args), read by the core's grammar (name.cpp's parse_call) ----

_WORDS = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
_VALUES = st.from_regex(r"[A-Za-z0-9_.+/~-]{1,12}", fullmatch=True)


@SETTINGS
@given(
    kind=_WORDS,
    positional=st.lists(_VALUES, max_size=3),
    keywords=st.dictionaries(_WORDS, _VALUES, max_size=3),
    ws=st.sampled_from(["", " ", "\t"]),
)
def test_specs_parse_to_what_they_say(
    kind: str, positional: list[str], keywords: dict[str, str], ws: str
) -> None:
    args = [*positional, *(f"{k}{ws}={ws}{v}" for k, v in keywords.items())]
    text = f"{kind}({ws}{(ws + ',' + ws).join(args)}{ws})" if args else kind
    got_kind, got = _core.parse_call(text)
    assert got_kind == kind
    assert got == [("", v) for v in positional] + list(keywords.items())


@SETTINGS
@given(st.text(max_size=60))
def test_any_text_is_a_spec_or_a_clear_error(text: str) -> None:
    got = succeeds_or_collkit_error(_core.parse_call, text)
    if got is not None:
        kind, args = cast(tuple[str, list[tuple[str, str]]], got)
        assert kind[0].isalpha() or kind[0] == "_"
        assert all(v for _, v in args)
    # What the simulator makes of it: a distribution, a topology, or a clear error.
    noise = succeeds_or_collkit_error(parse_distribution, text)
    assert noise is None or isinstance(noise, Distribution)
    topology = succeeds_or_collkit_error(parse_topology, text)
    assert topology is None or cast(Topology, topology).kind in TOPOLOGY_KINDS


# ---- count vectors: the --counts forms and the header's counts / displacement lines ----------

COUNT_FORMS = st.one_of(
    st.text(max_size=40),
    st.from_regex(
        r"(equal|random|skewed|zeros-but-one|other)(\([0-9, x-]{0,20}\))?", fullmatch=True
    ),
    st.lists(st.integers(-3, 2**50), max_size=8).map(lambda v: ",".join(map(str, v))),
)


@SETTINGS
@given(COUNT_FORMS, st.integers(1, 40), st.booleans())
def test_count_forms_draw_a_vector_or_say_why(text: str, P: int, pairs: bool) -> None:
    from collkit.counts import MAX_ENTRY, parse_counts

    try:
        v = parse_counts(text).vector(P, per_pair=pairs)
    except CollkitError as e:
        assert str(e).startswith("--counts") or "P =" in str(e)
        return
    assert len(v) == (P * P if pairs else P)
    assert all(isinstance(x, int) and 0 <= x <= MAX_ENTRY for x in v)


COUNT_LINE = st.sampled_from(["counts", "in_displs", "out_displs"])


@SETTINGS
@given(
    st.sampled_from(["allgatherv", "alltoallv", "gatherv", "scatterv", "reduce_scatter", "scan"]),
    COUNT_LINE,
    st.lists(st.one_of(st.integers(-2, 9), st.just(2**49), st.just("x")), max_size=10),
)
def test_count_lines_parse_or_are_format_errors(coll: str, key: str, entries: list[Any]) -> None:
    line = f"{key} " + " ".join(map(str, entries))
    text = f"collective {coll}\nP 3\ncount 9\n{line}\n" + "".join(f"rank {r}\n" for r in range(3))
    try:
        s = io.from_text(text)
    except collkit.ScheduleFormatError:
        return
    # What parsed writes back and reads back the same.
    assert io.from_text(io.to_text(s)) == s
    assert len(s.counts) in (0, 3, 9) and len(s.in_displs) in (0, 3, 9)
