"""The first collkit call on a communicator: what its setup costs a program.

A program's first collective that collkit runs on a communicator sets the communicator up
(collectively): a private MPI_Comm_dup, the grouping of its ranks by node and the shared-memory
segment with its pages. A program that calls collectives in loops pays it once; one that calls
each a few times (LAMMPS: 21 bcasts at 19 sizes) pays it in its time in collectives.

This builds a program that times its first and its second MPI_Allreduce (8 B and 2 KiB after a
barrier, on MPI_COMM_WORLD), and runs it plainly (the MPI's own call) and under the interposition
library of this build and, with --against, of an earlier one, with a table that routes both sizes
to allreduce:rd, alternating (plain, earlier, this, plain, ...), and tabulates the medians.

    .venv/bin/python benchmarks/first_call.py [--mpi mpich] [--against OLD.so] [--rounds 5]

Prints its table and writes it as the MPI's section of benchmarks/results/first-call.md (the
other MPI's section kept).
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
import tempfile
from pathlib import Path

from collkit.bench import machine_name
from collkit.mpi import build, find_mpi_of_kind, launch_command, launch_env
from results_md import MPI_NAMES, write_section

RESULT = Path(__file__).resolve().parent / "results" / "first-call.md"
TITLE = """# The first collkit call on a communicator (benchmarks/first_call.py)

One section per MPI, each with its machine, date, load and command."""
PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  double in[256] = {0}, out[256], t[4];
  for (int k = 0; k < 2; ++k) {  /* 8 B, then 2 KiB: each size's first and second call */
    int n = k ? 256 : 1;
    MPI_Barrier(MPI_COMM_WORLD);
    t[0] = MPI_Wtime();
    MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    t[1] = MPI_Wtime();
    MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    t[2] = MPI_Wtime();
    if (rank == 0) printf("%d %.1f %.1f\n", 8 * n, (t[1] - t[0]) * 1e6, (t[2] - t[1]) * 1e6);
  }
  MPI_Finalize();
  return 0;
}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default="mpich", choices=("mpich", "openmpi"))
    ap.add_argument("--against", default=None, help="an earlier build's libcollkit_pmpi.so")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    mpi = find_mpi_of_kind(a.mpi)
    lib = build(mpi, ["libcollkit_pmpi.so"]) / "libcollkit_pmpi.so"
    tmp = Path(tempfile.mkdtemp(prefix="collkit-first-"))
    (tmp / "first.c").write_text(PROGRAM)
    cc = str(Path(mpi.mpicxx).with_name(Path(mpi.mpicxx).name.replace("cxx", "cc")))
    subprocess.run([cc, "-O2", "-o", str(tmp / "first"), str(tmp / "first.c")], check=True)
    table = {
        "format": "collkit-tuning",
        "version": 1,
        "mpi": mpi.version,
        "rules": [
            {
                "collective": "allreduce",
                "P": [2, 2],
                "bytes": [8, 2048],
                "algorithm": "allreduce:rd",
            }
        ],
    }
    (tmp / "table.json").write_text(json.dumps(table))
    ways = {
        "MPI's own": None,
        **({"earlier build": a.against} if a.against else {}),
        "this build": str(lib),
    }
    env0, _ = launch_env(mpi, 2)
    load0 = " ".join(f"{x:.1f}" for x in os.getloadavg())
    start = _dt.datetime.now(_dt.timezone.utc)
    got: dict[tuple[str, int], tuple[list[float], list[float]]] = {}
    for rnd in range(a.rounds):
        for label, so in ways.items():  # alternating
            env = dict(env0)
            if so:
                env["LD_PRELOAD"] = so
                env["COLLKIT_TUNING"] = str(tmp / "table.json")
            cmd = launch_command(mpi, 2, [str(tmp / "first")])
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if r.returncode != 0:
                sys.exit(f"{shlex.join(cmd)} ({label}) failed:\n{(r.stdout + r.stderr)[-2000:]}")
            for ln in r.stdout.split("\n"):
                parts = ln.split()
                if len(parts) == 3 and parts[0].isdigit():
                    first, second = got.setdefault((label, int(parts[0])), ([], []))
                    first.append(float(parts[1]))
                    second.append(float(parts[2]))
        print(f"round {rnd + 1}/{a.rounds} done", file=sys.stderr)
    load1 = " ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        f"- machine: {machine_name()}",
        f"- MPI: {mpi.version}",
        f"- date: {start.isoformat(timespec='seconds')}",
        f"- load (1/5/15 min): {load0} before, {load1} after",
        f"- command: `.venv/bin/python benchmarks/first_call.py {shlex.join(sys.argv[1:])}`",
        f"- libraries: {'; '.join(f'{k}: {v}' for k, v in ways.items() if v)}",
        f"- {a.rounds} runs each way, alternating; a run's first MPI_Allreduce (8 B, on "
        "MPI_COMM_WORLD: the library sets the communicator up in it), its second, then the first "
        "and second at 2 KiB (the communicator set up already); µs on rank 0, median (min-max)",
        "",
        "| way | bytes | first call | second call |",
        "| --- | ---: | ---: | ---: |",
    ]
    for (label, nbytes), (first, second) in got.items():
        lines.append(
            f"| {label} | {nbytes} | {statistics.median(first):.0f} ({min(first):.0f}-"
            f"{max(first):.0f}) | {statistics.median(second):.1f} ({min(second):.1f}-"
            f"{max(second):.1f}) |"
        )
    heading = f"## {MPI_NAMES[a.mpi]}, P = 2"
    text = "\n".join(lines) + "\n"
    print(f"{heading}\n\n{text}")
    write_section(RESULT, TITLE, heading, text)
    print(f"wrote its section of {RESULT}", file=sys.stderr)


if __name__ == "__main__":
    main()
