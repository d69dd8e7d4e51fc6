"""IMB-MPI1, a benchmark no one here wrote, plain against under `collkit run --tuning`: do the
table's wins hold in a third party's program?

Builds IMB-MPI1 from a checkout of Intel's MPI Benchmarks (https://github.com/intel/mpi-benchmarks;
not a test dependency) with IMB's own Makefile (`make IMB-MPI1 CC=mpicc CXX=mpicxx`) into a
cache folder keyed by the MPI and IMB's commit, once per MPI (the pip MPICH, Debian's Open MPI).
Then, per pair, per MPI and per variant, one plain run (`mpiexec -n NP IMB-MPI1 ...`) and one
under `collkit run -np NP --tuning TABLE -- IMB-MPI1 ...`, in turn (A B A B ...), with

    IMB-MPI1 -npmin NP -msglog 3:16 -iter 2000 -time 2 -mem 1 -zero_size 0 Allreduce Reduce ...

and the variant's flags: default (IMB's settings), sync0 (`-sync 0`: no barrier between
iterations), root_shift (`-root_shift 1`: the root moves every iteration), off_cache
(`-off_cache -1`: buffers out of cache). Per collective and size, IMB's t_avg of each run; a pair's
ratio is collkit's t_avg / the plain run's. The report gives per MPI x variant x collective x size
the medians of both, the median of the pair ratios (quartiles), the pairs collkit won (ratio < 1),
what the table routes that size to and the share of rank 0's calls that went to collkit (from one
more, untimed collkit run per variant with COLLKIT_STATS, which times every call and so stays out
of the pairs; calls before a communicator's setup is paid for go to the MPI).

    .venv/bin/python benchmarks/bench_thirdparty.py --imb-src /tmp/imb --mpi both --tune
    .venv/bin/python benchmarks/bench_thirdparty.py --imb-src /tmp/imb --tuning t.json \
        --pairs 3 --msglog 3:12 --iter 500 --collectives Allreduce,Bcast --variants default,sync0

--tune runs `collkit tune` per MPI for the benchmark's collectives and sizes first (into
--tune-dir/<mpi>; resumable like tune itself; once that folder holds a table, the table is used as
it is: delete it to tune again). Every run is appended to the pairs file (in the cache
folder, named after --out: ~/.cache/collkit/imb/thirdparty-imb.jsonl by default) as it finishes:
rerun the same command to continue where it stopped (runs of other settings in the file are kept
and not used). The report (machine, date, load average before and after, the command, the tables)
goes to --out (benchmarks/results/thirdparty-imb.md); the runs stay out of the source tree.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collkit import tune as tuning
from collkit.bench import machine_name
from collkit.errors import CollkitError, InvalidArgumentError, UnsupportedError
from collkit.mpi import (
    MPI,
    build,
    cache_root,
    find_mpi_of_kind,
    launch_command,
    launch_env,
    source_dir,
)
from collkit.mpi.stats import read_stats
from collkit.tune.table import to_dict
from tune_loop import collkit, hogs, mpi_env, winners

HERE = Path(__file__).resolve().parent
RESULT = HERE / "results" / "thirdparty-imb.md"
IMB_URL = "https://github.com/intel/mpi-benchmarks"
GET_IMB = f"get it with `git clone {IMB_URL} DIR` and pass --imb-src DIR"
WAYS = ("native", "collkit")
# One more collkit run per variant, outside the pairs, with COLLKIT_STATS: where rank 0's calls
# went. Not a timed run: stats time every call (two clock reads, a lock, a counter: ~0.15 us a
# call on the 2-core VM, as much as the whole difference at 8 B), so the pairs run without them.
ROUTES = "routes"
VARIANTS: dict[str, list[str]] = {
    "default": [],
    "sync0": ["-sync", "0"],
    "root_shift": ["-root_shift", "1"],
    "off_cache": ["-off_cache", "-1"],
}
# IMB-MPI1's benchmarks that collkit routes: IMB's name, collkit's collective, and k where the
# bytes the table and the library's stats read are IMB's #bytes x P^k: -1 where #bytes is the
# whole vector (Reduce_scatter_block: P blocks), 1 and 2 for the irregular calls keyed by the
# call's total (Allgatherv: P blocks of #bytes; Alltoallv: P^2, though its rules are keyed by P
# alone, so only a rule of every size routes it).
IMB_COLLECTIVES: dict[str, tuple[str, str, int]] = {
    "allreduce": ("Allreduce", "allreduce", 0),
    "reduce": ("Reduce", "reduce", 0),
    "bcast": ("Bcast", "bcast", 0),
    "barrier": ("Barrier", "barrier", 0),
    "alltoall": ("Alltoall", "alltoall", 0),
    "allgather": ("Allgather", "allgather", 0),
    "gather": ("Gather", "gather", 0),
    "scatter": ("Scatter", "scatter", 0),
    "reduce_scatter_block": ("Reduce_scatter_block", "reduce_scatter_block", -1),
    "allgatherv": ("Allgatherv", "allgatherv", 1),
    "alltoallv": ("Alltoallv", "alltoallv", 2),
}
REJECTS = 3  # unreadable IMB outputs of one run in a row before the campaign stops
# Open MPI's C++ bindings (which IMB does not use) fail IMB's -Wextra -Werror with g++ 12.
MAKE_EXTRA = {"openmpi": ["CPPFLAGS=-DOMPI_SKIP_MPICXX"]}
# IMB's settings the reference run used, beside -npmin, -msglog, -iter and the variant's flags.
FIXED = ["-time", "2", "-mem", "1", "-zero_size", "0"]

# bench -> processes -> bytes -> t_avg (us)
ImbTables = dict[str, dict[int, dict[int, float]]]


# ---------------------------------------------------------------------------------------------
# Arguments


def parse_msglog(text: str) -> tuple[int, int]:
    """'3:16' (sizes 2^3 .. 2^16 B, as IMB's -msglog) or '12' (1 .. 2^12 B, as IMB reads it)."""
    m = re.fullmatch(r"\s*(\d{1,2})\s*(?::\s*(\d{1,2})\s*)?", text)
    if not m:
        raise argparse.ArgumentTypeError(f"msglog '{text}': expected LO:HI, e.g. 3:16")
    lo, hi = (0, int(m[1])) if m[2] is None else (int(m[1]), int(m[2]))
    if not lo <= hi <= 30:
        raise argparse.ArgumentTypeError(f"msglog '{text}': need 0 <= LO <= HI <= 30")
    return lo, hi


def parse_collectives(text: str) -> list[str]:
    """IMB's names (any case), comma separated: Allreduce,Bcast -> ['Allreduce', 'Bcast']."""
    out: list[str] = []
    for part in text.split(","):
        key = part.strip().lower()
        if key not in IMB_COLLECTIVES:
            known = ", ".join(v[0] for v in IMB_COLLECTIVES.values())
            raise argparse.ArgumentTypeError(
                f"collective '{part.strip()}' is not one IMB-MPI1 times that collkit routes "
                f"(one of {known})"
            )
        name = IMB_COLLECTIVES[key][0]
        if name in out:
            raise argparse.ArgumentTypeError(f"collective '{name}' given twice")
        out.append(name)
    return out


def parse_variants(text: str) -> list[str]:
    out: list[str] = []
    for part in text.split(","):
        v = part.strip()
        if v not in VARIANTS:
            raise argparse.ArgumentTypeError(
                f"variant '{v}': one of {', '.join(VARIANTS)} (comma separated)"
            )
        if v in out:
            raise argparse.ArgumentTypeError(f"variant '{v}' given twice")
        out.append(v)
    return out


def positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if not 1 <= n <= 1_000_000:
        raise argparse.ArgumentTypeError(f"{n}: expected 1 .. 1000000")
    return n


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="bench_thirdparty.py",
        description=(__doc__ or "").splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--imb-src", type=Path, required=True, help=f"a checkout of {IMB_URL}")
    ap.add_argument("--mpi", choices=("mpich", "openmpi", "both"), default="both")
    how = ap.add_mutually_exclusive_group(required=True)
    how.add_argument("--tuning", type=Path, metavar="TABLE", help="collkit tuning table")
    how.add_argument(
        "--tune",
        action="store_true",
        help="run `collkit tune` first, per MPI (into --tune-dir; a table there is used as it is)",
    )
    ap.add_argument("--tune-dir", type=Path, default=Path("thirdparty-imb-tune"))
    ap.add_argument("--block", type=positive, default=16, help="tune --block (16: IMB's loops)")
    ap.add_argument("--pairs", type=positive, default=11)
    ap.add_argument("--np", type=positive, default=2)
    ap.add_argument("--msglog", type=parse_msglog, default=(3, 16), metavar="LO:HI")
    ap.add_argument("--iter", type=positive, default=2000, help="IMB -iter")
    ap.add_argument(
        "--collectives", type=parse_collectives, default=["Allreduce", "Reduce", "Bcast", "Barrier"]
    )
    ap.add_argument("--variants", type=parse_variants, default=["default"])
    ap.add_argument("--out", type=Path, default=RESULT, help="the report (.md); pairs beside it")
    ap.add_argument("--cache", type=Path, default=None, help="IMB builds (collkit's cache/imb)")
    ap.add_argument(
        "--note", action="append", default=[], help="a line for the report (repeatable)"
    )
    ap.add_argument("--run-timeout", type=positive, default=1800, help="seconds per IMB run")
    ap.add_argument(
        "--hogs", type=int, default=0, choices=range(0, 65), metavar="N",
        help="niced CPU hogs running while IMB runs (background load; 0: none)",
    )  # fmt: skip
    return ap


# ---------------------------------------------------------------------------------------------
# IMB: the checkout, the build, the output


def imb_commit(src: Path) -> str:
    """IMB's commit at `src` (with a hash of local changes when the tree differs from it), or a
    clear error naming where to get IMB."""
    if not src.is_dir():
        raise InvalidArgumentError(f"--imb-src {src}: no such folder; {GET_IMB}")
    if not (src / "src_cpp" / "MPI1").is_dir() or not (src / "src_c" / "IMB_allreduce.c").is_file():
        raise InvalidArgumentError(
            f"--imb-src {src}: not a checkout of intel/mpi-benchmarks (no src_cpp/MPI1, "
            f"src_c/IMB_allreduce.c); {GET_IMB}"
        )
    git = ["git", "-C", str(src)]
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    if head.returncode != 0 or not re.fullmatch(r"[0-9a-f]{40}\s*", head.stdout):
        raise InvalidArgumentError(
            f"--imb-src {src}: not a git checkout (IMB's commit keys the build cache); {GET_IMB}"
        )
    commit = head.stdout.strip()
    diff = subprocess.run(
        [*git, "diff", "HEAD"], capture_output=True, check=False
    ).stdout  # local edits build another IMB: a key of their own
    if diff:
        commit += "-dirty" + hashlib.sha256(diff).hexdigest()[:8]
    return commit


def mpicc_of(mpi: MPI) -> str:
    """The C wrapper beside the MPI's mpicxx (mpicxx -> mpicc, mpicxx.openmpi -> mpicc.openmpi)."""
    cxx = Path(mpi.mpicxx)
    return str(cxx.with_name(cxx.name.replace("mpicxx", "mpicc").replace("mpic++", "mpicc")))


def make_command(mpi: MPI) -> list[str]:
    """IMB's own build of IMB-MPI1 with this MPI's wrappers."""
    return ["make", "IMB-MPI1", f"CC={mpicc_of(mpi)}", f"CXX={mpi.mpicxx}",
            *MAKE_EXTRA.get(mpi.kind, [])]  # fmt: skip


def build_dir(cache: Path, mpi: MPI, commit: str) -> Path:
    how = "\0".join([mpi.version, *make_command(mpi)])  # the MPI, its wrappers, IMB's flags
    mpi_key = hashlib.sha256(how.encode()).hexdigest()[:8]
    return cache / f"{mpi.kind}-{mpi_key}-{commit[:20]}"


def build_imb(src: Path, commit: str, mpi: MPI, cache: Path) -> Path:
    """IMB-MPI1 built against `mpi` with IMB's own Makefile, once per (MPI, IMB commit)."""
    out = build_dir(cache, mpi, commit)
    binary = out / "IMB-MPI1"
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    cc, cxx = mpicc_of(mpi), mpi.mpicxx
    for w in (cc, cxx):
        if shutil.which(w) is None:
            raise UnsupportedError(f"{mpi.version}: its compiler wrapper {w} is not installed")
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=cache))
    tree = work / "src"
    # A copy: IMB's Makefile builds in its tree, and one tree serves both MPIs.
    shutil.copytree(src, tree, ignore=shutil.ignore_patterns(".git", "IMB-*", "*.o"))
    cmd = make_command(mpi)
    print(f"building IMB-MPI1 for {mpi.version}: {shlex.join(cmd)} in {tree}", flush=True)
    p = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, check=False)
    (work / "build.log").write_text(p.stdout + p.stderr)
    if p.returncode != 0 or not (tree / "IMB-MPI1").is_file():
        raise UnsupportedError(
            f"building IMB-MPI1 for {mpi.version} failed (log: {work / 'build.log'}):\n"
            f"{(p.stdout + p.stderr)[-2000:]}"
        )
    shutil.move(tree / "IMB-MPI1", work / "IMB-MPI1")
    shutil.rmtree(tree)
    if out.exists():  # a stale, half-made folder from an interrupted build
        shutil.rmtree(out)
    os.replace(work, out)  # the cache holds finished builds only
    return binary


