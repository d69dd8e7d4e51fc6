"""Finding an MPI, building collkit's MPI programs for it once, and launching them.

The compiled Python module has no MPI in it (the core never does), so everything that runs over
MPI is built separately, per MPI: `mpi/` and the `core/` sources it needs are compiled with that
MPI's compiler wrapper into a cache directory keyed by the MPI and the sources' hash, the first
time they are needed. The sources come from the source tree or, in an installed package, from
`collkit/_src` (installed by the top-level CMakeLists.txt).

Which MPI, first match wins:
  1. explicit arguments (`--mpiexec`, `--mpi-prefix`),
  2. the environment: MPIEXEC and MPICXX (or MPICC, whose C++ sibling is used),
  3. the PyPI `mpich` wheel in this Python's environment (`pip install mpich`),
  4. `mpiexec` / `mpicxx` on PATH.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from collkit import cluster
from collkit.errors import InvalidArgumentError, UnsupportedError

# Oversubscribed MPICH (more ranks than cores) busy-polls: every waiting rank spins and steals the
# core the rank it waits for needs. Throttled progress sleeps after each failed poll instead;
# measured on a 2-core machine (docs/mpi.md) it takes an 8-byte allreduce at 8 ranks from tens of
# milliseconds to about a millisecond. Applied when ranks outnumber cores, unless the user set them.
MPICH_OVERSUBSCRIBED_ENV = {
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1",
}
# The collectives Open MPI's coll/han (hierarchical) implements: forced as ompi:han.
HAN = ("allreduce", "bcast", "reduce")
# Open MPI: yield the core when idle (it also turns this on by itself under --oversubscribe).
OPENMPI_OVERSUBSCRIBED_ENV = {"OMPI_MCA_mpi_yield_when_idle": "1"}

# The MPI's own algorithms, forced one at a time. MPICH: MPIR_CVAR_<COLL>_INTRA_ALGORITHM=<name>;
# Open MPI: coll_tuned_use_dynamic_rules=1 and coll_tuned_<coll>_algorithm=<number>.
MPICH_ALGORITHMS: dict[str, list[str]] = {
    "allreduce": [
        "recursive_doubling",
        "recursive_multiplying",
        "reduce_scatter_allgather",
        "tree",
        "recexch",
        "ring",
        "k_reduce_scatter_allgather",
        "smp",
        "nb",
    ],
    "reduce": ["binomial", "reduce_scatter_gather", "smp", "nb"],
    "bcast": [
        "binomial",
        "scatter_recursive_doubling_allgather",
        "scatter_ring_allgather",
        "pipelined_tree",
        "tree",
        "smp",
        "nb",
    ],
    "alltoall": ["brucks", "k_brucks", "pairwise", "pairwise_sendrecv_replace", "scattered", "nb"],
    "barrier": ["k_dissemination", "recexch", "smp", "nb"],
    "allgather": [
        "brucks",
        "k_brucks",
        "recursive_doubling",
        "ring",
        "recexch_doubling",
        "recexch_halving",
        "nb",
    ],
    "reduce_scatter_block": [
        "noncommutative",
        "recursive_doubling",
        "pairwise",
        "recursive_halving",
        "nb",
    ],
    "gather": ["binomial", "nb"],
    "scatter": ["binomial", "nb"],
}
OPENMPI_ALGORITHMS: dict[str, dict[str, int]] = {
    "allreduce": {
        "basic_linear": 1,
        "nonoverlapping": 2,
        "recursive_doubling": 3,
        "ring": 4,
        "segmented_ring": 5,
        "rabenseifner": 6,
    },
    "reduce": {
        "linear": 1,
        "chain": 2,
        "pipeline": 3,
        "binary": 4,
        "binomial": 5,
        "in_order_binary": 6,
        "rabenseifner": 7,
    },
    "bcast": {
        "basic_linear": 1,
        "chain": 2,
        "pipeline": 3,
        "split_binary_tree": 4,
        "binary_tree": 5,
        "binomial": 6,
        "knomial": 7,
        "scatter_allgather": 8,
        "scatter_allgather_ring": 9,
    },
    "alltoall": {"linear": 1, "pairwise": 2, "modified_bruck": 3, "linear_sync": 4, "two_proc": 5},
    "barrier": {
        "linear": 1,
        "double_ring": 2,
        "recursive_doubling": 3,
        "bruck": 4,
        "two_proc": 5,
        "tree": 6,
    },
    "allgather": {
        "linear": 1,
        "bruck": 2,
        "recursive_doubling": 3,
        "ring": 4,
        "neighbor": 5,
        "two_proc": 6,
    },
    "reduce_scatter_block": {
        "basic_linear": 1,
        "recursive_doubling": 2,
        "recursive_halving": 3,
        "butterfly": 4,
    },
    "gather": {"basic_linear": 1, "binomial": 2, "linear_sync": 3},
    "scatter": {"basic_linear": 1, "binomial": 2, "linear_nb": 3},
}

PROGRAMS = (
    "collkit_bench",
    "collkit_multicast",
    "collkit_calibrate",
    "collkit_check_alltoall",
    "collkit_conformance",
    "collkit_pmpi_overhead",
    "libcollkit_pmpi.so",  # the interposition library (LD_PRELOAD; docs/tuning.md)
)


@dataclass
class MPI:
    """One MPI installation: its compiler wrapper, launcher and kind."""

    mpicxx: str
    mpiexec: str
    kind: str  # "mpich" | "openmpi" | "other"
    version: str  # first line of `mpiexec --version`, e.g. "HYDRA build details:" is skipped
    launch_args: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.version

    def native_algorithms(self, collective: str) -> list[str]:
        """Names of this MPI's own algorithms for `collective`, as rows call them: mpich:ring."""
        if self.kind == "mpich":
            return [f"mpich:{a}" for a in MPICH_ALGORITHMS.get(collective, [])]
        if self.kind == "openmpi":
            return [f"ompi:{a}" for a in OPENMPI_ALGORITHMS.get(collective, {})]
        return []

    def force_env(self, collective: str, name: str) -> dict[str, str]:
        """Environment that makes the native call use algorithm `name` (mpich:ring, ompi:ring)."""
        impl, _, algo = name.partition(":")
        if (
            impl == "mpich"
            and self.kind == "mpich"
            and algo in MPICH_ALGORITHMS.get(collective, [])
        ):
            # MPICH's ch4 device may override the MPIR-level algorithms with its own (shared
            # memory) collectives: without this the forced algorithm is not the one that runs.
            return {
                "MPIR_CVAR_DEVICE_COLLECTIVES": "none",
                f"MPIR_CVAR_{collective.upper()}_INTRA_ALGORITHM": algo,
            }
        if impl == "ompi" and self.kind == "openmpi" and algo == "han" and collective in HAN:
            # coll/han, Open MPI's hierarchical component, is off by default in 4.1: raise its
            # priority. It disqualifies itself on a communicator of one node (its log says so
            # with OMPI_MCA_coll_base_verbose=10), and then the default path runs.
            return {"OMPI_MCA_coll_han_priority": "100"}
        table = OPENMPI_ALGORITHMS.get(collective, {})
        if impl == "ompi" and self.kind == "openmpi" and algo in table:
            return {
                "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                f"OMPI_MCA_coll_tuned_{collective}_algorithm": str(table[algo]),
            }
        known = ", ".join(self.native_algorithms(collective)) or "none"
        raise InvalidArgumentError(
            f"'{name}' is not an algorithm of this MPI ({self.kind}) for {collective}; "
            f"known: {known}"
        )


