"""Swing's headline comparison, simulated: allreduce on 2D tori against ring, recursive doubling,
Rabenseifner and bucket, with link congestion.

De Sensi, Bonato, Saam, Hoefler ("Swing: Short-cutting Rings for Higher Bandwidth Allreduce",
NSDI 2024) report Swing up to 3x faster than the best of the other algorithms on 2D tori, for
vectors of 32 B to 128 MiB. This runs the same comparison in collkit's simulator: one rank per
torus node, the postal model (`alpha` per message, `beta` per byte: one message in flight per
rank) and `torus(dims=AxB, hop=..., link=...)`, whose links carry one message at a time
(dimension-order routes, the shorter way round). Swing and bucket are given the torus's shape
(`allreduce:swing(dims=AxB)`, `allreduce:bucket(dims=AxB)`); ring, rd and rabenseifner run on
the ranks in row-major order, as an MPI would place them. Up to 1 KiB Swing's latency-optimal
form (`allreduce:swing_lat(dims=AxB)`: lg P steps of the whole vector; on an MPI, for integer
and bitwise ops only) runs too. On a torus whose sizes are not powers of two (12x12, 24x24),
the bandwidth-optimal form runs both ways: folded onto the power of two below
(`allreduce:swing(dims=AxB)`, the default) and on the even sizes themselves
(`allreduce:swing(dims=AxB,nonpof2=direct)`, ceil(lg d) steps mod d, as the paper's). Swing's
speedup is taken from the fastest of its forms, as the paper picks its form by size.

Each point is one deterministic simulation (no noise). Points whose schedule has more than
`--max-ops` ops are left out (the ring at 64x64 above 1 KiB: 10^8 ops) and named in the table.
Every simulated row is appended to `--store` (the results schema, JSON lines) as it is done, so
an interrupted run resumes where it stopped. The table goes to benchmarks/results/
sim_swing_torus.md (rewritten), the figure to docs/img/sim-swing-torus.png.

    nice -n 19 .venv/bin/python benchmarks/sim_swing_torus.py            # the full grid
    nice -n 19 .venv/bin/python benchmarks/sim_swing_torus.py --shapes 8x8,16x16 --no-write
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from collkit.algorithms import format_size as fmt_size
from collkit.cli._common import bytes_list
from collkit.results import ResultStore, Row
from collkit.units import parse_per_byte
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

SHAPES = "8x8,16x16,32x32,64x64,32x8,12x12,24x24"
SIZES = "32,1KiB,32KiB,1MiB,8MiB,32MiB,128MiB"
# 400 Gb/s links (50 GB/s: 0.02 ns per byte), the NIC as fast as a link.
MODEL = {"model": "postal", "alpha": "1us", "beta": "0.02ns"}
HOP = "100ns"
LINK = "0.02ns"
OTHERS = ("ring", "rd", "rabenseifner", "bucket")
LAT_MAX = 1024  # the largest vector the latency-optimal form is simulated at (bytes per rank)


def pow2(shape: str) -> bool:
    return all(d & (d - 1) == 0 for d in map(int, shape.split("x")))


def algorithms(shape: str, n: int) -> list[str]:
    lat = [f"allreduce:swing_lat(dims={shape})"] if n <= LAT_MAX else []
    direct = [] if pow2(shape) else [f"allreduce:swing(dims={shape},nonpof2=direct)"]
    return [
        f"allreduce:swing(dims={shape})",
        *direct,
        *lat,
        f"allreduce:bucket(dims={shape})",
        "allreduce:ring",
        "allreduce:rd",
        "allreduce:rabenseifner",
    ]


def short(algo: str) -> str:
    return algo.split(":", 1)[1].split("(", 1)[0] + ("_direct" if "nonpof2=direct" in algo else "")


def topology(shape: str, link: bool = True) -> str:
    return f"torus(dims={shape},hop={HOP}" + (f",link={LINK})" if link else ")")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--shapes", default=SHAPES, help=f"2D tori, comma separated ({SHAPES})")
    ap.add_argument("--sizes", default=SIZES, help=f"bytes per rank ({SIZES})")
    ap.add_argument("--max-ops", type=float, default=3e7, help="largest schedule simulated (3e7)")
    ap.add_argument(
        "--store",
        default=str(ROOT / "build" / "sim-studies" / "sim_swing_torus.jsonl"),
        help="rows simulated so far (resumed from)",
    )
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    sizes = bytes_list(args.sizes)
    Path(args.store).parent.mkdir(parents=True, exist_ok=True)
    store = ResultStore(args.store)
    done: dict[tuple[str, int, int, str], Row] = {}
    for row in store:
        done[(row.algorithm, row.P, row.bytes, row.settings)] = row
    times: dict[tuple[str, str, int], float] = {}  # (shape, short name, bytes) -> us
    skipped: list[str] = []
    # Every point with the links shared; Swing at the largest size also with latency alone (the
    # torus's hops, no link carrying one message at a time), to show what the sharing costs it.
    plan = [(sh, a, n, topology(sh)) for sh in shapes for n in sizes for a in algorithms(sh, n)]
    big = max(sizes)
    # (the direct form where the sizes are not powers of two: the fold there costs 4 n beta)
    plan += [
        (sh, algorithms(sh, big)[pow2(sh) ^ 1], big, topology(sh, link=False)) for sh in shapes
    ]
    t0 = time.time()
    for i, (shape, algo, n, topo) in enumerate(plan, 1):
        a, b = (int(x) for x in shape.split("x"))
        P = a * b
        key = (shape, short(algo) + ("" if "link=" in topo else " unshared"), n)
        hit = [r for k, r in done.items() if k[:3] == (algo, P, n) and f"={topo} " in k[3] + " "]
        if hit:
            times[key] = hit[0].median_us
            continue
        ops = ops_over(algo, P, n, MODEL["model"], args.max_ops)
        if ops is not None:
            skipped.append(f"{short(algo)} at {shape}, {fmt_size(n)} ({ops:.2g} ops)")
            continue
        label = f"[{i}/{len(plan)}] {shape} {algo} {topo} {fmt_size(n)}"
        row, times[key] = simulate_point(algo, P, n, store, label, t0, topology=topo, **MODEL)
        done[(row.algorithm, row.P, row.bytes, row.settings)] = row
    store.write_csv()

    head = (
        "| torus | bytes | swing (us) | swing direct | swing_lat | bucket | ring | rd | "
        "rabenseifner | best other | swing's speedup |"
    )
    lines = [head, "|" + "---|" * 11]
    speedups: dict[str, list[tuple[int, float]]] = {}
    for shape in shapes:
        for n in sizes:
            bw, lat = times.get((shape, "swing", n)), times.get((shape, "swing_lat", n))
            direct = times.get((shape, "swing_direct", n))
            others = {o: times[(shape, o, n)] for o in OTHERS if (shape, o, n) in times}
            cells = [f"{others[o]:.1f}" if o in others else "-" for o in OTHERS]
            if bw is None or not others:
                continue
            # the fastest form, as the paper picks
            sw = min(t for t in (bw, direct, lat) if t is not None)
            best = min(others, key=lambda o: others[o])
            sp = others[best] / sw
            speedups.setdefault(shape, []).append((n, sp))
            lines.append(
                f"| {shape} | {fmt_size(n)} | {bw:.1f} | "
                + ("-" if direct is None else f"{direct:.1f}")
                + " | "
                + ("-" if lat is None else f"{lat:.1f}")
                + " | "
                + " | ".join(cells[i] for i in (3, 0, 1, 2))
                + f" | {best} | {sp:.2f}x |"
            )
    head2 = (
        "| torus | swing (direct where not powers of two), links shared (us) | "
        "swing, latency alone | bucket, links shared | 2 (P-1)/P n beta |"
    )
    lines2 = [head2, "|---|---|---|---|---|"]
    beta = parse_per_byte(MODEL["beta"])  # ns per byte
    for shape in shapes:
        a, b = (int(x) for x in shape.split("x"))
        sw = "swing" if pow2(shape) else "swing_direct"
        cells = [times.get((shape, k, big)) for k in (sw, f"{sw} unshared", "bucket")]
        if all(c is not None for c in cells):
            bound = 2 * (a * b - 1) / (a * b) * big * beta / 1e3
            lines2.append(
                f"| {shape} | " + " | ".join(f"{c:.1f}" for c in cells) + f" | {bound:.1f} |"
            )
    table = "\n".join(lines) + f"\n\nAt {fmt_size(big)}:\n\n" + "\n".join(lines2)
    print(table)
    if skipped:
        print("not simulated (over --max-ops): " + "; ".join(skipped))
    if args.no_write:
        return 0

    plt = pyplot()

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for shape, pts in speedups.items():
        ax1.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=shape)
    ax1.axhline(1.0, color="grey", lw=0.8)
    ax1.set_xscale("log", base=2)
    ax1.set_xlabel("vector size (bytes per rank)")
    ax1.set_ylabel("Swing's speedup over the best of the others")
    ax1.set_title("allreduce on 2D tori, simulated")
    ax1.legend(title="torus")
    focus = "16x16" if "16x16" in shapes else shapes[0]
    for name in ("swing", "swing_lat", *OTHERS):
        pts = [(n, times[(focus, name, n)]) for n in sizes if (focus, name, n) in times]
        if pts:
            ax2.plot(
                [p[0] for p in pts],
                [8 * p[0] / (p[1] * 1e3) for p in pts],  # bits per ns = Gb/s
                marker="o",
                label=name,
            )
    ax2.set_xscale("log", base=2)
    ax2.set_yscale("log")
    ax2.set_xlabel("vector size (bytes per rank)")
    ax2.set_ylabel("goodput (Gb/s: vector bits / time)")
    ax2.set_title(f"{focus} torus")
    ax2.legend()
    fig.tight_layout()
    save_figure(fig, "sim-swing-torus.png")

    model = ", ".join(f"{k}={v}" for k, v in MODEL.items())
    best_of = max((sp, sh, n) for sh, pts in speedups.items() for n, sp in pts)
    worst_of = min((sp, sh, n) for sh, pts in speedups.items() for n, sp in pts)
    text = (
        result_head("Swing on 2D tori, simulated", "sim_swing_torus.py", sys.argv[1:])
        + f"Model: {model}; topology `torus(dims=AxB,hop={HOP},link={LINK})`, one rank per node. "
        f"Times are makespans in us; speedup = the best other's time / Swing's (the fastest of "
        f"swing, swing direct (nonpof2=direct, on the tori not of powers of two) and swing_lat "
        f"where they ran). "
        f"Largest speedup {best_of[0]:.2f}x ({best_of[1]}, {fmt_size(best_of[2])}), "
        f"smallest {worst_of[0]:.2f}x ({worst_of[1]}, {fmt_size(worst_of[2])}).\n\n"
        + table
        + "\n"
        + skipped_note(skipped)
    )
    write_result("sim_swing_torus.md", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
