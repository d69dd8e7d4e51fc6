"""All-to-all ([Fan 2022]): the radix-r Bruck against the spread-out and pairwise algorithms.

One run writes, with the machine and the date, its section of benchmarks/results/alltoall.md
(a run replaces the section of its kind, full or --quick, and keeps the other):

1. **model**: for P = 64 .. 4096 and block sizes N, the r the alpha-beta model picks (what
   `r=auto` uses) beside the ceil(sqrt P) rule of thumb, with the model times of both, of r = 2
   and of r = P (the spread-out's counts);
2. **simulated** (when `collkit.simulate` is available): the poster's experiments A (vary r at
   fixed P, N), B (vary N at fixed P, r) and C (vary P at fixed N, r), simulated for
   P = 64 .. 4096;
3. **measured**: where correctness against MPI_Alltoall is tested (timings at the P a 2-core
   machine allows measure oversubscription, not the algorithms).

    .venv/bin/python benchmarks/bench_alltoall.py            # everything available
    .venv/bin/python benchmarks/bench_alltoall.py --quick    # small P only
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
from pathlib import Path
from typing import Any

from collkit.analysis import bruck
from results_md import write_section

RESULTS = Path(__file__).resolve().parent / "results" / "alltoall.md"
TITLE = "# All-to-all benchmark results (benchmarks/bench_alltoall.py)"
SIZES = [8, 64, 256, 1024, 4096, 16384, 65536]
BRUCK_VARIANTS = ("alltoall:bruck", "alltoall:bruck_modified")


def fmt_us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f}"


def table(head: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def model_section(Ps: list[int]) -> str:
    rows = []
    for P in Ps:
        for N in SIZES:
            c = bruck.choose_r(P, N)
            rows.append(
                [
                    P,
                    N,
                    c["r_model"],
                    c["r_sqrt"],
                    fmt_us(c["t_model_s"]),
                    fmt_us(c["t_sqrt_s"]),
                    fmt_us(bruck.model_seconds(P, 2, N)),
                    fmt_us(bruck.model_seconds(P, P, N)),
                ]
            )
    head = ["P", "N (B)", "r auto", "r sqrt", "T auto (us)", "T sqrt (us)", "T r=2", "T r=P"]
    return (
        "### Model: r=auto against the sqrt(P) rule\n\n"
        f"alpha = {bruck.DEFAULT_ALPHA_S * 1e6:g} us, "
        f"beta = {bruck.DEFAULT_BETA_S_PER_BYTE * 1e9:g} ns/B; "
        "T(r) = numC alpha + numD N beta.\n\n" + table(head, rows)
    )


# LogGP in the notation of LogGOPSim, Aries-like numbers (Theta, where the poster measured):
# wire latency L, per-message CPU overhead o and gap g, gap per byte G (10 GB/s), and a memory
# copy cost for the rotations and the packing (20 GB/s).
SIM_MODEL: dict[str, Any] = {
    "model": "loggp",
    "L": "1.5us",
    "o": "300ns",
    "g": "300ns",
    "G": "0.1ns",
    "copy_beta": "0.05ns",
}


def sim_us(name: str, P: int, N: int) -> float:
    import collkit

    return float(collkit.simulate(name, P, count=N, elem_size=1, **SIM_MODEL).makespan) / 1e3


def simulated_section(quick: bool) -> str:
    import collkit

    title = "### Simulated: the poster's experiments A, B, C"
    if not hasattr(collkit, "simulate"):
        return f"{title}\n\nNot run: `collkit.simulate` cannot be imported here."
    model = ", ".join(f"{k}={v}" for k, v in SIM_MODEL.items())
    out = [f"{title}\n\nModel: {model}. Times in microseconds (makespan)."]
    P_A = 256 if quick else 1024
    refs = ["alltoall:linear", "alltoall:pairwise"]

    # A: vary r at fixed P and N.
    rows = []
    radixes = sorted(r for r in {2, 4, 8, 16, bruck.sqrt_rule(P_A), 64, 128, 256, P_A} if r <= P_A)
    for N in (16, 1024):
        for r in radixes:
            rows.append([N, r] + [f"{sim_us(f'{v}(r={r})', P_A, N):.1f}" for v in BRUCK_VARIANTS])
        for ref in refs:
            rows.append([N, ref.split(":")[1], f"{sim_us(ref, P_A, N):.1f}", ""])
    out.append(
        f"#### A: vary r, P = {P_A}\n\n"
        + table(["N (B)", "r", "bruck (us)", "bruck_modified (us)"], rows)
    )

    # B: vary N at fixed P and r.
    s = bruck.sqrt_rule(P_A)
    names = ["alltoall:bruck(r=2)", f"alltoall:bruck(r={s})", "alltoall:bruck(r=auto)", *refs]
    rows = [[N] + [f"{sim_us(n, P_A, N):.1f}" for n in names] for N in (8, 256, 4096, 65536)]
    out.append(
        f"#### B: vary N, P = {P_A}\n\n"
        + table(["N (B)", "r=2", f"r={s} (sqrt)", "r=auto", "linear", "pairwise"], rows)
    )

    # C: vary P at fixed N and r.
    Ps = [64, 128, 256] if quick else [64, 128, 256, 512, 1024, 2048, 4096]
    rows = []
    for N in (64,):
        for P in Ps:
            s = bruck.sqrt_rule(P)
            r_auto = bruck.resolved_radix("alltoall:bruck(r=auto)", P, N, 1)
            names = ["alltoall:bruck(r=2)", f"alltoall:bruck(r={s})"]
            # r=auto is r=2 or r=sqrt here (see the model table); simulate it only if not
            auto = [] if r_auto in (2, s) else ["alltoall:bruck(r=auto)"]
            t = {n: sim_us(n, P, N) for n in [*names, *auto, "alltoall:linear"]}
            t_auto = t.get("alltoall:bruck(r=auto)") or t[names[0] if r_auto == 2 else names[1]]
            rows.append(
                [N, P, s, r_auto]
                + [f"{v:.1f}" for v in (t[names[0]], t[names[1]], t_auto, t["alltoall:linear"])]
            )
    out.append(
        "#### C: vary P\n\n"
        + table(["N (B)", "P", "sqrt", "auto r", "r=2", "r=sqrt", "r=auto", "linear"], rows)
    )

    # The model's r against the simulator's best r.
    rows = []
    for P in [64, 256]:
        for N in (16, 256, 1024, 4096, 16384):
            c = bruck.choose_r_simulated(P, N, **SIM_MODEL)
            t = c["times_ns"]
            rows.append(
                [P, N, c["r_simulated"], c["r_model"], c["r_sqrt"]]
                + [
                    f"{t[c[k]] / 1e3:.1f}" if c[k] in t else ""
                    for k in ("r_simulated", "r_model", "r_sqrt")
                ]
            )
    out.append(
        "#### r=auto (alpha-beta model) against the simulator's best r\n\n"
        + table(
            ["P", "N (B)", "r sim", "r model", "r sqrt", "T sim-best", "T model-r", "T sqrt-r"],
            rows,
        )
    )
    return "\n\n".join(out)


def measured_section() -> str:
    return (
        "### Measured (native MPI_Alltoall vs collkit)\n\n"
        "Correctness against MPI_Alltoall is a test (`tests/mpi/test_alltoall_mpi.py`: every "
        "variant on random bytes, P = 1..8, blocks 0 B .. 1 MiB); timings at P = 4, 8 on a "
        "2-core machine measure oversubscription, not the algorithms, so none are kept here."
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small P only")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--note", default="", help="a line recorded with the results")
    args = ap.parse_args()
    Ps = [64, 256] if args.quick else [64, 256, 1024, 4096]
    cmd = "benchmarks/bench_alltoall.py" + (" --quick" if args.quick else "")
    heading = "## Model and simulation" + (" (--quick)" if args.quick else "")
    head = (
        f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}\n\n"
        f"Reproduce: `.venv/bin/python {cmd}`" + (f"\n\n{args.note}" if args.note else "")
    )
    parts = [head, model_section(Ps), simulated_section(args.quick), measured_section()]
    text = "\n\n".join(parts) + "\n"
    print(f"{heading}\n\n{text}")
    if not args.no_write:
        write_section(RESULTS, TITLE, heading, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
