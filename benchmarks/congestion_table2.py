"""Seed 002 Table 2 (recursive doubling vs recursive multiplying on ARCHER, small allreduce)
simulated without and with congestion.

The seed explains its measured gains and their spread by congestion, not latency. This runs its
Table 2 schedules through the simulator with the seed's own simulator settings (pipelined postal:
alpha_p 500 ns, alpha_r 100 ns, 0.4 ns/B, 10 ns per reduction) on a dragonfly like ARCHER's Cray
XC30 (24 ranks per node, 4 nodes per router, 100 ns per hop, 500 ns per global link, 200 ns
within a node), once with latency only and once with links shared (every link, the NICs
included, carries one message at a time at `--link` ns per byte), and prints RD / RM and the
decrease next to the measured ones.

    .venv/bin/python benchmarks/congestion_table2.py                 # 8 B, 10 GB/s links
    .venv/bin/python benchmarks/congestion_table2.py --bytes 64KiB --link 0.1ns

Writes the table as the section of its --bytes and --link in benchmarks/results/congestion_table2.md
(a run replaces its own section and keeps the others).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
from pathlib import Path

import collkit
from results_md import write_section

# P, schedule, measured min RD / RM (us), measured median RD / RM (us): [Ruefenacht 2017] Table 2.
TABLE2 = [
    (4, "a4", 2.36, 1.87, 4.55, 3.65),
    (6, "a6", 4.76, 2.87, 8.72, 5.75),
    (8, "a2,a4", 4.37, 3.54, 9.38, 7.23),
    (12, "a3,a4", 7.03, 4.43, 15.3, 11.6),
    (16, "a4,a4", 6.85, 4.98, 19.1, 13.8),
    (24, "a4,a6", 9.99, 6.91, 29.7, 25.5),
    (32, "a8,a4", 12.9, 8.95, 30.9, 25.2),
    (48, "a8,a6", 19.8, 13.3, 38.7, 32.1),
    (64, "a8,a8", 24.2, 16.5, 47.4, 39.9),
    (96, "a8,a3,a4", 25.3, 20.7, 51.7, 47.6),
    (128, "a8,a4,a4", 25.1, 17.9, 101.0, 88.4),
]
TITLE = """# Seed 002's Table 2 without and with congestion (benchmarks/congestion_table2.py)

One section per message size and link speed."""
MODEL = {"alpha_p": "500ns", "alpha_r": "100ns", "beta": "0.4ns", "reduce_base": "10ns"}
TOPO = "dragonfly(p=4,a=16,hop=100ns,global=500ns,rpn={rpn},intra=200ns{link})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bytes", default="8", help="bytes per rank (default 8)")
    ap.add_argument("--link", default="0.1ns", help="time per byte on each link (default 10 GB/s)")
    ap.add_argument("--rpn", type=int, default=24, help="ranks per node (ARCHER: 24)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    head = (
        "| P | schedule | measured min RD/RM | % | measured median RD/RM | % | "
        "simulated RD/RM (us) | % | congested RD/RM (us) | % |"
    )
    rows = [head, "|" + "---|" * 10]
    print(head)
    for P, sched, mrd, mrm, medrd, medrm in TABLE2:
        sim: list[tuple[float, float]] = []
        for link in ("", f",link={args.link}"):
            topo = TOPO.format(rpn=args.rpn, link=link)
            t = [
                collkit.simulate(
                    a, P, bytes=args.bytes, model="pipelined-postal", topology=topo, **MODEL
                ).makespan
                / 1e3
                for a in ("allreduce:rd", f"allreduce:rm({sched})")
            ]
            sim.append((t[0], t[1]))

        def pct(rd: float, rm: float) -> str:
            return f"{100 * (rd - rm) / rd:.1f}"

        row = (
            f"| {P} | {sched} | {mrd} / {mrm} | {pct(mrd, mrm)} | {medrd} / {medrm} | "
            f"{pct(medrd, medrm)} | {sim[0][0]:.2f} / {sim[0][1]:.2f} | {pct(*sim[0])} | "
            f"{sim[1][0]:.2f} / {sim[1][1]:.2f} | {pct(*sim[1])} |"
        )
        print(row, flush=True)
        rows.append(row)
    if not args.no_write:
        out = Path(__file__).parent / "results" / "congestion_table2.md"
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        cmd = f"python benchmarks/congestion_table2.py --bytes {args.bytes} --link {args.link}"
        text = (
            f"{stamp}. Command: `{cmd}` (rpn {args.rpn}); topology "
            f"`{TOPO.format(rpn=args.rpn, link=',link=' + args.link)}`; model pipelined-postal "
            f"{MODEL}. Simulated times are deterministic (no noise), whatever the load "
            f"({os.getloadavg()[0]:.1f}).\n\n" + "\n".join(rows) + "\n"
        )
        write_section(out, TITLE, f"## --bytes {args.bytes} --link {args.link}", text)
        print(f"wrote its section of {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
