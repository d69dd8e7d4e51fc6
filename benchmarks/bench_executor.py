"""The executor's cost: each collkit algorithm against the MPI's own implementation of
the same algorithm, forced, side by side in one MPI job, as a ratio of medians, repeated to show
the spread.

    .venv/bin/python benchmarks/bench_executor.py                       # pip MPICH, P = 2
    .venv/bin/python benchmarks/bench_executor.py --mpi openmpi         # Debian's Open MPI
    .venv/bin/python benchmarks/bench_executor.py --repeats 3 --sizes 8,1KiB --pairs allreduce:rd
    .venv/bin/python benchmarks/bench_executor.py --collectives gather,scatter --out blocks.md

Two more tables (the shared-memory transport, and the time per segment):

    .venv/bin/python benchmarks/bench_executor.py --shm [--mpi openmpi]
    .venv/bin/python benchmarks/bench_executor.py --shm --against DIR   # DIR: an earlier build
    .venv/bin/python benchmarks/bench_executor.py --segments [--mpi openmpi]

--shm runs collkit_bench_shm: first the physical limit (an 8-byte exchange through the
shared-memory transport's slots, beside the MPI's MPI_Sendrecv and native MPI_Allreduce, in the
same job), then per collective and size the MPI's native default, collkit with shared memory and
collkit without it (a communicator set up with COLLKIT_SHM=0), interleaved round by round, as
ratios of medians. With --against DIR (a folder holding another build's collkit_bench_shm,
built with cmake -S mpi) jobs of this build and of that one take turns, and the report compares
their ratios to the MPI's default. --segments times
reduce:binomial(seg=16) and bcast:pipeline(seg=16) from 1 Ki to 1 Mi segments in one job, with
shared memory, without, and the floor (the same bytes through a local reduce / copy), and
reports the time per segment and the executor's overhead (collkit - floor). collkit_bench_shm
--exchange (run by hand, docs/mpi.md) times a two-way exchange through the slots.

One job per (pair, repeat) runs collkit_bench with both the collkit algorithm and the native call
(its algorithm forced through MPIR_CVAR_<COLL>_INTRA_ALGORITHM or Open MPI's coll_tuned dynamic
rules), alternating between them size by size, so both see the same machine. Sizes are bytes per
rank (per block for allgather, reduce_scatter_block, gather, scatter and alltoall). The ratio of a
repeat is collkit's median / the MPI's median (per-iteration maxima over ranks, blocks of
--block calls). The table shows the median ratio over repeats with its min and max.

Every mode writes one file, benchmarks/results/executor.md (--out): one section per mode and
MPI (machine, date, load, this command), a run replacing its own section and keeping the others
(a run of some --collectives or --pairs replaces the whole section of its mode and MPI). Rows go
beside it, to executor-<mode>-<mpi>.jsonl.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from collkit.bench import machine_name
from collkit.cli.bench import parse_sizes
from collkit.errors import CollkitError
from collkit.mpi import MPI, build, find_mpi_of_kind, launch_command, launch_env
from results_md import MPI_NAMES, write_section

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RESULT = RESULTS / "executor.md"
TITLE = """# The executor against the MPIs' own collectives (benchmarks/bench_executor.py)

