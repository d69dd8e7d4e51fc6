"""Finding the model-optimal schedule for large N ([Ruefenacht 2017] §8: "evaluating schedules
using an
efficient heuristic would be required for large-scale computers").

Enumeration is infeasible past a few thousand ranks (N = 1024 alone has ~61,000 schedules), but
the pipelining postal cost of a schedule is a sum of stage costs that does not depend on the
order of the factor stages. So the search works on multisets of bases, by dynamic programming
over the divisors: best[m] = min over bases B | m of cost(aB) + best[m / B], relaxed for all
m <= N at once with numpy, then

* split:  min over B, T of cost(cTmB) + cost(eTmB) + best[N - T + T/B],
* merged: min over R, B1, Bs of cost(mRgG1aB1) + cost(nRgGsaBs) + best[(N - R) / (B1 Bs)],

under the same fan-out limit as the enumeration. The result is the exhaustive optimum under the
model (tests/test_rm_search.py checks it against enumeration for every N <= 256); the
factors are written in descending order, the order [Ruefenacht poster] found best on ARCHER. What
it cannot
know is what the model leaves out (skew, congestion): rank its neighbours by simulation.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from collkit.analysis.recmult.enumerate import (
    DEFAULT_MAX_FANOUT,
    FAMILIES,
    check_space,
    text_of,
    useful_fanout,
)
from collkit.analysis.recmult.model import PipelinedPostal, stage_cost
from collkit.analysis.recmult.stages import Stage
from collkit.errors import InvalidArgumentError

MAX_SEARCH_N = 1 << 27  # arrays of N + 1 floats: 1 GiB at this bound
# Python-level steps (pairs of merged bases, factor bases) a search may take: ~4 s at N = 10^4
# with any fan-out; a fan-out near N = 10^5 would take ~1 min, 10^6 hours.
MAX_SEARCH_STEPS = 200_000


def _steps(N: int, f: int) -> int:
    """The search's Python-level steps at N ranks and fan-out f (counted up to the bound)."""
    n = min(f + 1, N)
    for b1 in range(2, min(f, (N - 1) // 2) + 1):
        n += max(0, min(f + 1, (N - 1) // b1) - 1)
        if n > MAX_SEARCH_STEPS:
            break
    return n


@dataclass(frozen=True)
class SearchResult:
    N: int
    schedule: str
    family: str
    cost: float  # seconds, pipelining postal model
    candidates: int  # (family, outer stages) combinations costed
    seconds: float


def _factored_table(
    N: int, model: PipelinedPostal, nbytes: int, max_base: int
) -> tuple[np.ndarray, np.ndarray]:
    best = np.full(N + 1, np.inf)
    best[1] = 0.0
    choice = np.zeros(N + 1, dtype=np.int32)
    cost = {b: stage_cost(Stage("factor", b), model, nbytes) for b in range(2, max_base + 1)}
    changed = True
    while changed:  # one pass per stage of the longest optimal factorisation
        changed = False
        for b in range(2, min(max_base, N) + 1):
            idx = np.arange(b, N + 1, b)
            cand = best[idx // b] + cost[b]
            better = cand < best[idx] * (1 - 1e-12)
            if better.any():
                best[idx[better]] = cand[better]
                choice[idx[better]] = b
                changed = True
    return best, choice


def _bases(m: int, choice: np.ndarray) -> tuple[int, ...]:
    out = []
    while m > 1:
        b = int(choice[m])
        out.append(b)
        m //= b
    return tuple(sorted(out, reverse=True))


def search(
    N: int,
    model: PipelinedPostal,
    nbytes: int = 0,
    max_fanout: int = DEFAULT_MAX_FANOUT,
    families: Iterable[str] = FAMILIES,
) -> SearchResult:
    """The cheapest schedule for N ranks under the pipelining postal model."""
    fams = check_space(N, max_fanout, families, MAX_SEARCH_N)
    t0 = time.perf_counter()
    f = useful_fanout(N, max_fanout)
    if _steps(N, f) > MAX_SEARCH_STEPS:
        raise InvalidArgumentError(
            f"fan-out {max_fanout} at N = {N}: the search would try more than "
            f"{MAX_SEARCH_STEPS} pairs of bases (minutes to hours); give a smaller maximum "
            f"fan-out (default {DEFAULT_MAX_FANOUT})"
        )
    best, choice = _factored_table(N, model, nbytes, f + 1)
    cand: list[tuple[float, str, Stage | None, int, Stage | None]] = []
    evaluated = 0
    if "factored" in fams and np.isfinite(best[N]):
        cand.append((float(best[N]), "factored", None, N, None))
        evaluated += 1
    if "split" in fams:
        for B in range(2, f + 2):
            k = np.arange(1, N // B + 1)
            if k.size == 0:
                continue
            inner = N - k * (B - 1)
            total = best[inner]
            i = int(np.argmin(total))
            evaluated += k.size
            if np.isfinite(total[i]):
                T = int(k[i]) * B
                c, e = Stage("collapse", B, threshold=T), Stage("expand", B, threshold=T)
                extra = stage_cost(c, model, nbytes) + stage_cost(e, model, nbytes)
                cand.append((float(total[i]) + extra, "split", c, int(inner[i]), e))
    if "merged" in fams and N >= 5:
        per_msg = model.alpha_r + nbytes * model.beta
        g = nbytes * model.gamma
        for b1 in range(2, min(f, (N - 1) // 2) + 1):
            for bs in range(2, min(f + 1, (N - 1) // b1) + 1):
                # The inner sizes N - R (R in 1..N-4) that B1·Bs divides, R ascending: only
                # those, not every R (a fan-out near N makes ~N log N pairs of bases).
                inn = np.arange(b1 * bs, N, b1 * bs)[::-1]
                inn = inn[inn >= 4]
                if inn.size == 0:
                    continue
                r = N - inn
                k1 = -(-r // (inn // b1))
                ks = -(-r // (inn // bs))
                fan = (bs - 1 + ks) <= f
                r, inn, k1, ks = r[fan], inn[fan], k1[fan], ks[fan]
                if r.size == 0:
                    continue
                evaluated += r.size
                total = (
                    2 * model.alpha_p
                    + b1 * per_msg
                    + (b1 - 1 + k1) * g
                    + (bs - 1 + ks) * per_msg
                    + (bs - 1) * g
                    + best[inn // (b1 * bs)]
                )
                i = int(np.argmin(total))
                if np.isfinite(total[i]):
                    Ri, ni = int(r[i]), int(inn[i])
                    m = Stage("merge", b1, remainder=Ri, groups=ni // b1, mask=1)
                    n = Stage("invmerge", bs, remainder=Ri, groups=ni // bs, mask=ni // bs)
                    cand.append((float(total[i]), "merged", m, ni // (b1 * bs), n))
    if not cand:
        raise InvalidArgumentError(
            f"no schedule for N = {N} with fan-out <= {f} in families {', '.join(fams)}"
        )
    cost, family, head, mid, tail = min(cand, key=lambda x: x[0])
    text = text_of(head, _bases(mid, choice), tail)
    return SearchResult(N, text, family, cost, evaluated, time.perf_counter() - t0)
