"""Simulated events per second and peak memory of the simulator (issue 3).

Cases: allreduce:rd at P = 2^10, 2^16, 2^20 (one run, programs pulled from the generator rank by
rank), and many noisy trials at P = 2^12. An event is an op or a message. Each case runs in a
fresh subprocess so that its peak resident memory (ru_maxrss) is its own. Times are given as
wall clock and as CPU time of the process: on a shared machine the CPU time is what the engine
cost. Prints a table and appends it, with the machine and date, to
benchmarks/results/bench_simulate.md.

    .venv/bin/python benchmarks/bench_simulate.py            # the recorded cases
    .venv/bin/python benchmarks/bench_simulate.py --quick    # small cases only
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

CASE = r"""
import json, resource, sys, time
import collkit
algo, P, nbytes, model, noise, trials = sys.argv[1:7]
P, trials = int(P), int(trials)
t0 = time.perf_counter()
c0 = time.process_time()
r = collkit.simulate(algo, P, bytes=int(nbytes), model=model,
                     noise=None if noise == "none" else noise, trials=trials, seed=1)
total_wall, total_cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({
    "makespan_ns": r.makespan, "median_ns": r.stats()["median"], "events": r.events,
    "ops": r.ops, "messages": r.messages,
    "load_s": r.load_seconds, "run_s": r.run_seconds,
    "load_cpu_s": r.load_cpu_seconds, "run_cpu_s": r.run_cpu_seconds,
    "total_s": total_wall, "total_cpu_s": total_cpu,
    "engine_mb": r.memory_bytes / 2**20,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""

# (algorithm, P, bytes per rank, model, noise, trials)
CASES = [
    ("allreduce:rd", 1 << 10, 8, "postal", "none", 1),
    ("allreduce:rd", 1 << 16, 8, "postal", "none", 1),
    ("allreduce:rd", 1 << 20, 8, "postal", "none", 1),
    ("allreduce:rd", 1 << 20, 8, "loggops", "none", 1),
    ("allreduce:rd", 1 << 12, 8, "pipelined-postal", "exponential(50ns)", 200),
]
QUICK = [c for c in CASES if c[1] <= 1 << 12]


def machine() -> str:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).parent,
    ).stdout.strip()
    return (
        f"{platform.node()}: {cpu}, {os.cpu_count()} cores, Linux {platform.release()}, "
        f"Python {platform.python_version()}; load average {load:.1f} at the start; "
        f"commit {commit or '?'}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small cases only")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    header = (
        f"| {'case':52s} | {'events':>10s} | {'run s':>6s} | {'run cpu s':>9s} | "
        f"{'M ev/s (cpu)':>12s} | {'load cpu s':>10s} | {'total s':>7s} | "
        f"{'total cpu s':>11s} | {'peak RSS MB':>11s} |"
    )
    rows = [header, "|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|"]
    print(header)
    for algo, P, nbytes, model, noise, trials in QUICK if args.quick else CASES:
        cmd = [sys.executable, "-c", CASE, algo, str(P), str(nbytes), model, noise, str(trials)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            return 1
        d = json.loads(out.stdout)
        name = f"{algo} P=2^{P.bit_length() - 1} {nbytes}B {model}"
        if trials > 1:
            name += f" {noise} x{trials}"
        rate = d["events"] / d["run_cpu_s"] / 1e6 if d["run_cpu_s"] > 0 else float("inf")
        row = (
            f"| {name:52s} | {d['events']:10d} | {d['run_s']:6.2f} | {d['run_cpu_s']:9.2f} | "
            f"{rate:12.1f} | {d['load_cpu_s']:10.2f} | {d['total_s']:7.2f} | "
            f"{d['total_cpu_s']:11.2f} | {d['peak_rss_mb']:11.0f} |"
        )
        print(row, flush=True)
        rows.append(row)
    if not args.no_write:
        res = Path(__file__).parent / "results" / "bench_simulate.md"
        res.parent.mkdir(exist_ok=True)
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        cmd_line = "python benchmarks/bench_simulate.py" + (" --quick" if args.quick else "")
        text = (
            f"\n## {stamp}\n\n{machine()}\n\nCommand: `{cmd_line}`\n\n"
            "events = ops + messages over all trials; run = the event loop; load = generating "
            "each rank's program and reading it into the engine; total = the whole "
            "`collkit.simulate` call; peak RSS of the whole Python process.\n\n"
            + "\n".join(rows)
            + "\n"
        )
        with res.open("a") as f:
            f.write(text)
        print(f"appended to {res}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
