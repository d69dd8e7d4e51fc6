"""Which MPI settings make oversubscribed runs (more ranks than cores) usable: an 8-byte
allreduce (native and allreduce:rd) at P = 2, 4, 8 under the pip mpich wheel with and without
throttled progress, and under Open MPI with --oversubscribe (if installed).

Prints a table and writes it, with the machine, date and load average, to
benchmarks/results/oversubscription.md (in place of the last run's).

    .venv/bin/python benchmarks/bench_oversubscription.py [--P 2,4,8] [--iters 200]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

from collkit.bench import machine_name
from collkit.errors import CollkitError
from collkit.mpi import MPI, build, cores, find_mpi_of_kind, launch_command, launch_env
from results_md import write_section

THROTTLE = {
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1",
}
NO_THROTTLE = {"MPIR_CVAR_CH4_PROGRESS_THROTTLE": "0"}


def measure(mpi: MPI, P: int, env: dict[str, str], iters: int) -> dict[str, float]:
    bindir = build(mpi)
    cmd = launch_command(
        mpi,
        P,
        [
            str(bindir / "collkit_bench"),
            "--algos",
            "rd,native",
            "--sizes",
            "8",
            "--iters",
            str(iters),
            "--warmup",
            "10",
            "--max-ms",
            "5000",
        ],
    )
    full, _ = launch_env(mpi, P, env)
    r = subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=300, check=False)
    out: dict[str, float] = {}
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            if d.get("kind") == "row" and "median_us" in d:
                out[d["algorithm"]] = d["median_us"]
                out[d["algorithm"] + " p99"] = d["p99_us"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--P", default="2,4,8")
    ap.add_argument("--iters", type=int, default=200)
    args = ap.parse_args()
    Ps = [int(x) for x in args.P.split(",")]
    configs: list[tuple[str, MPI, dict[str, str]]] = []
    mpich = find_mpi_of_kind("mpich")
    configs.append(("mpich wheel, busy polling (default)", mpich, NO_THROTTLE))
    configs.append(("mpich wheel, throttled progress", mpich, THROTTLE))
    try:
        ompi = find_mpi_of_kind("openmpi")
        configs.append((f"{ompi.version}, --oversubscribe", ompi, {}))
    except CollkitError as e:
        print(f"Open MPI skipped: {e}", file=sys.stderr)
    lines = [
        "| MPI and settings | P | native median (µs) | native p99 | rd median (µs) | rd p99 |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, mpi, env in configs:
        for P in Ps:
            m = measure(mpi, P, env, args.iters)
            row = (
                f"| {label} | {P} | {m.get('native', float('nan')):.1f} | "
                f"{m.get('native p99', float('nan')):.1f} | "
                f"{m.get('allreduce:rd', float('nan')):.1f} | "
                f"{m.get('allreduce:rd p99', float('nan')):.1f} |"
            )
            print(row, flush=True)
            lines.append(row)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    header = (
        f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, {machine_name()}, "
        f"{cores()} cores, load average {load}\n\n"
        f"8-byte allreduce (double, SUM), {args.iters} iterations, barrier-synchronised, "
        f"per-iteration maximum over ranks. Command: `{' '.join(sys.argv)}`\n\n"
    )
    path = Path(__file__).parent / "results" / "oversubscription.md"
    write_section(
        path,
        "# Oversubscribed MPI runs: which settings make them usable",
        "## 8-byte allreduce",
        header + "\n".join(lines),
    )
    print(f"wrote its section of {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
