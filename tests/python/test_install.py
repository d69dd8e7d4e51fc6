"""The built wheel installs into a fresh virtual environment outside the source tree and runs
there: `collkit --version`, and a short part of `collkit tour` that needs the compiled core and
the installed C++ sources (verify, simulate) and, with the PyPI mpich wheel, MPI (collkit's
programs built from collkit/_src into a fresh cache). Slow: it builds a wheel, installs numpy,
matplotlib, statsmodels, ... into the new environment and compiles collkit's MPI programs."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.mpi]


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)  # type: ignore[call-overload, no-any-return]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv (outside the repository) with the wheel built from this tree."""
    work = tmp_path_factory.mktemp("install")
    dist = work / "dist"
    # --no-build-isolation: reuse this environment's build requirements and CMake tree
    r = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q",
         "-w", str(dist), str(ROOT)],
        timeout=1800,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    wheel = next(dist.glob("collkit-*.whl"))
    env_dir = work / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    r = _run([str(py), "-m", "pip", "install", "-q", f"{wheel}[mpi]"], timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return env_dir


def test_version_and_help_outside_the_tree(installed: Path, tmp_path: Path) -> None:
    collkit = installed / "bin" / "collkit"
    r = _run([str(collkit), "--version"], cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("collkit 0."), r.stdout + r.stderr
    assert "source tree" not in r.stdout  # the installed package's metadata
    r = _run(
        [str(installed / "bin" / "python"), "-c", "import collkit, sys; print(collkit.__file__)"],
        cwd=tmp_path,
    )
    assert str(installed) in r.stdout and str(ROOT) not in r.stdout, r.stdout


def test_a_short_tour_outside_the_tree(installed: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "COLLKIT_CACHE": str(tmp_path / "cache"),  # the MPI programs built from collkit/_src
        "PATH": f"{installed / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    r = _run(
        [str(installed / "bin" / "collkit"), "tour", "--quick", "--out", str(tmp_path / "t"),
         "--skip", "export", "--skip", "nodes", "--skip", "tune"],
        cwd=tmp_path,
        env=env,
        timeout=3600,
    )  # fmt: skip
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-5000:]
    assert "the first mpiexec on PATH (the PyPI mpich wheel of this Python)" in out, out[-3000:]
    assert any((tmp_path / "cache").glob("mpi-mpich-*/collkit_bench"))
    assert not any((tmp_path / "cache").glob("mpi-mpich-*/collkit_conformance"))  # not needed
