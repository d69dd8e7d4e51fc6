"""The executor around its shared-memory slot size: allreduce:rd, reduce:binomial,
bcast:binomial and allgather:rd at 12-20 KiB on 2 ranks, with the built-in slot size (32 KiB:
every size through the slots), 16 KiB (the sizes straddle it) and 8 KiB (none through the slots)
(COLLKIT_SHM_MAX), through validate's interleaved measurement; minima in µs.

  .venv/bin/python benchmarks/validate_slot_boundary.py [/usr/bin/mpiexec]

Prints the table and writes it as the MPI's section of benchmarks/results/validate.md (beside the
`collkit validate` runs; the other sections kept).
"""

import datetime as dt
import os
import shlex
import sys
from pathlib import Path

import numpy as np

from collkit.bench import machine_name
from collkit.mpi import find_mpi
from collkit.profile import machine_load
from collkit.validate import measure
from results_md import MPI_NAMES, write_section

RESULT = Path(__file__).resolve().parent / "results" / "validate.md"
TITLE = "# collkit validate on this machine"
SIZES = [12288, 14336, 15360, 16384, 20480]
CASES = (
    ("allreduce", "allreduce:rd"),
    ("reduce", "reduce:binomial"),
    ("bcast", "bcast:binomial"),
    ("allgather", "allgather:rd"),
)


def main() -> None:
    mpi = find_mpi(sys.argv[1] if len(sys.argv) > 1 else None)
    lines = [
        f"- machine: {machine_name()}",
        f"- MPI: {mpi.version}",
        f"- date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='minutes')}",
        f"- load (1/5/15 min): {machine_load()} before",
        "- command: `.venv/bin/python benchmarks/validate_slot_boundary.py "
        f"{shlex.join(sys.argv[1:])}`",
        "- 3 rounds of 30 iterations a case, interleaved; minima (µs)",
        "",
        "| COLLKIT_SHM_MAX | algorithm | " + " | ".join(map(str, SIZES)) + " |",
        "| --- | --- |" + " ---: |" * len(SIZES),
    ]
    print("\n".join(lines), flush=True)
    for env in ("", "16384", "8192"):
        if env:
            os.environ["COLLKIT_SHM_MAX"] = env
        else:
            os.environ.pop("COLLKIT_SHM_MAX", None)
        for coll, algo in CASES:
            got = measure(mpi, coll, 2, [algo], SIZES, rounds=3, iterations=30)
            mins = " | ".join(f"{np.min(got[(algo, s)]):.2f}" for s in SIZES)
            lines.append(f"| {env or 'built-in'} | {algo} | {mins} |")
            print(lines[-1], flush=True)
    lines += ["", f"Load after: {machine_load()}."]
    print(lines[-1])
    heading = f"## {MPI_NAMES.get(mpi.kind, mpi.version)}: around the shared-memory slot size"
    write_section(RESULT, TITLE, heading, "\n".join(lines))
    print(f"wrote its section of {RESULT}")


if __name__ == "__main__":
    main()
