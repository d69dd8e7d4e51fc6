"""Streaming export: `collkit export ALGO -P N [-o FILE]` writes text, GOAL and JSON rank by rank
from the generator, to a file or stdout, byte for byte what the whole-Schedule writers produce."""

from __future__ import annotations

import random
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import collkit
from collkit import _core, cli, io
from collkit.simulate import simulate_file


@pytest.mark.parametrize("fmt", ["text", "goal", "json"])
@pytest.mark.parametrize(
    "name,P", [("allreduce:rd", 13), ("alltoall:bruck", 9), ("bcast:binomial", 16)]
)
def test_streamed_file_equals_the_whole_schedule(
    fmt: str, name: str, P: int, tmp_path: Path
) -> None:
    path = tmp_path / f"s.{fmt}"
    algo = collkit.Algorithm(name).core
    n = _core.write_schedule(algo, P, 3, 8, 0, fmt, str(path), 0.5, 0.25)
    want = io.dumps(
        collkit.generate(name, P, 3),
        fmt,
        **({"reduce_ns_per_byte": 0.5, "copy_ns_per_byte": 0.25} if fmt == "goal" else {}),
    )
    assert path.read_text() == want and n == len(want.encode())
    assert io.load(path) == collkit.generate(name, P, 3)


def test_export_cli_streams_to_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "COMMANDS", ["export"])
    out = tmp_path / "rd.goal"
    assert cli.main(["export", "allreduce:rd", "-P", "6", "-o", str(out)]) == 0
    assert out.read_text() == io.dumps(collkit.generate("allreduce:rd", 6, 4), "goal")
    code = cli.main(["export", "allreduce:rd", "-P", "6", "-o", str(tmp_path / "no" / "x.goal")])
    assert code == 2 and "cannot write" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["text", "goal", "json"])
def test_export_cli_streams_to_stdout(
    fmt: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "COMMANDS", ["export"])
    assert cli.main(["export", "bcast:binomial", "-P", "11", "--format", fmt]) == 0
    assert capsys.readouterr().out == io.dumps(collkit.generate("bcast:binomial", 11, 4), fmt)


def test_streamed_json_reaches_python_in_pieces_of_a_megabyte() -> None:
    pieces: list[str] = []
    algo = collkit.Algorithm("allreduce:rd").core
    n = _core.write_schedule(algo, 2**12, 1, 8, 0, "json", "", 0.0, 0.0, pieces.append)
    assert len(pieces) > 1 and max(len(p) for p in pieces) < 2**20 + 2**16
    text = "".join(pieces)
    assert n == len(text) and io.from_json(text) == collkit.generate("allreduce:rd", 2**12, 1)


def test_export_that_cannot_fit_is_refused_before_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "COMMANDS", ["export"])
    out = tmp_path / "x.json"
    assert cli.main(["export", "allreduce:rd", "-P", "2^30", "-o", str(out)]) == 2
    assert "GiB free in" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize("fmt", ["goal", "json"])
@pytest.mark.parametrize("name,P", [("allreduce:rd", 13), ("bcast:binomial", 16)])
def test_goal_and_json_files_stream_into_the_simulator(
    fmt: str, name: str, P: int, tmp_path: Path
) -> None:
    # A collkit GOAL file goes to the engine rank by rank as its blocks close, a JSON file
    # through a cursor per column; the result is the same as simulating the whole schedule.
    path = tmp_path / f"s.{fmt}"
    io.save(collkit.generate(name, P, 3), path)
    kw = {"model": "loggops", "noise": "exponential(20ns)", "trials": 3, "seed": 4}
    streamed = simulate_file(path, **kw)  # type: ignore[arg-type]
    whole = collkit.simulate(collkit.generate(name, P, 3), **kw)  # type: ignore[arg-type]
    assert streamed.makespans.tolist() == whole.makespans.tolist()
    assert streamed.finish.tolist() == whole.finish.tolist()


def test_goal_ranks_out_of_order_and_plain_goal_stream_too(tmp_path: Path) -> None:
    text = io.to_goal(collkit.generate("allreduce:rd", 4, 2))
    head, *blocks = text.split("\nrank ")
    swapped = "\nrank ".join([head, blocks[1], blocks[0], *blocks[2:]])
    assert io.from_goal(swapped) == io.from_goal(text)
    path = tmp_path / "swapped.goal"
    path.write_text(swapped)
    assert simulate_file(path).makespan == collkit.simulate("allreduce:rd", 4, count=2).makespan
    plain = tmp_path / "plain.goal"
    plain.write_text(
        "num_ranks 2\nrank 1 {\nl1: recv 8b from 0 tag 3\nl2: recv 8b from 0 tag 2\n}\n"
        "rank 0 {\nl1: send 8b to 1 tag 2\nl2: send 8b to 1 tag 3\n}\n"
    )
    r = simulate_file(plain, model="loggops")
    assert r.makespan == simulate_file(plain, model="loggops", timeline=True).makespan == 800
    with pytest.raises(collkit.CollkitError, match="rank 1 has a second block"):
        io.from_goal(swapped.replace("rank 0 {", "rank 1 {", 1))