_BENCH = re.compile(r"^#\s*Benchmarking\s+(\S+)\s*$")
_PROCS = re.compile(r"^#\s*#processes\s*=\s*(\d+)")


def parse_imb(text: str) -> ImbTables:
    """IMB's result tables: per benchmark and process count, t_avg (us) per #bytes (0 for
    Barrier, whose table has no #bytes column). A table line that does not fit its header, a
    benchmark block without rows (IMB stopped) and output with no table at all are errors."""
    out: ImbTables = {}
    block: tuple[str, int] | None = None  # the benchmark and process count of the table
    bench: str | None = None
    cols: list[str] | None = None
    rows = 0  # in the current block

    def close(n: int) -> None:
        if block is not None and rows == 0:
            where = f"line {n}" if n else "the end"
            raise InvalidArgumentError(
                f"IMB output, before {where}: {block[0]} at {block[1]} processes has no result "
                "rows (IMB stopped?)"
            )

    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if m := _BENCH.match(line):
            close(n)
            bench, block, cols, rows = m[1], None, None, 0
            continue
        if bench is None:
            continue
        if m := _PROCS.match(line):
            close(n)
            block, cols, rows = (bench, int(m[1])), None, 0
            continue
        if line.startswith("#"):
            if "t_avg[usec]" in line.split():
                if block is None:
                    raise InvalidArgumentError(
                        f"IMB output line {n}: {bench}'s table has no '#processes = N' line"
                    )
                cols = line.split()
            continue
        if not line or cols is None or block is None:
            continue
        fields = line.split()
        if "time-out." in line:  # IMB's -time budget (per sample x sizes) ran out: sizes lost
            raise InvalidArgumentError(
                f"IMB output line {n}: IMB stopped {block[0]} at {fields[0]} B: its time limit "
                "(-time x the number of sizes) ran out"
            )
        if len(fields) != len(cols):
            raise InvalidArgumentError(
                f"IMB output line {n}: {len(fields)} fields under a header of {len(cols)} "
                f"({' '.join(cols)})"
            )
        try:
            nbytes = int(fields[cols.index("#bytes")]) if "#bytes" in cols else 0
            t_avg = float(fields[cols.index("t_avg[usec]")])
        except ValueError:
            raise InvalidArgumentError(f"IMB output line {n}: not a number in '{line}'") from None
        if not 0 <= t_avg < float("inf") or nbytes < 0:
            raise InvalidArgumentError(f"IMB output line {n}: t_avg '{fields[-1]}' out of range")
        out.setdefault(block[0], {}).setdefault(block[1], {})[nbytes] = t_avg
        rows += 1
    close(0)
    if not out:
        raise InvalidArgumentError("IMB output: no result table (did IMB run?)")
    return out


