"""Process placement in benchmark campaigns: the launcher arguments per MPI, the
allocation recorded in each row, and collkit fit reading it back as the placement."""

from __future__ import annotations

from pathlib import Path

import pytest

from collkit import fit as F
from collkit.bench import Campaign, run_campaign
from collkit.errors import InvalidArgumentError, UnsupportedError
from collkit.mpi import MPI, Mpich, OpenMpi, launch_command, placement_args
from collkit.results import ResultStore
from mpi_support import mpich_or_skip


def _mpi(kind: str) -> MPI:
    cls = {"mpich": Mpich, "openmpi": OpenMpi}.get(kind, MPI)
    return cls(mpicxx="mpicxx", mpiexec="mpiexec", version=f"{kind} test")


def test_placement_arguments_per_mpi() -> None:
    assert placement_args(_mpi("mpich"), "") == []
    assert placement_args(_mpi("mpich"), "socket") == ["-map-by", "socket", "-bind-to", "core"]
    assert placement_args(_mpi("mpich"), "node") == ["-ppn", "1"]
    assert placement_args(_mpi("openmpi"), "node") == ["--map-by", "node", "--bind-to", "core"]
    cmd = launch_command(_mpi("mpich"), 4, ["prog"], map_by="core")
    assert cmd[:5] == ["mpiexec", "-map-by", "core", "-bind-to", "core"]
    assert cmd[-3:] == ["-n", "4", "prog"]


def test_bad_placements_are_clear_errors() -> None:
    with pytest.raises(InvalidArgumentError):
        placement_args(_mpi("mpich"), "rack")
    with pytest.raises(UnsupportedError):
        placement_args(_mpi("other"), "core")
    with pytest.raises(InvalidArgumentError):
        Campaign(collective="bcast", algorithms=["linear"], P=[2], sizes=[8], placements=["x"])
    with pytest.raises(InvalidArgumentError):
        Campaign(collective="bcast", algorithms=["linear"], P=[2], sizes=[8], placements=[])


def test_campaign_sweeps_placements_and_rows_record_them(tmp_path: Path) -> None:
    mpi = mpich_or_skip()
    c = Campaign(
        collective="bcast",
        algorithms=["binomial"],
        P=[2],
        sizes=[8],
        iterations=5,
        warmup=1,
        placements=["", "core", "socket"],
    )
    store = ResultStore(tmp_path / "rows.jsonl")
    rows = run_campaign(c, mpi, store)
    assert len(rows) == 3 and all(r.valid for r in rows)
    assert [r.allocation.rpartition(", ")[2] for r in rows[1:]] == ["map-by core", "map-by socket"]
    assert list(F.frame(rows)["allocation"]) == ["core", "core", "socket"]
