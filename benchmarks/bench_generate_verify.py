"""Time and peak memory to generate whole schedules and to verify them.

Each case runs in a fresh subprocess so that its peak resident memory (ru_maxrss) is its own.
Prints a table and writes it, with the machine, date and load, as its section of
benchmarks/results/generate_verify.md (the recorded cases and --quick one section each).

    .venv/bin/python benchmarks/bench_generate_verify.py            # the recorded cases
    .venv/bin/python benchmarks/bench_generate_verify.py --quick    # small cases only
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

from results_md import write_section

TITLE = "# Generating and verifying whole schedules (benchmarks/bench_generate_verify.py)"

CASE = r"""
import json, resource, sys, time
import collkit
what, algo, P, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
a = collkit.Algorithm(algo)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
if what == "generate":
    s = a.generate(P, count)
    t = time.perf_counter() - t0
    out = {"ops": s.total_ops, "schedule_bytes": s.memory_bytes}
elif what == "stream":
    ops = a.count_ops(P, count)
    t = time.perf_counter() - t0
    out = {"ops": ops}
else:
    s = a.generate(P, count)
    t1 = time.perf_counter()
    r = collkit.verify(s, commutative=False)
    t = time.perf_counter() - t1
    assert r.ok, r.summary()
    out = {"ops": r.ops, "messages": r.messages, "generate_s": t1 - t0}
out["seconds"] = t
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["base_rss_mb"] = base / 1024
print(json.dumps(out))
"""

CASES = [
    ("generate", "allreduce:rd", 1 << 10, 1),
    ("generate", "allreduce:rd", 1 << 16, 1),
    ("generate", "allreduce:rd", 1_000_000, 1),
    ("generate", "allreduce:rd", 1 << 20, 1),
    ("stream", "allreduce:rd", 1 << 20, 1),
    ("verify", "allreduce:rd", 1 << 10, 1),
    ("verify", "allreduce:rd", 1 << 12, 1),
    ("verify", "allreduce:rd", 4095, 4),
]
QUICK = [c for c in CASES if c[2] <= 1 << 12]


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="only P <= 4096")
    ap.add_argument("--no-record", action="store_true", help="do not write the results file")
    args = ap.parse_args()
    rows = []
    header = (
        f"{'what':<9} {'algorithm':<14} {'P':>9} {'count':>5} {'ops':>11} "
        f"{'time':>9} {'peak RSS':>10} {'ns/op':>7}"
    )
    print(header)
    print("-" * len(header))
    for what, algo, P, count in QUICK if args.quick else CASES:
        res = subprocess.run(
            [sys.executable, "-c", CASE, what, algo, str(P), str(count)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(res.stdout.strip().splitlines()[-1])
        r.update(what=what, algorithm=algo, P=P, count=count)
        rows.append(r)
        line = (
            f"{what:<9} {algo:<14} {P:>9} {count:>5} {r['ops']:>11} "
            f"{r['seconds']:>8.3f}s {r['peak_rss_mb']:>8.0f}MB "
            f"{r['seconds'] / max(1, r['ops']) * 1e9:>7.1f}"
        )
        print(line, flush=True)
    if not args.no_record:
        out = Path(__file__).parent / "results" / "generate_verify.md"
        lines = [
            f"{dt.datetime.now().isoformat(timespec='seconds')} on {platform.node()} "
            f"({platform.processor() or platform.machine()}, {os.cpu_count()} cores, load "
            f"average {os.getloadavg()[0]:.1f} at the end)",
            "",
            f"`{' '.join(['python', *sys.argv])}`  ",
            "peak RSS includes the Python interpreter and numpy "
            f"(~{rows[0]['base_rss_mb']:.0f} MB before the case starts).",
            "",
            "| what | algorithm | P | count | ops | time (s) | peak RSS (MB) | ns/op |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        for r in rows:
            lines.append(
                f"| {r['what']} | {r['algorithm']} | {r['P']} | {r['count']} | {r['ops']} "
                f"| {r['seconds']:.3f} | {r['peak_rss_mb']:.0f} "
                f"| {r['seconds'] / max(1, r['ops']) * 1e9:.1f} |"
            )
        heading = "## Generate and verify" + (" (--quick)" if args.quick else "")
        write_section(out, TITLE, heading, "\n".join(lines))
        print(f"wrote its section of {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
