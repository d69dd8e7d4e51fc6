"""Ranking every schedule of N ranks by its pipelining postal cost."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from collkit.analysis.recmult.enumerate import (
    DEFAULT_MAX_FANOUT,
    FAMILIES,
    check_space,
    factorisations,
    shells,
    useful_fanout,
)
from collkit.analysis.recmult.model import PipelinedPostal, stage_cost
from collkit.analysis.recmult.search import _factored_table
from collkit.analysis.recmult.stages import Stage


@dataclass(frozen=True)
class Ranked:
    schedule: str
    family: str
    cost: float  # seconds
    stages: int


# (rounded cost, stages, ascending?, text, cost, family): the sort key and the row.
_Row = tuple[float, int, bool, str, float, str]


def rank_schedules(
    N: int,
    model: PipelinedPostal,
    nbytes: int = 0,
    max_fanout: int = DEFAULT_MAX_FANOUT,
    families: Iterable[str] = FAMILIES,
    top: int | None = None,
) -> list[Ranked]:
    """Every schedule of N ranks, cheapest first (ties: fewer stages, descending bases, name);
    with `top`, the first `top` of that same order, found without listing every schedule.

    With `top`, each shell (outer stages around a product `mid`) is first bounded below by its
    outer stages' cost plus the cheapest factorisation of `mid` (search's table, every m <= N
    at once); shells are opened cheapest bound first, and the walk stops at the first bound
    above the top-th cost found (by more than rounding): no later shell can hold one of the
    top. The result is the exhaustive ranking's first `top` rows (tests/core/test_rm_rank.py
    compares them), at N = 65536 in seconds where listing every shell took minutes."""
    check_space(N, max_fanout, families)
    max_fanout = useful_fanout(N, max_fanout)
    fcost = {b: stage_cost(Stage("factor", b), model, nbytes) for b in range(2, max_fanout + 2)}
    # Per product of the factor stages: (cost, ascending?, text, stages) of each factorisation,
    # computed once and shared by every shell around it.
    inner: dict[int, list[tuple[float, bool, str, int]]] = {}

    def factorings(mid: int) -> list[tuple[float, bool, str, int]]:
        if mid not in inner:
            inner[mid] = sorted(
                (
                    sum([fcost[b] for b in fac]),
                    any(a < b for a, b in pairwise(fac)),
                    ",".join([f"a{b}" for b in fac]),
                    len(fac),
                )
                for fac in factorisations(mid, max_fanout + 1)
            )
        return inner[mid]

    # Sort key: cost (rounded to 1e-15 s: the same bases summed in another order may differ in
    # the last bit), fewer stages, descending bases ([Ruefenacht poster]: the best order on
    # ARCHER), name.
    rows: list[_Row] = []

    def add(family: str, outer: float, head: Stage | None, mid: int, tail: Stage | None) -> None:
        cands = factorings(mid)
        # Only the top cheapest inner factorisations of a shell can be among the top overall
        # (a shell adds one cost to each): the rest, past the top-th cost by more than rounding,
        # are skipped.
        if top is not None and len(cands) > top:
            limit = cands[top - 1][0] + 1e-12
            cands = [x for x in cands if x[0] <= limit]
        if head is None or tail is None:
            for cost, asc, text, n in cands:
                rows.append((round(cost, 15), n, asc, text, cost, family))
            return
        h, t = head.text, tail.text
        for cost, asc, text, n in cands:
            c = outer + cost
            full = f"{h},{text},{t}" if text else f"{h},{t}"
            rows.append((round(c, 15), n + 2, asc, full, c, family))

    def outer_cost(head: Stage | None, tail: Stage | None) -> float:
        if head is None or tail is None:
            return 0.0
        return stage_cost(head, model, nbytes) + stage_cost(tail, model, nbytes)

    if top is None:
        for family, head, mid, tail in shells(N, max_fanout, families):
            add(family, outer_cost(head, tail), head, mid, tail)
        return [Ranked(text, fam, cost, n) for _, n, _, text, cost, fam in sorted(rows)]
    if top < 1:
        return []
    best, _ = _factored_table(N, model, nbytes, max_fanout + 1)
    finite = np.isfinite(best)
    bounded = []
    for i, (family, head, mid, tail) in enumerate(
        shells(N, max_fanout, families, keep=lambda m: bool(finite[m]))
    ):
        outer = outer_cost(head, tail)
        bounded.append((outer + float(best[mid]), i, family, outer, head, mid, tail))
    bounded.sort(key=lambda x: (x[0], x[1]))
    for bound, _, family, outer, head, mid, tail in bounded:
        if len(rows) >= top:
            rows = heapq.nsmallest(top, rows)
            if bound > rows[-1][4] + 1e-12:
                break
        add(family, outer, head, mid, tail)
    return [Ranked(text, fam, cost, n) for _, n, _, text, cost, fam in heapq.nsmallest(top, rows)]
