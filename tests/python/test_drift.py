"""collkit.drift and the win rule of collkit.tune.select on an injected drifting machine: a fake
clock whose load (and core-to-core probe) changes mid-campaign, measured the old way (one
algorithm after another) and interleaved (native around every candidate, in rounds). No drift may
make a winner; a real win must still be found."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from collkit.drift import (
    MAX_SPEEDUP,
    Block,
    attach_rounds,
    compared_rounds,
    probes_agree,
    rounds_won,
    suspect_reason,
)
from collkit.results import ResultStore, Row, read_jsonl
from collkit.tune import choose

ITERS = 30  # per block


class FakeMachine:
    """A machine with a clock: each call of an algorithm whose true cost is `us` takes
    us x slowdown(now) (with 3% noise) and advances the clock; the core-to-core probe reads
    probe_ns(now)."""

    def __init__(
        self,
        slowdown: Callable[[float], float],
        probe_ns: Callable[[float], float] = lambda t: 115.0,
        seed: int = 0,
    ) -> None:
        self.now = 0.0
        self.slowdown = slowdown
        self.probe_ns = probe_ns
        self.rng = np.random.default_rng(seed)

    def block(self, us: float | Callable[[float], float], n: int = ITERS) -> list[float]:
        out = []
        for _ in range(n):
            cost = us(self.probe_ns(self.now)) if callable(us) else us
            t = cost * self.slowdown(self.now) * float(self.rng.normal(1.0, 0.03))
            out.append(t)
            self.now += t
        return out

    def probe(self) -> float:
        return self.probe_ns(self.now) * float(self.rng.normal(1.0, 0.02))


Costs = dict[str, "float | Callable[[float], float]"]


def sequential(m: FakeMachine, costs: Costs, nbytes: int = 8) -> list[Row]:
    """Today's main: native's row, then each candidate's, one after another."""
    rows = []
    for algo, us in costs.items():
        s = m.block(us, 3 * ITERS)
        rows.append(Row("allreduce", algo, 2, nbytes, samples=s, median_us=float(np.median(s))))
    return rows


def interleaved(m: FakeMachine, costs: Costs, rounds: int = 3, nbytes: int = 8) -> list[Row]:
    """What the bench driver does with --interleave: per round N c1 N c2 ... N, a probe around
    every block; rows assembled from the blocks as collkit.bench does."""
    names = [a for a in costs if a != "native"]
    order = []
    for r in range(rounds):
        for a in names:
            order += [("native", r), (a, r)]
        order.append(("native", r))
    blocks: list[Block] = []
    samples: dict[str, list[float]] = {a: [] for a in costs}
    for a, r in order:
        before = m.probe()
        s = m.block(costs[a])
        after = m.probe()
        samples[a] += s
        blocks.append(Block(a, nbytes, r, float(np.median(s)), before, after))
    rows = []
    for a in costs:
        row = Row(
            "allreduce",
            a,
            2,
            nbytes,
            samples=samples[a],
            median_us=float(np.median(samples[a])),
            interleaved=True,
        )
        attach_rounds(row, blocks)
        row.suspect = suspect_reason(row) if a != "native" else ""
        rows.append(row)
    return rows


def winners(rows: list[Row]) -> list[str]:
    return [c.collkit.algorithm for c in choose(rows) if c.collkit is not None]


def hog_until(t_stop: float, factor: float = 20.0) -> Callable[[float], float]:
    """A CPU hog that slows everything `factor` times until t_stop (µs), then stops."""
    return lambda t: factor if t < t_stop else 1.0


# The same true cost: no candidate is really faster than native.
EQUAL: Costs = {"native": 2.0, "allreduce:rd": 2.0, "allreduce:ring": 2.1}


def test_a_hog_that_stops_after_native_makes_a_false_winner_the_old_way_only() -> None:
    # The hog stops after native's row (~90 calls x 40 µs): the old way, every candidate is
    # measured on a quiet machine against a native measured under load (docs/tuning.md's 5,338x).
    old = sequential(FakeMachine(hog_until(3600.0)), EQUAL)
    assert old[1].median_us < old[0].median_us / 10  # the drift the old way compares
    new_rows = interleaved(FakeMachine(hog_until(3600.0)), EQUAL)
    assert winners(new_rows) == []
    # The round in which the load changed is caught: native moved around the candidate.
    rd = next(r for r in new_rows if r.algorithm == "allreduce:rd")
    assert rd.suspect and "native moved" in rd.suspect


@pytest.mark.parametrize("t_stop", [500.0, 1500.0, 3000.0, 4500.0, 6000.0, 8000.0])
def test_no_false_winner_wherever_the_load_changes(t_stop: float) -> None:
    for seed in range(3):
        rows = interleaved(FakeMachine(hog_until(t_stop), seed=seed), EQUAL)
        assert winners(rows) == [], (t_stop, seed)


def test_a_hog_started_mid_campaign_makes_no_winner() -> None:
    def started(t: float) -> float:
        return 1.0 if t < 800.0 else 15.0

    rows = interleaved(FakeMachine(started), EQUAL)
    assert winners(rows) == []


