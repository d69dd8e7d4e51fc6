#!/usr/bin/env bash
# Create .venv (if missing) and install collkit into it with the given extras.
#   scripts/setup.sh            collkit and the PyPI mpich wheel (the MPI that works out of the box)
#   scripts/setup.sh test       + test dependencies
# Uses the Python on PATH (3.10+); set PYTHON=/path/to/python to choose another.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-mpi}"
py="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv with $($py --version)"
  "$py" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# Build requirements are installed into the venv and the build runs without isolation, so a
# rebuild after a source change is incremental (build/ keeps the CMake tree).
.venv/bin/python -m pip install -q "scikit-build-core>=0.10" "nanobind>=2.4" cmake ninja
spec="."
[ -n "$extras" ] && spec=".[$extras]"
echo "== building and installing collkit$([ -n "$extras" ] && echo " [$extras]")"
.venv/bin/python -m pip install -q --no-build-isolation "$spec"
.venv/bin/collkit --help >/dev/null
echo "== ready: .venv/bin/collkit"