One section per mode and MPI, each with its machine, date, load and command.
"""

# collkit's algorithm and the MPI's own name for the same algorithm.
PAIRS: dict[str, list[tuple[str, str]]] = {
    "mpich": [
        ("allreduce:rd", "mpich:recursive_doubling"),
        ("allreduce:rabenseifner", "mpich:reduce_scatter_allgather"),
        ("allreduce:ring", "mpich:ring"),
        ("bcast:binomial", "mpich:binomial"),
        ("reduce:binomial", "mpich:binomial"),
        ("alltoall:bruck", "mpich:brucks"),
        ("alltoall:pairwise", "mpich:pairwise"),
        ("alltoall:linear", "mpich:scattered"),
        ("barrier:dissemination", "mpich:k_dissemination"),
        ("allgather:ring", "mpich:ring"),
        ("allgather:rd", "mpich:recursive_doubling"),
        ("allgather:bruck", "mpich:brucks"),
        ("reduce_scatter_block:pairwise", "mpich:pairwise"),
        ("reduce_scatter_block:halving", "mpich:recursive_halving"),
        ("gather:binomial", "mpich:binomial"),
        ("scatter:binomial", "mpich:binomial"),
    ],
    "openmpi": [
        ("allreduce:rd", "ompi:recursive_doubling"),
        ("allreduce:rabenseifner", "ompi:rabenseifner"),
        ("allreduce:ring", "ompi:ring"),
        ("bcast:binomial", "ompi:binomial"),
        ("reduce:binomial", "ompi:binomial"),
        ("alltoall:bruck_modified", "ompi:modified_bruck"),
        ("alltoall:pairwise", "ompi:pairwise"),
        ("alltoall:linear", "ompi:linear"),
        ("barrier:dissemination", "ompi:bruck"),
        ("allgather:ring", "ompi:ring"),
        ("allgather:rd", "ompi:recursive_doubling"),
        ("allgather:bruck", "ompi:bruck"),
        ("reduce_scatter_block:halving", "ompi:recursive_halving"),
        ("gather:binomial", "ompi:binomial"),
        ("gather:linear", "ompi:basic_linear"),
        ("scatter:binomial", "ompi:binomial"),
        ("scatter:linear", "ompi:basic_linear"),
    ],
}


def find(kind: str) -> MPI:
    """The MPI of --mpi: the PyPI wheel's MPICH or Debian's Open MPI, not the first mpiexec on
    PATH (Debian's Open MPI once installed)."""
    try:
        return find_mpi_of_kind(kind)
    except CollkitError as e:
        sys.exit(str(e))


def run_pair(
    mpi: MPI, bindir: Path, P: int, ours: str, theirs: str, sizes: list[int], a: argparse.Namespace
) -> dict[tuple[str, int], float]:
    coll = ours.split(":")[0]
    force = mpi.force_env(coll, theirs)
    env, _ = launch_env(mpi, P, force)
    cmd = launch_command(
        mpi,
        P,
        [
            str(bindir / "collkit_bench"),
            "--collective",
            coll,
            "--algos",
            f"{ours},native",
            "--sizes",
            ",".join(str(s) for s in ([0] if coll == "barrier" else sizes)),
            "--iters",
            str(a.iters),
            "--block",
            str(a.block),
            "--max-ms",
            str(int(a.max_seconds * 1000)),
            "--datatype",
            "double",
            "--interleave",
        ],
    )
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    medians: dict[tuple[str, int], float] = {}
    for line in out.stdout.splitlines():
        if not line.startswith("{"):
            continue
        row = json.loads(line)
        if row.get("kind") == "row" and "median_us" in row:
            medians[(row["algorithm"], int(row["bytes"]))] = float(row["median_us"])
    return medians


def header(mpi: MPI, argv: list[str] | None, extra: list[str]) -> list[str]:
    """A section's first lines (its heading is write_report's)."""
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    return [
        f"- machine: {machine_name()}, {platform.system()} {platform.release()}, "
        f"{len(os.sched_getaffinity(0))} cores shared with other work",
        f"- load average when it ran: {' '.join(load)} (as the report was written; the machine "
        "is busy: read ratios, measured interleaved, rather than absolute times)",
        f"- MPI: {mpi.version}",
        f"- date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='minutes')}",
        f"- command: `.venv/bin/python benchmarks/{Path(__file__).name} "
        f"{' '.join(argv if argv is not None else sys.argv[1:])}`",
        *extra,
        "",
    ]


def out_path(a: argparse.Namespace) -> Path:
    """The result file of --out: a name under benchmarks/results/ or an absolute path."""
    return Path(a.out) if a.out.startswith("/") else RESULTS / (a.out or RESULT.name)


def rows_path(a: argparse.Namespace, mode: str) -> Path:
    """Where a run's raw rows go: beside the result file, one file per mode and MPI."""
    out = out_path(a)
    return out.with_name(f"{out.stem}-{mode}-{a.mpi}.jsonl")


def write_report(a: argparse.Namespace, heading: str, lines: list[str]) -> int:
    """Print the section and put it in the result file in place of its earlier run."""
    section = f"## {MPI_NAMES[a.mpi]}: {heading}"
    body = "\n".join(lines) + "\n"
    print(f"{section}\n\n{body}")
    out = out_path(a)
    write_section(out, TITLE, section, body)
    print(f"wrote its section of {out}", flush=True)
    return 0


def shm_job(mpi: MPI, bindir: Path, a: argparse.Namespace, rounds: int) -> list[dict[str, Any]]:
    """One collkit_bench_shm job of `bindir`'s build: its JSON rows."""
    # --shm-max: the slot size of the `shm` variant for this job (COLLKIT_SHM_MAX), to find where
    # shared memory stops beating MPI point-to-point.
    env, _ = launch_env(mpi, a.np, {"COLLKIT_SHM_MAX": str(a.shm_max)} if a.shm_max else None)
    sizes = parse_sizes(a.sizes if a.sizes != DEFAULT_SIZES else "8,64,512,4KiB,16KiB,64KiB")
    cmd = launch_command(
        mpi,
        a.np,
        [
            str(bindir / "collkit_bench_shm"),
            "--sizes",
            ",".join(map(str, sizes)),
            "--rounds",
            str(rounds),
            "--block",
            str(a.block * 5),
        ],
    )
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]


