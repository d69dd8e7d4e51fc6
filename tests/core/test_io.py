"""Schedule formats: exact round trips, golden files, parser errors, GOAL import, JSON, CLI.

Golden files live in tests/golden/. After an intended change of a format, regenerate them with
    COLLKIT_UPDATE_GOLDEN=1 pytest tests/core/test_io.py -k golden
and review the diff before committing it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

import collkit
from collkit import io
from collkit.errors import InvalidArgumentError, ScheduleFormatError
from collkit.sim import simulate_file
from conftest import SMALL_P

GOLDEN = Path(__file__).parents[1] / "golden"
PS = [*SMALL_P, 64]
COUNTS = [0, 1, 7]
FORMATS = ["text", "json", "goal"]


def rd(P: int, count: int = 4, elem_size: int = 8) -> collkit.Schedule:
    return collkit.generate("allreduce:rd", P=P, count=count, elem_size=elem_size)


# A hand-written schedule that uses every op kind, both reduce sides (including the case where
# source and destination regions are the same), stages, forward dependencies, several scratch
# buffers and an algorithm string that needs quoting.
ALL_KINDS = """\
# collkit schedule v1
collective reduce
algorithm "weird name # with \\"quotes\\", tabs\\x09 and unicode \u00e9\u2211"
P 2
count 6
elem_size 4
root 1
rank 0 scratch 6 0 2
  0: copy s0[0:6] = in[0:6]
  1: send s0[0:6] to 1  after 0
  2: compute 500ns
  3: sleep 0ns  after 2  stage 3
  4: reduce out[0:2] = out[0:2] + out  stage 65535
  5: reduce out[0:2] = out + out[0:2]  after 5
  6: reduce s2[0:2] = s0[4:6] + s2  after 7,0,0
  7: copy s1[0:0] = in[6:6]
rank 1
  0: recv out[0:6] from 0
  1: reduce out[0:6] = out + in[0:6]  after 0  stage 1
