"""Overlap of collkit's non-blocking collectives with compute, and what a persistent start costs.

OSU's overlap measure (osu_iallreduce, OSU Micro-Benchmarks, Panda et al.): for each algorithm
and size, the time of the non-blocking collective alone (start, then MPI_Wait), of compute alone
for that long, and of both together (start, compute, MPI_Wait); overlap = max(0, 100 (1 - (total -
compute) / alone)). Compute is a busy loop that does not enter MPI (probes = 0, OSU's default) or
is cut in pieces with an MPI_Test between them (probes = 8): collkit moves its runs only when the
program enters MPI (docs/mpi.md), as MPICH and Open MPI without a progress thread do. collkit's
algorithms (ck_i<coll>) against the MPI's own MPI_I<coll> ("native"), every algorithm once per
round (interleaved), median over rounds, mean over ranks.

--cost adds, per algorithm, the per-call time of the blocking call, of the non-blocking call then
MPI_Wait, and of MPI_Start then MPI_Wait on one persistent handle (ck_<coll>_init; "native": the
MPI's own MPI_<Coll>_init, or before MPI 4 collkit's handle over MPI_I<coll>): what the setup a
persistent call does once saves per call.

    .venv/bin/python benchmarks/bench_overlap.py [--mpi mpich|openmpi] [-np 2] [--rounds 5]

Prints the tables and writes them, with machine, date, load and the command, as the section of
the collective, MPI and P in benchmarks/results/overlap.md (a run replaces its own section and
keeps the others). Timings on a loaded machine are noisy: the load is recorded
before and after; rerun on a quiet machine for figures to quote.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import shlex
import subprocess
import sys
from pathlib import Path

from collkit.bench import machine_name
from collkit.mpi import build, find_mpi_of_kind, launch_command, launch_env
from results_md import write_section

OUT = Path(__file__).resolve().parent / "results" / "overlap.md"


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default="mpich", choices=["mpich", "openmpi"])
    ap.add_argument("-np", type=int, default=2)
    ap.add_argument("--collective", default="allreduce")
    ap.add_argument("--algos", default="allreduce:rd;allreduce:ring;native")
    ap.add_argument("--bytes", default="8,65536,1048576")
    ap.add_argument("--probes", default="0,8")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-cost", action="store_true", help="skip the persistent-cost table")
    args = ap.parse_args()
    mpi = find_mpi_of_kind(args.mpi)
    bindir = build(mpi, ["collkit_overlap"])
    prog = [str(bindir / "collkit_overlap"), "--collective", args.collective]
    prog += ["--algos", args.algos, "--bytes", args.bytes, "--probes", args.probes]
    prog += ["--iters", str(args.iters), "--rounds", str(args.rounds)]
    if not args.no_cost:
        prog.append("--cost")
    env, settings = launch_env(mpi, args.np, None)
    before = load()
    r = subprocess.run(
        launch_command(mpi, args.np, prog), env=env, capture_output=True, text=True, check=False
    )
    after = load()
    if r.returncode != 0:
        sys.exit(f"collkit_overlap failed ({r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    overlap, cost = [], []
    for line in r.stdout.splitlines():
        fields = line.split()
        if fields and fields[0] == "OVERLAP":
            overlap.append(fields[1:])
        elif fields and fields[0] == "COST":
            cost.append(fields[1:])
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python benchmarks/bench_overlap.py " + shlex.join(sys.argv[1:])
    heading = f"## {args.collective}, {mpi.version.splitlines()[0]}, P = {args.np}"
    lines = [
        f"{machine_name()}, {os.cpu_count()} cores, {date}; load average (1, 5, 15 min) "
        f"{before} before, {after} after; {args.iters} calls per round, {args.rounds} rounds "
        f"interleaved, median over rounds, mean over ranks"
        + (f"; settings: {settings}" if settings else "")
        + f". Command: `{command}`.",
        "",
        "| algorithm | bytes | probes | alone (µs) | compute (µs) | both (µs) | overlap (%) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [f"| {a} | {b} | {p} | {t} | {c} | {x} | {o} |" for a, b, p, t, c, x, o in overlap]
    if cost:
        lines += [
            "",
            "Per-call cost (median over rounds, maximum over ranks): blocking call; non-blocking "
            "call then MPI_Wait; MPI_Start then MPI_Wait on a persistent handle made once.",
            "",
            "| algorithm | bytes | blocking (µs) | non-blocking + wait (µs) | persistent start + "
            "wait (µs) | persistent / non-blocking |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        lines += [
            f"| {a} | {b} | {bl} | {nb} | {pe} | {float(pe) / float(nb):.2f} |"
            for a, b, bl, nb, pe in cost
        ]
    text = "\n".join(lines) + "\n"
    print(f"{heading}\n\n{text}")
    title = (
        "# Overlap and persistent-call cost (benchmarks/bench_overlap.py)\n\n"
        + ((__doc__ or "").split("\n\n")[1])
    )
    write_section(OUT, title, heading, text)
    print(f"wrote its section of {OUT}")


if __name__ == "__main__":
    main()