def imb_args(a: argparse.Namespace, variant: str) -> list[str]:
    lo, hi = a.msglog
    return [
        "-npmin", str(a.np), "-msglog", f"{lo}:{hi}", "-iter", str(a.iter), *FIXED,
        *VARIANTS[variant], *a.collectives,
    ]  # fmt: skip


def table_bytes(bench: str, imb_bytes: int, P: int) -> int:
    """What the tuning table reads for IMB's #bytes (per block where IMB gives the vector)."""
    k = IMB_COLLECTIVES[bench.lower()][2]
    return imb_bytes // P if k < 0 else imb_bytes * P**k


# ---------------------------------------------------------------------------------------------
# The pairs file: every run as it finishes, resumed from


def read_runs(path: Path) -> list[dict[str, Any]]:
    """The runs recorded so far. A last line cut short (the process stopped while writing it) is
    dropped and cut from the file, so the next run starts a line of its own; a bad line anywhere
    else is an error (the file is not this benchmark's, or was edited)."""
    if not path.exists():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")
    runs: list[dict[str, Any]] = []
    good = 0  # bytes of the file that hold whole, valid lines
    for i, ln in enumerate(lines):
        last = i == len(lines) - 1
        if not ln.strip():
            good += len(ln) + (0 if last else 1)
            continue
        try:
            r = json.loads(ln)
            if not isinstance(r, dict) or not {"key", "pair", "variant", "way", "t_avg"} <= set(r):
                raise ValueError("not a run")
        except ValueError:
            if last:  # an unterminated last line: the interrupted write
                with path.open("r+b") as f:
                    f.truncate(good)
                break
            raise InvalidArgumentError(
                f"{path}:{i + 1}: not a run of this benchmark; move the file away to start again"
            ) from None
        if last:  # valid JSON without its newline: keep it, end it
            with path.open("ab") as f:
                f.write(b"\n")
        runs.append(r)
        good += len(ln) + 1
    return runs


