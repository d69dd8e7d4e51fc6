"""LogGOPSim's GOAL features in the simulator: several CPUs and NICs per host, wildcard
receives matched as LogGOPSim matches them, and its noise traces replayed in time.

Times are hand-computed with collkit's LogGOPS defaults (L = 500, o = 100, g = 100, G = O = 0,
ns): a send's first byte arrives o + L = 600 after it starts; the receiver spends o = 100 on it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import collkit
from collkit import io
from collkit.errors import CollkitError, InvalidArgumentError
from collkit.simulate import SimResult, simulate_file


def run_goal(tmp_path: Path, text: str, **kw: object) -> SimResult:
    path = tmp_path / "x.goal"
    path.write_text(text)
    return simulate_file(path, model="loggops", **kw)  # type: ignore[arg-type]


def test_calcs_on_two_cpus_overlap(tmp_path: Path) -> None:
    goal = "num_ranks 1\nrank 0 {\nl1: calc 100 cpu 0\nl2: calc 100 cpu %d\n}\n"
    assert run_goal(tmp_path, goal % 1).makespan == 100
    assert run_goal(tmp_path, goal % 0).makespan == 200
    # A dependency still orders them, whatever their CPUs.
    assert run_goal(tmp_path, (goal % 1).replace("}", "l2 requires l1\n}")).makespan == 200


TWO_SENDS = """num_ranks 2
rank 0 {
l1: send 8b to 1 tag 0
l2: send 8b to 1 tag 1 %s
}
rank 1 {
l1: recv 8b from 0 tag 0
l2: recv 8b from 0 tag 1
}
"""


@pytest.mark.parametrize(
    "units,makespan",
    [
        # One CPU and NIC: the second send waits for o and g (100), arrives at 700, and rank 1's
        # CPU is busy with the first message until 700: 700-800.
        ("", 800),
        # Its own CPU but the same NIC: it still waits for the send gap g.
        ("cpu 1", 800),
        # Its own CPU and NIC: both leave at 0 and arrive at 600; rank 1 spends the overhead of
        # each on the CPU and NIC numbered as its send's (LogGOPSim's rule), so both end at 700.
        ("cpu 1 nic 1", 700),
        # Its own NIC, the same CPU: the CPU's o holds the second send until 100.
        ("nic 1", 800),
    ],
)
def test_sends_on_several_cpus_and_nics(tmp_path: Path, units: str, makespan: float) -> None:
    assert run_goal(tmp_path, TWO_SENDS % units).makespan == makespan


def test_wildcard_takes_the_first_message_then_named_ones_wait(tmp_path: Path) -> None:
    # Both receives are posted at 0; rank 2's message arrives first (600) and takes the first
    # posted receive that fits, the wildcard; rank 1's (after its calc: 1600) the named one.
    goal = """num_ranks 3
rank 0 {
a: recv 8b from -1 tag 0
b: recv 8b from 1 tag 0
}
rank 1 {
c: calc %d
s: send 8b to 0 tag 0
s requires c
}
rank 2 {
c: calc %d
s: send 8b to 0 tag 0
s requires c
}
"""
    r = run_goal(tmp_path, goal % (1000, 0), timeline=True)
    assert r.makespan == 1700
    pairs = {int(s): int(v) for s, v in zip(r.msg_send, r.msg_recv, strict=True)}
    first = r.rank_op_begin
    assert pairs[first[2] + 1] == 0 and pairs[first[1] + 1] == 1
    # The other way round, rank 1's message comes first and takes the wildcard: rank 2's then
    # finds no receive (LogGOPSim leaves it in its queues too).
    with pytest.raises(CollkitError, match="message from rank 1 never came"):
        run_goal(tmp_path, goal % (0, 1000))


def test_wildcard_receives_posted_late_take_unexpected_messages_in_arrival_order(
    tmp_path: Path,
) -> None:
    goal = """num_ranks 3
rank 0 {
c: calc 1000
a: recv 8b from -1 tag 0
b: recv 16b from -1 tag 0
a requires c
b requires c
}
rank 1 { s: send 8b to 0 tag 0
}
rank 2 {
c: calc 200
s: send 16b to 0 tag 0
s requires c
}
"""
    r = run_goal(tmp_path, goal, timeline=True)
    # Rank 1's message arrives at 600, rank 2's at 800; both wait for rank 0's CPU, busy with
    # the calc until 1000. The receives entered the queue when the calc started, before either
    # message (LogGOPSim's order), so at 1000 they are posted first and the messages take the
    # first posted receive that fits, in the order they entered the queue: 1000-1100, 1100-1200.
    assert r.makespan == 1200
    first = r.rank_op_begin
    pairs = {int(s): int(v) for s, v in zip(r.msg_send, r.msg_recv, strict=True)}
    assert pairs[first[1]] == 1 and pairs[first[2] + 1] == 2
    # A wildcard receive smaller than the message it takes is an error, as any receive: rank
    # 2's 16-byte message comes first here and takes the first posted receive, of 8 bytes.
    early = """num_ranks 3
