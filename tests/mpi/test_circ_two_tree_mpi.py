"""The circulant-graph and two-tree algorithms on MPICH (the PyPI wheel) at P = 2..4: through the
executor against MPICH's own calls (collkit_conformance: every type and op, in place, counts
that cut into several chunks), and once through the interposition library with a rule naming
each. (tests/mpi/test_mpi_conformance.py runs them at their default chunk sizes.) MPICH's own
circ_graph is not in the wheel (5.0.2), so it is no reference row here."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_mpi_conformance import check_routed, run_conformance

from collkit.mpi import MPI
from mpi_support import built, mpich_or_skip

# Chunks of 16 bytes: the counts of the conformance matrix cut into several chunks per rank.
NAMES = [
    "bcast:circ_graph(seg=16)",
    "bcast:two_tree(seg=16)",
    "allgather:circ_graph(seg=16)",
    "reduce:circ_graph(seg=16)",
    "reduce:two_tree(seg=16)",
]


@pytest.fixture(scope="module")
def mpich() -> tuple[MPI, Path]:
    mpi = mpich_or_skip()
    return mpi, built(mpi)


@pytest.mark.parametrize(
    "P", [pytest.param(2, marks=pytest.mark.slow), 3, pytest.param(4, marks=pytest.mark.slow)]
)
def test_matches_mpichs_own_call(mpich: tuple[MPI, Path], P: int) -> None:
    cases, _ = run_conformance(*mpich, P, ";".join(NAMES))
    assert cases > 0


def test_routed_through_the_interposition_library(mpich: tuple[MPI, Path]) -> None:
    # Each name is a rule of the library's table; the ROUTE lines show collkit ran every one.
    check_routed(*mpich, 4, NAMES, "0,13")