def append_run(path: Path, run: dict[str, Any]) -> None:
    with path.open("a") as f:
        f.write(json.dumps(run) + "\n")
        f.flush()
        os.fsync(f.fileno())


def todo(
    runs: list[dict[str, Any]], key: dict[str, Any], pairs: int, variants: list[str]
) -> list[tuple[int, str, str]]:
    """The (pair, variant, way) still to run, in order: per pair, per variant, native then
    collkit; then one untimed run per variant that counts the routes. Runs of another key (MPI,
    IMB, settings, table) do not count."""
    done = {(r["pair"], r["variant"], r["way"]) for r in runs if r["key"] == key}
    timed = [(i, v, w) for i in range(pairs) for v in variants for w in WAYS]
    return [t for t in timed + [(0, v, ROUTES) for v in variants] if t not in done]


# ---------------------------------------------------------------------------------------------
# Pair statistics


@dataclass
class PairStats:
    native_us: float  # median over the pairs
    collkit_us: float
    ratio: float  # median of the pairs' collkit / native
    q1: float
    q3: float
    won: int  # pairs with collkit faster
    pairs: int


def pair_stats(pairs: list[tuple[float, float]]) -> PairStats | None:
    """(native t_avg, collkit t_avg) per pair -> medians, the median pair ratio, pairs won.
    A pair whose native time IMB printed as 0.00 has no ratio and is left out."""
    ok = [(n, c) for n, c in pairs if n > 0]
    if not ok:
        return None
    ratios = sorted(c / n for n, c in ok)
    q = statistics.quantiles(ratios, n=4, method="inclusive") if len(ratios) > 1 else ratios * 3
    return PairStats(
        native_us=statistics.median(n for n, _ in ok),
        collkit_us=statistics.median(c for _, c in ok),
        ratio=statistics.median(ratios),
        q1=q[0],
        q3=q[2],
        won=sum(r < 1 for r in ratios),
        pairs=len(ratios),
    )


