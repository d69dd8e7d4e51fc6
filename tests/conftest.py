"""Shared test setup.

collkit prefers the first mpiexec on PATH (python/collkit/mpi/find.py). The suite's default MPI is
the PyPI mpich wheel of the Python running it, as scripts/test.sh arranges by putting .venv/bin
first on PATH; the same is done here so that a bare `.venv/bin/python -m pytest` on a machine
with a system MPI on PATH tests the same thing. Tests of another MPI choose it explicitly."""

from __future__ import annotations

import os
import sys
from pathlib import Path

_bin = str(Path(sys.executable).parent)
if os.environ.get("PATH", "").split(os.pathsep)[0] != _bin:
    os.environ["PATH"] = _bin + os.pathsep + os.environ.get("PATH", "")