"""


# ---- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("P", PS)
@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_rd_round_trips_exactly(P: int, count: int, fmt: str) -> None:
    s = rd(P, count)
    text = io.dumps(s, fmt)
    back = io.loads(text, fmt)
    assert back == s
    assert io.loads(text) == s  # the sniffer finds the format too
    # Writing again gives the same bytes: the formats are canonical.
    assert io.dumps(back, fmt) == text


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_op_kind_round_trips(fmt: str) -> None:
    s = io.from_text(ALL_KINDS)
    assert s.algorithm.startswith('weird name # with "quotes", tabs\t')
    assert s.collective == "reduce" and s.root == 1 and s.elem_size == 4
    assert io.loads(io.dumps(s, fmt), fmt) == s


def test_text_is_canonical_for_hand_written_input() -> None:
    s = io.from_text(ALL_KINDS)
    again = io.to_text(s)
    assert io.from_text(again) == s
    # Comments and spacing go; everything else reads the same.
    assert again.splitlines()[8] == "  0: copy s0[0:6] = in[0:6]"


def test_reduce_sides_are_kept_apart() -> None:
    s = io.from_text(ALL_KINDS)
    a = s.rank(0).arrays()
    # op 4: "out[0:2] + out" is src first (0); op 5: "out + out[0:2]" is dst first (1).
    assert a["side"][4] == 0 and a["side"][5] == 1
    assert a["kind"][4] == a["kind"][5] == 2


def test_equality_notices_a_difference() -> None:
    # The round-trip tests are only as good as ==: it must see a one-field change.
    t = io.to_text(rd(5, 3))
    changed = t.replace("  stage 1\n", "  stage 2\n", 1)
    assert changed != t
    assert io.from_text(changed) != io.from_text(t)


@pytest.mark.parametrize("fmt", FORMATS)
def test_save_and_load_by_extension_and_by_content(tmp_path: Path, fmt: str) -> None:
    s = rd(7, 5)
    ext = {"text": ".txt", "json": ".json", "goal": ".goal"}[fmt]
    path = tmp_path / f"s{ext}"
    io.save(s, path)
    assert io.sniff_format(path.read_text()) == fmt
    assert io.load(path) == s
    other = tmp_path / "no_extension"
    io.save(s, other, format=fmt)
    assert io.load(other) == s
    assert collkit.load(path) == s


def test_rank_to_text_matches_the_rank_block() -> None:
    s = rd(5, 3)
    whole = io.to_text(s)
    blocks = re.split(r"(?m)^(?=rank )", whole)[1:]
    assert len(blocks) == 5
    for r in range(5):
        assert io.rank_to_text(s, r) == blocks[r]
        assert io.rank_to_text(s.rank(r)) == blocks[r]
        assert io.rank_to_text(collkit.generate_rank("allreduce:rd", 5, r, 3)) == blocks[r]
    with pytest.raises(InvalidArgumentError):
        io.rank_to_text(s)
    with pytest.raises(InvalidArgumentError):
        io.rank_to_text(s, 5)


# ---- golden files -----------------------------------------------------------------------------

GOLDEN_CASES = [(2, 1), (5, 3)]


@pytest.mark.parametrize("P,count", GOLDEN_CASES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_golden(P: int, count: int, fmt: str) -> None:
    ext = {"text": "txt", "json": "json", "goal": "goal"}[fmt]
    path = GOLDEN / f"allreduce_rd_P{P}_c{count}.{ext}"
    text = io.dumps(rd(P, count), fmt)
    if os.environ.get("COLLKIT_UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing {path}: run with COLLKIT_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(), f"{path.name} changed; see the module docstring to update"
    assert io.load(path) == rd(P, count)


# ---- text parser errors -----------------------------------------------------------------------

HEAD = "collective allreduce\nP 2\ncount 4\n"


@pytest.mark.parametrize(
    "text,where,message",
    [
        ("", "line 1", "found the end of the text"),
        ("collective allreduce\nP 2\n", "line 3", "found the end of the text"),
        ("colective allreduce\n", "line 1, column 1", "expected a header line"),
        ("collective allreduse\n", "line 1, column 12", "found 'allreduse'"),
        ("collective allreduce\ncollective reduce\n", "line 2", "given twice"),
        ("P 99999999999999999999\n", "line 1, column 3", "expected a process count"),
        ("P 0\n", "line 1, column 3", "in [1, 2147483648]"),
        ("elem_size 0\n", "line 1", "element size"),
        ("P 2\ncount 1\nrank 0\n", "line 3", "missing: collective"),
        (HEAD + "root 2\nrank 0\n", "line 5", "root 2 is not a rank"),
        (HEAD + "rank 1\n", "line 4, column 6", "expected rank 0"),
        (HEAD + "rank 0\n", "line 5", "expected 'rank 1'"),
        (HEAD + "rank 0\nrank 1\nrank 2\n", "line 6", "one too many"),
        (HEAD + "rank 0\n  1: compute 5ns\n", "line 5, column 3", "expected op index 0"),
        (HEAD + "rank 0\n  0: compute 5ms\n", "line 5, column 15", "'ns'"),
        (HEAD + "rank 0\n  0: compute -5ns\n", "line 5, column 14", "found '-5'"),
        (HEAD + "rank 0\n  0: fly out[0:1]\n", "line 5, column 6", "expected an op"),
        (HEAD + "rank 0\n  0: send out[0:4] to 2\n", "line 5, column 23", "a rank of P = 2"),
        (HEAD + "rank 0\n  0: send out[0:4] to 2147483648\n", "line 5", "a rank of P = 2"),
        (HEAD + "rank 0\n  0: send s0[0:4] to 1\n", "line 5, column 11", "s0 does not exist"),
        (HEAD + "rank 0 scratch 4\n  0: send s1[0:4] to 1\n", "line 5", "s1 does not exist"),
        (HEAD + "rank 0\n  0: send out[4:0] to 1\n", "line 5", "negative length"),
        (HEAD + "rank 0\n  0: send out[0 4] to 1\n", "line 5, column 17", "':'"),
        (
            HEAD + "rank 0\n  0: send out[0:4] to 1 after 1\n",
            "line 5, column 31",
            "op 1 does not exist",
        ),
        (HEAD + "rank 0\n  0: send out[0:4] to 1 stage 65536\n", "line 5", "stage number"),
        (HEAD + "rank 0\n  0: send out[0:4] to 1 stage 1 stage 2\n", "line 5", "'after' or end"),
        (HEAD + "rank 0\n  0: copy out[0:4] = in[0:3]\n", "line 5", "3 elements"),
        (
            HEAD + "rank 0\n  0: reduce out[0:4] = in[0:4] + in\n",
            "line 5",
            "destination buffer out",
        ),
        (
            HEAD + "rank 0\n  0: reduce out[0:4] = in + in[0:4]\n",
            "line 5",
            "must name the destination",
        ),
        (HEAD + "rank 0 scratch -1\n", "line 4", "scratch buffer size"),
        (HEAD + "rank 0 scratch" + " 1" * 251 + "\n", "line 4", "more than 250 scratch"),
        (HEAD + 'algorithm "abc\nrank 0\n', "line 4, column 11", "unterminated"),
        (HEAD + 'algorithm "\\xff"\nrank 0\n', "line 4", "not valid UTF-8"),
        (HEAD + 'algorithm "\\q"\nrank 0\n', "line 4", "bad escape"),
        ("# collkit schedule v2\n", "line 1", "version"),
        (HEAD + "rank 0\n  0: compute 5ns \u00e9\n", "line 5, column 18", "found '\\xc3\\xa9'"),
    ],
)
def test_text_parser_errors(text: str, where: str, message: str) -> None:
    with pytest.raises(ScheduleFormatError) as e:
        io.from_text(text)
    assert str(e.value).startswith(where), str(e.value)
    assert message in str(e.value), str(e.value)


def test_text_accepts_comments_blank_lines_and_crlf() -> None:
    s = rd(3, 2)
    t = io.to_text(s)
    noisy = "\r\n".join(f"{line}   # note\r\n\t" for line in t.splitlines())
    assert io.from_text(noisy) == s


def test_text_rejects_what_the_ir_holds_but_cannot_be_written_back() -> None:
    # A Schedule built from arrays may hold nonsense; to_text writes it, from_text refuses it.
    a = rd(2, 1).arrays()
    a["peer"] = a["peer"].copy()
    a["peer"][1] = 7
    bad = collkit.Schedule.from_arrays(
        a, collective="allreduce", P=2, count=1, algorithm="x", check_ops=False
    )
    with pytest.raises(ScheduleFormatError, match=r"not a rank|a rank of P"):
        io.from_text(io.to_text(bad))
    with pytest.raises(ScheduleFormatError, match="peer 7"):
        io.from_json(io.to_json(bad))


# ---- GOAL -------------------------------------------------------------------------------------


def test_goal_tags_are_sequence_numbers_per_ordered_pair() -> None:
    text = io.to_goal(rd(2, 1))
    # rank 0 sends once to 1 and receives once from 1: tag 0 both ways.
    assert re.findall(r"send 8b to 1 tag (\d+)", text) == ["0"]
    s = io.from_text(
        HEAD + "rank 0\n  0: send out[0:1] to 1\n  1: send out[1:2] to 1\n"
        "  2: recv out[2:3] from 1\nrank 1\n  0: recv out[0:1] from 0\n"
        "  1: send out[0:1] to 0\n  2: recv out[1:2] from 0\n"
    )
    g = io.to_goal(s)
    assert re.findall(r"send 8b to 1 tag (\d+)", g) == ["0", "1"]
    assert re.findall(r"recv 8b from 0 tag (\d+)", g) == ["0", "1"]
    assert io.from_goal(g) == s


def test_goal_calc_costs() -> None:
    s = rd(2, 4)  # reduce of 4 elements * 8 bytes = 32 bytes; copy of 32 bytes
    g = io.to_goal(s, reduce_ns_per_byte=0.5, copy_ns_per_byte=2.0)
    calcs = re.findall(r"calc (\d+)", g)
    assert sorted(set(calcs)) == ["16", "64"]
    assert io.from_goal(g) == s  # the calc cost of a reduce is not part of the schedule
    with pytest.raises(InvalidArgumentError):
        io.to_goal(s, reduce_ns_per_byte=float("nan"))


def test_goal_requires_forward_dependencies_at_the_end_of_the_block() -> None:
    s = io.from_text(ALL_KINDS)
    g = io.to_goal(s)
    block = g[g.index("rank 0 {") : g.index("rank 1 {")]
    lines = block.splitlines()
    # op 6 waits on op 7, defined later: all of op 6's requires come after op 7 is defined.
    assert lines.index("l6 requires l7") > lines.index("l7: calc 0")
    assert io.from_goal(g) == s


PLAIN_GOAL = """\
/* A hand-written GOAL file: no collkit comments. */
num_ranks 3