def pairs_of(
    runs: list[dict[str, Any]], key: dict[str, Any], variant: str, bench: str, P: int, nbytes: int
) -> list[tuple[float, float]]:
    """(native, collkit) t_avg of each complete pair of this key and variant at one size."""
    by: dict[int, dict[str, float]] = {}
    for r in runs:
        if r["key"] != key or r["variant"] != variant or r["way"] not in WAYS:
            continue
        t = r["t_avg"].get(bench, {}).get(str(P), {}).get(str(nbytes))
        if t is not None:
            by.setdefault(r["pair"], {})[r["way"]] = t
    return [(v["native"], v["collkit"]) for _, v in sorted(by.items()) if len(v) == 2]


def collkit_share(runs: list[dict[str, Any]], key: dict[str, Any], variant: str, coll: str,
                  P: int, nbytes: int) -> tuple[int, int]:  # fmt: skip
    """(calls routed to collkit, calls) on world rank 0 in the variant's routes run
    (COLLKIT_STATS)."""
    mine = total = 0
    for r in runs:
        if r["key"] != key or r["variant"] != variant or r["way"] != ROUTES:
            continue
        for s in r.get("routes", []):
            if s["collective"] == coll and s["P"] == P and s["bytes"] == nbytes:
                total += s["calls"]
                mine += s["calls"] if s["algorithm"] != "native" else 0
    return mine, total


# ---------------------------------------------------------------------------------------------
# Running


def run_imb(
    way: str, mpi: MPI, binary: Path, args: list[str], a: argparse.Namespace, table: Path
) -> tuple[str, list[dict[str, Any]], list[str]]:
    """One IMB run: its output, the routes rank 0's calls took (collkit way) and the command."""
    prog = [str(binary), *args]
    with tempfile.TemporaryDirectory(prefix="collkit-imb-") as tmp:
        stats = Path(tmp) / "stats.jsonl"
        if way == "native":
            env, _ = launch_env(mpi, a.np)
            cmd = launch_command(mpi, a.np, prog)
        else:
            env = {**os.environ, **mpi_env(mpi)}
            counted = ["--stats", str(stats)] if way == ROUTES else []
            cmd = [sys.executable, "-m", "collkit", "run", "-np", str(a.np), "--tuning",
                   str(table), *counted, "--", *prog]  # fmt: skip
        try:
            p = subprocess.run(
                cmd, env=env, capture_output=True, text=True, timeout=a.run_timeout, check=False
            )
        except subprocess.TimeoutExpired:
            raise UnsupportedError(
                f"{shlex.join(cmd)} ran past --run-timeout {a.run_timeout} s"
            ) from None
        if p.returncode != 0:
            raise UnsupportedError(
                f"{shlex.join(cmd)} failed ({p.returncode}):\n{p.stdout[-1500:]}{p.stderr[-1500:]}"
            )
        routes: list[dict[str, Any]] = []
        if way == ROUTES:
            if not stats.exists():
                raise UnsupportedError(f"collkit run wrote no --stats: {p.stderr[-1500:]}")
            for s in read_stats(stats):  # world rank 0's calls
                routes.append({"collective": s.collective, "algorithm": s.algorithm, "P": s.P,
                               "bytes": s.bytes, "calls": s.iterations})  # fmt: skip
    # the stats file is a temporary one: the command as a person would rerun it
    shown = [("STATS.jsonl" if c == str(stats) else c) for c in cmd]
    return p.stdout, routes, shown


