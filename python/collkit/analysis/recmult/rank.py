"""Ranking every schedule of N ranks by its pipelining postal cost."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

from collkit.analysis.recmult.enumerate import DEFAULT_MAX_FANOUT, FAMILIES, factorisations, shells
from collkit.analysis.recmult.model import PipelinedPostal, stage_cost
from collkit.analysis.recmult.stages import Stage


@dataclass(frozen=True)
class Ranked:
    schedule: str
    family: str
    cost: float  # seconds
    stages: int


def rank_schedules(
    N: int,
    model: PipelinedPostal,
    nbytes: int = 0,
    max_fanout: int = DEFAULT_MAX_FANOUT,
    families: Iterable[str] = FAMILIES,
    top: int | None = None,
) -> list[Ranked]:
    """Every schedule of N ranks, cheapest first (ties: fewer stages, descending bases, name)."""
    fcost = {b: stage_cost(Stage("factor", b), model, nbytes) for b in range(2, max_fanout + 2)}
    # Per product of the factor stages: (cost, ascending?, text, stages) of each factorisation,
    # computed once and shared by every shell around it.
    inner: dict[int, list[tuple[float, bool, str, int]]] = {}
    # Sort key: cost (rounded to 1e-15 s: the same bases summed in another order may differ in
    # the last bit), fewer stages, descending bases ([Ruefenacht poster]: the best order on
    # ARCHER), name.
    rows: list[tuple[float, int, bool, str, float, str]] = []
    for family, head, mid, tail in shells(N, max_fanout, families):
        if mid not in inner:
            inner[mid] = [
                (
                    sum([fcost[b] for b in fac]),
                    any(a < b for a, b in pairwise(fac)),
                    ",".join([f"a{b}" for b in fac]),
                    len(fac),
                )
                for fac in factorisations(mid, max_fanout + 1)
            ]
            inner[mid].sort()
        # Only the top cheapest inner factorisations of a shell can be among the top overall
        # (a shell adds one cost to each): the rest, past the top-th cost by more than rounding,
        # are skipped (P = 16384 took 61 s; every shell times every factorisation).
        cands = inner[mid]
        if top is not None and len(cands) > top:
            limit = cands[top - 1][0] + 1e-12
            cands = [x for x in cands if x[0] <= limit]
        if head is None or tail is None:
            for cost, asc, text, n in cands:
                rows.append((round(cost, 15), n, asc, text, cost, family))
            continue
        outer = stage_cost(head, model, nbytes) + stage_cost(tail, model, nbytes)
        h, t = head.text, tail.text
        for cost, asc, text, n in cands:
            c = outer + cost
            full = f"{h},{text},{t}" if text else f"{h},{t}"
            rows.append((round(c, 15), n + 2, asc, full, c, family))
    best = sorted(rows) if top is None else heapq.nsmallest(top, rows)
    return [Ranked(text, family, cost, n) for _, n, _, text, cost, family in best]
