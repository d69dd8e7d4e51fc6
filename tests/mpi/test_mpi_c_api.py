"""collkit.h is a C header: a C program built with the MPI's mpicc calls an algorithm by name."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from collkit.mpi import MPI, launch_command, launch_env, source_dir
from mpi_support import TIMEOUT_S, built, mpich_or_skip


@pytest.fixture(scope="module")
def c_program(tmp_path_factory: pytest.TempPathFactory) -> tuple[MPI, Path]:
    mpi = mpich_or_skip()
    libdir = built(mpi)
    mpicc = Path(mpi.mpicxx).with_name("mpicc")
    if not mpicc.exists():
        pytest.skip(f"no mpicc beside {mpi.mpicxx}")
    exe = tmp_path_factory.mktemp("c") / "allreduce_by_name"
    src = source_dir() / "mpi" / "examples" / "allreduce_by_name.c"
    cmd = [
        str(mpicc),
        "-std=c11",
        "-Wall",
        "-Wextra",
        "-Wpedantic",
        "-Werror",
        str(src),
        f"-I{source_dir() / 'mpi' / 'include'}",
        f"-L{libdir}",
        "-lcollkit_mpi",
        f"-Wl,-rpath,{libdir}",
        "-o",
        str(exe),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    return mpi, exe


@pytest.mark.parametrize("P", [1, 3])
def test_c_program_runs_allreduce_rd(c_program: tuple[MPI, Path], P: int) -> None:
    mpi, exe = c_program
    env, _ = launch_env(mpi, P)
    r = subprocess.run(
        launch_command(mpi, P, [str(exe), "allreduce:rd"]),
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert r.returncode == 0 and f"ok P={P} sum={P * (P + 1) // 2}" in r.stdout, r.stdout + r.stderr


def test_c_program_gets_the_error_of_a_wrong_name(c_program: tuple[MPI, Path]) -> None:
    mpi, exe = c_program
    env, _ = launch_env(mpi, 2)
    r = subprocess.run(
        launch_command(mpi, 2, [str(exe), "bcast:binomial"]),
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert r.returncode != 0
    assert "error: collkit: 'bcast:binomial' is" in r.stdout or "unknown algorithm" in r.stdout, (
        r.stdout + r.stderr
    )
