"""The executor's cost (issue 11): each collkit algorithm against the MPI's own implementation of
the same algorithm, forced, side by side in one MPI job, as a ratio of medians, repeated to show
the spread.

    .venv/bin/python benchmarks/bench_executor.py                       # pip MPICH, P = 2
    .venv/bin/python benchmarks/bench_executor.py --mpi openmpi         # Debian's Open MPI
    .venv/bin/python benchmarks/bench_executor.py --repeats 3 --sizes 8,1KiB --pairs allreduce:rd
    .venv/bin/python benchmarks/bench_executor.py --collectives gather,scatter --out blocks-mpich

One job per (pair, repeat) runs collkit_bench with both the collkit algorithm and the native call
(its algorithm forced through MPIR_CVAR_<COLL>_INTRA_ALGORITHM or Open MPI's coll_tuned dynamic
rules), alternating between them size by size, so both see the same machine. Sizes are bytes per
rank (per block for allgather, reduce_scatter_block, gather, scatter and alltoall). The ratio of a
repeat is collkit's median / the MPI's median (per-iteration maxima over ranks, blocks of
--block calls). The table shows the median ratio over repeats with its min and max. Rows go to
benchmarks/results/executor-<mpi>.jsonl, the report (machine, date, this command) to
benchmarks/results/executor-<mpi>.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

from collkit.bench import machine_name
from collkit.cli.bench import parse_sizes
from collkit.mpi import MPI, build, find_mpi, launch_command, launch_env

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"

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
    if kind == "mpich":
        return find_mpi()
    import shutil

    mpirun, cxx = shutil.which("mpirun.openmpi"), shutil.which("mpicxx.openmpi")
    if not mpirun or not cxx:
        sys.exit("Open MPI is not installed (apt-get install openmpi-bin libopenmpi-dev)")
    import os

    os.environ["MPIEXEC"], os.environ["MPICXX"] = mpirun, cxx
    return find_mpi()


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
        if row.get("kind") == "row" and "median" in row:
            medians[(row["algorithm"], int(row["bytes"]))] = float(row["median"])
    return medians


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--mpi", choices=["mpich", "openmpi"], default="mpich")
    p.add_argument("-np", type=int, default=2)
    p.add_argument("--sizes", default="8,1KiB,16KiB,1MiB")
    p.add_argument("--repeats", type=int, default=5)
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
        help="report name under benchmarks/results/ (default: executor-<mpi>)",
    )
    a = p.parse_args(argv)
    sizes = parse_sizes(a.sizes)
    mpi = find(a.mpi)
    print(f"building collkit's MPI programs for {mpi.version} (once) ...", flush=True)
    bindir = build(mpi)
    pairs = [pr for pr in PAIRS[a.mpi] if not a.pairs or pr[0] in a.pairs.split(",")]
    keep = [c for c in a.collectives.split(",") if c]
    pairs = [pr for pr in pairs if not keep or pr[0].split(":")[0] in keep]
    name = a.out or f"executor-{a.mpi}"
    RESULTS.mkdir(exist_ok=True)
    raw = RESULTS / f"{name}.jsonl"
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

    lines = [
        f"# Executor overhead: collkit vs the MPI's own same algorithm ({a.mpi})",
        "",
        f"- machine: {machine_name()}, {platform.system()} {platform.release()}",
        f"- MPI: {mpi.version}",
        f"- date: {dt.date.today().isoformat()}",
        f"- command: `.venv/bin/python benchmarks/{Path(__file__).name} "
        f"{' '.join(argv if argv is not None else sys.argv[1:])}`",
        f"- P = {a.np} (this 2-core machine: P <= 4 only), blocks of {a.block} calls, "
        f"{a.iters} iterations, doubles (MPI_SUM); "
        f"{a.repeats} repeats, each one MPI job measuring both side by side",
        "",
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
    report = "\n".join(lines) + "\n"
    print(report)
    (RESULTS / f"{name}.md").write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
