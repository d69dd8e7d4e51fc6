"""A collective's first calls through the shared-memory slots, against its later ones.

Each pair of a node's ranks has a ring of 32 slots of 32 KiB. A page of a slot that no message has
covered yet takes a page fault when a message first covers it (~2-3 us a fault on this VM, in the
sender and in the receiver), so unless the pages are mapped at setup each size's first ~32 calls
pay faults that its later calls do not: every measurement with fewer warm-up calls than slots, and
every program that calls a shape a few dozen times, sees them.

This runs the bench driver (one job per size, so each starts with fresh slots; no warm-up) for
bcast:binomial and allreduce:rd, with the current build and, with --against, an earlier build's
collkit_bench, alternately (A B A B), and tabulates per build the median of calls 2-32 (the first
call also sets the communicator up) and of calls 33-100, and their ratio.

    .venv/bin/python benchmarks/shm_first_calls.py [--mpi mpich] [--against OLD_DIR]
        [--rounds 3] [--sizes 2048,12288,30000]

OLD_DIR: a folder with an earlier build's collkit_bench (e.g. ~/.cache/collkit/mpi-mpich-<hash>).
Prints its table and writes it as the MPI's section of benchmarks/results/shm-first-calls.md
(the other MPI's section kept).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

from collkit.bench import machine_name
from collkit.mpi import MPI, build, find_mpi_of_kind, launch_command, launch_env
from results_md import MPI_NAMES, write_section

RESULT = Path(__file__).resolve().parent / "results" / "shm-first-calls.md"
TITLE = """# First calls through the shared-memory slots (benchmarks/shm_first_calls.py)

One section per MPI, each with its machine, date, load and command."""
CASES = (("bcast", "bcast:binomial", "char"), ("allreduce", "allreduce:rd", "double"))
FIRST = 32  # the ring's slots


def samples(
    mpi: MPI, env: dict[str, str], exe: Path, coll: str, algo: str, dt: str, n: int
) -> list[float]:
    args = [str(exe), "--collective", coll, "--algos", algo, "--sizes", str(n), "--datatype", dt]
    args += ["--iters", "100", "--warmup", "0", "--sync", "barrier", "--raw"]
    cmd = launch_command(mpi, 2, args)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        sys.exit(f"{shlex.join(args)} failed:\n{(r.stdout + r.stderr)[-2000:]}")
    for ln in r.stdout.splitlines():
        if ln.startswith("{") and '"row"' in ln:
            return [float(x) for x in json.loads(ln)["samples"]]
    sys.exit(f"no row from {shlex.join(args)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default="mpich", choices=("mpich", "openmpi"))
    ap.add_argument("--against", default=None, help="folder of an earlier build's collkit_bench")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="2048,12288,30000")
    a = ap.parse_args()
    mpi = find_mpi_of_kind(a.mpi)
    builds = {"this build": build(mpi, ["collkit_bench"]) / "collkit_bench"}
    if a.against:
        builds = {"earlier build": Path(a.against).expanduser() / "collkit_bench", **builds}
    env, _ = launch_env(mpi, 2)
    sizes = [int(s) for s in a.sizes.split(",")]
    load0 = " ".join(f"{x:.1f}" for x in os.getloadavg())
    start = _dt.datetime.now(_dt.timezone.utc)
    got: dict[tuple[str, str, int], tuple[list[float], list[float]]] = {}
    for rnd in range(a.rounds):
        for label, exe in builds.items():  # alternating: A B A B
            for coll, algo, dt in CASES:
                for n in sizes:
                    s = samples(mpi, env, exe, coll, algo, dt, n)
                    first, rest = got.setdefault((label, algo, n), ([], []))
                    first += s[1:FIRST]
                    rest += s[FIRST:]
        print(f"round {rnd + 1}/{a.rounds} done", file=sys.stderr)
    load1 = " ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        f"- machine: {machine_name()}",
        f"- MPI: {mpi.version}",
        f"- date: {start.isoformat(timespec='seconds')}",
        f"- load (1/5/15 min): {load0} before, {load1} after",
        f"- command: `.venv/bin/python benchmarks/shm_first_calls.py {shlex.join(sys.argv[1:])}`",
        f"- builds: {'; '.join(f'{k}: {v}' for k, v in builds.items())}",
        f"- each run: one size, 100 calls, no warm-up, each call after an MPI_Barrier; {a.rounds} "
        "rounds, the builds alternating; medians of the pooled calls (µs, maximum over ranks)",
        "",
        "| build | algorithm | bytes | calls 2-32 | calls 33-100 | ratio |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for (label, algo, n), (first, rest) in got.items():
        f, r = statistics.median(first), statistics.median(rest)
        lines.append(f"| {label} | {algo} | {n} | {f:.2f} | {r:.2f} | {f / r:.2f} |")
    heading = f"## {MPI_NAMES[a.mpi]}, P = 2"
    text = "\n".join(lines) + "\n"
    print(f"{heading}\n\n{text}")
    write_section(RESULT, TITLE, heading, text)
    print(f"wrote its section of {RESULT}", file=sys.stderr)


if __name__ == "__main__":
    main()
