"""Golden LogGOPS cross-checks: makespans and event counts of shared schedules, pinned.

collkit's engine was run side by side with LogGOPSim (built from its repository, its
ready-op sort made stable) on GOAL schedules of recursive doubling, Rabenseifner, binomial bcast
and Bruck, P up to 16384, 8 B and 64 KiB, three LogGOPS parameter sets: identical makespans and
event counts. LogGOPSim is not part of collkit, so these tests pin what collkit's engine gives
(tests/golden/sim_loggops.json, written by `python tests/core/test_simulate_golden.py`). A send
that waits out its gap g does not hold its CPU meanwhile, as in LogGOPSim: the values of rd with
g > o and of Rabenseifner at P not a power of two depend on it. Each value at P <= 100 is checked
against tests/loggops_reference.py, a simulator written from the paper's rules, and, where one
exists, against a closed form derived by hand from LogGOPSim's semantics:

- a message of n bytes costs its sender's CPU o (+ (n-1)O), arrives o + L after the send
  starts, and costs its receiver's CPU o + (n-1)max(O, G); a NIC sends again after g + (n-1)G;
  messages above S bytes are rendezvous (the send completes with its receive);
- so one pairwise exchange round (both ranks send, receive, reduce at no cost) takes
  lam(n) = 2o + L + (n-1)G when g + (n-1)G <= lam(n): allreduce:rd on 2^k ranks takes k lam(n);
  Rabenseifner 2 sum_i lam(n / 2^i) (8 B: 2k lam(8), some pair carries the one element every
  round); binomial bcast f(k) = max_j (j d + lam(n) + f(k-1-j)), d = max(o, g + (n-1)G).
Bruck has no closed form here: its values are pinned only.
"""

from __future__ import annotations

import json
import math
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

import collkit
import loggops_reference as ref

GOLDEN = Path(__file__).parents[1] / "golden" / "sim_loggops.json"
PARAMS: dict[str, dict[str, float]] = {
    "fast": {"L": 500, "o": 100, "g": 100, "G": 0, "O": 0, "S": math.inf},
    "loggopsim-defaults": {"L": 2500, "o": 1500, "g": 1000, "G": 6, "O": 0, "S": 65535},
    "rendezvous": {"L": 1000, "o": 200, "g": 300, "G": 0.5, "O": 0, "S": 8192},
}
ALGORITHMS = ["allreduce:rd", "allreduce:rabenseifner", "bcast:binomial", "alltoall:bruck"]
SIZES = [8, 65536]


def cases() -> list[tuple[str, int, int, str]]:
    out = []
    for algo in ALGORITHMS:
        ps = [4, 7, 16, 64, 100, 256] if algo == "alltoall:bruck" else [4, 7, 16, 64, 100, 1024]
        for P in ps:
            for n in SIZES:
                for name in PARAMS:
                    out.append((algo, P, n, name))
    return out


def run(algo: str, P: int, n: int, params: str) -> dict[str, Any]:
    p = {k: ("inf" if v == math.inf else v) for k, v in PARAMS[params].items()}
    r = collkit.simulate(algo, P, bytes=n, model="loggops", **p)  # type: ignore[arg-type]
    return {"makespan_ns": r.makespan, "events": r.events, "messages": r.messages}


def closed_form(algo: str, P: int, n: int, params: str) -> float | None:
    """The makespan by hand (see the module docstring), or None where there is none here."""
    p = PARAMS[params]
    if P & (P - 1) or algo == "alltoall:bruck":
        return None
    k = P.bit_length() - 1

    def lam(m: float) -> float:
        return 2 * p["o"] + p["L"] + max(m - 1, 0) * p["G"]

    if p["g"] + max(n - 1, 0) * p["G"] > lam(n):
        return None
    if algo == "allreduce:rd":
        return k * lam(n)
    if algo == "allreduce:rabenseifner":
        if n == 8:
            return 2 * k * lam(8)
        return 2 * sum(lam(n >> i) for i in range(1, k + 1))
    d = max(p["o"], p["g"] + max(n - 1, 0) * p["G"])

    @lru_cache(None)
    def f(j: int) -> float:
        return 0.0 if j == 0 else max(i * d + lam(n) + f(j - 1 - i) for i in range(j))

    return f(k)


def load() -> dict[str, dict[str, Any]]:
    return dict(json.loads(GOLDEN.read_text()))


def key(algo: str, P: int, n: int, params: str) -> str:
    return f"{algo} P={P} {n}B {params}"


@pytest.mark.parametrize("algo,P,n,params", cases())
def test_golden_makespans_and_event_counts(algo: str, P: int, n: int, params: str) -> None:
    want = load()[key(algo, P, n, params)]
    got = run(algo, P, n, params)
    assert got == want
    cf = closed_form(algo, P, n, params)
    if cf is not None:
        assert got["makespan_ns"] == pytest.approx(cf, rel=1e-12)
    if P <= 100:
        s = collkit.generate(algo, P, max(1, n // 8))
        want_ref = ref.simulate(s.arrays(), s.P, s.elem_size, ref.Params(**PARAMS[params]))
        assert got["makespan_ns"] == pytest.approx(want_ref, rel=1e-12)


def test_closed_forms_cover_every_algorithm_but_bruck() -> None:
    covered = {c[0] for c in cases() if closed_form(*c) is not None}
    assert covered == {"allreduce:rd", "allreduce:rabenseifner", "bcast:binomial"}


if __name__ == "__main__":  # regenerate: only when a change of semantics is intended
    table = {key(*c): run(*c) for c in cases()}
    GOLDEN.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(table)} cases to {GOLDEN}", file=sys.stderr)
