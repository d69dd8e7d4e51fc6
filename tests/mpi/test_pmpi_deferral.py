"""A communicator's setup deferred until its calls pay for it (libcollkit_pmpi, mpi/src/pmpi.cpp):
a measured rule's calls go to the MPI until the table's MPI time for them reaches
COLLKIT_SETUP_US, then to collkit at the next call that is not a repeat of the one before, or at
16 times that in a run of repeats. Checked on the calls' routes (COLLKIT_STATS, world rank 0)
and on the results, which must be the plain run's whichever way each call went."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from collkit.mpi import MPI, launch_command, launch_env
from collkit.mpi.stats import read_stats
from mpi_support import TIMEOUT_S, built, mpich_or_skip

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "setup_deferral.c"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> tuple[MPI, Path]:
    mpi = mpich_or_skip()
    built(mpi)
    cc = Path(mpi.mpicxx).parent / Path(mpi.mpicxx).name.replace("mpicxx", "mpicc")
    exe = tmp_path_factory.mktemp("app") / "setup_deferral"
    subprocess.run([str(cc), "-O1", "-o", str(exe), str(PROGRAM)], check=True)
    return mpi, exe


def table(path: Path, measured: bool) -> Path:
    rule: dict[str, object] = {
        "collective": "allreduce", "P": [2, 2], "bytes": [0, 64], "algorithm": "allreduce:rd",
    }  # fmt: skip
    if measured:  # 100 us a call by the MPI: COLLKIT_SETUP_US=1000 is paid by 10 calls
        rule.update(source="measured", median_us=50.0, native_median_us=100.0, speedup=2.0)
    path.write_text(json.dumps({"format": "collkit-tuning", "version": 1, "rules": [rule]}))
    return path


def routes(
    mpi: MPI, exe: Path, tmp: Path, tuning: Path, n8: int, n16: int, setup_us: str | None
) -> dict[tuple[str, int], int]:
    """Calls per (route, bytes) on world rank 0, after checking the results against the plain
    run's."""
    plain_env, _ = launch_env(mpi, 2)
    plain = subprocess.run(
        launch_command(mpi, 2, [str(exe), str(tmp / "plain"), str(n8), str(n16)]),
        env=plain_env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr[-2000:]
    env = dict(os.environ, MPIEXEC=mpi.mpiexec, MPICXX=mpi.mpicxx)
    env.pop("COLLKIT_SETUP_US", None)
    if setup_us is not None:
        env["COLLKIT_SETUP_US"] = setup_us
    stats = tmp / "calls.jsonl"
    stats.unlink(missing_ok=True)
    run = subprocess.run(
        [sys.executable, "-m", "collkit", "run", "-np", "2", "--tuning", str(tuning),
         "--verbose", "--stats", str(stats), "--",
         str(exe), str(tmp / "lib"), str(n8), str(n16)],
        env=env, capture_output=True, text=True, timeout=TIMEOUT_S * 2, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    if setup_us is not None:  # passed by name to every rank, whatever each node's environment
        launch_line = next(ln for ln in run.stderr.splitlines() if ln.startswith("+ "))
        assert "COLLKIT_SETUP_US" in launch_line, launch_line
    for r in range(2):
        assert (tmp / f"lib.{r}").read_text() == (tmp / f"plain.{r}").read_text()
    return {(row.algorithm, row.bytes): row.iterations for row in read_stats(stats)}


# (8-byte calls, 16-byte calls, COLLKIT_SETUP_US) -> calls on each route; every call of the
# measured rule costs 100 us of MPI time by the table.
DEFERRED = [
    # 10 calls pay the setup, but the next 10 repeat the 8-byte call: the first 16-byte call
    # takes collkit's route.
    ((20, 5, "1000"), {("native", 8): 20, ("allreduce:rd", 16): 5}),
    # A run of repeats moves at 16 times the setup: after 160 calls.
    ((200, 0, "1000"), {("native", 8): 160, ("allreduce:rd", 8): 40}),
    # The default setup (400 us) is paid by the fourth call, but that is the only change of call
    # and comes at 300 us; the 16-byte calls after it repeat it: a short program never moves.
    ((3, 3, None), {("native", 8): 3, ("native", 16): 3}),
]


@pytest.mark.parametrize(("calls", "expected"), DEFERRED)
def test_the_calls_move_to_collkit_once_the_setup_is_paid_at_a_change_of_call(
    app: tuple[MPI, Path],
    tmp_path: Path,
    calls: tuple[int, int, str | None],
    expected: dict[tuple[str, int], int],
) -> None:
    mpi, exe = app
    got = routes(mpi, exe, tmp_path, table(tmp_path / "t.json", True), *calls)
    assert got == expected, got


@pytest.mark.parametrize(("measured", "setup_us"), [(True, "0"), (False, None)])
def test_setup_at_once_when_asked_or_when_the_rule_is_not_measured(
    app: tuple[MPI, Path], tmp_path: Path, measured: bool, setup_us: str | None
) -> None:
    mpi, exe = app
    got = routes(mpi, exe, tmp_path, table(tmp_path / "t.json", measured), 7, 3, setup_us)
    assert got == {("allreduce:rd", 8): 7, ("allreduce:rd", 16): 3}, got
