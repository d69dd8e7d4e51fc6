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

# >>> system packages
# Debian's Open MPI, so the executor is also tested against a second MPI (as a cluster would have
# one), and Debian's LAMMPS (built against Open MPI), a program collkit did not write, for the
# interposition library's tests (tests/mpi/test_pmpi.py), and Debian's Slurm and munge, which
# tests/mpi/test_slurm.py starts on the emulated nodes. apt waits up to 10 minutes for its locks
# (an unattended upgrade, another job), and what the tests need is checked, not only a command:
# Open MPI's headers and library (libopenmpi-dev: openmpi-bin alone has mpicxx.openmpi), LAMMPS's
# example input. Without them their tests are skipped, said loudly here; on CI (CI=true) a missing
# one fails the run instead.
apt_get() {  # apt-get "$@", waiting for apt's and dpkg's locks
  local deadline=$((SECONDS + 600)) log
  log=$(mktemp)
  # DPkg::Lock::Timeout waits for dpkg's lock; apt's own (lists, archives) fail at once: retried.
  until DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 "$@" 2>"$log"; do
    if ! grep -q "Could not get lock\|Unable to lock\|Unable to acquire" "$log" \
      || [ "$SECONDS" -ge "$deadline" ]; then
      cat "$log" >&2
      rm -f "$log"
      return 1
    fi
    echo "   (apt is locked by another process; waiting)" >&2
    sleep 10
  done
  rm -f "$log"
}
apt_updated=false
apt_install() {
  if ! $apt_updated; then
    apt_get update -qq || return 1
    apt_updated=true
  fi
  apt_get install -y -qq "$@" >/dev/null
}
openmpi_usable() {  # mpirun, and a program compiled and linked against Open MPI
  command -v mpirun.openmpi >/dev/null 2>&1 && command -v mpicxx.openmpi >/dev/null 2>&1 \
    || return 1
  local d rc=0
  d=$(mktemp -d)
  printf '#include <mpi.h>\nint main(int c, char** v) { MPI_Init(&c, &v); return MPI_Finalize(); }\n' \
    >"$d/probe.cpp"
  mpicxx.openmpi "$d/probe.cpp" -o "$d/probe" >"$d/log" 2>&1 || rc=1
  [ "$rc" = 0 ] || tail -n 3 "$d/log" | sed 's/^/   /' >&2
  rm -rf "$d"
  return "$rc"
}
lammps_usable() {
  command -v lmp >/dev/null 2>&1 && [ -f /usr/share/lammps/examples/melt/in.melt ]
}
slurm_usable() {  # Slurm's daemons and clients, and munge (tests/mpi/test_slurm.py)
  local t
  for t in munged slurmctld slurmd srun salloc sbatch; do
    command -v "$t" >/dev/null 2>&1 || return 1
  done
}
can_apt=false
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then can_apt=true; fi
missing=()
if ! openmpi_usable; then
  if $can_apt; then
    echo "== installing Debian's Open MPI for the Open MPI tests"
    apt_install openmpi-bin libopenmpi-dev || true
  fi
  openmpi_usable || missing+=("Open MPI (apt-get install openmpi-bin libopenmpi-dev)")
fi
if ! lammps_usable; then
  if $can_apt; then
    echo "== installing Debian's LAMMPS for the interposition tests"
    apt_install lammps lammps-examples || true
  fi
  lammps_usable || missing+=("LAMMPS (apt-get install lammps lammps-examples)")
fi
if ! slurm_usable; then
  if $can_apt; then
    echo "== installing Debian's Slurm and munge for the Slurm tests"
    apt_install slurm-wlm munge || true
  fi
  slurm_usable || missing+=("Slurm (apt-get install slurm-wlm munge)")
fi
if [ "${#missing[@]}" -gt 0 ]; then
  $can_apt || echo "!! (installing packages needs root and apt-get)" >&2
  for m in "${missing[@]}"; do
    echo "!! $m is missing or unusable: its tests will be SKIPPED" >&2
  done
  if [ "${CI:-}" = true ]; then
    echo "!! CI=true: failing the run instead of skipping those tests" >&2
    exit 1
  fi
fi
# <<< system packages
# mpi4py built against the pip MPICH (about 3 CPU-minutes), for the interposition tests. Best
# effort: without it those tests are skipped with a reason.
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
# mpiexec must not shadow the wheel's). <2021.19: 2021.18.1, the newest that PyPI alone installs
# (2021.19 requires libfabric>=2.6, which is not on PyPI). Best effort: else its tests are skipped
# with a reason.
if [ ! -x .venv/impi/bin/mpiexec ]; then
  echo "== installing Intel MPI (impi-rt, impi-devel) for its tests"
  (python3 -m venv .venv/impi && .venv/impi/bin/python -m pip install -q "impi-rt<2021.19" \
    "impi-devel<2021.19") || echo "   (could not install Intel MPI: its tests will be skipped)"
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
