"""Which MPI: detection of the implementation behind an mpiexec, and the choice of one.

First match wins, and the MPI object says which rule chose it (`MPI.reason`):
  1. explicit arguments (`--mpiexec`, `--mpi-prefix`),
  2. the environment: MPIEXEC and MPICXX (or MPICC, whose C++ sibling is used),
  3. the first `mpiexec` on PATH (a cluster's `module load openmpi` puts its own there; an
     activated virtual environment with the PyPI `mpich` wheel puts the wheel's there),
  4. the PyPI `mpich` wheel in this Python's environment (`pip install mpich`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from collkit.errors import UnsupportedError
from collkit.mpi.base import MPI
from collkit.mpi.intel import IntelMpi
from collkit.mpi.mpich import Mpich
from collkit.mpi.openmpi import OpenMpi

# The implementations collkit knows, in the order they are tried on `mpiexec --version`
# (Intel MPI's hydra also says HYDRA, so it comes before MPICH).
IMPLEMENTATIONS: tuple[type[MPI], ...] = (IntelMpi, OpenMpi, Mpich)

# C++ compiler wrappers looked for beside an mpiexec.
_CXX_NAMES = ("mpicxx", "mpic++", "mpiicpx", "mpiicpc", "mpicxx.openmpi", "mpicxx.mpich")


def _run(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UnsupportedError(f"cannot run {cmd[0]}: {e}") from None
    return str(out.stdout) + str(out.stderr)


def resolve_wrapper(path: str) -> str:
    """`path` with its symlinks followed while they point at another compiler wrapper
    (mpicxx -> mpicxx.openmpi), and no further (Debian's mpicxx.openmpi -> opal_wrapper: the
    wrapper reads what it is from its name). A wrapper finds its MPI by its own path (a
    relocatable Open MPI its prefix and wrapper data, a pip MPICH its lib/), so one called
    through a link elsewhere compiles without the MPI's headers or libraries."""
    p = Path(os.path.abspath(path))
    seen: set[Path] = set()
    while p.is_symlink() and p not in seen:
        seen.add(p)
        target = Path(os.path.normpath(p.parent / os.readlink(p)))
        if not target.name.startswith("mpi"):
            break
        p = target
    return str(p)


def implementation(version_text: str) -> type[MPI]:
    """The class of the MPI whose `mpiexec --version` printed `version_text` (MPI if none)."""
    return next((c for c in IMPLEMENTATIONS if c.recognizes(version_text)), MPI)


def _sibling(path: str, names: tuple[str, ...]) -> str | None:
    d = Path(path).parent
    for n in names:
        if (d / n).exists():
            return str(d / n)
    return None


def wheel_mpiexec() -> Path | None:
    """The PyPI mpich wheel's mpiexec in this Python's environment, if installed."""
    venv = Path(sys.prefix) / "bin" / "mpiexec"
    return venv if venv.exists() else None


def find_mpi(
    mpiexec: str | None = None, prefix: str | None = None, mpicxx: str | None = None
) -> MPI:
    """The MPI to use (see the module's docstring). `mpicxx`: the C++ compiler wrapper to build
    with (default: MPICXX / MPICC, else the one beside mpiexec). Raises UnsupportedError if
    there is none."""
    cxx: str | None = mpicxx
    reason = ""
    if prefix:
        bindir = Path(prefix) / "bin"
        mpiexec = mpiexec or str(bindir / "mpiexec")
        cxx = cxx or str(bindir / "mpicxx")
        reason = f"--mpi-prefix {prefix}"
    elif mpiexec:
        reason = "--mpiexec"
    if not mpiexec and os.environ.get("MPIEXEC"):
        mpiexec = os.environ["MPIEXEC"]
        reason = "MPIEXEC is set"
    if os.environ.get("MPICXX"):
        cxx = cxx or shutil.which(os.environ["MPICXX"]) or os.environ["MPICXX"]
    elif os.environ.get("MPICC"):
        cxx = cxx or _sibling(os.environ["MPICC"], ("mpicxx", "mpic++", "mpiCC"))
    wheel = wheel_mpiexec()
    if not mpiexec:
        on_path = shutil.which("mpiexec")
        if on_path:
            mpiexec = on_path
            is_wheel = wheel is not None and Path(on_path).resolve() == wheel.resolve()
            reason = "the first mpiexec on PATH" + (
                " (the PyPI mpich wheel of this Python)" if is_wheel else ""
            )
        elif wheel is not None:
            mpiexec = str(wheel)
            reason = "no mpiexec on PATH: the PyPI mpich wheel of this Python"
    if not mpiexec or (not Path(mpiexec).exists() and not shutil.which(mpiexec)):
        raise UnsupportedError(
            "no MPI found: `pip install mpich`, or put an MPI's mpiexec on PATH (module load "
            "...), or pass --mpiexec / --mpi-prefix, or set MPIEXEC and MPICXX"
        )
    # Absolute: the programs are built by CMake in a cache folder and launched from elsewhere, so
    # a relative --mpiexec (".venv/bin/mpiexec") or --mpi-prefix must not stay relative.
    mpiexec = os.path.abspath(shutil.which(mpiexec) or mpiexec)
    if not cxx:
        cxx = _sibling(mpiexec, _CXX_NAMES)
        if cxx is None and Path(mpiexec).resolve() != Path(mpiexec):
            cxx = _sibling(str(Path(mpiexec).resolve()), _CXX_NAMES)
    if not cxx or not Path(cxx).exists():
        raise UnsupportedError(
            f"no MPI C++ compiler wrapper beside {mpiexec} (chosen: {reason}): set MPICXX, or "
            "install the MPI's development files"
        )
    cxx = resolve_wrapper(cxx)
    text = _run([mpiexec, "--version"])
    impl = implementation(text)
    return impl(mpicxx=cxx, mpiexec=mpiexec, version=impl.version_of(text), reason=reason)


