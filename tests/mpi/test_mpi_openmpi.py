"""collkit's executor on Debian's Open MPI (`mpirun --oversubscribe`), against Open MPI's own
allreduce, with its tuned algorithms forced one by one as the reference too. Skipped with a
reason when Open MPI is not installed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from collkit.mpi import MPI
from collkit.mpi.openmpi import ALGORITHMS as OPENMPI_ALGORITHMS
from mpi_support import built, openmpi_or_skip, run_program


@pytest.fixture(scope="module")
def openmpi() -> tuple[MPI, Path]:
    mpi = openmpi_or_skip()
    return mpi, built(mpi)


def failures_of(out: str) -> int:
    m = re.search(r"SUMMARY P=\d+ cases=(\d+) failures=(\d+)", out)
    assert m, f"no summary in output:\n{out[-3000:]}"
    assert int(m.group(1)) > 0
    return int(m.group(2))


@pytest.mark.parametrize("P", [1, 2, 3, 5, 8])
def test_allreduce_rd_matches_open_mpi(openmpi: tuple[MPI, Path], P: int) -> None:
    mpi, bindir = openmpi
    r = run_program(
        mpi, bindir, P, "collkit_conformance", "--algos", "allreduce:rd", "--counts", "0,1,13,1009"
    )
    assert failures_of(r.stdout) == 0 and r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]


@pytest.mark.parametrize("algo", sorted(OPENMPI_ALGORITHMS["allreduce"]))
def test_reference_is_each_forced_open_mpi_algorithm(openmpi: tuple[MPI, Path], algo: str) -> None:
    mpi, bindir = openmpi
    env = mpi.force_env("allreduce", f"ompi:{algo}")
    r = run_program(mpi, bindir, 5, "collkit_conformance", "--counts", "0,1,7,1009", env=env)
    # The non-commutative case is checked against the rank-ordered product computed in the
    # program, so an Open MPI algorithm that ignores commutativity (ring) cannot fail collkit.
    assert failures_of(r.stdout) == 0 and r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
