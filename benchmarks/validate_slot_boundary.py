"""The executor around its shared-memory slot size: allreduce:rd, reduce:binomial,
bcast:binomial and allgather:rd at 12-20 KiB on 2 ranks, with the default slot size (16 KiB),
32 KiB and 8 KiB (COLLKIT_SHM_MAX), through validate's interleaved measurement; minima in µs.

  .venv/bin/python benchmarks/validate_slot_boundary.py /usr/bin/mpiexec

Results: benchmarks/results/validate-slot-boundary.md (docs/simulator.md, validation).
"""

import os
import sys

import numpy as np

from collkit.mpi import find_mpi
from collkit.profile import machine_load
from collkit.validate import measure

SIZES = [12288, 14336, 15360, 16384, 20480]
CASES = (
    ("allreduce", "allreduce:rd"),
    ("reduce", "reduce:binomial"),
    ("bcast", "bcast:binomial"),
    ("allgather", "allgather:rd"),
)


def main() -> None:
    mpi = find_mpi(sys.argv[1] if len(sys.argv) > 1 else None)
    print(f"{mpi.version}; load {machine_load()}")
    print("| COLLKIT_SHM_MAX | algorithm | " + " | ".join(map(str, SIZES)) + " |")
    print("| --- | --- |" + " ---: |" * len(SIZES))
    for env in ("", "32768", "8192"):
        if env:
            os.environ["COLLKIT_SHM_MAX"] = env
        else:
            os.environ.pop("COLLKIT_SHM_MAX", None)
        for coll, algo in CASES:
            got = measure(mpi, coll, 2, [algo], SIZES, rounds=3, iterations=30)
            mins = " | ".join(f"{np.min(got[(algo, s)]):.2f}" for s in SIZES)
            print(f"| {env or 'default (16384)'} | {algo} | {mins} |", flush=True)
    print(f"load after: {machine_load()}")


if __name__ == "__main__":
    main()
