"""Shared test setup.

collkit prefers the first mpiexec on PATH (python/collkit/mpi/find.py). The suite's default MPI is
the PyPI mpich wheel of the Python running it, as scripts/test.sh arranges by putting .venv/bin
first on PATH; the same is done here so that a bare `.venv/bin/python -m pytest` on a machine
with a system MPI on PATH tests the same thing. Tests of another MPI choose it explicitly.

Layout (the tests mirror the code): tests/core/ the compiled core (generators, verifier,
simulator, schedule readers), tests/python/ the Python package and the CLI, tests/mpi/ everything
that runs over MPI (executor, C API, interposition, bench, the MPIs). Helpers shared by several
folders (mpi_support.py, builder.py, ...), tests/programs/ and tests/golden/ stay here; each
folder is on sys.path, so a test imports a helper or another test's module by its name.

Markers: `slow` (long sweeps, left out by default) and `mpi` (the test launches MPI processes):
every test under tests/mpi/ is marked `mpi` here, and tests elsewhere that launch MPI are marked
where they are written. `pytest -m 'not slow and not mpi'` runs the quick set without MPI (a -m
given replaces pyproject's 'not slow'); a test not marked `mpi` fails if it starts mpiexec or
mpirun in the test process itself (`mpiexec --version`, which finds out which MPI it is,
starts no ranks and is allowed)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_bin = str(Path(sys.executable).parent)
if os.environ.get("PATH", "").split(os.pathsep)[0] != _bin:
    os.environ["PATH"] = _bin + os.pathsep + os.environ.get("PATH", "")

TESTS = Path(__file__).resolve().parent
for _d in (TESTS, TESTS / "core", TESTS / "python", TESTS / "mpi"):
    if str(_d) not in sys.path:
        sys.path.insert(0, str(_d))

# The P of the verifier sweeps, said once. Each set holds powers of two, primes and awkward
# composites (products of small primes, one off a power of two): a generator's remainders and
# folds differ between them. Tests import them by name: `from conftest import QUICK_P`.
POW2_P = (1, 2, 4, 8, 16, 32, 64, 128)
PRIME_P = (3, 5, 7, 13, 17, 31, 127)
COMPOSITE_P = (6, 9, 12, 24, 33, 96, 100)
# The quick sweep: every algorithm at its defaults, every P here.
QUICK_P: tuple[int, ...] = tuple(sorted(POW2_P + PRIME_P + COMPOSITE_P))
# A few of each, for sweeps that multiply P by much else (parameter grids, formats, counts).
SMALL_P = (1, 2, 3, 5, 7, 8, 12, 13, 16)
# Every P up to 256: where a generator's case analysis must be seen whole.
EVERY_P: tuple[int, ...] = tuple(range(1, 257))
# Large P, sampled: around powers of two, primes (4099, 8191, 9973), composites (3001, 6000).
LARGE_P = (
    255, 257, 300, 511, 512, 513, 1000, 1023, 1024, 1025, 2047, 2048, 3001, 4095, 4096, 4099,
    6000, 8191, 8192, 9973, 10000,
)  # fmt: skip


# Collectives the core describes, verifies and simulates that the MPI side does not run yet (no
# line in mpi/src/call_table.hpp): the MPI tests leave them out. Empty once every one runs.
MPI_PENDING: frozenset[str] = frozenset()


def up_to(sweep: tuple[int, ...], top: int) -> list[int]:
    """The P of a sweep up to `top`."""
    return [P for P in sweep if top >= P]


_LAUNCHERS = {"mpiexec", "mpirun", "mpiexec.hydra", "mpirun.openmpi", "mpiexec.openmpi", "srun"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mpi_dir = TESTS / "mpi"
    for item in items:
        if mpi_dir in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.mpi)


@pytest.fixture(autouse=True)
def _no_mpi_without_the_marker(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test without the `mpi` marker that starts an MPI launcher fails, naming it: so that
    `-m 'not mpi'` really runs without MPI."""
    if request.node.get_closest_marker("mpi") is not None:
        yield
        return
    real = subprocess.Popen.__init__

    def guarded(self: subprocess.Popen[Any], args: Any, *a: Any, **kw: Any) -> None:
        argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
        exe = os.path.basename(os.fsdecode(argv[0])) if argv else ""
        if exe in _LAUNCHERS and "--version" not in argv[1:2]:  # detection starts no ranks
            pytest.fail(f"{request.node.nodeid} launches MPI ({exe}): mark it pytest.mark.mpi")
        real(self, args, *a, **kw)

    subprocess.Popen.__init__ = guarded  # type: ignore[method-assign]
    try:
        yield
    finally:
        subprocess.Popen.__init__ = real  # type: ignore[method-assign]
