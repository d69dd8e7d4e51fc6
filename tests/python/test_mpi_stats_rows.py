"""collkit.mpi.stats: the interposition library's rows, one set per world rank (the rank said at
the end of `settings`), read per rank and summed per rank."""

from __future__ import annotations

from pathlib import Path

import pytest

from collkit.mpi.stats import read_stats, time_in_collectives_us, world_rank
from collkit.results import Row, row_to_json


def row(rank: int | None, calls: int, mean: float, nbytes: int = 8) -> Row:
    where = "" if rank is None else f", world rank {rank}"
    return Row(
        collective="allreduce", algorithm="allreduce:rd", P=2, bytes=nbytes, iterations=calls,
        mean_us=mean, settings=f"interposed by libcollkit_pmpi, COLLKIT_TUNING=t.json{where}",
    )  # fmt: skip


def test_the_rank_is_read_from_settings() -> None:
    assert world_rank(row(0, 1, 1.0)) == 0
    assert world_rank(row(13, 1, 1.0)) == 13
    assert world_rank(row(None, 1, 1.0)) == 0  # a row that names no rank is rank 0's


def test_rank_zero_by_default_every_rank_on_request(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    rows = [row(0, 10, 1.0), row(0, 5, 2.0, 16), row(1, 10, 3.0), row(1, 5, 4.0, 16)]
    path.write_text("".join(row_to_json(r) + "\n" for r in rows))
    assert [r.mean_us for r in read_stats(path)] == [1.0, 2.0]
    assert [r.mean_us for r in read_stats(path, rank=1)] == [3.0, 4.0]
    assert len(read_stats(path, rank=None)) == 4
    # calls x mean per rank: rank 0 10 + 10, rank 1 30 + 20
    assert time_in_collectives_us(read_stats(path, rank=None)) == pytest.approx({0: 20, 1: 50})