rank 0 {
c: calc 1000
a: recv 8b from -1 tag 0
b: recv 16b from -1 tag 0
a requires c
b requires c
}
rank 1 {
c: calc 200
s: send 8b to 0 tag 0
s requires c
}
rank 2 { s: send 16b to 0 tag 0
}
"""
    with pytest.raises(CollkitError, match="receives 8 bytes"):
        run_goal(tmp_path, early)


def test_wildcard_without_a_message_and_a_message_without_a_receive(tmp_path: Path) -> None:
    lonely = "num_ranks 2\nrank 0 {\na: recv 8b from -1\n}\nrank 1 {\n}\n"
    with pytest.raises(CollkitError, match="no message came for this wildcard receive"):
        run_goal(tmp_path, lonely)
    extra = "num_ranks 2\nrank 0 {\na: recv 8b from -1\n}\nrank 1 {\na: send 8b to 0\n"
    extra += "b: send 8b to 0\n}\n"
    with pytest.raises(CollkitError, match="unmatched send"):
        run_goal(tmp_path, extra)


def test_verifier_refuses_wildcard_receives_clearly() -> None:
    s = io.from_goal("num_ranks 2\nrank 0 {\na: recv 8b from -1\n}\nrank 1 {\na: send 8b to 0\n}\n")
    result = collkit.verify(s)
    assert not result.ok
    assert "wildcard receive" in result.diagnostics[0].message


def _trace(tmp_path: Path, name: str = "trace.txt") -> Path:
    # A detour of 50 ns every 100 ns, with LogGOPSim's comment line; the last line (1000) marks
    # the period.
    path = tmp_path / name
    lines = "".join(f"{k * 100}\t50\n" for k in range(11))
    path.write_text("# noise trace: start duration (ns)\n" + lines)
    return path


def test_noise_trace_is_replayed_in_time(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    goal = "num_ranks 1\nrank 0 {\nl1: calc 1000\n}\n"
    assert run_goal(tmp_path, goal).makespan == 1000
    spans = [run_goal(tmp_path, goal, noise=f"file({trace})", seed=s).makespan for s in range(8)]
    # 1000 ns of calc meets the 10 detours that start in it, plus what is left of the one
    # under way at its start (0-50 ns), wherever the rank's offset puts it in the trace.
    assert all(1500 <= m < 1550 for m in spans), spans
    assert len(set(spans)) > 1  # the offset comes from the seed ...
    again = [run_goal(tmp_path, goal, noise=f"file({trace})", seed=s).makespan for s in range(8)]
    assert again == spans  # ... and is reproducible
    # A calc much shorter than the gaps mostly meets no detour.
    short = "num_ranks 1\nrank 0 {\nl1: calc 20\n}\n"
    s = [run_goal(tmp_path, short, noise=f"file({trace})", seed=k).makespan for k in range(20)]
    assert min(s) == 20 and max(s) <= 20 + 50 + 50 and max(s) > 20


def test_noise_trace_offsets_per_rank_or_coscheduled(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    goal = "num_ranks 8\n" + "".join(f"rank {r} {{\nl1: calc 550\n}}\n" for r in range(8))
    own = run_goal(tmp_path, goal, noise=f"file({trace})", seed=3)
    together = run_goal(tmp_path, goal, noise=f"file({trace},cosched)", seed=3)
    assert len(set(own.finish.tolist())) > 1
    assert len(set(together.finish.tolist())) == 1
    assert np.all((together.finish >= 550 + 5 * 50) & (together.finish < 550 + 7 * 50))
    assert "trace(11 lines" in together.settings() and "seed=3" in together.settings()


def test_noise_trace_format_errors_are_clear(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("# trace\n0\t10\n100 ten\n")
    with pytest.raises(InvalidArgumentError, match=r"LogGOPSim noise trace.*line 3"):
        collkit.simulate("allreduce:rd", 4, noise=f"file({bad})")
    bad.write_text("# trace\n0\t10\n")
    with pytest.raises(InvalidArgumentError, match="at least two detours"):
        collkit.simulate("allreduce:rd", 4, noise=f"file({bad})")
    bad.write_text("# trace\n100\t10\n50\t10\n")
    with pytest.raises(InvalidArgumentError, match="must not decrease"):
        collkit.simulate("allreduce:rd", 4, noise=f"file({bad})")
    durations = tmp_path / "detours.txt"
    durations.write_text("50\n70\n")
    with pytest.raises(InvalidArgumentError, match="'cosched' is for a LogGOPSim noise trace"):
        collkit.simulate("allreduce:rd", 4, noise=f"file({durations},cosched)")
    # Plain durations stay collkit's per-op draws.
    r = collkit.simulate("allreduce:rd", 4, noise=f"file({durations})", seed=1)
    assert r.makespan > collkit.simulate("allreduce:rd", 4).makespan
    with pytest.raises(CollkitError, match="not as skew"):
        collkit.simulate("allreduce:rd", 4, skew=f"file({_trace(tmp_path)})")


def test_noise_trace_on_a_generated_schedule_every_model(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    for model in ("postal", "pipelined-postal", "loggops"):
        quiet = collkit.simulate("allreduce:rd", 16, bytes=8, model=model).makespan
        noisy = collkit.simulate(
            "allreduce:rd", 16, bytes=8, model=model, noise=f"file({trace})", seed=2, trials=3
        )
        assert noisy.makespan > quiet and len(noisy.makespans) == 3
