"""Load-independent counts per segment of the executor, from callgrind.

This VM has no hardware counters (`perf stat`: "PMU not available due to virtualization"), so
instructions and cache misses come from valgrind's simulated caches (callgrind --cache-sim=yes:
D1 32 KiB, LL 32 MiB as this machine's L1d and L3). Rank 0 (reduce's root) runs under valgrind,
rank 1 natively; counting is switched on only inside run_plan (inclusive of what it calls):

    B=$(.venv/bin/python -c "from collkit.mpi import build, find_mpi_of_kind as f; \\
        print(build(f('openmpi'), ['collkit_bench_shm']))")/collkit_bench_shm
    ARGS="--segments N --rounds 1 --variants shm --algos reduce:binomial(seg=16)"
    mpirun.openmpi -np 1 valgrind --tool=callgrind --cache-sim=yes --collect-atstart=no \\
        --toggle-collect='collkit::mpi::run_plan*' --I1=32768,8,64 --D1=32768,8,64 \\
        --LL=33554432,16,64 --callgrind-out-file=cg.N $B $ARGS : -np 1 $B $ARGS
    .venv/bin/python benchmarks/segment_counters.py cg.N N

Two calls run (the warm-up and the timed one); the plan's one-time shared-memory preparation
(prepare_shm, in the first call) is subtracted. Polling while the peer is behind is counted in
instructions (recv_slot's, and the loop's own) and depends on timing: it is shown apart
(recv_slot), and misses, which polling does not cause in the simulated caches, are the
evidence that does not depend on load.
"""

from __future__ import annotations

import re
import subprocess
import sys

EVENTS = ["Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw"]


def inclusive(path: str) -> dict[str, list[int]]:
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows: dict[str, list[int]] = {}
    for line in out.splitlines():
        nums = re.findall(r"([\d,]+|\.)\s+(?:\([ \d.]+%\)\s+)?", line.split("???:")[0])
        name = line.split("???:", 1)[1] if "???:" in line else ""
        m = re.match(
            r"collkit::mpi::(?:\(anonymous namespace\)::|ShmTransport::)?"
            r"(run_plan|prepare_shm|recv_slot)\(",
            name,
        )
        if m and m.group(1) not in rows and len(nums) >= len(EVENTS):
            rows[m.group(1)] = [0 if x == "." else int(x.replace(",", "")) for x in nums[:9]]
    return rows


def main() -> int:
    path, n = sys.argv[1], int(sys.argv[2])
    rows = inclusive(path)
    zero = [0] * len(EVENTS)
    run = [a - b for a, b in zip(rows["run_plan"], rows.get("prepare_shm", zero), strict=True)]
    per = {e: x / (2 * n) for e, x in zip(EVENTS, run, strict=True)}
    poll = rows.get("recv_slot", zero)[0] / (2 * n)
    print(
        f"segments {n}: per segment Ir {per['Ir']:.0f} (recv_slot polling {poll:.0f}), "
        f"D1 misses {per['D1mr'] + per['D1mw']:.2f}, LL misses {per['DLmr'] + per['DLmw']:.3f} "
        f"(read {per['DLmr']:.3f}, write {per['DLmw']:.3f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
