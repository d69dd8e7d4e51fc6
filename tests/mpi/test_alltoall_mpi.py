"""All-to-all through collkit's MPI executor against the MPI's own MPI_Alltoall, on random bytes
(mpi/tests/check_alltoall.cpp), for every variant, P = 1..8 and blocks of 0 B, 1 B, 7 B, 4 KiB
and 1 MiB (oversubscribed on a small machine)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from collkit.mpi import MPI
from mpi_support import built, mpich_or_skip, run_program

NAMES = [
    "alltoall:linear",
    "alltoall:pairwise",
    "alltoall:bruck",
    "alltoall:bruck(r=3)",
    "alltoall:bruck(r=4)",
    "alltoall:bruck(r=auto)",
    "alltoall:bruck_modified",
    "alltoall:bruck_modified(r=3)",
    "alltoall:bruck_modified(r=8)",
]
BLOCKS = "0,1,7,4096,1048576"


@pytest.fixture(scope="module")
def mpich() -> tuple[MPI, Path]:
    mpi = mpich_or_skip()
    return mpi, built(mpi)


@pytest.mark.parametrize("P", range(1, 9))
def test_every_variant_matches_native_alltoall(mpich: tuple[MPI, Path], P: int) -> None:
    mpi, bindir = mpich
    r = run_program(mpi, bindir, P, "collkit_check_alltoall", ";".join(NAMES), BLOCKS)
    m = re.search(r"SUMMARY P=\d+ cases=(\d+) failures=(\d+)", r.stdout)
    assert m, r.stdout[-3000:] + r.stderr[-3000:]
    assert r.returncode == 0 and int(m.group(2)) == 0, r.stdout[-3000:]
    assert int(m.group(1)) == len(NAMES) * len(BLOCKS.split(","))
    assert r.stdout.count(" ok\n") == int(m.group(1))