def _run(cmd: list[str], **kw: object) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False, **kw)  # type: ignore[call-overload]
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UnsupportedError(f"cannot run {cmd[0]}: {e}") from None
    return str(out.stdout) + str(out.stderr)


def _kind_and_version(mpiexec: str) -> tuple[str, str]:
    text = _run([mpiexec, "--version"])
    if "Open MPI" in text or "OpenRTE" in text:
        first = next((ln for ln in text.splitlines() if "Open MPI" in ln or "OpenRTE" in ln), "")
        return "openmpi", "Open MPI " + first.split()[-1] if first else "Open MPI"
    if "HYDRA" in text or "MPICH" in text:
        ver = next(
            (
                ln.split(":", 1)[1].strip()
                for ln in text.splitlines()
                if ln.strip().startswith("Version:")
            ),
            "",
        )
        return "mpich", f"MPICH {ver}".strip()
    return "other", text.strip().splitlines()[0] if text.strip() else "unknown MPI"


def _sibling(path: str, names: tuple[str, ...]) -> str | None:
    d = Path(path).parent
    for n in names:
        if (d / n).exists():
            return str(d / n)
    return None


def find_mpi(mpiexec: str | None = None, prefix: str | None = None) -> MPI:
    """The MPI to use (see the module's docstring). Raises UnsupportedError if there is none."""
    cxx: str | None = None
    if prefix:
        bindir = Path(prefix) / "bin"
        mpiexec = mpiexec or str(bindir / "mpiexec")
        cxx = str(bindir / "mpicxx")
    if not mpiexec and os.environ.get("MPIEXEC"):
        mpiexec = os.environ["MPIEXEC"]
    if os.environ.get("MPICXX"):
        cxx = cxx or shutil.which(os.environ["MPICXX"]) or os.environ["MPICXX"]
    elif os.environ.get("MPICC"):
        cxx = cxx or _sibling(os.environ["MPICC"], ("mpicxx", "mpic++", "mpiCC"))
    if not mpiexec:
        venv = Path(sys.prefix) / "bin" / "mpiexec"
        mpiexec = str(venv) if venv.exists() else shutil.which("mpiexec")
    if not mpiexec or (not Path(mpiexec).exists() and not shutil.which(mpiexec)):
        raise UnsupportedError(
            "no MPI found: `pip install mpich`, or pass --mpiexec / --mpi-prefix, or set MPIEXEC "
            "and MPICXX"
        )
    mpiexec = shutil.which(mpiexec) or mpiexec
    if not cxx:
        cxx = _sibling(mpiexec, ("mpicxx", "mpic++", "mpicxx.openmpi", "mpicxx.mpich"))
        if cxx is None and Path(mpiexec).resolve() != Path(mpiexec):
            cxx = _sibling(str(Path(mpiexec).resolve()), ("mpicxx", "mpic++"))
    if not cxx or not Path(cxx).exists():
        raise UnsupportedError(f"no MPI C++ compiler wrapper beside {mpiexec}: set MPICXX")
    kind, version = _kind_and_version(mpiexec)
    args: list[str] = []
    if kind == "openmpi" and hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--allow-run-as-root")
    return MPI(mpicxx=cxx, mpiexec=mpiexec, kind=kind, version=version, launch_args=args)


