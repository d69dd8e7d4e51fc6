"""Speed and size of the schedule formats (text, JSON, GOAL), both ways, for allreduce:rd.

    python benchmarks/io_formats.py [--P 1024,65536] [--count 7] [--repeat 3]

Prints a table and writes it, with the machine and date, to benchmarks/results/io_formats.md.
Times are the best of --repeat runs (wall clock, one thread).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time
from pathlib import Path

import collkit
from collkit import io


def best_of(repeat: int, fn: object) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--P", default="1024,65536")
    ap.add_argument("--count", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for P in (int(p) for p in args.P.split(",")):
        s = collkit.generate("allreduce:rd", P=P, count=args.count)
        for fmt in io.FORMATS:
            t_out, text = best_of(args.repeat, lambda s=s, fmt=fmt: io.dumps(s, fmt))
            t_in, back = best_of(args.repeat, lambda text=text, fmt=fmt: io.loads(text, fmt))
            assert back == s
            mb = len(text) / 1e6  # type: ignore[arg-type]
            rows.append((P, s.total_ops, fmt, mb, t_out, t_in))
    head = "| P | ops | format | size (MB) | write (s) | read (s) | read (Mops/s) |"
    lines = [head, "| ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
    for P, ops, fmt, mb, t_out, t_in in rows:
        lines.append(
            f"| {P} | {ops} | {fmt} | {mb:.1f} | {t_out:.3f} | {t_in:.3f} | "
            f"{ops / t_in / 1e6:.2f} |"
        )
    table = "\n".join(lines)
    print(table)
    cmd = (
        f"python benchmarks/io_formats.py --P {args.P} --count {args.count} --repeat {args.repeat}"
    )
    machine = (
        f"{platform.node()} ({platform.machine()}, {os.cpu_count()} CPUs), "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f} at the end"
    )
    out = Path(__file__).parent / "results" / "io_formats.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        "# Schedule formats: speed and size (allreduce:rd)\n\n"
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}\n"
        f"- machine: {machine} (shared with other jobs: timings are indicative)\n"
        f"- command: `{cmd}`\n"
        f"- count = {args.count} elements, best of {args.repeat}; every read is checked equal "
        "to the schedule written\n\n" + table + "\n"
    )
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