rank 0 {
  l1: send 16b to 1 tag 5   // first message, tag 5
  l2: send 8b to 1 tag 4
  l3: calc 100 cpu 0
  l3 requires l1
  s9: send 4b to 2
}
rank 1 {
  a: recv 8b from 0 tag 4
  b: recv 16b from 0 tag 5 nic 0
  c: calc 7
  d: calc 9
  c requires a
  c requires b
  d irequires c /* d may start when c starts: once a and b complete */
}
rank 2 { l1: recv 4b from 0 tag 0
}
"""


def test_goal_cpu_and_nic_are_kept_in_every_format() -> None:
    # LogGOPSim's several CPUs / NICs per host: kept in the op, written back by every format.
    base = "num_ranks 2\nrank 0 {\nl1: calc 5 %s\nl2: send 8b to 1 tag 0 cpu 2 nic 1\n}\n"
    base += "rank 1 {\nl1: recv 8b from 0 tag 0 nic 3\n}\n"
    s = io.from_goal(base % "cpu 15")
    a = s.arrays()
    assert list(a["cpu"]) == [15, 2, 0] and list(a["nic"]) == [0, 1, 3]
    assert "compute 5ns cpu 15" in io.to_text(s) and "send 8b to 1 tag 0 cpu 2 nic 1" in io.to_goal(
        s
    )
    assert io.from_text(io.to_text(s)) == s and io.from_goal(io.to_goal(s)) == s
    assert io.from_json(io.to_json(s)) == s
    assert s != io.from_goal(base % "cpu 14")  # the field takes part in equality
    for extra, what in (("cpu 16", "CPU number"), ("nic 8", "NIC number")):
        with pytest.raises(ScheduleFormatError, match=what):
            io.from_goal(base % extra)


def test_json_without_cpu_and_nic_columns_still_reads() -> None:
    s = collkit.generate("allreduce:rd", P=4, count=2)
    text = io.to_json(s)
    assert '"cpu"' not in text  # written only when some op sets them
    assert io.from_json(text) == s


def test_wildcard_receive_in_text_json_goal() -> None:
    text = io.to_text(io.from_goal(WILDCARD_GOAL))
    assert "recv s0[0:8] from any" in text
    s = io.from_text(text)
    assert io.from_json(io.to_json(s)) == s and io.from_goal(io.to_goal(s)) == s
    assert "recv 8b from -1 tag -1" in io.to_goal(s)
    with pytest.raises(ScheduleFormatError, match="or 'any'"):
        io.from_text(text.replace("from any", "from -1"))


WILDCARD_GOAL = """num_ranks 3
rank 0 {
a: recv 8b from -1 tag 4
b: recv 8b from 2 tag 4
}
rank 1 { l: send 8b to 0 tag 4
}
rank 2 { l: send 8b to 0 tag 4
}
"""


def test_goal_wildcard_rank_needs_one_tag() -> None:
    # collkit matches a wildcard rank's messages by source only: one tag there, or refused.
    assert io.from_goal(WILDCARD_GOAL).total_ops == 4
    assert io.from_goal(WILDCARD_GOAL.replace("from 2 tag 4", "from 2 tag -1")).total_ops == 4
    with pytest.raises(ScheduleFormatError, match="one tag on that rank"):
        io.from_goal(WILDCARD_GOAL.replace("to 0 tag 4\n}\nrank 2", "to 0 tag 5\n}\nrank 2"))


def test_plain_goal_import() -> None:
    s = io.from_goal(PLAIN_GOAL)
    assert (s.collective, s.algorithm, s.P, s.count, s.elem_size) == ("barrier", "", 3, 0, 1)
    r0, r1, r2 = (s.rank(r) for r in range(3))
    a0, a1 = r0.arrays(), r1.arrays()
    assert a0["kind"].tolist() == [0, 0, 4, 0]  # send send compute send
    assert a0["len"].tolist() == [16, 8, 100, 4]
    assert r0.deps(2) == [0]
    # Each message has its own region of one scratch buffer per rank.
    assert r0.scratch == [28] and a0["off"][[0, 1, 3]].tolist() == [0, 16, 24]
    # Rank 1 receives tag 4 then tag 5 in the file, but rank 0 sends tag 5 first: collkit
    # matches in order, so the receives swap places (and the dependencies follow them).
    assert a1["kind"].tolist() == [1, 1, 4, 4]
    assert a1["len"].tolist() == [16, 8, 7, 9]
    assert sorted(r1.deps(2)) == [0, 1]
    # "d irequires c" became "d waits for what c waits for".
    assert sorted(r1.deps(3)) == [0, 1]
    assert r2.arrays()["peer"].tolist() == [0] and r2.scratch == [4]
    # And the result is an ordinary schedule in every format.
    for fmt in FORMATS:
        assert io.loads(io.dumps(s, fmt), fmt) == s


def test_irequires_chains_and_duplicates() -> None:
    g = """num_ranks 1