# The kinds find_mpi_of_kind knows where to look for, beside PATH's choice.
KINDS = ("mpich", "openmpi", "intel")


def intel_mpiexec() -> Path | None:
    """Intel MPI from PyPI (impi-rt, impi-devel) in this Python's environment, or in the
    environment of its own that scripts/test.sh makes beside it (`.venv/impi`: its mpiexec must
    not shadow the mpich wheel's)."""
    for d in (Path(sys.prefix) / "impi" / "bin", Path(sys.prefix) / "bin"):
        exe = d / "mpiexec"
        if exe.exists() and any((d / n).exists() for n in ("mpiicpx", "mpiicpc", "impi_info")):
            return exe
    return None


def find_mpi_of_kind(kind: str) -> MPI:
    """The MPI of one kind, whatever is first on PATH (tests and benchmarks that compare MPIs):
      "mpich":   the PyPI mpich wheel of this Python (`pip install mpich`),
      "openmpi": Debian's Open MPI (mpirun.openmpi and mpicxx.openmpi), else an Open MPI whose
                 mpirun and ompi_info are on PATH,
      "intel":   Intel MPI from PyPI (impi-rt, impi-devel) beside this Python (intel_mpiexec).
    Raises UnsupportedError saying what to install when there is none, or when what is there
    turns out to be another implementation."""
    found: MPI | None = None
    if kind == "mpich":
        wheel = wheel_mpiexec()
        if wheel is None:
            raise UnsupportedError("the PyPI mpich wheel is not installed here: pip install mpich")
        found = find_mpi(str(wheel))
        found.reason = "the PyPI mpich wheel of this Python (MPICH asked for)"
    elif kind == "openmpi":
        mpirun, cxx = shutil.which("mpirun.openmpi"), shutil.which("mpicxx.openmpi")
        if not mpirun and shutil.which("ompi_info"):
            mpirun, cxx = shutil.which("mpirun"), cxx or shutil.which("mpicxx")
        if not mpirun or not cxx:
            raise UnsupportedError(
                "Open MPI is not installed (apt-get install openmpi-bin libopenmpi-dev, or "
                "module load openmpi)"
            )
        found = find_mpi(mpirun, mpicxx=cxx)
        found.reason = f"Open MPI asked for: {mpirun}"
    elif kind == "intel":
        exe = intel_mpiexec()
        if exe is None:
            raise UnsupportedError(
                f"no Intel MPI beside this Python ({sys.prefix}/impi or {sys.prefix}): "
                "pip install 'impi-rt<2021.19' 'impi-devel<2021.19'"
            )
        found = find_mpi(str(exe))
        found.reason = f"Intel MPI asked for: {exe}"
    else:
        raise UnsupportedError(f"MPI kind '{kind}': one of {', '.join(KINDS)}")
    if found.kind != kind:
        raise UnsupportedError(f"asked for {kind}, found {found.describe()}")
    return found
