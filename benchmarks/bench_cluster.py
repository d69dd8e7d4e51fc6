"""collkit's node-aware allreduce against the MPI's own on an emulated cluster (docs/cluster.md):
2 nodes x 2 ranks, network namespaces on one machine (root). EMULATED timings: the nodes share
this machine's cores and talk TCP through a software bridge; what they show is the cost of
crossing that bridge, not a cluster's network.

    .venv/bin/python benchmarks/bench_cluster.py                    # both MPIs, 3 repeats
    .venv/bin/python benchmarks/bench_cluster.py --mpi openmpi --repeats 5 --sizes 8,64KiB

One job per (MPI reference, repeat) runs collkit_bench with allreduce:hier, allreduce:rd and the
native call, interleaved size by size (--interleave), so all see the same machine; the jobs of the
references alternate within each repeat (A B A B). References: the MPI's default, and for Open
MPI coll/han forced (its hierarchical component, which disqualifies itself on one node). The
table shows, per size, the median over repeats of each median (µs) and of the ratio to the
reference's median in the same job, with its min and max. Load (uptime) before and after goes
into the report: benchmarks/results/cluster.md, raw rows in benchmarks/results/cluster.jsonl.
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

from collkit import cluster
from collkit.bench import machine_name
from collkit.cli.bench import parse_sizes
from collkit.mpi import MPI, build, find_mpi_of_kind, launch_command, launch_env

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
OURS = ("allreduce:hier", "allreduce:rd")


def find(kind: str) -> MPI:
    return find_mpi_of_kind(kind)


def job(
    c: cluster.Cluster, mpi: MPI, reference: str, sizes: list[int], a: argparse.Namespace
) -> dict[tuple[str, int], float]:
    force = mpi.force_env("allreduce", reference) if reference != "native" else {}
    hosts = str(c.hostfile)
    env, _ = launch_env(mpi, a.np, force, hosts=hosts)
    prog = [
        str(build(mpi) / "collkit_bench"), "--collective", "allreduce",
        "--algos", ",".join([*OURS, "native"]), "--sizes", ",".join(map(str, sizes)),
        "--iters", str(a.iters), "--max-ms", "2000", "--datatype", "double", "--interleave",
        "--validate",
    ]  # fmt: skip
    cmd = launch_command(mpi, a.np, prog, hosts=hosts)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    medians: dict[tuple[str, int], float] = {}
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            if row.get("kind") == "row" and "median_us" in row:
                if row.get("valid") is False:
                    raise RuntimeError(f"wrong result: {row}")
                medians[(row["algorithm"], int(row["bytes"]))] = float(row["median_us"])
    return medians


def uptime() -> str:
    return ", ".join(Path("/proc/loadavg").read_text().split()[:3])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--mpi", choices=["mpich", "openmpi", "both"], default="both")
    p.add_argument("-np", type=int, default=4)
    p.add_argument("--sizes", default="8,1KiB,64KiB")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--iters", type=int, default=200)
    a = p.parse_args(argv)
    if why := cluster.root_reason():
        sys.exit(why)
    sizes = parse_sizes(a.sizes)
    kinds = ["mpich", "openmpi"] if a.mpi == "both" else [a.mpi]
    load_before = uptime()
    results: list[dict[str, object]] = []
    with cluster.emulated(f"b{os.getpid()}", 2) as c:
        for kind in kinds:
            mpi = find(kind)
            print(f"building collkit's MPI programs for {mpi.version} (once) ...", flush=True)
            build(mpi)
            refs = ["native", "ompi:han"] if kind == "openmpi" else ["native"]
            for rep in range(a.repeats):
                for ref in refs:  # A B A B
                    m = job(c, mpi, ref, sizes, a)
                    for nbytes in sizes:
                        for algo in (*OURS, "native"):
                            results.append(
                                {
                                    "mpi": mpi.version,
                                    "reference": ref,
                                    "repeat": rep,
                                    "algorithm": algo,
                                    "bytes": nbytes,
                                    "median_us": m[(algo, nbytes)],
                                    "ratio_to_reference": m[(algo, nbytes)] / m[("native", nbytes)],
                                    "allocation": c.allocation(a.np),
                                }
                            )
                    print(
                        f"  {kind} repeat {rep + 1}/{a.repeats}: reference {ref} done", flush=True
                    )
    load_after = uptime()
    command = shlex.join(argv if argv is not None else sys.argv[1:])
    RESULTS.mkdir(exist_ok=True)
    with (RESULTS / "cluster.jsonl").open("a") as f:
        for r in results:
            f.write(json.dumps({"date": dt.date.today().isoformat(), **r}) + "\n")
    lines = [
        "# collkit's node-aware allreduce on an emulated cluster (EMULATED timings)",
        "",
        f"- machine: {machine_name()}, {platform.system()} {platform.release()}",
        f"- allocation: {c.allocation(a.np)}",
        f"- date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='minutes')}",
        f"- load (1, 5, 15 min) before: {load_before}, after: {load_after}",
        f"- command: `.venv/bin/python benchmarks/bench_cluster.py {command}`",
        "- The nodes are network namespaces on one machine: they share its cores, and messages",
        "  between nodes go over TCP through a software bridge. These numbers say what crossing",
        "  that bridge costs here, not what a cluster's network would; they are no claim that one",
        "  algorithm is faster on a cluster.",
        "",
        "| MPI | reference | algorithm | bytes | median µs (median of repeats) | ratio to reference"
        " (median [min, max]) |",
        "| --- | --- | --- | ---: | ---: | --- |",
    ]
    keys = sorted(
        {
            (str(r["mpi"]), str(r["reference"]), str(r["algorithm"]), int(str(r["bytes"])))
            for r in results
        }
    )
    for mpi_v, ref, algo, nbytes in keys:
        sel = [
            r
            for r in results
            if (r["mpi"], r["reference"], r["algorithm"], r["bytes"]) == (mpi_v, ref, algo, nbytes)
        ]
        med = statistics.median(float(str(r["median_us"])) for r in sel)
        ratios = [float(str(r["ratio_to_reference"])) for r in sel]
        label = (
            "(the reference)"
            if algo == "native"
            else (f"{statistics.median(ratios):.2f} [{min(ratios):.2f}, {max(ratios):.2f}]")
        )
        lines.append(f"| {mpi_v} | {ref} | {algo} | {nbytes} | {med:.1f} | {label} |")
    report = "\n".join(lines) + "\n"
    (RESULTS / "cluster.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