rank 0 {
a: calc 1
b: calc 2
c: calc 3
d: calc 4
b requires a
c irequires b
d irequires c
d requires a
}
"""
    r = io.from_goal(g).rank(0)
    assert r.deps(2) == [0]  # c starts when b starts: after a
    assert r.deps(3) == [0]  # d: after a (required), and c's start adds nothing new


@pytest.mark.parametrize(
    "text,message",
    [
        ("", "no 'num_ranks'"),
        ("rank 0 {\n}\n", "'rank' before 'num_ranks'"),
        ("num_ranks 2\nrank 0 {\n}\n", "rank 1 has no block"),
        ("num_ranks 1\nrank 0 {\n}\nrank 0 {\n}\n", "second block"),
        ("num_ranks 1\nrank 0 {\nl1: calc 1\n", "no closing"),
        ("num_ranks 1\nrank 0 {\nl1: send 8b to -1\n}\n", "not in [0, 1)"),
        ("num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag -1\n}\nrank 1 {\n}\n", "for receives"),
        ("num_ranks 2\nrank 0 {\nl1: send 8b to 2\n}\nrank 1 {\n}\n", "not in [0, 2)"),
        ("num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 3\n}\nrank 1 {\n}\n", "no matching recv"),
        ("num_ranks 2\nrank 0 {\n}\nrank 1 {\nl: recv 1b from 0\n}\n", "no matching send"),
        ("num_ranks 1\nrank 0 {\nl1: calc 1\nl1: calc 2\n}\n", "defined twice"),
        ("num_ranks 1\nrank 0 {\nl1: calc 1\nl1 requires l9\n}\n", "'l9' is not defined"),
        ("num_ranks 1\nrank 0 {\na: calc 1\nb: calc 1\na irequires b\nb irequires a\n}\n", "cycle"),
        ("num_ranks 1\nrank 0 {\nl1: send 8 to 0\n}\n", "'b' after the size"),
        ("num_ranks 1\nrank 0 {\nl1: calc 1 tag 3\n}\n", "'cpu', 'nic' or end of line"),
        ("num_ranks 1\n/* open\nrank 0 {\n}\n", "unterminated '/*'"),
        ("// collkit: P 2\nnum_ranks 1\n", "before '// collkit: schedule v1'"),
        ("// collkit: schedule v2\n", "version"),
        ("num_ranks 99999999999\n", "number of ranks"),
    ],
)
def test_goal_parser_errors(text: str, message: str) -> None:
    with pytest.raises(ScheduleFormatError) as e:
        io.from_goal(text)
    assert re.match(r"line \d+, column \d+: ", str(e.value)), str(e.value)
    assert message in str(e.value), str(e.value)


def test_goal_comment_and_op_must_agree() -> None:
    g = io.to_goal(rd(2, 4))
    for old, new in [
        ("send 32b to 1", "send 24b to 1"),  # size
        ("l0: calc 0", "l0: send 32b to 1 tag 9"),  # kind
    ]:
        assert old in g
        with pytest.raises(ScheduleFormatError, match="disagrees with its '// collkit:' comment"):
            io.from_goal(g.replace(old, new, 1))
    # Tags are the k-th message of the pair: an edited tag would make LogGOPSim pair differently.
    with pytest.raises(ScheduleFormatError, match="tag 3 should be 0"):
        io.from_goal(g.replace("send 32b to 1 tag 0", "send 32b to 1 tag 3", 1))
    # An op without its comment, and a comment without its op.
    lines = g.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("// collkit: 1:"))
    with pytest.raises(ScheduleFormatError, match="no '// collkit:' comment"):
        io.from_goal("\n".join(lines[:i] + lines[i + 1 :]))
    with pytest.raises(ScheduleFormatError, match="two '// collkit:' op comments"):
        io.from_goal("\n".join(lines[: i + 1] + lines[i + 2 :]))


# ---- JSON -------------------------------------------------------------------------------------


def _json_doc() -> dict[str, object]:
    doc: dict[str, object] = json.loads(io.to_json(rd(3, 2)))
    return doc


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda d: d.pop("P"), "no 'P'"),
        (lambda d: d.update(P="3"), "'P' must hold integers"),
        (lambda d: d.update(P=True), "'P' must hold integers"),
        (lambda d: d.update(P=2**70), "'P' holds a number outside [1, 2147483648]"),
        (lambda d: d.update(count=-1), "'count'"),
        (lambda d: d.update(root=3), "root 3 is not a rank"),
        (lambda d: d.update(format="other"), "not a collkit schedule"),
        (lambda d: d.update(version=2), "version"),
        (lambda d: d.update(collective="neighbor_alltoall"), "unknown collective"),
        (lambda d: d.update(algorithm=7), "expected a string"),
        (lambda d: d.update(op_kinds=["recv", "send"]), "'op_kinds'"),
        (lambda d: d.update(ops=[]), 'opening "ops"'),
        (lambda d: d["ops"].pop("len"), "no 'ops.len'"),
        (lambda d: d["ops"].update(len=[1.5] * 14), "ops.len must hold integers, not fractions"),
        (lambda d: d["ops"].update(len=[[1]] * 14), "ops.len must hold integers"),
        (lambda d: d["ops"].update(len="1"), "'\\[' opening ops.len"),
        (lambda d: d["ops"].update(len=[2**64] * 14), "flat list of integers|outside"),
        (lambda d: d["ops"].update(kind=[300] * 14), "ops.kind holds a number outside"),
        (lambda d: d["ops"].update(rank=[0] * 13), "entries"),
        (lambda d: d["ops"].update(rank=list(reversed(d["ops"]["rank"]))), "sorted"),
        (lambda d: d["ops"].update(kind=[9] * 14), "unknown kind"),
        (lambda d: d["ops"].update(len=[-1] * 14), "negative length"),
        (lambda d: d["ops"].update(buf=[40] * 14), "does not exist"),
        (lambda d: d.update(dep_begin=[0] * 15), "'dep_begin' .* must end at the length"),
        (lambda d: d.update(deps=[99] * len(d["deps"])), "does not exist"),
        (lambda d: d.update(scratch_begin=[0, 1]), "P + 1"),
        (lambda d: d.update(scratch=[-4] * len(d["scratch"])), "negative size"),
    ],
)
def test_json_rejects_hostile_documents(mutate: object, message: str) -> None:
    doc = _json_doc()
    mutate(doc)  # type: ignore[operator]
    with pytest.raises(ScheduleFormatError) as e:
        io.from_json(json.dumps(doc))
    assert re.search(message, str(e.value)) or message in str(e.value), str(e.value)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        "null",
        "{",
        '{"P": NaN}',
        '{"P": Infinity}',
        "[" * 100000 + "]" * 100000,
        "1" * 5000,
        '"\\ud800"',
        b"\xff\xfe",
        '{"a": 1e999}',
    ],
)
def test_json_rejects_non_schedules(text: str | bytes) -> None:
    with pytest.raises(ScheduleFormatError):
        io.from_json(text)


def test_json_of_a_big_schedule_keeps_dtypes() -> None:
    s = rd(64, 7)
    a, b = s.arrays(), io.from_json(io.to_json(s)).arrays()
    for k, v in a.items():
        assert v.dtype == b[k].dtype and np.array_equal(v, b[k]), k


# ---- CLI --------------------------------------------------------------------------------------


def run_export(argv: list[str]) -> int:
    """`collkit export ARGV` in this process, through the CLI's main (its error handling too)."""
    from collkit.cli import main

    return main(["export", *argv])