def source_dir() -> Path:
    """Where `core/` and `mpi/` are: the source tree, or the installed package's copy."""
    here = Path(__file__).resolve().parent
    for root in (here.parents[1], here / "_src"):
        if (root / "mpi" / "CMakeLists.txt").exists() and (root / "core" / "include").exists():
            return root
    raise UnsupportedError(
        "collkit's C++ sources are missing (neither a source tree nor "
        "collkit/_src): reinstall collkit"
    )


def _sources_hash(root: Path, mpi: MPI) -> str:
    h = hashlib.sha256()
    h.update(mpi.mpicxx.encode())
    h.update(mpi.version.encode())
    for sub in ("core", "mpi"):
        for p in sorted((root / sub).rglob("*")):
            if p.is_file() and p.suffix in (".cpp", ".hpp", ".h", ".txt"):
                h.update(str(p.relative_to(root)).encode())
                h.update(p.read_bytes())
    return h.hexdigest()[:16]


def cache_root() -> Path:
    env = os.environ.get("COLLKIT_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "collkit"


def build(mpi: MPI, *, quiet: bool = True) -> Path:
    """Builds collkit's MPI programs for `mpi` unless already built; returns their directory."""
    root = source_dir()
    key = _sources_hash(root, mpi)
    out = cache_root() / f"mpi-{mpi.kind}-{key}"
    if all((out / p).exists() for p in PROGRAMS):
        return out
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two campaigns at once build once
        if all((out / p).exists() for p in PROGRAMS):
            return out
        bdir = out / "build"
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        cmds = [
            [
                "cmake",
                "-S",
                str(root / "mpi"),
                "-B",
                str(bdir),
                *gen,
                f"-DCMAKE_CXX_COMPILER={mpi.mpicxx}",
                "-DCMAKE_BUILD_TYPE=Release",
            ],
            ["cmake", "--build", str(bdir), "-j", "2"],
        ]
        for cmd in cmds:
            if not quiet:
                print("+", " ".join(cmd), file=sys.stderr)
            r = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if r.returncode != 0:
                raise UnsupportedError(
                    f"building collkit's MPI programs with {mpi.mpicxx} failed:\n"
                    + (r.stdout + r.stderr)[-3000:]
                )
        if (bdir / "libcollkit_mpi.so").exists():
            shutil.copy2(bdir / "libcollkit_mpi.so", out / "libcollkit_mpi.so")
        for p in PROGRAMS:  # the library last: its presence marks a complete build
            shutil.copy2(bdir / p, out / p)
    return out


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


PLACEMENTS = ("core", "socket", "node")


def placement_args(mpi: MPI, map_by: str) -> list[str]:
    """Launcher arguments that place consecutive ranks by core, socket or node (each rank bound
    to a core); "" leaves the MPI's default."""
    if not map_by:
        return []
    if map_by not in PLACEMENTS:
        raise InvalidArgumentError(f"placement '{map_by}' must be one of {', '.join(PLACEMENTS)}")
    if mpi.kind == "openmpi":
        return ["--map-by", map_by, "--bind-to", "core"]
    if mpi.kind == "mpich":  # hydra maps within a node by core / socket, across nodes per host
        return ["-ppn", "1"] if map_by == "node" else ["-map-by", map_by, "-bind-to", "core"]
    raise UnsupportedError(f"no placement options known for this MPI ({mpi.version})")


def launch_command(
    mpi: MPI, np: int, program: list[str], *, hosts: str | None = None, map_by: str = ""
) -> list[str]:
    """The mpiexec command line for `np` ranks of `program`."""
    if emulated := cluster.from_hostfile(hosts):  # `collkit cluster up`'s host file
        return emulated.launch_command(mpi, np, program, map_by)
    cmd = [mpi.mpiexec, *mpi.launch_args, *placement_args(mpi, map_by)]
    oversubscribed = np > cores() and hosts is None
    if mpi.kind == "openmpi":
        if oversubscribed:
            cmd.append("--oversubscribe")
        if hosts:
            cmd += ["--hostfile", hosts]
    elif hosts:
        cmd += ["-f", hosts]
    return [*cmd, "-n", str(np), *program]


def launch_env(
    mpi: MPI, np: int, extra: dict[str, str] | None = None, *, hosts: str | None = None
) -> tuple[dict[str, str], str]:
    """The environment to launch with, and a short description of the settings that were added
    (it goes into the rows: settings change timings)."""
    env = dict(os.environ)
    added: dict[str, str] = {}
    emulated = cluster.from_hostfile(hosts)  # `collkit cluster up`'s host file, or None
    if emulated:
        added.update({k: v for k, v in emulated.launch_env(mpi).items() if k not in env})
    # An emulated cluster's nodes share this machine's cores: its ranks can oversubscribe them.
    if np > cores() and (hosts is None or emulated):
        table = (
            MPICH_OVERSUBSCRIBED_ENV
            if mpi.kind == "mpich"
            else (OPENMPI_OVERSUBSCRIBED_ENV if mpi.kind == "openmpi" else {})
        )
        for k, v in table.items():
            if k not in env:
                added[k] = v
    for k, v in (extra or {}).items():
        added[k] = v
    env.update(added)
    desc = " ".join(f"{k}={v}" for k, v in sorted(added.items()))
    return env, desc


def allocation(np: int, hosts: str | None = None) -> str:
    if emulated := cluster.from_hostfile(hosts):
        return emulated.allocation(np)
    if hosts:
        return f"{np} ranks from hostfile {Path(hosts).name}"
    over = " (oversubscribed)" if np > cores() else ""
    return f"1 node x {np} ranks on {cores()} cores{over}"
