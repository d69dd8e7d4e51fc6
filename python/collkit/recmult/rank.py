"""Ranking every schedule of N ranks by its pipelining postal cost."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

from collkit.recmult.enumerate import DEFAULT_MAX_FANOUT, FAMILIES, structures, text_of
from collkit.recmult.model import PipelinedPostal, stage_cost
from collkit.recmult.stages import Stage


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
    outer: dict[Stage | None, float] = {None: 0.0}
    # Sort key: cost (rounded to 1e-15 s: the same bases summed in another order may differ in
    # the last bit), fewer stages, descending bases (seed 000: the best order on ARCHER), name.
    rows: list[tuple[float, int, bool, str, float, str]] = []
    for family, head, fac, tail in structures(N, max_fanout, families):
        if head not in outer:
            outer[head] = stage_cost(head, model, nbytes)  # type: ignore[arg-type]
        if tail not in outer:
            outer[tail] = stage_cost(tail, model, nbytes)  # type: ignore[arg-type]
        cost = outer[head] + outer[tail] + sum([fcost[b] for b in fac])
        n_stages = len(fac) + (2 if head is not None else 0)
        ascending = any(a < b for a, b in pairwise(fac))
        rows.append((round(cost, 15), n_stages, ascending, text_of(head, fac, tail), cost, family))
    best = sorted(rows) if top is None else heapq.nsmallest(top, rows)
    return [Ranked(text, family, cost, n) for _, n, _, text, cost, family in best]
