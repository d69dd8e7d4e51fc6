"""Broadcasts at P = 2^10 .. 2^20, simulated: the two-tree and circulant-graph broadcasts against
binomial, scatter-allgather and the pipelined tree.

Träff's circulant-graph broadcast (MPICH's circ_graph) takes N - 1 + ceil(lg P) rounds for a
message in N chunks, and Sanders, Speck and Träff's two-tree broadcast sends each half of the
message down one of two trees at once; both aim at the full bandwidth of a rank (n beta) with a
latency term that grows as lg P, where the binomial tree pays lg P (alpha + n beta) and
scatter-allgather (P - 1) alpha. This runs them under LogGP (no topology: every pair one hop)
at sizes where each regime shows, with the pipelined algorithms cut into the same chunk size.
An algorithm not registered in this build is said and left out.

Each point is one deterministic simulation. Points whose schedule has more than `--max-ops` ops
are left out and named (scatter-allgather at 1 MiB from P = 2^14 on: its ring allgather is P - 1
steps of every rank, 5 10^8 ops). Every simulated row is appended to `--store` as it is done,
so an interrupted run resumes. The table goes to benchmarks/results/sim_bcast_scale.md
(rewritten), the figure to docs/img/sim-bcast-scale.png.

    nice -n 19 .venv/bin/python benchmarks/sim_bcast_scale.py
    nice -n 19 .venv/bin/python benchmarks/sim_bcast_scale.py --P 2^10,2^12 --no-write
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import collkit
from collkit.algorithms import format_size as fmt_size
from collkit.cli._common import bytes_list, p_list
from collkit.results import ResultStore, Row
from sim_study import (
    ROOT,
    ops_over,
    pyplot,
    result_head,
    save_figure,
    simulate_point,
    skipped_note,
    write_result,
)

PS = "2^10,2^12,2^14,2^16,2^18,2^20"
# The sizes of 64 KiB and more (pipelined: ~16 ops per rank and MiB) up to 2^16: a 1 MiB
# broadcast in 64 KiB chunks at 2^18 is 8.4 10^6 ops, which did not finish in 6 minutes niced
# on a 2-core machine under a load of 30.
PS_LARGE = "2^10,2^12,2^14,2^16"
LARGE = 64 * 1024
SIZES = "64,1MiB"
# 50 GB/s per rank (0.02 ns per byte), 500 ns latency, 100 ns overhead and gap.
MODEL = {"model": "loggp", "L": "500ns", "o": "100ns", "g": "100ns", "G": "0.02ns"}
SEG = "64KiB"  # the chunk of every pipelined broadcast
CANDIDATES = (
    "bcast:binomial",
    "bcast:scatter_allgather",
    f"bcast:pipelined_tree(seg={SEG})",
    f"bcast:two_tree(seg={SEG})",
    f"bcast:circ_graph(seg={SEG})",
)


def short(algo: str) -> str:
    return algo.split(":", 1)[1].split("(", 1)[0]


def available() -> tuple[list[str], list[str]]:
    """The candidates this build registers, and the others."""
    have, missing = [], []
    for name in CANDIDATES:
        try:
            collkit.Algorithm(name)
            have.append(name)
        except collkit.CollkitError:
            missing.append(short(name))
    return have, missing


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--P", default=PS, help=f"process counts ({PS})")
    ap.add_argument(
        "--P-large", default=PS_LARGE, help=f"process counts for sizes >= 64 KiB ({PS_LARGE})"
    )
    ap.add_argument("--sizes", default=SIZES, help=f"bytes ({SIZES})")
    ap.add_argument("--max-ops", type=float, default=4e7, help="largest schedule simulated (4e7)")
    ap.add_argument(
        "--store",
        default=str(ROOT / "build" / "sim-studies" / "sim_bcast_scale.jsonl"),
        help="rows simulated so far (resumed from)",
    )
    ap.add_argument("--algos", help="only these (short names: binomial,circ_graph)")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    Ps = p_list(args.P)
    Ps_large = p_list(args.P_large)
    sizes = bytes_list(args.sizes)
    algos, missing = available()
    if args.algos:
        algos = [a for a in algos if short(a) in args.algos.split(",")]
    if missing:
        print("not in this build: " + ", ".join(missing), file=sys.stderr)
    Path(args.store).parent.mkdir(parents=True, exist_ok=True)
    store = ResultStore(args.store)
    done: dict[tuple[str, int, int, str], Row] = {
        (r.algorithm, r.P, r.bytes, r.mpi): r for r in store
    }
    mpi = collkit.simulate("bcast:binomial", P=2, bytes=8, **MODEL).to_row().mpi
    times: dict[tuple[int, int, str], float] = {}
    skipped: list[str] = []
    plan = [(n, P, a) for n in sizes for P in (Ps_large if n >= LARGE else Ps) for a in algos]
    t0 = time.time()
    for i, (n, P, algo) in enumerate(plan, 1):
        hit = done.get((algo, P, n, mpi))
        if hit is not None:
            times[(n, P, short(algo))] = hit.median_us
            continue
        ops = ops_over(algo, P, n, MODEL["model"], args.max_ops)
        if ops is not None:
            skipped.append(f"{short(algo)} at P = {P}, {fmt_size(n)} ({ops:.2g} ops)")
            continue
        label = f"[{i}/{len(plan)}] P={P} {algo} {fmt_size(n)}"
        _, times[(n, P, short(algo))] = simulate_point(algo, P, n, store, label, t0, **MODEL)
    store.write_csv()

    names = [short(a) for a in algos]
    head = "| bytes | P | " + " | ".join(f"{x} (us)" for x in names) + " | fastest |"
    lines = [head, "|" + "---|" * (len(names) + 3)]
    for n in sizes:
        for P in sorted(set(Ps) | set(Ps_large)):
            t = {x: times[(n, P, x)] for x in names if (n, P, x) in times}
            if not t:
                continue
            best = min(t, key=lambda x: t[x])
            cells = [f"{t[x]:.1f}" if x in t else "-" for x in names]
            pow2 = f"2^{P.bit_length() - 1}" if P & (P - 1) == 0 else str(P)
            lines.append(f"| {fmt_size(n)} | {pow2} | " + " | ".join(cells) + f" | {best} |")
    table = "\n".join(lines)
    print(table)
    if skipped:
        print("not simulated (over --max-ops): " + "; ".join(skipped))
    if args.no_write:
        return 0

    plt = pyplot()

    fig, axes = plt.subplots(1, len(sizes), figsize=(5 * len(sizes), 4.2), squeeze=False)
    for ax, n in zip(axes[0], sizes, strict=True):
        for x in names:
            pts = [
                (P, times[(n, P, x)]) for P in sorted(set(Ps) | set(Ps_large)) if (n, P, x) in times
            ]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=x)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("P")
        ax.set_ylabel("time (us)")
        ax.set_title(f"bcast of {fmt_size(n)}, LogGP")
    axes[0][0].legend()
    fig.tight_layout()
    save_figure(fig, "sim-bcast-scale.png")

    text = (
        result_head("Broadcasts at scale, simulated", "sim_bcast_scale.py", sys.argv[1:])
        + f"Model: `{mpi}`, no topology; chunks of {SEG} for the pipelined broadcasts. "
        "Times are makespans in us.\n\n"
        + table
        + "\n"
        + ("\nNot in this build: " + ", ".join(missing) + ".\n" if missing else "")
        + skipped_note(skipped)
    )
    write_result("sim_bcast_scale.md", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
