"""The irregular collectives (allgatherv, alltoallv, gatherv, scatterv, reduce_scatter, scan,
exscan) through collkit's C API, against the MPI's own calls, on both MPIs: every registered
algorithm of theirs, random count vectors with zeros, displacements with gaps (which both calls
must leave alone), MPI_IN_PLACE where MPI allows it, and a non-commutative user op for the
reductions (tests/programs/mpi4py_irregular.py, through collkit.mpi's mpi4py face)."""

from __future__ import annotations

import json
import random

import pytest
from test_mpi4py_face import PROGRAMS, _mpich_mpi4py, _openmpi_mpi4py, run

from collkit.algorithms import algorithms
from collkit.mpi import MPI

IRREGULAR = ("allgatherv", "alltoallv", "gatherv", "scatterv", "reduce_scatter", "scan", "exscan")


@pytest.fixture(scope="module", params=["mpich", "openmpi"])
def mpi4py_on(request: pytest.FixtureRequest) -> tuple[MPI, dict[str, str]]:
    return _mpich_mpi4py() if request.param == "mpich" else _openmpi_mpi4py()


def names() -> list[str]:
    """Every registered algorithm of the irregular collectives, at its defaults."""
    return [str(a["name"]) for c in IRREGULAR for a in algorithms(c)]


@pytest.mark.parametrize("P", [3, 4])
def test_irregular_collectives_match_the_mpi(mpi4py_on: tuple[MPI, dict[str, str]], P: int) -> None:
    mpi, env = mpi4py_on
    algos = names()
    assert algos, "no algorithm of the irregular collectives is registered"
    seed = random.SystemRandom().randrange(1 << 31)  # new draws each run; the seed to rerun it
    r = run(mpi, env, P, str(PROGRAMS / "mpi4py_irregular.py"), json.dumps(algos), str(seed))
    assert r.returncode == 0 and f"SUMMARY P={P} " in r.stdout and "failures=0" in r.stdout, (
        f"seed {seed}\n" + r.stdout[-3000:] + r.stderr[-3000:]
    )
    # Every call was collkit's (blocking calls whose counts agree: nothing to decline).
    assert "DECLINED 0 " in r.stdout, r.stdout[-3000:]


@pytest.mark.parametrize("P", [2, 3])
def test_alternating_vectors_of_one_total(mpi4py_on: tuple[MPI, dict[str, str]], P: int) -> None:
    """alltoallv and allgatherv calls alternating two count vectors of the same total on the same
    buffers: each call's result is the MPI's for its own vector (no plan of the other reused)."""
    mpi, env = mpi4py_on
    algos = [str(a["name"]) for c in ("alltoallv", "allgatherv") for a in algorithms(c)]
    r = run(mpi, env, P, str(PROGRAMS / "mpi4py_alternating.py"), json.dumps(algos))
    cases = 8 * len(algos)
    assert r.returncode == 0 and f"SUMMARY P={P} cases={cases} failures=0" in r.stdout, (
        r.stdout[-3000:] + r.stderr[-3000:]
    )