def test_cli_export_to_stdout_and_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_export(["allreduce:rd", "-P", "5", "--count", "3"]) == 0
    assert io.from_text(capsys.readouterr().out) == rd(5, 3)
    out = tmp_path / "rd.goal"
    assert run_export(["allreduce:rd", "-P", "5", "-o", str(out)]) == 0
    assert out.read_text().count("num_ranks 5") == 1
    assert io.load(out) == rd(5, 4)  # default count 4
    js = tmp_path / "rd.json"
    assert run_export(["--from", str(out), "-o", str(js)]) == 0
    assert io.from_json(js.read_text()) == rd(5, 4)
    assert run_export(["--from", str(js), "--format", "text"]) == 0
    assert io.from_text(capsys.readouterr().out) == rd(5, 4)


def test_cli_export_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_export(["allreduce:rd"]) == 2
    assert run_export(["--from", str(tmp_path / "missing.txt")]) == 2
    assert "does not exist" in capsys.readouterr().err  # the shared input_file check
    assert run_export(["allreduce:rd", "-P", "3", "--from", "x"]) == 2
    bad = tmp_path / "bad.txt"
    bad.write_text("collective allreduce\nP 2\n")
    assert run_export(["--from", str(bad)]) == 2
    assert "line 3, column 1: expected a header" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        run_export(["allreduce:rd", "-P", "3", "--format", "xml"])
    assert e.value.code == 2


