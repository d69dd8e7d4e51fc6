"""collkit.mpi on mpi4py communicators (python/collkit/mpi/face.py) at P = 1..4, on the pip
MPICH (with the mpi4py scripts/test.sh builds against it) and on Debian's Open MPI (with the
binary mpi4py that scripts/test.sh installs into .venv/mpi4py-openmpi: mpi4py >= 4.1 wheels
carry an Open MPI build, chosen with MPI4PY_MPIABI=openmpi). Every collective is checked
against mpi4py's own call on the same data (tests/programs/mpi4py_face.py), the non-blocking
forms on random data with their requests completed by mpi4py's Wait / Test / Waitall / Waitany
(tests/programs/mpi4py_face_nonblocking.py), and errors, declines and tuned() blocks, a
communicator taken before the block included, on their own (tests/programs/mpi4py_tuned.py)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from collkit.algorithms import algorithms
from collkit.collectives import COLLECTIVES
from collkit.mpi import MPI, Mpich, build, launch_command, launch_env
from collkit.tune.table import Rule, Table, save
from mpi_support import TIMEOUT_S, mpich_or_skip, openmpi_or_skip

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
OPENMPI_MPI4PY = Path(sys.prefix) / "mpi4py-openmpi"


def _mpich_mpi4py() -> tuple[MPI, dict[str, str]]:
    mpi = mpich_or_skip()
    try:
        import mpi4py
    except ImportError:
        pytest.skip(
            "mpi4py is not installed; scripts/test.sh builds it against the pip MPICH "
            "(MPICC=.venv/bin/mpicc pip install --no-binary mpi4py mpi4py)"
        )
    mpicc = str(mpi4py.get_config().get("mpicc", ""))
    if mpicc and Path(mpicc).parent != Path(mpi.mpiexec).parent:
        pytest.skip(f"this mpi4py was built with {mpicc}, not the pip MPICH")
    lib = build(mpi, ["libcollkit_mpi.so"]) / "libcollkit_mpi.so"
    return mpi, {"COLLKIT_MPI_LIB": str(lib), "MPI4PY_MPIABI": "mpich"}


def _openmpi_mpi4py() -> tuple[MPI, dict[str, str]]:
    mpi = openmpi_or_skip()
    if not (OPENMPI_MPI4PY / "mpi4py" / "__init__.py").exists():
        pytest.skip(
            f"no mpi4py for Open MPI in {OPENMPI_MPI4PY} (scripts/test.sh installs one: "
            "pip install --target .venv/mpi4py-openmpi --only-binary mpi4py 'mpi4py>=4.1')"
        )
    lib = build(mpi, ["libcollkit_mpi.so"]) / "libcollkit_mpi.so"
    path = os.pathsep.join([str(OPENMPI_MPI4PY), os.environ.get("PYTHONPATH", "")])
    return mpi, {"COLLKIT_MPI_LIB": str(lib), "MPI4PY_MPIABI": "openmpi", "PYTHONPATH": path}


@pytest.fixture(scope="module", params=["mpich", "openmpi"])
def mpi4py_on(request: pytest.FixtureRequest) -> tuple[MPI, dict[str, str]]:
    return _mpich_mpi4py() if request.param == "mpich" else _openmpi_mpi4py()


def run(mpi: MPI, env: dict[str, str], P: int, *args: str) -> subprocess.CompletedProcess[str]:
    full, _ = launch_env(mpi, P, env)
    cmd = launch_command(mpi, P, [sys.executable, *args])
    if not isinstance(mpi, Mpich):  # Open MPI's mpirun passes only what -x names
        cmd = [cmd[0], *mpi.env_args(env), *cmd[1:]]
    return subprocess.run(
        cmd, env=full, capture_output=True, text=True, timeout=TIMEOUT_S * 3, check=False
    )


def _defaults(everything: bool) -> dict[str, list[str]]:
    """Each collective's algorithms at their defaults (or the first two), node-aware left out."""
    out: dict[str, list[str]] = {}
    for coll in COLLECTIVES:
        names = [
            str(s["name"])
            for s in algorithms(coll)
            if not s["restrictions"]["needs_placement"]
            and all(p["default"] != "" for p in s["params"])
        ]
        out[coll] = names if everything else names[:2]
    return out


@pytest.mark.parametrize("P", [1, 2, 3, 4])
def test_nine_collectives_match_mpi4py(mpi4py_on: tuple[MPI, dict[str, str]], P: int) -> None:
    mpi, env = mpi4py_on
    algos = json.dumps(_defaults(everything=False))
    r = run(mpi, env, P, str(PROGRAMS / "mpi4py_face.py"), algos)
    assert r.returncode == 0 and f"SUMMARY P={P} " in r.stdout and "failures=0" in r.stdout, (
        r.stdout[-3000:] + r.stderr[-3000:]
    )


@pytest.mark.parametrize("P", [1, 2, 3, 4])
def test_nonblocking_collectives_match_mpi4py(
    mpi4py_on: tuple[MPI, dict[str, str]], P: int
) -> None:
    mpi, env = mpi4py_on
    seed = random.SystemRandom().randrange(1 << 31)  # new data each run; the seed to rerun it
    algos = json.dumps(_defaults(everything=False))
    r = run(mpi, env, P, str(PROGRAMS / "mpi4py_face_nonblocking.py"), algos, str(seed))
    assert r.returncode == 0 and f"SUMMARY P={P} " in r.stdout and "failures=0" in r.stdout, (
        f"seed {seed}\n" + r.stdout[-3000:] + r.stderr[-3000:]
    )


@pytest.mark.slow
@pytest.mark.parametrize("P", [1, 2, 3, 4])
def test_every_algorithm_matches_mpi4py(mpi4py_on: tuple[MPI, dict[str, str]], P: int) -> None:
    mpi, env = mpi4py_on
    algos = json.dumps(_defaults(everything=True))
    r = run(mpi, env, P, str(PROGRAMS / "mpi4py_face.py"), algos)
    assert r.returncode == 0 and "failures=0" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]


@pytest.mark.parametrize("P", [1, 3, 4])
def test_errors_declines_and_tuned_blocks(
    mpi4py_on: tuple[MPI, dict[str, str]], P: int, tmp_path: Path
) -> None:
    mpi, env = mpi4py_on
    table = tmp_path / "table.json"
    save(
        Table(
            rules=[
                Rule("allreduce", (1, 64), (0, 1 << 20), "allreduce:rd"),
                Rule("bcast", (1, 64), (0, 1 << 20), "native"),
            ]
        ),
        table,
    )
    r = run(mpi, env, P, str(PROGRAMS / "mpi4py_tuned.py"), str(table))
    assert r.returncode == 0 and f"OK P={P}" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