def test_streaming_json_reader_reads_what_the_writer_wrote(tmp_path: Path) -> None:
    g = io.from_goal(
        "num_ranks 3\nrank 0 {\na: recv 8b from -1\nb: recv 8b from -1\nc: calc 5 cpu 2\n}\n"
        "rank 1 {\na: send 8b to 0 nic 1\n}\nrank 2 {\na: send 8b to 0\n}\n"
    )
    for s in (g, collkit.generate("alltoall:bruck", 7, 3), collkit.generate("bcast:linear", 1, 0)):
        path = tmp_path / "s.json"
        io.save(s, path)
        assert collkit.Schedule(_core.load_json_file(str(path))) == s
    path.write_text(io.to_json(g).replace('"peer": [-1', '"peer": [7'))
    with pytest.raises(collkit.CollkitError, match="peer 7 is not a rank"):
        _core.load_json_file(str(path))


def _plain_goal(rng: random.Random) -> str:
    """A random plain GOAL file: messages with tags from a small set (so that receives are
    paired by tag, out of op order), receives shuffled among a rank's ops, backward requires,
    now and then a wildcard rank, blocks out of order, or a message without its match."""
    P = rng.randint(1, 6)
    ops: list[list[str]] = [[] for _ in range(P)]
    wild = rng.randrange(P) if rng.random() < 0.2 else -1
    for _ in range(rng.randint(0, 14)):
        src, dst = rng.randrange(P), rng.randrange(P)
        tag = 0 if dst == wild else rng.randrange(3)
        n = rng.choice([0, 1, 8, 100])
        ops[src].append(f"send {n}b to {dst} tag {tag}")
        frm = -1 if dst == wild and rng.random() < 0.5 else src
        rtag = -1 if dst == wild and rng.random() < 0.3 else tag
        ops[dst].append(f"recv {n}b from {frm} tag {rtag}")
    for r in range(P):
        rng.shuffle(ops[r])
        if rng.random() < 0.2:
            ops[r].append(f"calc {rng.randrange(50)}")
    if rng.random() < 0.15:  # a message without its match, or a wrong tag
        r = rng.randrange(P)
        if ops[r]:
            i = rng.randrange(len(ops[r]))
            if rng.random() < 0.5:
                del ops[r][i]
            else:
                ops[r][i] = ops[r][i].replace("tag 1", "tag 7").replace("tag 0", "tag 5")
    blocks = []
    for r in range(P):
        lines = [f"rank {r} {{"]
        for i, op in enumerate(ops[r]):
            lines.append(f"l{i}: {op}")
            if i and rng.random() < 0.4:
                lines.append(f"l{i} requires l{rng.randrange(i)}")
        lines.append("}")
        blocks.append("\n".join(lines))
    if rng.random() < 0.3:
        rng.shuffle(blocks)
    return f"num_ranks {P}\n" + "\n".join(blocks) + "\n"


def _outcome(run: Callable[[], collkit.SimResult]) -> tuple[str, list[float]]:
    try:
        r = run()
    except collkit.CollkitError as e:
        return str(e), []
    return "", [*r.makespans.tolist(), *r.finish.tolist()]


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_plain_goal_read_twice_equals_the_whole_file(seed: int) -> None:
    # From a file, a plain GOAL file is read in two passes (the sends indexed, then each rank
    # paired as it comes); the whole-file reader pairs all messages at once. Same schedule, same
    # result, same error.
    text = _plain_goal(random.Random(seed))
    kw = {"model": "loggops", "S": 8}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "plain.goal"
        path.write_text(text)
        streamed = _outcome(lambda: simulate_file(path, **kw))  # type: ignore[arg-type]
    whole = _outcome(lambda: collkit.simulate(io.from_goal(text), **kw))  # type: ignore[arg-type]
    assert streamed == whole, text


def _goal_outcome(text: str) -> tuple[str, collkit.Schedule | None]:
    try:
        return "", io.from_goal(text)
    except collkit.CollkitError as e:
        return str(e), None


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_plain_goal_fast_path_and_scanner_agree(seed: int) -> None:
    # The reader takes lines as Schedgen writes them by a fast path and anything else through its
    # Scanner: doubled blanks (only the Scanner reads them) give the same schedule, or the same
    # error but for its column; CRLF line ends give the same outcome exactly.
    text = _plain_goal(random.Random(seed))
    fast = _goal_outcome(text)
    assert _goal_outcome(text.replace("\n", "\r\n")) == fast
    slow = _goal_outcome(text.replace(" ", "  "))
    assert slow[1] == fast[1]
    assert re.sub(r"column \d+", "column C", slow[0]) == re.sub(r"column \d+", "column C", fast[0])
