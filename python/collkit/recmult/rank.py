"""Ranking every schedule of N ranks by its pipelining postal cost."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

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
    """Every schedule of N ranks, cheapest first (ties: fewer stages, then by name)."""
    fcost = {b: stage_cost(Stage("factor", b), model, nbytes) for b in range(2, max_fanout + 2)}
    outer: dict[Stage, float] = {}
    rows: list[Ranked] = []
    for family, head, fac, tail in structures(N, max_fanout, families):
        cost = 0.0
        for s in (head, tail):
            if s is not None:
                if s not in outer:
                    outer[s] = stage_cost(s, model, nbytes)
                cost += outer[s]
        cost += sum(fcost[b] for b in fac)
        n_stages = len(fac) + (2 if head is not None else 0)
        rows.append(Ranked(text_of(head, fac, tail), family, cost, n_stages))
    rows.sort(key=lambda r: (r.cost, r.stages, r.schedule))
    return rows if top is None else rows[:top]