def table_for(mpi: MPI, a: argparse.Namespace) -> Path:
    """--tuning, or the table `collkit tune` writes for the benchmark's collectives and sizes."""
    if not a.tune:
        path: Path = a.tuning
        return path
    out = a.tune_dir / mpi.kind
    if (out / "collkit-tuning.json").exists():
        # A table tuned before is the table: tune, resumed, may choose again among noisy rows,
        # and a new routing orphans every pair measured with the old one. Delete it to retune.
        print(f"{mpi.version}: the table tuned before, {out / 'collkit-tuning.json'}", flush=True)
        return out / "collkit-tuning.json"
    a.tune_dir.mkdir(parents=True, exist_ok=True)  # tune makes -o, not the folders above it
    colls = [IMB_COLLECTIVES[b.lower()][1] for b in a.collectives]
    lo, hi = a.msglog
    r = collkit(
        "tune", *colls, "-np", str(a.np), "--sizes", f"{2**lo}..{2**hi}", "--block",
        str(a.block), "--no-mpi-algos", "-o", str(out), "--no-plot", env=mpi_env(mpi),
    )  # fmt: skip
    print(r.stdout, flush=True)
    if r.returncode != 0:
        raise UnsupportedError(f"collkit tune on {mpi.version} failed:\n{r.stderr[-3000:]}")
    return out / "collkit-tuning.json"


def run_key(
    mpi: MPI, commit: str, a: argparse.Namespace, table: Path, library: str = ""
) -> dict[str, Any]:
    """What a run's numbers depend on: runs of another key are not pairs of these. `library`:
    the interposition library's build (its folder's name hashes its sources), so runs of an
    other build are not paired with this one's."""
    return {
        "library": library,
        "mpi": mpi.version,
        "kind": mpi.kind,
        "imb": commit,
        "np": a.np,
        "timed_without_stats": True,  # runs timed under COLLKIT_STATS do not pair with these
        "hogs": getattr(a, "hogs", 0),
        "msglog": list(a.msglog),
        "iter": a.iter,
        "collectives": a.collectives,
        "table": routing_hash(table),
    }


