"""The rows the interposition library writes at MPI_Finalize (COLLKIT_STATS, `collkit run
--stats`): collkit result rows, one per (rank, collective, route, P, bytes), each saying its world
rank at the end of `settings` ("..., world rank 3"). A rank's row holds its own calls and their
time on that rank (a rank that waits for a slower one shows the wait), so the time a program's
ranks spend in collectives is the sum over ranks, and one rank's rows may flatter or wrong it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from collkit.results import Row, read_jsonl

_RANK = re.compile(r"world rank (\d+)$")


def world_rank(row: Row) -> int:
    """The world rank whose calls `row` counts: the number after "world rank" at the end of its
    settings, 0 where it names none."""
    m = _RANK.search(row.settings)
    return int(m.group(1)) if m else 0


def read_stats(path: str | os.PathLike[str], rank: int | None = 0) -> list[Row]:
    """The rows of a stats file: world rank `rank`'s (the default: rank 0's, whose calls every
    rank of a program that calls alike repeats), or every rank's with rank=None."""
    rows = read_jsonl(path)
    return rows if rank is None else [r for r in rows if world_rank(r) == rank]


def time_in_collectives_us(rows: Iterable[Row]) -> dict[int, float]:
    """Per world rank, the time its calls took (calls x mean over its rows), µs."""
    per: dict[int, float] = {}
    for r in rows:
        per[world_rank(r)] = per.get(world_rank(r), 0.0) + r.iterations * r.mean_us
    return per
