"""Building collkit's MPI programs for one MPI, once, into a cache directory.

The compiled Python module has no MPI in it (the core never does), so everything that runs over
MPI is built separately, per MPI: `mpi/` and the `core/` sources it needs are compiled with that
MPI's compiler wrapper into a cache directory keyed by the MPI and the sources' hash, the first
time they are needed, and only the programs the command needs (a first `collkit bench` builds
the benchmark driver, not the test programs). The sources come from the source tree or, in an
installed package, from `collkit/_src` (installed by the top-level CMakeLists.txt).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from collkit.errors import UnsupportedError
from collkit.mpi.base import MPI

# Every program and library of mpi/CMakeLists.txt, by file name.
PROGRAMS = (
    "collkit_bench",
    "collkit_bench_shm",  # shared memory against the MPI (bench_executor.py --shm)
    "collkit_multicast",
    "collkit_calibrate",
    "collkit_overlap",  # overlap and persistent-call cost (benchmarks/bench_overlap.py)
    "collkit_check_alltoall",
    "collkit_conformance",
    "collkit_conformance_pmpi",  # conformance through the interposition library
    "collkit_pmpi_overhead",
    "libcollkit_pmpi.so",  # the interposition library (LD_PRELOAD; docs/tuning.md)
    "libcollkit_mpi.so",  # the C API (collkit.h): collkit.mpi's mpi4py functions load it
)


class MissingToolError(UnsupportedError):
    """A tool that building collkit's MPI programs needs (cmake, a compiler) is missing."""


def source_dir() -> Path:
    """Where `core/` and `mpi/` are: the source tree, or the installed package's copy."""
    here = Path(__file__).resolve().parent.parent
    for root in (here.parents[1], here / "_src"):
        if (root / "mpi" / "CMakeLists.txt").exists() and (root / "core" / "include").exists():
            return root
    raise UnsupportedError(
        "collkit's C++ sources are missing (neither a source tree nor "
        "collkit/_src): reinstall collkit"
    )


# What the MPI programs are built from: copied into the build folder (so the build tree is tied to
# that copy, not to where collkit is installed) and hashed for its name.
BUILD_SOURCES = (
    "core/include",
    "core/src",
    "core/algorithms",
    "mpi/include",
    "mpi/src",
    "mpi/tests",
)


def _tree_files(root: Path, subs: Sequence[str]) -> list[Path]:
    return [
        p
        for sub in subs
        for p in sorted((root / sub).rglob("*"))
        if p.is_file() and p.suffix in (".cpp", ".hpp", ".h", ".txt")
    ]


def _tree_hash(root: Path, subs: Sequence[str]) -> str:
    h = hashlib.sha256()
    for p in _tree_files(root, subs):
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def _sources_hash(root: Path, mpi: MPI) -> str:
    """The build folder's key: the MPI (wrapper, version) and the sources' contents, not their
    place, so two installs of the same sources (two venvs, a wheel and a checkout) share one
    build."""
    h = hashlib.sha256()
    h.update(mpi.mpicxx.encode())
    h.update(mpi.version.encode())
    h.update(_tree_hash(root, (*BUILD_SOURCES, "mpi/CMakeLists.txt")).encode())
    return h.hexdigest()[:16]


