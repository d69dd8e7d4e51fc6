"""Shared by the tests of collkit over MPI: finding an MPI, building collkit's programs for it
once per session, and running them."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from collkit.errors import UnsupportedError
from collkit.mpi import MPI, Mpich, OpenMpi, build, find_mpi, launch_command, launch_env
from collkit.mpi.find import wheel_mpiexec

# Launch timeout: a hang is a failure, never a stuck test run.
TIMEOUT_S = 120


def mpich_or_skip() -> MPI:
    """The PyPI mpich wheel of this Python (the suite's default MPI)."""
    wheel = wheel_mpiexec()
    try:
        mpi = find_mpi(str(wheel) if wheel else None)
    except UnsupportedError as e:
        pytest.skip(f"no MPI: {e}")
    if not isinstance(mpi, Mpich):
        pytest.skip(f"the default MPI is {mpi.kind}, not the mpich wheel")
    return mpi


def openmpi_or_skip() -> MPI:
    mpirun = shutil.which("mpirun.openmpi") or (
        shutil.which("ompi_info") and shutil.which("mpirun")
    )
    cxx = shutil.which("mpicxx.openmpi")
    if not mpirun or not cxx:
        pytest.skip("Open MPI not installed (apt-get install openmpi-bin libopenmpi-dev)")
    old = {k: os.environ.get(k) for k in ("MPIEXEC", "MPICXX")}
    os.environ["MPIEXEC"], os.environ["MPICXX"] = str(mpirun), cxx
    try:
        mpi = find_mpi()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if not isinstance(mpi, OpenMpi):
        pytest.skip(f"{mpirun} is not Open MPI")
    return mpi


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
    return subprocess.run(
        cmd, env=full_env, capture_output=True, text=True, timeout=timeout, check=False
    )


def built(mpi: MPI) -> Path:
    return build(mpi)