def _largest(length: int, elem_size: int) -> str:
    return (
        f"collective allreduce\nP 1\ncount 1\nelem_size {elem_size}\n"
        f"rank 0 scratch {length}\n"
        f"  0: send s0[0:{length}] to 0\n  1: recv s0[0:{length}] from 0\n"
    )


def test_the_largest_region_round_trips_and_one_past_is_refused() -> None:
    # A buffer holds at most 2^48 elements and fewer than 2^63 bytes (buffer_fits, the
    # generators' limit too). At the edge, GOAL writes the size digit for digit and reads it back.
    s = io.from_text(_largest(2**48, 32767))
    g = io.to_goal(s)
    assert f"send {2**48 * 32767}b to 0" in g
    assert io.from_goal(g) == s
    assert io.from_json(io.to_json(s)) == s
    with pytest.raises(ScheduleFormatError, match="disagrees"):
        io.from_goal(g.replace(f"{2**48 * 32767}b", f"{2**48 * 32767 - 1}b"))
    # unchecked: 2^48 x 32769 B (past 2^63) and 2^60 elements were read, and printed as negative
    # bytes
    for length, elem in ((2**48, 32769), (2**48 + 1, 1), (2**60, 8), (2**63 - 1, 2**31 - 1)):
        with pytest.raises(ScheduleFormatError, match="at most 2\\^48 elements and 2\\^63 bytes"):
            io.from_text(_largest(length, elem))
    # ... and alike by the JSON and GOAL readers (a scratch buffer, a region, a plain GOAL size)
    past = str(2**48 + 1)
    with pytest.raises(ScheduleFormatError, match="at most 2\\^48 elements"):
        io.from_json(io.to_json(s).replace(str(2**48), past))
    with pytest.raises(ScheduleFormatError, match="at most 2\\^48 elements"):
        io.from_goal(g.replace(f"scratch {2**48}", f"scratch {past}"))
    with pytest.raises(ScheduleFormatError, match="a size in bytes"):
        io.from_goal(f"num_ranks 1\nrank 0 {{\nl1: calc 1\nl2: send {past}b to 0\n}}\n")


