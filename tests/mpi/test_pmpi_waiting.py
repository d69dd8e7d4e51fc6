"""How a waiting rank waits (mpi/src/waiting.hpp): it polls, as the MPIs do, while the job's ranks
on a node fit the node's cores, and yields between polls only when they do not, or when
COLLKIT_SPIN_US asks for a spin of that length. The choice is said under COLLKIT_VERBOSE, and the
program's results stay the MPI's either way. On both MPIs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from collkit.mpi import MPI, launch_command, launch_env
from mpi_support import built, compiled_program, mpich_or_skip, openmpi_or_skip, run_or_kill

CORES = len(os.sched_getaffinity(0))


@pytest.fixture(scope="module", params=["mpich", "openmpi"])
def app(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[MPI, Path, Path, Path]:
    mpi = mpich_or_skip() if request.param == "mpich" else openmpi_or_skip()
    bindir = built(mpi)
    tmp = tmp_path_factory.mktemp(f"wait-{mpi.kind}")
    exe = compiled_program(mpi, "split_segments", tmp)
    table = tmp / "table.json"
    rule = {"collective": "allreduce", "P": [1, 64], "bytes": [0, 1 << 40],
            "algorithm": "allreduce:rd"}  # fmt: skip
    table.write_text(json.dumps({"format": "collkit-tuning", "version": 1, "rules": [rule]}))
    return mpi, bindir, exe, table


def waiting(app: tuple[MPI, Path, Path, Path], P: int, env: dict[str, str]) -> str:
    """The waiting line rank 0 said, once the run's results matched the MPI's."""
    mpi, bindir, exe, table = app
    base = {
        "LD_PRELOAD": str(bindir / "libcollkit_pmpi.so"),
        "COLLKIT_TUNING": str(table),
        "COLLKIT_SETUP_US": "0",
        "COLLKIT_VERBOSE": "1",
    }
    full, _ = launch_env(mpi, P, {**base, **env})
    r = run_or_kill(launch_command(mpi, P, [str(exe), "1000", "2"]), full)
    assert r.returncode == 0 and "split_segments ok" in r.stdout, r.stdout + r.stderr[-3000:]
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("collkit: waiting: ")]
    assert len(lines) == 1, r.stderr[-3000:]  # once, on world rank 0
    return lines[0]


def test_ranks_that_fit_the_cores_poll(app: tuple[MPI, Path, Path, Path]) -> None:
    if CORES < 2:
        pytest.skip("one core: two ranks do not fit")
    line = waiting(app, 2, {})
    assert "fit its cores: poll" in line and "(2 ranks on this node" in line, line


def test_more_ranks_than_cores_yield(app: tuple[MPI, Path, Path, Path]) -> None:
    line = waiting(app, CORES + 1, {})
    assert "more ranks on this node than cores: yield" in line, line
    assert f"({CORES + 1} ranks on this node" in line, line


def test_a_spin_asked_for_is_a_spin_then_yield(app: tuple[MPI, Path, Path, Path]) -> None:
    line = waiting(app, 2, {"COLLKIT_SPIN_US": "5"})
    assert "COLLKIT_SPIN_US is set: spin that long, then yield" in line, line
