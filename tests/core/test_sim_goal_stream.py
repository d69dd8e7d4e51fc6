"""A collkit GOAL file read from disk (simulate --file) equals the same text read whole.

From a file, the blocks of a collkit GOAL file are read straight into each rank's program while
they keep the shape collkit writes (each op's comment, its GOAL op, its requires lines); any
other line hands the block to the general reader from there on. Edited files must give the
whole-text reader's outcome exactly: the same makespans, or the same error at the same line.
"""

from __future__ import annotations

import os
import random
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import collkit
from collkit import io
from collkit.simulate import simulate_file

SETTINGS = settings(
    max_examples=int(os.environ.get("COLLKIT_PROPERTY_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# Deps on later ops (requires lines at the block's end), stages, scratch buffers, calcs.
SOURCES = [
    ("allreduce:rd", 5, 3),
    ("allreduce:ring", 4, 8),
    ("bcast:pipeline(seg=8)", 3, 5),
    ("alltoall:bruck(r=3)", 5, 2),
    ("reduce:binomial", 6, 1),
    ("barrier:dissemination", 3, 0),
]


def _outcome(run: Callable[[], collkit.SimResult]) -> tuple[str, list[float]]:
    try:
        r = run()
    except collkit.CollkitError as e:
        return str(e), []
    return "", [*r.makespans.tolist(), *r.finish.tolist()]


def _both(text: str) -> tuple[tuple[str, list[float]], tuple[str, list[float]]]:
    kw = {"model": "loggops", "S": 64}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.goal"
        path.write_bytes(text.encode())
        streamed = _outcome(lambda: simulate_file(path, **kw))  # type: ignore[arg-type]
    whole = _outcome(lambda: collkit.simulate(io.from_goal(text), **kw))  # type: ignore[arg-type]
    return streamed, whole


def _edit(rng: random.Random, lines: list[str]) -> None:
    """One edit of the kind a person or a tool makes to a GOAL file."""
    i = rng.randrange(len(lines))
    kind = rng.randrange(9)
    if kind == 0:
        del lines[i]
    elif kind == 1:
        lines.insert(i, lines[i])
    elif kind == 2 and i + 1 < len(lines):
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    elif kind == 3:  # a number changed
        words = lines[i].split(" ")
        k = rng.randrange(len(words))
        if words[k].isdigit():
            words[k] = str(int(words[k]) + rng.choice([-1, 1, 7]))
        lines[i] = " ".join(words)
    elif kind == 4:
        lines.insert(i, rng.choice(["", "// a note", "/* a", "*/", "  "]))
    elif kind == 5:
        lines[i] += rng.choice([" cpu 1", " // note", " ", "\r", " tag 0", " stage 2"])
    elif kind == 6:  # an op's requires line moved to the end of its block
        if " requires " in lines[i]:
            line = lines.pop(i)
            end = next((k for k in range(i, len(lines)) if lines[k] == "}"), len(lines))
            lines.insert(end, line)
    elif kind == 7:  # labels renamed
        lines[i] = lines[i].replace("l1", "x1").replace("l2:", "l02:")
    else:
        lines[i] = lines[i].replace("send", "recv", 1)


@SETTINGS
@given(source=st.sampled_from(SOURCES), seed=st.integers(0, 2**32 - 1), edits=st.integers(0, 3))
def test_streamed_collkit_goal_equals_the_whole_text(
    source: tuple[str, int, int], seed: int, edits: int
) -> None:
    name, P, count = source
    lines = io.to_goal(collkit.generate(name, P=P, count=count)).split("\n")
    rng = random.Random(seed)
    for _ in range(edits):
        _edit(rng, lines)
    text = "\n".join(lines)
    streamed, whole = _both(text)
    assert streamed == whole, text


def test_an_edited_op_deep_in_a_long_file_is_refused_at_its_line() -> None:
    # Past the first blocks and the reader's first buffer: the error names the edited line.
    s = collkit.generate("allreduce:rd", P=2048, count=2)
    lines = io.to_goal(s).split("\n")
    k = max(i for i, line in enumerate(lines) if line.startswith("l1: send"))
    lines[k] = lines[k].replace(" tag ", " tag 9")
    streamed, whole = _both("\n".join(lines))
    assert streamed == whole
    assert streamed[0].startswith(f"line {k + 1}, ")


def test_a_long_collkit_file_streams_to_the_schedule_s_makespan() -> None:
    s = collkit.generate("allreduce:rd", P=4096, count=3)
    streamed, whole = _both(io.to_goal(s))
    assert streamed == whole
    assert streamed[1][0] == collkit.simulate(s, model="loggops", S=64).makespan
