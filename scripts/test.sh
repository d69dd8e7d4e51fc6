#!/usr/bin/env bash
# Set up collkit with its test dependencies and run the whole test suite:
#   1. the C++ core under AddressSanitizer + UBSan (its own CMake build, C++ unit tests),
#   2. format (clang-format, ruff), lint (ruff) and types (mypy --strict),
#   3. pytest over everything the user touches.
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
export PATH="$PWD/.venv/bin:$PATH"  # cmake, ninja and clang-format from the venv

# Open MPI, so the executor is also tested against a second MPI (Debian's, as a cluster would
# have one). Best effort: without root or apt the Open MPI tests are skipped with a reason.
if ! command -v mpicxx.openmpi >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "== installing Debian's Open MPI for the Open MPI tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null) \
    || echo "   (could not install Open MPI: its tests will be skipped)"
fi
# Programs collkit did not write, for the interposition library's tests (tests/mpi/test_pmpi.py):
# LAMMPS from Debian (built against Open MPI) and mpi4py built against the pip MPICH (about
# 3 CPU-minutes). Best effort: without them those tests are skipped with a reason.
if ! command -v lmp >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "== installing Debian's LAMMPS for the interposition tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lammps lammps-examples >/dev/null) \
    || echo "   (could not install LAMMPS: its test will be skipped)"
fi
if ! .venv/bin/python -c "import mpi4py" 2>/dev/null; then
  echo "== building mpi4py against the pip MPICH for the interposition tests"
  MPICC="$PWD/.venv/bin/mpicc" .venv/bin/python -m pip install -q --no-binary mpi4py mpi4py \
    || echo "   (could not build mpi4py: its test will be skipped)"
fi
# mpi4py for Debian's Open MPI (tests/mpi/test_mpi4py_face.py): mpi4py >= 4.1's binary wheels carry an
# Open MPI build beside the MPICH one (chosen with MPI4PY_MPIABI=openmpi), kept apart from the
# venv's own mpi4py, which is built against the pip MPICH. Best effort: else skipped with a reason.
if command -v mpicxx.openmpi >/dev/null 2>&1 && [ ! -f .venv/mpi4py-openmpi/mpi4py/__init__.py ]; then
  echo "== installing a binary mpi4py for the Open MPI tests"
  .venv/bin/python -m pip install -q --no-deps --only-binary mpi4py --target .venv/mpi4py-openmpi \
    "mpi4py>=4.1" || echo "   (could not install it: the Open MPI mpi4py tests will be skipped)"
fi
# Intel MPI from PyPI, for its tests (tests/mpi/test_mpi_intel.py), in an environment of its own (its
# mpiexec must not shadow the wheel's). 2021.14: the newest, 2021.19, requires libfabric>=2.6,
# which pip finds no distribution of. Best effort: else its tests are skipped with a reason.
if [ ! -x .venv/impi/bin/mpiexec ]; then
  echo "== installing Intel MPI (impi-rt, impi-devel) for its tests"
  (python3 -m venv .venv/impi && .venv/impi/bin/python -m pip install -q "impi-rt<2021.15" \
    "impi-devel<2021.15") || echo "   (could not install Intel MPI: its tests will be skipped)"
fi

echo "== C++ core under ASan + UBSan"
cmake -S . -B build/sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCOLLKIT_SANITIZE=ON -DCOLLKIT_PYTHON=OFF -DCOLLKIT_TESTS=ON >/dev/null
cmake --build build/sanitize -j 2
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/sanitize --output-on-failure

echo "== clang-format"
git ls-files 'core/*.cpp' 'core/*.hpp' 'mpi/*.cpp' 'mpi/*.hpp' 'mpi/*.h' 'python/src/*.cpp' \
  'python/src/*.hpp' | xargs .venv/bin/clang-format --dry-run --Werror

echo "== ruff"
.venv/bin/python -m ruff check python tests benchmarks
.venv/bin/python -m ruff format --check python tests benchmarks

echo "== mypy (strict)"
.venv/bin/python -m mypy

echo "== pytest"
.venv/bin/python -m pytest "$@"
