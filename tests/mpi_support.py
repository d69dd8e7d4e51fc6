"""Shared by the tests of collkit over MPI: finding an MPI, building collkit's programs for it
once per session, and running them."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from collkit.errors import UnsupportedError
from collkit.mpi import MPI, build, find_mpi_of_kind, launch_command, launch_env

# Launch timeout: a hang is a failure, never a stuck test run.
TIMEOUT_S = 120


def mpich_or_skip() -> MPI:
    """The PyPI mpich wheel of this Python (the suite's default MPI)."""
    return _kind_or_skip("mpich")


def openmpi_or_skip() -> MPI:
    """Debian's Open MPI (scripts/test.sh installs it where it can)."""
    return _kind_or_skip("openmpi")


def intel_or_skip() -> MPI:
    """Intel MPI from PyPI beside this Python (scripts/test.sh installs it into .venv/impi)."""
    return _kind_or_skip("intel")


def _kind_or_skip(kind: str) -> MPI:
    try:
        return find_mpi_of_kind(kind)
    except UnsupportedError as e:
        pytest.skip(f"no {kind}: {e}")


def run_or_kill(
    cmd: list[str], env: dict[str, str], timeout: float = TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    """subprocess.run(cmd, capture_output=True, text=True) in a session of its own: on a timeout
    the whole process group (the launcher and every rank) is killed before TimeoutExpired is
    raised, so a hung MPI job fails its test without leaving ranks spinning behind it."""
    p = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def run_program(
    mpi: MPI,
    bindir: Path,
    np: int,
    program: str,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = TIMEOUT_S,
) -> subprocess.CompletedProcess[str]:
    cmd = launch_command(mpi, np, [str(bindir / program), *args])
    full_env, _ = launch_env(mpi, np, env)
    return run_or_kill(cmd, full_env, timeout)


def built(mpi: MPI) -> Path:
    return build(mpi)


PROGRAMS = Path(__file__).resolve().parent / "programs"


def compiled_program(mpi: MPI, name: str, out: Path) -> Path:
    """tests/programs/<name>.c built with the MPI's own mpicc into `out` (skipped without one)."""
    cc = Path(mpi.mpicxx).parent / Path(mpi.mpicxx).name.replace("mpicxx", "mpicc")
    if not cc.exists():
        pytest.skip(f"no mpicc beside {mpi.mpicxx}")
    exe = out / name
    subprocess.run([str(cc), "-O1", "-o", str(exe), str(PROGRAMS / f"{name}.c")], check=True)
    return exe