def test_the_old_rule_would_take_the_drifted_rows() -> None:
    """The statistics alone (today's main) call the drifted comparison a win: p tiny, CI far
    above 1. What stops it now is that the rows were not interleaved."""
    rows = sequential(FakeMachine(hog_until(3600.0)), EQUAL)
    (c,) = choose(rows)
    rd = next(x for x in c.candidates if x.algorithm == "allreduce:rd")
    assert rd.p_value < 1e-6 and rd.ci95[0] > 5 and not rd.interleaved
    assert c.collkit is None


def probe_flip(t_flip: float) -> Callable[[float], float]:
    """The VM moves the two ranks' cores apart at t_flip: ~115 ns -> ~510 ns round trip."""
    return lambda t: 115.0 if t < t_flip else 510.0


def test_blocks_whose_probes_disagree_are_not_compared() -> None:
    # The candidate is 0.5x native while the cores are close, 1.48x when they are far apart
    # (as MPICH's 1 MiB reduce on a VM, docs/tuning.md); the placement flips mid-campaign.
    costs: Costs = {
        "native": 10.0,
        "allreduce:rd": lambda probe_ns: 20.0 if probe_ns < 300 else 10.0 / 1.48,
    }
    for t_flip in (1500.0, 2000.0, 2600.0):
        rows = interleaved(FakeMachine(lambda t: 1.0, probe_flip(t_flip)), costs)
        rd = next(r for r in rows if r.algorithm == "allreduce:rd")
        # The round that straddles the flip is not compared.
        assert len(compared_rounds(rd)) < len(rd.round_median_us), t_flip
        # It lost the rounds before the flip: no winner from mixing the two states.
        assert winners(rows) == [], t_flip
    # The flip during the first native block: only the rounds after it are compared, all in the
    # far state, where rd really is faster; the round of the flip does not count against it.
    rows = interleaved(FakeMachine(lambda t: 1.0, probe_flip(300.0)), costs)
    rd = next(r for r in rows if r.algorithm == "allreduce:rd")
    assert compared_rounds(rd) == [1, 2] and rounds_won(rd) == [True, True]


def test_a_real_win_is_found_under_steady_noise_and_slow_drift() -> None:
    costs: Costs = {"native": 10.0, "allreduce:rd": 7.0, "allreduce:ring": 10.5}
    assert winners(interleaved(FakeMachine(lambda t: 1.0), costs)) == ["allreduce:rd"]
    # The load grows slowly (1x -> 1.3x over the campaign): every round still compares like with
    # like, and the win holds in each.
    ramp = interleaved(FakeMachine(lambda t: 1.0 + 0.3 * min(t / 3000.0, 1.0)), costs)
    assert winners(ramp) == ["allreduce:rd"]
    rd = next(r for r in ramp if r.algorithm == "allreduce:rd")
    assert rounds_won(rd) == [True, True, True] and rd.suspect == ""


def test_a_speedup_beyond_the_models_is_suspect_and_never_wins() -> None:
    costs: Costs = {"native": 10.0, "allreduce:rd": 10.0 / (2 * MAX_SPEEDUP)}
    rows = interleaved(FakeMachine(lambda t: 1.0), costs)
    rd = next(r for r in rows if r.algorithm == "allreduce:rd")
    assert "beyond what the models allow" in rd.suspect
    assert winners(rows) == []


def test_a_win_must_hold_in_every_round() -> None:
    # rd is faster on average (pooled samples clearly faster) but loses one round.
    rows = interleaved(FakeMachine(lambda t: 1.0), {"native": 10.0, "allreduce:rd": 7.0})
    rd = next(r for r in rows if r.algorithm == "allreduce:rd")
    rd.round_median_us[1] = 11.0
    assert rounds_won(rd) == [True, False, True]
    assert winners(rows) == []


def test_probe_agreement() -> None:
    assert probes_agree(115, 160) and not probes_agree(115, 510)
    assert probes_agree(math.nan, math.nan)  # one rank per node: no probe to disagree


def test_a_resumed_campaign_keeps_the_rule(tmp_path: Path) -> None:
    """Rows written and read back decide alike: the drifted campaign stays without a winner and
    the suspect reason survives the file."""
    store = ResultStore(tmp_path / "tune.jsonl")
    for r in interleaved(FakeMachine(hog_until(3600.0)), EQUAL):
        store.append(r)
    back = read_jsonl(tmp_path / "tune.jsonl")
    assert winners(back) == []
    rd = next(r for r in back if r.algorithm == "allreduce:rd")
    assert rd.suspect and rd.interleaved and len(rd.round_native_before_us) == 3
    # A re-measurement (attempt 1) that is clean replaces the suspect row in the decision.
    again = interleaved(FakeMachine(lambda t: 1.0, seed=5), {"native": 10.0, "allreduce:rd": 7.0})
    for r in again:
        r.attempt = 1
        store.append(r)
    assert winners(read_jsonl(tmp_path / "tune.jsonl")) == ["allreduce:rd"]