def test_header_and_rank_blocks_make_the_text_form() -> None:
    # collkit show prints header_text and then each rank's block, generated alone.
    P, count = 6, 5
    parts = [io.header_text("allreduce:rd", P, count, 8, 0)]
    for r in range(P):
        prog = collkit.generate_rank("allreduce:rd", P, r, count)
        parts.append(io.rank_to_text(prog, count=count, P=P, collective="allreduce"))
    assert "".join(parts) == io.to_text(rd(P, count))


@pytest.mark.parametrize("fmt", ["text", "goal"])
def test_byte_order_mark_is_skipped(fmt: str) -> None:
    s = rd(3, 2)
    assert io.loads("\ufeff" + io.dumps(s, fmt), fmt) == s


# ---- one JSON reader: the core's, for text in memory and files, with or without a timeline ------


def test_every_json_path_reads_alike(tmp_path: Path) -> None:
    s = rd(5, 3)
    good = io.to_json(s)
    assert '"version": 1,' in good
    bad = good.replace('"version": 1,', '"version": 1.0,')
    path = tmp_path / "rd.json"
    path.write_text(good)
    assert io.from_json(good) == s and io.load(path) == s
    assert simulate_file(path, timeline=True).makespan == simulate_file(path).makespan
    path.write_text(bad)
    readers = {
        "from_json": lambda: io.from_json(bad),
        "load": lambda: io.load(path),
        "simulate_file": lambda: simulate_file(path),
        "simulate_file with a timeline": lambda: simulate_file(path, timeline=True),
    }
    for what, read in readers.items():
        with pytest.raises(ScheduleFormatError, match="version"):
            read()
            pytest.fail(f"{what} read a version 1.0 file")


def test_json_from_bytes_and_str_alike() -> None:
    s = rd(3, 2)
    text = io.to_json(s)
    assert io.from_json(text.encode()) == io.from_json(text) == s
    with pytest.raises(ScheduleFormatError):
        io.from_json("")
    with pytest.raises(ScheduleFormatError):
        io.from_json(text[: len(text) // 2])
