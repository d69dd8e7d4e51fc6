"""Single calls or loops: collkit's algorithms against the native call timed both ways.

`collkit tune` times one call after a barrier by default and, with `--block N`, N back-to-back
calls per sample (OSU's way). This runs `collkit bench` (native and collkit's algorithm
interleaved in rounds, in one job) with --block 1 and --block 16 alternately, --repeats times, on
each MPI, and tabulates native median / collkit median (> 1: collkit faster) and the rounds won.

    .venv/bin/python benchmarks/tune_block.py [--np 2] [--sizes 8,64,512,4KiB]
        [--repeats 2] [--mpi mpich,openmpi]

Prints and writes benchmarks/results/tune-block.md.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from collkit.bench import machine_name
from collkit.mpi import find_mpi_of_kind

RESULT = Path(__file__).resolve().parent / "results" / "tune-block.md"
PAIRS = {"allreduce": "rd", "bcast": "binomial", "reduce": "binomial", "barrier": "dissemination"}


def bench(
    kind: str, coll: str, algo: str, args: argparse.Namespace, block: int
) -> list[dict[str, Any]]:
    mpi = find_mpi_of_kind(kind)
    out = Path(tempfile.mkdtemp()) / "rows.jsonl"
    cmd = [sys.executable, "-m", "collkit", "bench", coll, "--algos", f"native,{algo}"]
    cmd += ["-np", str(args.np), "--sizes", "0" if coll == "barrier" else args.sizes]
    cmd += ["--block", str(block), "--iters", "200", "--rounds", "3", "-o", str(out)]
    env = {**os.environ, "MPIEXEC": mpi.mpiexec, "MPICXX": mpi.mpicxx}
    r = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    return [json.loads(ln) for ln in out.read_text().splitlines()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--sizes", default="8,64,512,4KiB")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--mpi", default="mpich,openmpi")
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    # (mpi, collective, bytes, block) -> speedups and rounds won, one per repeat
    speed: dict[tuple[str, str, int, int], list[float]] = {}
    won: dict[tuple[str, str, int, int], list[str]] = {}
    labels: dict[str, str] = {}
    for _ in range(args.repeats):
        for kind in args.mpi.split(","):
            for coll, algo in PAIRS.items():
                for block in (1, 16):
                    rows = bench(kind, coll, algo, args, block)
                    labels[kind] = rows[0]["mpi"]
                    native = {r["bytes"]: r for r in rows if r["algorithm"] == "native"}
                    for r in rows:
                        if r["algorithm"] == "native" or r["error"]:
                            continue
                        key = (kind, coll, r["bytes"], block)
                        speed.setdefault(key, []).append(
                            native[r["bytes"]]["median_us"] / r["median_us"]
                        )
                        rounds = r["round_median_us"]
                        n_won = sum(
                            m < min(a, b)
                            for m, a, b in zip(
                                rounds,
                                r["round_native_before_us"],
                                r["round_native_after_us"],
                                strict=True,
                            )
                        )
                        won.setdefault(key, []).append(
                            f"{n_won}/{len(rounds)}" + (" suspect" if r["suspect"] else "")
                        )
                    print(f"{kind} {coll} block {block}: done", flush=True)
    lines = [
        "# Single calls or loops: collkit against the native call, timed both ways",
        "",
        f"{machine_name()}, {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC, load "
        f"{load0:.1f} at the start and {os.getloadavg()[0]:.1f} at the end. P = {args.np}. "
        f"Reproduce: `.venv/bin/python benchmarks/tune_block.py --np {args.np} --sizes "
        f"{args.sizes} --repeats {args.repeats} --mpi {args.mpi}`.",
        "",
        "Each cell: native median / collkit median (> 1: collkit faster), one per repeat, from "
        "`collkit bench COLL --algos native,ALGO --block B --iters 200 --rounds 3` (interleaved "
        "in one job, per-iteration maximum over ranks); then the rounds collkit's block beat "
        "both native blocks around it. block 1: one call after a barrier (tune's default); "
        "block 16: 16 back-to-back calls per sample (`tune --block 16`).",
        "",
        "| MPI | collective (collkit's) | bytes | block 1: speedup | rounds | block 16: "
        "speedup | rounds |",
        "| --- | --- | ---: | --- | --- | --- | --- |",
    ]
    for kind in args.mpi.split(","):
        for coll, algo in PAIRS.items():
            sizes = sorted({k[2] for k in speed if k[0] == kind and k[1] == coll})
            for b in sizes:
                cells = []
                for block in (1, 16):
                    sp = speed.get((kind, coll, b, block), [])
                    cells.append(", ".join(f"{x:.2f}" for x in sp))
                    cells.append(", ".join(won.get((kind, coll, b, block), [])))
                lines.append(
                    f"| {labels[kind]} | {coll} ({coll}:{algo}) | {b} | " + " | ".join(cells) + " |"
                )
    med1 = [statistics.median(v) for k, v in speed.items() if k[3] == 1]
    med16 = [statistics.median(v) for k, v in speed.items() if k[3] == 16]
    lines += [
        "",
        f"Median speedup over all cells: block 1 {statistics.median(med1):.2f}, block 16 "
        f"{statistics.median(med16):.2f}.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    RESULT.write_text(text)
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