def same_but_hogs(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two runs' keys differ in their background load at most."""
    return {**a, "hogs": 0} == {**b, "hogs": 0}


def routing_hash(table: Path) -> str:
    """The table's routing (its rules' ranges and algorithms), not its bytes: `collkit tune`
    rewrites the file on every resumed call (a new date), and that must not orphan the pairs."""
    rules = [[r.collective, *r.P, *r.bytes, r.algorithm] for r in tuning.load(table).rules]
    return hashlib.sha256(json.dumps(rules).encode()).hexdigest()[:16]


def measure(
    mpi: MPI, binary: Path, key: dict[str, Any], a: argparse.Namespace, table: Path, log: Path
) -> list[dict[str, Any]]:
    runs = read_runs(log)
    left = todo(runs, key, a.pairs, a.variants)
    total = a.pairs * len(a.variants) * len(WAYS) + len(a.variants)
    if len(left) < total:
        print(f"{mpi.version}: {total - len(left)} of {total} runs already in {log}", flush=True)
    for i, variant, way in left:
        load0 = os.getloadavg()[0]
        rejected: list[str] = []
        while True:
            text, routes, cmd = run_imb(way, mpi, binary, imb_args(a, variant), a, table)
            try:
                parsed = parse_imb(text)
                missing = [b for b in a.collectives if a.np not in parsed.get(b, {})]
                if missing:
                    raise InvalidArgumentError(
                        f"IMB output: no table of {', '.join(missing)} at P = {a.np}"
                    )
                break
            except InvalidArgumentError as e:
                # Kept, said and run again: another process's message written into IMB's
                # table is not a measurement, and one stray line should not stop the campaign.
                bad = log.with_name(
                    f"{log.stem}.rejected-{mpi.kind}-{i}-{variant}-{way}-{len(rejected)}.txt"
                )
                bad.write_text(text)
                rejected.append(bad.name)
                print(f"{mpi.kind} pair {i + 1} {variant} {way}: {e}; output kept in {bad}")
                if len(rejected) == REJECTS:
                    raise UnsupportedError(
                        f"{REJECTS} IMB outputs in a row not readable ({e}); kept in "
                        f"{', '.join(rejected)} beside {log}"
                    ) from None
        run = {
            "key": key,
            "pair": i,
            "variant": variant,
            "way": way,
            "t_avg": {
                b: {str(P): {str(n): t for n, t in rows.items()} for P, rows in by_p.items()}
                for b, by_p in parsed.items()
            },
            "routes": routes,
            "load": [load0, os.getloadavg()[0]],
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "command": shlex.join(cmd),
            "rejected": rejected,
        }
        append_run(log, run)
        runs.append(run)
        what = "routes counted" if way == ROUTES else f"pair {i + 1}/{a.pairs} {way:7s}"
        print(f"{mpi.kind} {variant:10s} {what} done", flush=True)
    return runs


# ---------------------------------------------------------------------------------------------
# The report


def collkit_version() -> str:
    """Which collkit's library the collkit runs preloaded: its sources and their commit."""
    root = source_dir()
    git = subprocess.run(
        ["git", "-C", str(root), "describe", "--always", "--dirty"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    head = git.stdout.strip() if git.returncode == 0 else "not a git checkout"
    return f"sources at {root} ({head})"


def first_commands(runs: list[dict[str, Any]], key: dict[str, Any]) -> list[str]:
    """The exact commands of the first pair (native, then collkit) and of the routes run."""
    first = [r for r in runs if r["key"] == key and r["pair"] == 0]
    return [next((r["command"] for r in first if r["way"] == w), "") for w in (*WAYS, ROUTES)]


# The tune pattern that times calls the way each IMB variant makes them (docs/tuning.md,
# "Patterns"): the rule's speedup in it is tune's prediction of that variant's ratio.
VARIANT_PATTERN = {
    "default": "barrier",
    "sync0": "back_to_back",
    "root_shift": "rotate_root",
    "off_cache": "evict",
}
# How far IMB's ratio may be from tune's prediction and still count as predicted (20 %).
PREDICTED_WITHIN = 0.2


def predicted(rule: tuning.Rule | None, variant: str) -> tuple[float, str] | None:
    """tune's prediction of a routed size's IMB ratio (1 / speedup) in this variant, with the
    pattern it comes from: the rule's speedup in the variant's pattern, else (a rule measured in
    one pattern, or at --block 1 where barrier is timed as back_to_back) its overall speedup,
    the smallest of its patterns'. None for a size the table leaves native or without a
    speedup."""
    if rule is None or rule.algorithm == "native":
        return None
    pattern = VARIANT_PATTERN.get(variant, "")
    sp = rule.speedups.get(pattern)
    if sp is None:
        sp, pattern = rule.speedup, "smallest of its patterns"
    if not sp or sp != sp or sp <= 0:  # nan or missing
        return None
    return 1.0 / sp, pattern


def size_rows(
    runs: list[dict[str, Any]], key: dict[str, Any], a: argparse.Namespace, tbl: tuning.Table
) -> list[str]:
    lines = [
        "| variant | collective | bytes | table routes to | calls to collkit | native us | "
        "collkit us | collkit / native, median of pairs (q1-q3) | pairs won | tune predicted "
        "| IMB / predicted |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    lo, hi = a.msglog
    for variant in a.variants:
        for bench in a.collectives:
            coll = IMB_COLLECTIVES[bench.lower()][1]
            sizes = [0] if coll == "barrier" else [2**e for e in range(lo, hi + 1)]
            for nbytes in sizes:
                st = pair_stats(pairs_of(runs, key, variant, bench, a.np, nbytes))
                if st is None:
                    continue
                tb = table_bytes(bench, nbytes, a.np)
                mine, calls = collkit_share(runs, key, variant, coll, a.np, tb)
                share = f"{100 * mine / calls:.0f}%" if calls else "no calls seen"
                pred = predicted(tbl.rule_for(coll, a.np, tb), variant)
                if pred is None:
                    said = "| |"
                else:
                    off = st.ratio / pred[0]
                    held = "" if abs(off - 1) <= PREDICTED_WITHIN else " (off by > 20 %)"
                    said = f"{pred[0]:.3f} | {off:.2f}{held} |"
                lines.append(
                    f"| {variant} | {bench} | {nbytes} | {tbl.lookup(coll, a.np, tb)} | {share} | "
                    f"{st.native_us:.2f} | {st.collkit_us:.2f} | **{st.ratio:.3f}** "
                    f"({st.q1:.3f}-{st.q3:.3f}) | {st.won}/{st.pairs} | {said}"
                )
    return lines


def report(
    done: list[tuple[MPI, dict[str, Any], Path, list[dict[str, Any]], list[str]]],
    a: argparse.Namespace,
    argv: list[str],
    load_before: tuple[float, float, float],
    started: str,
    log: Path,
) -> str:
    load_after = os.getloadavg()
    dates = sorted(r["date"] for _, key, _, rs, _ in done for r in rs if r["key"] == key)
    first, last = (dates[0], dates[-1]) if dates else (started, started)
    ran = {mpi.kind: sum(r["key"] == key and r["date"] >= started for r in rs)
           for mpi, key, _, rs, _ in done}  # fmt: skip
    here = ", ".join(f"{n} runs on {k}" for k, n in ran.items())
    la = " ".join(f"{x:.2f}" for x in load_before)
    lb = " ".join(f"{x:.2f}" for x in load_after)
    lines = [
        "# IMB-MPI1 plain against under `collkit run --tuning`",
        "",
        f"- machine: {machine_name()}, {len(os.sched_getaffinity(0))} cores",
        f"- date of the runs: {first} .. {last} (UTC)",
        "- background load: each MPI's section says how many niced CPU hogs ran (--hogs); the "
        "report holds every background load the pairs file has for these settings",
        f"- load average (1, 5, 15 min) of this invocation: before {la}, after {lb} (it ran "
        f"{here}; the rest were in the pairs file)",
        *[f"- note: {n}" for n in a.note],
        f"- command: `.venv/bin/python benchmarks/bench_thirdparty.py {shlex.join(argv)}`",
        f"- collkit: {collkit_version()}",
        f"- pairs: {a.pairs} per MPI and variant, plain then collkit (A B A B ...); each run "
        "is one IMB job over every collective and size; a pair's ratio is collkit's IMB t_avg / "
        "the plain run's; won: ratio < 1; the timed runs go without COLLKIT_STATS (it times "
        "every call, ~0.15 us), and one more collkit run per variant counts the routes (the "
        "column 'calls to collkit')",
        "- tune predicted: 1 / the table rule's speedup in the pattern that calls as the variant "
        "does (default: barrier, sync0: back_to_back, root_shift: rotate_root, off_cache: evict; "
        "a rule measured in one pattern: its speedup); the rule's speedup is its range's first "
        "size's; IMB / predicted outside 0.8-1.2 is marked",
        f"- runs (every one, as measured): `{log}`",
    ]
    cores = len(os.sched_getaffinity(0))
    # The load beyond what the runs bring themselves: a run's hogs are its background, asked for,
    # and its NP ranks poll (a 2-rank run on 2 cores makes a load of 2 alone).
    peak = max(
        [x - r["key"].get("hogs", 0) for _, key, _, rs, _ in done for r in rs
         if r["key"] == key for x in r["load"]] or [load_after[0]]
    )  # fmt: skip
    if peak > max(cores, a.np) + 1:
        lines.append(
            f"- the load average (up to {peak:.1f} beyond the hogs a run started) exceeded the "
            f"{cores} cores and the {a.np} ranks by more than one: other work shared them while "
            "this ran, so these numbers show that the benchmark runs and are no evidence for or "
            "against the table"
        )
    lines.append("")
    for mpi, key, table, runs, cmds in done:
        loads = [x for r in runs if r["key"] == key for x in r["load"]]
        tbl = tuning.load(table)
        mine = [r for r in runs if r["key"] == key]
        rejects = [f for r in mine for f in r.get("rejected", [])]
        lines += [
            f"## {mpi.version}, "
            + (f"{key['hogs']} niced CPU hogs running" if key.get("hogs") else "no hogs started"),
            "",
            f"- IMB: {IMB_URL} at {key['imb']}, built with its Makefile "
            f"(`{shlex.join(make_command(mpi))}`)",
            f"- load (1 min) over its runs: {min(loads):.2f} .. {max(loads):.2f}",
            f"- collkit's interposition library: the build `{key.get('library') or 'unknown'}` "
            "(its folder in collkit's cache; the name hashes its sources)",
            f"- table: `{table}` (its rules' hash {key['table']}, its MPI: "
            f"{tbl.mpi or 'not given'})",
            *[f"- {w}: `{c}`" for w, c in zip((*WAYS, ROUTES), cmds, strict=False)],
            f"- IMB outputs not readable, run again: {len(rejects)}"
            + (f" (kept: {', '.join(f'`{f}`' for f in rejects)})" if rejects else ""),
            "",
        ]
        lines += winners(to_dict(tbl) | {"mpi": tbl.mpi or "not given"})
        lines += ["", *size_rows(runs, key, a, tbl), ""]
    # Paths inside this checkout as the README's commands write them (.venv/bin/...), so the
    # report reads the same from any clone.
    return ("\n".join(lines) + "\n").replace(f"{HERE.parent}/", "")


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    a = ap.parse_args(argv)
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    load_before = os.getloadavg()
    try:
        commit = imb_commit(a.imb_src)
        if a.tuning is not None:
            tuning.load(a.tuning)  # a table that does not load stops us before any build
        kinds = ["mpich", "openmpi"] if a.mpi == "both" else [a.mpi]
        mpis = [find_mpi_of_kind(k) for k in kinds]
        cache = a.cache or cache_root() / "imb"
        log = cache / f"{a.out.stem}.jsonl"  # the runs, kept out of the source tree
        log.parent.mkdir(parents=True, exist_ok=True)
        read_runs(log)  # a pairs file that is not ours stops us before anything is built
        done = []
        for mpi in mpis:
            binary = build_imb(a.imb_src, commit, mpi, cache)
            table = table_for(mpi, a)
            library = build(mpi, ["libcollkit_pmpi.so"]).name
            key = run_key(mpi, commit, a, table, library)
            with hogs(a.hogs):
                runs = measure(mpi, binary, key, a, table, log)
            # every background load measured with these settings, quiet first: side by side
            loads = sorted({r["key"].get("hogs", 0) for r in runs if same_but_hogs(r["key"], key)})
            for h in loads:
                k = {**key, "hogs": h}
                done.append((mpi, k, table, runs, first_commands(runs, k)))
        text = report(done, a, argv, load_before, started, log)
        a.out.write_text(text)
    except (CollkitError, OSError) as e:
        print(f"{ap.prog}: error: {e}", file=sys.stderr)
        return 2
    print(text)
    print(f"wrote {a.out} (runs in {log})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