def cache_root() -> Path:
    env = os.environ.get("COLLKIT_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "collkit"


def _tool(name: str) -> str | None:
    """A build tool: the PyPI package's beside this Python (collkit depends on cmake and ninja),
    else PATH's."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def cmake() -> str:
    """The cmake to build with; MissingToolError if there is none."""
    found = _tool("cmake")
    if not found:
        raise MissingToolError(
            "cmake is needed to build collkit's MPI programs and was not found: "
            "`pip install cmake` (or install it with your system's packages)"
        )
    return found


def _check_compiler(mpi: MPI, env: dict[str, str]) -> str:
    """The MPI's C++ wrapper must run: it wraps a C++ compiler that may be missing. Returns what
    it says of its compiler's version."""
    try:
        r = subprocess.run(
            [mpi.mpicxx, "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=env,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MissingToolError(f"cannot run the MPI's C++ compiler {mpi.mpicxx}: {e}") from None
    if r.returncode != 0:
        raise MissingToolError(
            f"the MPI's C++ compiler {mpi.mpicxx} does not run (is a C++ compiler, e.g. g++, "
            f"installed?): {(r.stdout + r.stderr).strip()[-500:]}"
        )
    return r.stdout + r.stderr


# Where an MPI's headers and libmpi.so come from, by kind: a runtime package alone may ship the
# compiler wrapper without them (Debian's openmpi-bin has mpicxx.openmpi; libopenmpi-dev has
# mpi.h and libmpi.so).
DEV_PACKAGES = {
    "openmpi": "libopenmpi-dev (Debian, Ubuntu) or openmpi-devel (Fedora, RHEL)",
    "mpich": "libmpich-dev (Debian, Ubuntu) or mpich-devel (Fedora, RHEL), or `pip install mpich`",
    "intel": "impi-devel (`pip install impi-devel` of impi-rt's version) or Intel's oneAPI MPI",
}

_PROBE = """#include <mpi.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Finalize();
  return 0;
}
"""

# GCC's and clang's words for a missing mpi.h and a missing libmpi (ld, lld, macOS's ld).
_NO_HEADER = re.compile(r"mpi\.h'?: No such file|'mpi\.h' file not found")
_NO_LIBRARY = re.compile(r"(cannot find|unable to find library|library not found for) -lp?mpi")


def _check_mpi_files(mpi: MPI, env: dict[str, str]) -> None:
    """The wrapper must find the MPI's mpi.h and libmpi: else CMake fails with a log that names
    neither the file nor the package. A minimal program, compiled and linked (a second or so,
    before a build of minutes)."""
    with tempfile.TemporaryDirectory(prefix="collkit-probe-") as d:
        src = Path(d) / "probe.cpp"
        src.write_text(_PROBE)
        try:
            r = subprocess.run(
                [mpi.mpicxx, str(src), "-o", str(Path(d) / "probe")],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
                env=env,
                cwd=d,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise MissingToolError(f"cannot run the MPI's C++ compiler {mpi.mpicxx}: {e}") from None
    if r.returncode != 0:
        raise probe_error(mpi, r.stdout + r.stderr)


def probe_error(mpi: MPI, log: str) -> MissingToolError:
    """The error for a minimal MPI program that `mpi`'s wrapper failed to build with `log`:
    naming the development package where the log says mpi.h or libmpi is missing."""
    log = log.strip()
    missing = []
    if _NO_HEADER.search(log):
        missing.append("its header mpi.h")
    if _NO_LIBRARY.search(log):
        missing.append("its library libmpi.so")
    if missing:
        package = DEV_PACKAGES.get(mpi.kind, "the MPI's development package")
        return MissingToolError(
            f"{mpi.version}'s development files are missing: {mpi.mpicxx} cannot find "
            f"{' and '.join(missing)}. Install {package}. The compiler said:\n{log[-800:]}"
        )
    return MissingToolError(
        f"{mpi.mpicxx} cannot build a minimal MPI program (is it the wrapper of an installed "
        f"MPI with its development files?):\n{log[-1500:]}"
    )


def core_archive(root: Path, compiler_version: str) -> Path | None:
    """The core archive the Python package installed (collkit/_lib/libcollkit_core.a), where the
    MPI programs can link it instead of compiling the core again with the MPI's wrapper: it was
    built from the same core sources as `root`'s (an editable install's tree after a core edit is
    not) by the compiler the wrapper runs (`compiler_version`: its `--version`). None otherwise."""
    from collkit import _core

    lib = Path(_core.__file__).resolve().parent
    archive, made_by = lib / "_lib" / "libcollkit_core.a", lib / "_lib" / "core-compiler.txt"
    installed = lib / "_src"
    if not (archive.is_file() and made_by.is_file() and (installed / "core").is_dir()):
        return None
    kind, _, version = made_by.read_text().strip().partition(" ")
    # GCC names itself g++, gcc or c++ (Debian's c++ alternative, what the pip MPICH's wrapper
    # runs), always beside the Free Software Foundation's copyright line.
    words = {"GNU": ("g++", "gcc", "free software foundation"), "Clang": ("clang",)}.get(kind, ())
    said = compiler_version.lower()
    if not version or version not in compiler_version or not any(w in said for w in words):
        return None
    core = ("core/include", "core/src", "core/algorithms")
    if installed.resolve() != root.resolve() and _tree_hash(installed, core) != _tree_hash(
        root, core
    ):
        return None
    return archive


def _copy_sources(root: Path, dest: Path) -> None:
    """The sources the build needs, copied whole into `dest` (once: a folder renamed into place)."""
    if (dest / "mpi" / "CMakeLists.txt").exists():
        return
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for sub in BUILD_SOURCES:
        shutil.copytree(root / sub, tmp / sub)
    shutil.copy2(root / "mpi" / "CMakeLists.txt", tmp / "mpi" / "CMakeLists.txt")
    tmp.replace(dest)


def build_dir(mpi: MPI) -> Path:
    """The cache directory of `mpi`'s programs for the current sources."""
    return cache_root() / f"mpi-{mpi.kind}-{_sources_hash(source_dir(), mpi)}"


def build(mpi: MPI, programs: Sequence[str] = PROGRAMS, *, quiet: bool = True) -> Path:
    """Builds `programs` (file names from PROGRAMS) for `mpi` unless already built; returns
    their directory. Raises MissingToolError without cmake or a working compiler."""
    unknown = [p for p in programs if p not in PROGRAMS]
    if unknown:
        raise ValueError(f"not collkit MPI programs: {unknown}")
    root = source_dir()
    out = build_dir(mpi)
    if all((out / p).exists() for p in programs):
        return out
    tool = cmake()
    env = {**os.environ, **mpi.build_env()}
    version = _check_compiler(mpi, env)
    _check_mpi_files(mpi, env)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two campaigns at once build once
        todo = [p for p in programs if not (out / p).exists()]
        if not todo:
            return out
        bdir = out / "build"
        _copy_sources(root, out / "src")
        ninja = _tool("ninja")
        gen = ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"] if ninja else []
        # The core from the package's archive where it fits (then only mpi/ is compiled here),
        # copied beside the build so that a later install does not change it under the build.
        archive = core_archive(root, version)
        core = ""
        if archive is not None:
            shutil.copy2(archive, out / "libcollkit_core.a")
            core = str(out / "libcollkit_core.a")
        ccache = shutil.which("ccache")
        launcher = [f"-DCMAKE_CXX_COMPILER_LAUNCHER={ccache}"] if ccache else []
        if ccache:
            # Paths inside the build folder made relative, the folder itself not hashed: the
            # same file in the next build folder (another source hash) is then a hit.
            env = {**env, "CCACHE_BASEDIR": str(out), "CCACHE_NOHASHDIR": "1"}
        targets = [p.removeprefix("lib").removesuffix(".so") for p in todo]
        cmds = [
            [
                tool,
                "-S",
                str(out / "src" / "mpi"),
                "-B",
                str(bdir),
                *gen,
                *launcher,
                f"-DCMAKE_CXX_COMPILER={mpi.mpicxx}",
                "-DCMAKE_BUILD_TYPE=Release",
                f"-DCOLLKIT_CORE_ARCHIVE={core}",
            ],
            [tool, "--build", str(bdir), "-j", "2", "--target", *targets],
        ]
        for cmd in cmds:
            if not quiet:
                print("+", " ".join(cmd), file=sys.stderr)
            r = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
            if r.returncode != 0:
                raise UnsupportedError(
                    f"building collkit's MPI programs with {mpi.mpicxx} failed:\n"
                    + (r.stdout + r.stderr)[-3000:]
                )
        for p in todo:  # copied whole, each after its build: presence marks a complete file
            tmp = out / f".{p}.tmp"
            shutil.copy2(bdir / p, tmp)
            tmp.replace(out / p)
    return out