def run_shm_against(mpi: MPI, bindir: Path, a: argparse.Namespace, argv: list[str] | None) -> int:
    """--shm --against DIR: this build's table against an earlier build's (DIR holds its
    collkit_bench_shm), one job of each in turn, the first of a pair alternating (A B B A ...);
    each job's ratios are to the MPI's default in that job, so two builds compare as the ratio of
    their ratios."""
    earlier = Path(a.against)
    if not (earlier / "collkit_bench_shm").exists():
        raise CollkitError(f"--against {earlier}: no collkit_bench_shm there")
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    builds = {"this": bindir, "earlier": earlier}
    ratios: dict[tuple[str, str, int], dict[str, list[float]]] = {}
    exchange: dict[str, list[float]] = {"this": [], "earlier": []}
    with rows_path(a, "shm-against").open("a") as log:
        for rep in range(a.repeats):
            order = ["this", "earlier"] if rep % 2 == 0 else ["earlier", "this"]
            for which in order:
                print(f"  job {rep + 1}/{a.repeats}: {which} build", flush=True)
                for r in shm_job(mpi, builds[which], a, 8):
                    r.update(
                        build=which,
                        bindir=str(builds[which]),
                        date=dt.date.today().isoformat(),
                        machine=machine_name(),
                        mpi=mpi.version,
                    )
                    log.write(json.dumps(r) + "\n")
                    if r.get("kind") == "limit":
                        exchange[which].append(r["shm_exchange_ns"])
                    if r.get("kind") == "row":
                        key = (r["collective"], r["algorithm"], r["bytes"])
                        ratios.setdefault(key, {"this": [], "earlier": []})[which].append(
                            r["shm_vs_native"]
                        )
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    lines = header(
        mpi,
        argv,
        [
            f"- P = {a.np}; load {' '.join(load_before)} before, {' '.join(load_after)} after",
            f"- this build: {bindir}; the earlier build: {earlier}",
            f"- {a.repeats} jobs of each build, in turn (the first of each pair alternating), "
            "8 rounds a job; in each round the MPI's default and collkit with shared memory, "
            "blocks of back-to-back calls, the per-call time of a block the maximum over ranks",
            "- each build's figure: the median over its jobs of the job's shm / native (a job's "
            "median of per-round ratios); this / earlier: the one over the other; paired: the "
            "median over the pairs of jobs of the pair's this / earlier, and in how many pairs "
            "this build's ratio was the lower (the machine's state can change between jobs, "
            "less often within a pair)",
        ],
    )
    med = statistics.median
    lines += [
        "| | this build | earlier build |",
        "| --- | ---: | ---: |",
        f"| shm 8 B exchange, ns (median of jobs) | {med(exchange['this']):.0f} | "
        f"{med(exchange['earlier']):.0f} |",
        "",
        "| collective | collkit algorithm | bytes | shm / native, this build | "
        "shm / native, earlier build | this / earlier | paired | this lower |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (coll, algo, nbytes), by in ratios.items():
        if not by["this"] or not by["earlier"]:
            continue
        t, e = med(by["this"]), med(by["earlier"])
        # Job i of each build is pair i's (the order within a pair alternates).
        pairs = [x / y for x, y in zip(by["this"], by["earlier"], strict=False)]
        lower = sum(p < 1 for p in pairs)
        lines.append(
            f"| {coll} | {algo} | {nbytes} | {t:.2f} | {e:.2f} | {t / e:.2f} | "
            f"{med(pairs):.2f} | {lower}/{len(pairs)} |"
        )
    return write_report(a, "shared memory, this build against an earlier one", lines)


def run_shm(mpi: MPI, bindir: Path, a: argparse.Namespace, argv: list[str] | None) -> int:
    if a.against:
        return run_shm_against(mpi, bindir, a, argv)
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    rows = shm_job(mpi, bindir, a, a.repeats * 8)
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    mode = f"shm-max{a.shm_max}" if a.shm_max else "shm"
    with rows_path(a, mode).open("a") as log:
        for r in rows:
            r.update(date=dt.date.today().isoformat(), machine=machine_name(), mpi=mpi.version)
            log.write(json.dumps(r) + "\n")
    lines = header(
        mpi,
        argv,
        [
            f"- P = {a.np}; load {' '.join(load_before)} before, {' '.join(load_after)} after"
            + (
                " (oversubscribed: not a measurement of speed)"
                if a.np > (os.cpu_count() or 1)
                else ""
            ),
            *([f"- COLLKIT_SHM_MAX={a.shm_max} (the slot size of `shm`)"] if a.shm_max else []),
            "- each round: a block of back-to-back calls per variant (the order rotated every "
            "round), the per-call time of a block being the maximum over ranks; medians over "
            "rounds, ratios per round then their median",
        ],
    )
    lines += ["### The physical limit (ns)", ""]
    lines += ["| repeat | shm 8 B exchange | MPI_Sendrecv 8 B | native MPI_Allreduce 8 B |"]
    lines += ["| ---: | ---: | ---: | ---: |"]
    for r in rows:
        if r.get("kind") == "limit":
            lines.append(
                f"| {r['repeat']} | {r['shm_exchange_ns']:.0f} | {r['mpi_sendrecv_8B_ns']:.0f} | "
                f"{r['mpi_allreduce_8B_ns']:.0f} |"
            )
        if r.get("kind") == "transport":
            lines.insert(-5, f"- transports: with `{r['with']}`, without `{r['without']}`")
    lines += [
        "",
        "### Per collective (ns per call; ratios < 1: collkit faster)",
        "",
        "Medians over rounds (and the median of the per-round ratios), then the best round of "
        "each variant (the machine's capability when no other process took the cores).",
        "",
    ]
    lines += [
        "| collective | collkit algorithm | bytes | native | collkit shm | collkit p2p | "
        "shm / native | p2p / native | shm / p2p | best: native | shm | p2p | shm / native |",
        "| --- | --- " + "| ---: " * 11 + "|",
    ]
    for r in rows:
        if r.get("kind") == "row":
            lines.append(
                f"| {r['collective']} | {r['algorithm']} | {r['bytes']} | {r['native_ns']:.0f} | "
                f"{r['shm_ns']:.0f} | {r['p2p_ns']:.0f} | {r['shm_vs_native']:.2f} | "
                f"{r['p2p_vs_native']:.2f} | {r['shm_vs_p2p']:.2f} | {r['native_min_ns']:.0f} | "
                f"{r['shm_min_ns']:.0f} | {r['p2p_min_ns']:.0f} | "
                f"{r['shm_min_ns'] / r['native_min_ns']:.2f} |"
            )
    heading = "shared memory, with and without, against the MPI's default"
    if a.shm_max:
        heading += f" (slots of {a.shm_max} B)"
    return write_report(a, heading, lines)


def run_segments(mpi: MPI, bindir: Path, a: argparse.Namespace, argv: list[str] | None) -> int:
    """Time per segment of seg=16 schedules from 1 Ki to --max-segments.

    One job (collkit_bench_shm --segments) goes round after round through every (segments,
    algorithm) row and, within it, the three variants in rotated order: collkit with shared
    memory, collkit with MPI point-to-point (COLLKIT_SHM=0), and the floor (the same bytes
    through a plain local reduce / copy, 16 bytes at a time, in the same program). So a load
    change hits every row alike; the table gives medians over rounds, the executor's overhead
    (collkit - floor) beside the data's own cost, and ratios to the 1 Ki-segment row: flat means
    a ratio near 1.
    """
    env, _ = launch_env(mpi, a.np)
    segs = [
        n for n in (1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20) if n <= a.max_segments
    ]
    cmd = launch_command(
        mpi,
        a.np,
        [
            str(bindir / "collkit_bench_shm"),
            "--segments",
            ",".join(map(str, segs)),
            "--rounds",
            str(a.repeats),
        ],
    )
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    per_seg: dict[tuple[str, int, str], list[float]] = {}
    transport: dict[str, str] = {}
    algos: list[str] = []
    for x in out.stdout.splitlines():
        if not x.startswith("{"):
            continue
        r = json.loads(x)
        if r.get("kind") != "segments":
            continue
        if r["algorithm"] not in algos:
            algos.append(r["algorithm"])
        per_seg.setdefault((r["algorithm"], int(r["segments"]), r["variant"]), []).append(
            float(r["ns_per_segment"])
        )
        transport[r["variant"]] = str(r["transport"])
    lines = header(
        mpi,
        argv,
        [
            f"- P = {a.np}; load {' '.join(load_before)} before, {' '.join(load_after)} after",
            f"- {a.repeats} rounds in one job, each through every row and, within a row, the "
            "variants in rotated order; medians over rounds (ns per segment, max over ranks)",
            f"- transports: shm = `{transport.get('shm', '')}`, p2p = `{transport.get('p2p', '')}`",
            "- floor: the same bytes through a plain local reduce (4 ints, SUM) or copy, 16 B "
            "at a time, between two buffers of the call's size, in the same job: the data's own "
            "cost; overhead = collkit - floor, the executor's own cost per segment",
            "- ratios: this row / the 1 Ki-segment row of the same algorithm",
        ],
    )
    lines += [
        "| algorithm | segments | bytes | floor | shm | shm overhead | p2p | p2p overhead "
        "| floor ratio | shm ratio | shm overhead ratio | p2p ratio | p2p overhead ratio |",
        "| --- " + "| ---: " * 12 + "|",
    ]
    med = statistics.median
    for algo in algos:
        base = {v: med(per_seg[(algo, segs[0], v)]) for v in ("shm", "p2p", "floor")}
        base_over = {v: base[v] - base["floor"] for v in ("shm", "p2p")}
        for n in segs:
            m = {v: med(per_seg[(algo, n, v)]) for v in ("shm", "p2p", "floor")}
            over = {v: m[v] - m["floor"] for v in ("shm", "p2p")}
            lines.append(
                f"| {algo} | {n} | {16 * n} | {m['floor']:.1f} | {m['shm']:.1f} | "
                f"{over['shm']:.1f} | {m['p2p']:.1f} | {over['p2p']:.1f} | "
                f"{m['floor'] / base['floor']:.2f} | {m['shm'] / base['shm']:.2f} | "
                f"{over['shm'] / base_over['shm']:.2f} | {m['p2p'] / base['p2p']:.2f} | "
                f"{over['p2p'] / base_over['p2p']:.2f} |"
            )
    with rows_path(a, "segments").open("a") as log:
        for (algo, n, v), xs in per_seg.items():
            log.write(
                json.dumps(
                    {
                        "date": dt.date.today().isoformat(),
                        "machine": machine_name(),
                        "mpi": mpi.version,
                        "P": a.np,
                        "algorithm": algo,
                        "segments": n,
                        "variant": v,
                        "ns_per_segment": xs,
                        "load_avg_1m": float(load_after[0]),
                    }
                )
                + "\n"
            )
    return write_report(a, "tiny segments, time per segment, seg=16", lines)


DEFAULT_SIZES = "8,1KiB,16KiB,1MiB"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--mpi", choices=["mpich", "openmpi"], default="mpich")
    p.add_argument("-np", type=int, default=2)
    p.add_argument("--sizes", default=DEFAULT_SIZES)
    p.add_argument("--shm", action="store_true", help="the shared-memory transport's table")
    p.add_argument("--segments", action="store_true", help="time per segment, seg=16")
    p.add_argument(
        "--shm-max",
        type=int,
        default=0,
        help="--shm: COLLKIT_SHM_MAX for the job (bytes; default: the built-in slot size)",
    )
    p.add_argument(
        "--against",
        default="",
        help="--shm: a directory holding an earlier build's collkit_bench_shm; jobs of the two "
        "builds alternate and the report compares their ratios to the MPI's default",
    )
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument(
        "--max-segments", type=int, default=1 << 20, help="--segments: the largest row (1 Mi)"
    )
    p.add_argument("--iters", type=int, default=300)
    p.add_argument("--block", type=int, default=10)
    p.add_argument("--max-seconds", type=float, default=2.0)
    p.add_argument("--pairs", default="", help="comma list of collkit names to keep")
    p.add_argument(
        "--collectives", default="", help="comma list of collectives to keep (default: all)"
    )
    p.add_argument(
        "--out",
        default="",
        help="the result file: a name under benchmarks/results/ or an absolute path (default: "
        "executor.md); a run replaces its mode's and MPI's section there",
    )
    a = p.parse_args(argv)
    if "/" in a.out and not a.out.startswith("/"):
        p.error(f"--out {a.out}: a name under benchmarks/results/ or an absolute path")
    if a.out and not a.out.endswith(".md"):
        p.error(f"--out {a.out}: a .md file")
    sizes = parse_sizes(a.sizes)
    mpi = find(a.mpi)
    print(f"building collkit's MPI programs for {mpi.version} (once) ...", flush=True)
    bindir = build(mpi)
    RESULTS.mkdir(exist_ok=True)
    if a.shm:
        return run_shm(mpi, bindir, a, argv)
    if a.segments:
        return run_segments(mpi, bindir, a, argv)
    pairs = [pr for pr in PAIRS[a.mpi] if not a.pairs or pr[0] in a.pairs.split(",")]
    keep = [c for c in a.collectives.split(",") if c]
    pairs = [pr for pr in pairs if not keep or pr[0].split(":")[0] in keep]
    raw = rows_path(a, "forced")
    ratios: dict[tuple[str, str, int], list[float]] = {}
    medians: dict[tuple[str, str, int], list[tuple[float, float]]] = {}
    with raw.open("a") as log:
        for rep in range(a.repeats):
            for ours, theirs in pairs:
                m = run_pair(mpi, bindir, a.np, ours, theirs, sizes, a)
                for (algo, nbytes), med in m.items():
                    if algo != ours or ("native", nbytes) not in m:
                        continue
                    nat = m[("native", nbytes)]
                    ratios.setdefault((ours, theirs, nbytes), []).append(med / nat)
                    medians.setdefault((ours, theirs, nbytes), []).append((med, nat))
                    log.write(
                        json.dumps(
                            {
                                "date": dt.date.today().isoformat(),
                                "machine": machine_name(),
                                "mpi": mpi.version,
                                "P": a.np,
                                "repeat": rep,
                                "collkit": ours,
                                "mpi_algorithm": theirs,
                                "bytes": nbytes,
                                "collkit_median_us": med,
                                "mpi_median_us": nat,
                            }
                        )
                        + "\n"
                    )
                print(f"  repeat {rep + 1}/{a.repeats}: {ours} vs {theirs} done", flush=True)

    lines = header(
        mpi,
        argv,
        [
            f"- P = {a.np}, blocks of {a.block} calls, {a.iters} iterations, doubles (MPI_SUM); "
            f"{a.repeats} repeats, each one MPI job measuring both side by side",
        ],
    )
    lines += [
        "| collkit | the MPI's own | bytes | collkit µs | MPI µs | ratio (median) | min | max |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (ours, theirs, nbytes), rs in ratios.items():
        ms = medians[(ours, theirs, nbytes)]
        lines.append(
            f"| {ours} | {theirs} | {nbytes} | {statistics.median(x for x, _ in ms):.2f} | "
            f"{statistics.median(y for _, y in ms):.2f} | {statistics.median(rs):.2f} | "
            f"{min(rs):.2f} | {max(rs):.2f} |"
        )
    return write_report(a, "collkit against the MPI's own same algorithm, forced", lines)


if __name__ == "__main__":
    raise SystemExit(main())
