"""The node-aware algorithms on a real MPI: the executor finds the placement
with MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) (mpi/src/placement.cpp), runs allreduce:hier and
alltoall:bruck_local there, checked against the MPI's own call by collkit_conformance, and
declines (the MPI's own call runs) where the placement is not one the algorithm can use.

This machine is one node: every rank shares it, so the placement found is rpn = P. The testing
aid COLLKIT_TEST_RPN / COLLKIT_TEST_ORDER makes the executor take the ranks to be on smaller
nodes, so the node groups, the leaders and the declining are exercised here too."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from test_mpi_conformance import run_conformance
from test_pmpi import PROGRAMS, collkit_run, launch, mpicc, outputs

from collkit.mpi import MPI
from mpi_support import built, mpich_or_skip, openmpi_or_skip

HIER = "allreduce:hier;allreduce:hier(intra=allreduce:rd);alltoall:bruck_local(r=3);allgather:hier"


def conformance(mpi: MPI, P: int, algos: str, env: dict[str, str]) -> tuple[int, int]:
    cases, _ = run_conformance(mpi, built(mpi), P, algos, env)
    return cases, 0


def fake(rpn: int | None, order: str = "contiguous") -> dict[str, str]:
    return {} if rpn is None else {"COLLKIT_TEST_RPN": str(rpn), "COLLKIT_TEST_ORDER": order}


@pytest.mark.parametrize(
    ("P", "rpn", "order"),
    [
        (4, 2, "contiguous"),
        (4, 2, "round_robin"),
        pytest.param(4, None, "", marks=pytest.mark.slow),  # the real one: a node of 4
        pytest.param(4, 1, "contiguous", marks=pytest.mark.slow),
    ],
)
def test_mpich_against_its_own_calls(P: int, rpn: int | None, order: str) -> None:
    cases, _ = conformance(mpich_or_skip(), P, HIER, fake(rpn, order))
    assert cases > 100


@pytest.mark.slow
def test_mpich_uneven_nodes() -> None:
    # Nodes of 2 and 1: hier with a reduce inside runs (and keeps rank order), contiguous and
    # round-robin.
    for order in ("contiguous", "round_robin"):
        conformance(mpich_or_skip(), 3, "allreduce:hier", fake(2, order))


@pytest.mark.slow
def test_openmpi_against_its_own_calls() -> None:
    conformance(openmpi_or_skip(), 4, HIER, fake(2, "round_robin"))


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> tuple[MPI, Path]:
    mpi = mpich_or_skip()
    built(mpi)
    exe = tmp_path_factory.mktemp("app") / "collectives_app"
    subprocess.run(
        [mpicc(mpi), "-O1", "-o", str(exe), str(PROGRAMS / "collectives_app.c")], check=True
    )
    return mpi, exe


def test_declines_where_the_nodes_do_not_fit(
    app: tuple[MPI, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the interposition library: an unmodified program's allreduce and alltoall routed
    to the node-aware algorithms give the same output as without collkit, and the decision log
    says which calls collkit declined and why."""
    mpi, exe = app
    rules = [
        {
            "collective": "allreduce",
            "P": [2, 64],
            "bytes": [0, 1 << 20],
            "algorithm": "allreduce:hier",
        },
        {
            "collective": "alltoall",
            "P": [2, 64],
            "bytes": [0, 1 << 20],
            "algorithm": "alltoall:bruck_local",
        },
    ]
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"format": "collkit-tuning", "version": 1, "rules": rules}))
    plain = launch(mpi, 3, [str(exe), str(tmp_path / "plain")])
    assert plain.returncode == 0, plain.stderr[-2000:]
    # 3 ranks on nodes of 2, round-robin: {0, 2} and {1}.
    monkeypatch.setenv("COLLKIT_TEST_RPN", "2")
    monkeypatch.setenv("COLLKIT_TEST_ORDER", "round_robin")
    lib = collkit_run(mpi, 3, table, [str(exe), str(tmp_path / "lib")])
    assert lib.returncode == 0, lib.stderr[-3000:]
    assert outputs(tmp_path / "lib", 3) == outputs(tmp_path / "plain", 3)
    log = lib.stderr
    assert "-> allreduce:hier (table)" in log, log[-3000:]
    # Uneven nodes: the local Bruck cannot form its groups; round-robin nodes: a non-commutative
    # reduction would leave rank order.
    assert "-> native (declined: alltoall:bruck_local: every node must hold" in log, log
    assert "needs a commutative op on 2 ranks per node, round_robin" in log, log
