"""Reading a GOAL file against generating the schedule: `collkit simulate --file x.goal` over
`collkit simulate ALGO` for the same schedule (allreduce:rd by default), as a ratio of CPU time.

    python benchmarks/bench_goal_read.py [--lg 18,20] [--algorithm allreduce:rd] [--repeat 5]

Each size's GOAL file is exported once (to a temporary directory; 2^20 ranks of rd is 5.6 GB),
then the two commands run interleaved, generator then file, --repeat times: on a shared machine
the ratio of a pair is what is compared (goal: the file <= 1.5x the generator), and the table
gives the median of the pairs' ratios with the CPU seconds (user + sys of the command, Python's
start included) and the load average seen, and the floor of any reader: the CPU seconds of a
pass that only reads the file's bytes and counts its lines (1 MiB blocks into page-aligned
memory, numpy counting). Prints the table and writes it, with the machine and date, to
benchmarks/results/bench_goal_read.md.
"""

from __future__ import annotations

import argparse
import datetime
import mmap
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

COLLKIT = [sys.executable, "-m", "collkit"]


def cpu_of(cmd: list[str]) -> tuple[float, float]:
    """CPU seconds (user + sys) and wall seconds of one command, its output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def scan_cpu(path: Path) -> float:
    """CPU seconds (user + sys) of reading the file's bytes and counting its lines: what any
    reader of it costs at least."""
    block = mmap.mmap(-1, 1 << 20)  # page-aligned, as the readers' blocks are
    view = np.frombuffer(block, dtype=np.uint8)
    before = resource.getrusage(resource.RUSAGE_SELF)
    lines = 0
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(block):
            lines += int(np.count_nonzero(view[:n] == 10))
    after = resource.getrusage(resource.RUSAGE_SELF)
    del view
    block.close()
    assert lines > 0
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--lg", default="18,20", help="log2 of P, comma-separated")
    ap.add_argument("--algorithm", default="allreduce:rd")
    ap.add_argument("--model", default="loggops")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rows = []
    loads: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for lg in (int(x) for x in args.lg.split(",")):
            P = 1 << lg
            path = Path(tmp) / f"x_{lg}.goal"
            subprocess.run(
                [*COLLKIT, "export", args.algorithm, "-P", str(P), "-o", str(path)],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            gen_cmd = [*COLLKIT, "simulate", args.algorithm, "-P", str(P), "--model", args.model]
            file_cmd = [*COLLKIT, "simulate", "--file", str(path), "--model", args.model]
            gens, files, ratios, scans = [], [], [], []
            for _ in range(args.repeat):
                loads.append(os.getloadavg()[0])
                g, _ = cpu_of(gen_cmd)
                f, _ = cpu_of(file_cmd)
                scans.append(scan_cpu(path))
                gens.append(g)
                files.append(f)
                ratios.append(f / g)
            mb = path.stat().st_size / 1e6
            path.unlink()
            rows.append(
                (
                    lg,
                    mb,
                    statistics.median(gens),
                    statistics.median(files),
                    statistics.median(scans),
                    ratios,
                )
            )
            print(f"2^{lg}: file/generator {statistics.median(ratios):.2f}", flush=True)
    head = (
        "| P | file MB | generator cpu s | file cpu s | bytes alone cpu s | "
        "file / generator (median) | pairs' ratios |"
    )
    lines = [head, "| ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for lg, mb, g, f, scan, ratios in rows:
        lines.append(
            f"| 2^{lg} | {mb:.0f} | {g:.2f} | {f:.2f} | {scan:.2f} | "
            f"{statistics.median(ratios):.2f} | " + " ".join(f"{r:.2f}" for r in ratios) + " |"
        )
    table = "\n".join(lines)
    print(table)
    cmd = (
        f"python benchmarks/bench_goal_read.py --lg {args.lg} --algorithm {args.algorithm} "
        f"--repeat {args.repeat}"
    )
    machine = (
        f"{platform.node()} ({platform.machine()}, {os.cpu_count()} CPUs), "
        f"Python {platform.python_version()}"
    )
    out = Path(__file__).parent / "results" / "bench_goal_read.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        f"# Reading a GOAL file against generating the schedule ({args.algorithm})\n\n"
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}\n"
        f"- machine: {machine}; load average {min(loads):.1f}-{max(loads):.1f} during the runs "
        "(shared with other jobs: the pairs' ratios are what compares)\n"
        f"- command: `{cmd}`\n"
        f"- `collkit simulate {args.algorithm} -P N --model {args.model}` and `collkit simulate "
        f"--file x.goal --model {args.model}` (the file from `collkit export`), interleaved, "
        "CPU seconds (user + sys, Python's start included); goal: file <= 1.5x the generator; "
        "bytes alone: a pass that only reads the file and counts its lines (the floor of any "
        "reader), in this process\n\n" + table + "\n"
    )
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
