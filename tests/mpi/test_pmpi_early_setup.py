"""A communicator the program makes (MPI_Comm_dup, MPI_Comm_split, ...) is set up by the call that
makes it when a rule covers its size (mpi/src/pmpi.cpp, set_up_early): its first collectives go
to collkit at once, where MPI_COMM_WORLD's wait until their time pays for the setup. With
COLLKIT_EARLY_SETUP=0 every communicator waits. The results stay the MPI's either way
(tests/programs/split_segments.c compares every allreduce with PMPI_Allreduce). Both MPIs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from collkit.mpi import MPI, launch_command, launch_env
from mpi_support import built, compiled_program, mpich_or_skip, openmpi_or_skip, run_or_kill

CALLS = 4


@pytest.fixture(scope="module", params=["mpich", "openmpi"])
def app(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[MPI, Path, Path, Path]:
    mpi = mpich_or_skip() if request.param == "mpich" else openmpi_or_skip()
    bindir = built(mpi)
    tmp = tmp_path_factory.mktemp(f"early-{mpi.kind}")
    exe = compiled_program(mpi, "split_segments", tmp)
    # A measured rule: 100 us of MPI time a call, against COLLKIT_SETUP_US=1e6 below, so a
    # communicator left to rent-then-buy never moves to collkit in this short run.
    rule = {"collective": "allreduce", "P": [2, 2], "bytes": [0, 1 << 20],
            "algorithm": "allreduce:rd", "source": "measured", "median_us": 50.0,
            "native_median_us": 100.0, "speedup": 2.0}  # fmt: skip
    table = tmp / "table.json"
    table.write_text(json.dumps({"format": "collkit-tuning", "version": 1, "rules": [rule]}))
    return mpi, bindir, exe, table


def run(app: tuple[MPI, Path, Path, Path], env: dict[str, str]) -> tuple[dict[str, int], str]:
    """The blocking calls each communicator routed to collkit, and rank 0's stderr."""
    mpi, bindir, exe, table = app
    base = {
        "LD_PRELOAD": str(bindir / "libcollkit_pmpi.so"),
        "COLLKIT_TUNING": str(table),
        "COLLKIT_SETUP_US": "1000000",
        "COLLKIT_VERBOSE": "1",
    }
    full, _ = launch_env(mpi, 2, {**base, **env})
    r = run_or_kill(launch_command(mpi, 2, [str(exe), "1000", str(CALLS)]), full)
    assert r.returncode == 0 and "split_segments ok" in r.stdout, r.stdout + r.stderr[-3000:]
    routed = {m[1]: int(m[2]) for m in re.finditer(r"routed (\w+) blocking (\d+)", r.stdout)}
    assert set(routed) == {"world", "dup", "split"}, r.stdout
    return routed, r.stderr


def test_a_made_communicator_is_set_up_as_it_is_made(app: tuple[MPI, Path, Path, Path]) -> None:
    routed, err = run(app, {})
    assert routed == {"world": 0, "dup": CALLS, "split": CALLS}, routed
    assert "set up as MPI_Comm_dup made it" in err and "set up as MPI_Comm_split made it" in err


def test_without_early_setup_every_communicator_rents_first(
    app: tuple[MPI, Path, Path, Path],
) -> None:
    routed, err = run(app, {"COLLKIT_EARLY_SETUP": "0"})
    assert routed == {"world": 0, "dup": 0, "split": 0}, routed
    assert "made it" not in err
