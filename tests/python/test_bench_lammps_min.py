"""benchmarks/lammps_min.py without LAMMPS or MPI: the prediction of tuned / native from the
table's per-call gains and a native run's calls."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import lammps_min as lm


def rule(lo: int, hi: int, us: float, native_us: float, p: tuple[int, int] = (2, 2)) -> dict:
    return {
        "collective": "allreduce",
        "P": list(p),
        "bytes": [lo, hi],
        "algorithm": "allreduce:rd",
        "median_us": us,
        "native_median_us": native_us,
    }


TABLE = {"rules": [rule(4, 7, 0.3, 0.5), rule(8, 31, 0.4, 0.6), rule(4, 64, 0.0, 9.0, (3, 8))]}
# 1,000 calls of 4 B and 500 of 16 B in 2,000 us; 10 of 40 B (no rule at P = 2).
NATIVE = {
    "colls_us": 2000.0,
    "allreduce": {"4": [1000, 900.0], "16": [500, 600.0], "40": [10, 5.0]},
}


def test_prediction_takes_each_routed_size_gain_times_its_calls() -> None:
    # saved: 1000 x 0.2 + 500 x 0.2 = 300 us of 2000
    assert lm.predicted_ratio(NATIVE, TABLE, 2) == pytest.approx(1700 / 2000)


def test_a_free_call_saves_the_native_cost_of_every_routed_call() -> None:
    # saved: 1000 x 0.5 + 500 x 0.6 = 800 us; the P = 3..8 rule does not apply at P = 2
    assert lm.predicted_ratio(NATIVE, TABLE, 2, free=True) == pytest.approx(1200 / 2000)


def test_rules_of_other_sizes_and_p_do_not_apply() -> None:
    assert lm.rule_for(TABLE, "allreduce", 40, 2) is None
    assert lm.rule_for(TABLE, "bcast", 4, 2) is None
    assert lm.rule_for(TABLE, "allreduce", 40, 4) is TABLE["rules"][2]


def test_a_rule_without_timings_saves_nothing() -> None:
    table = {"rules": [dict(rule(4, 31, 0.3, 0.5), median_us=None)]}
    assert lm.predicted_ratio(NATIVE, table, 2) == pytest.approx(1.0)
