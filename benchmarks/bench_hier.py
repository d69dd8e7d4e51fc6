"""Node-aware (hierarchical) against flat algorithms, simulated.

For P = 1024 .. 65536 ranks at 16 .. 128 ranks per node (contiguous and round-robin), the
allreduce of 8 B and 64 KiB per rank, the allgather of 8 B blocks (P <= 16384) and the
all-to-all of 8 B and 256 B blocks (P <= 1024: the all-to-all holds P^2 blocks) are simulated
for the flat algorithms and the node-aware ones built from them, and the best of each kind
compared: where the node-aware one wins, and by how much.

The model (postal, with a topology; the parameters and where they come from):
- alpha = 220 ns: an 8-byte message within a node, the median of this machine's one-message
  multicast over shared memory (MPICH, benchmarks/results/multicast-mpich-P2.jsonl, b = 1).
  Messages within a node pay nothing more (intra = 0) and share no link.
- between nodes, a dragonfly like ARCHER's ([Ruefenacht 2017]'s machine; the shape of
  benchmarks/congestion_table2.py): 4 nodes per router, 16 routers per group, 300 ns per hop,
  500 ns per global link. A message between nodes then costs 0.8 to 1.9 us, around [Ruefenacht 2017]
  Table 1's alpha_p = 1.34 us on the Cray Aries. Every link, the node's NIC included, carries one
  message at a time at 0.1 ns/B (10 GB/s, as in congestion_table2.py): the ranks of a node share
  their NIC.
- beta = 0.1 ns/B and gamma = 0.1 ns/B (10 GB/s copies and reductions: an assumption of the
  order of a memory copy, not a measurement).

    .venv/bin/python benchmarks/bench_hier.py            # the full sweep (a few minutes)
    .venv/bin/python benchmarks/bench_hier.py --quick    # P <= 4096
    .venv/bin/python benchmarks/bench_hier.py --measured # this machine, P <= 4, both MPIs

--measured times, on this machine with the executor (`collkit bench`), collkit's node-aware
algorithms against the flat ones and the MPI's own call, MPICH's node-aware allreduce
(mpich:smp) and Open MPI's coll/han (ompi:han), at P = 2 and 4: one node of 2 cores, so it says
little about nodes (the placement found is every rank on one node), and records whether coll/han
ran at all.

Rows (collkit's one result schema) are appended to results/hier-simulated.jsonl as they come, so
an interrupted run resumes; the table goes to results/hier.md (its section "Simulated", or
"Measured on this machine" with --measured: a run replaces its own and keeps the other) and the
plot to results/hier-simulated.png.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import time
from pathlib import Path

import collkit
from collkit.results import ResultStore, Row
from results_md import write_section

TITLE = "# Node-aware (hierarchical) against flat algorithms (benchmarks/bench_hier.py)"
RESULTS = Path(__file__).resolve().parent / "results"
MODEL = collkit.Model.make("postal", alpha="220ns", beta="0.1ns", gamma="0.1ns")
TOPOLOGY = "dragonfly(p=4,a=16,hop=300ns,global=500ns,link=0.1ns)"
RPNS = [16, 32, 64, 128]
ORDERS = ["contiguous", "round_robin"]

# (collective, size in bytes, P values, flat algorithms, node-aware algorithms)
CASES: list[tuple[str, int, list[int], list[str], list[str]]] = [
    (
        "allreduce",
        8,
        [1024, 4096, 16384, 65536],
        ["allreduce:rd", "allreduce:rabenseifner"],
        [
            "allreduce:hier",
            "allreduce:hier(intra=allreduce:rd)",  # [Ruefenacht 2017]: the on-node stage first
        ],
    ),
    (
        "allreduce",
        65536,
        [1024, 4096, 16384, 65536],
        ["allreduce:rd", "allreduce:rabenseifner"],
        [
            "allreduce:hier",
            "allreduce:hier(intra=reduce:rabenseifner,inter=allreduce:rabenseifner,"
            "bcast=bcast:scatter_allgather)",
        ],
    ),
    ("allgather", 8, [1024, 4096, 16384], ["allgather:rd", "allgather:bruck"], ["allgather:hier"]),
    ("alltoall", 8, [256, 1024], ["alltoall:bruck", "alltoall:pairwise"], ["alltoall:bruck_local"]),
    (
        "alltoall",
        256,
        [256, 1024],
        ["alltoall:bruck", "alltoall:pairwise"],
        ["alltoall:bruck_local"],
    ),
]


def simulate(store: ResultStore, name: str, P: int, nbytes: int, place: collkit.Placement) -> Row:
    algo = collkit.Algorithm(name)
    allocation = f"{place.rpn} ranks per node" + (
        "" if place.order == "contiguous" else f", {place.order}"
    )
    for row in store:
        same_problem = (row.algorithm, row.P, row.bytes, row.allocation) == (
            algo.canonical,
            P,
            nbytes,
            allocation,
        )
        if same_problem and row.mpi == MODEL.describe() and TOPOLOGY.split("(")[0] in row.settings:
            return row  # measured before: resume
    res = collkit.simulate(algo, P, bytes=nbytes, model=MODEL, topology=TOPOLOGY, placement=place)
    row = res.to_row(dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
    store.append(row)
    return row


# Short labels for the table: the composed name in full is in the rows.
LABELS = {
    "allreduce:hier(intra=reduce:rabenseifner,inter=allreduce:rabenseifner,"
    "bcast=bcast:scatter_allgather)": "hier(rabenseifner parts)",
}


def short(name: str) -> str:
    return LABELS.get(name, name.split(":", 1)[1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="P <= 4096 only")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--measured", action="store_true", help="measure on this machine instead")
    args = ap.parse_args()
    if args.measured:
        return measured()
    store = ResultStore(RESULTS / "hier-simulated.jsonl")
    reused = len(store)
    lines: list[str] = []
    plot: dict[tuple[str, int, str], dict[int, list[tuple[int, float]]]] = {}
    t_start = time.time()
    for coll, nbytes, Ps, flat, hier in CASES:
        for order in ORDERS:
            head = (
                f"\n### {coll}, {nbytes} B per {'rank' if coll == 'allreduce' else 'block'}, "
                f"{order}\n\n| P | rpn | best flat | us | best node-aware | us "
                "| flat / node-aware |"
            )
            lines += [head, "|---|---|---|---|---|---|---|"]
            print(head, flush=True)
            for P in Ps:
                if args.quick and P > 4096:
                    continue
                for rpn in RPNS:
                    if rpn >= P:
                        continue
                    place = collkit.Placement(rpn, order)
                    f = [(simulate(store, a, P, nbytes, place).median_us, a) for a in flat]
                    h = [(simulate(store, a, P, nbytes, place).median_us, a) for a in hier]
                    bf, bh = min(f), min(h)
                    line = (
                        f"| {P} | {rpn} | {short(bf[1])} | {bf[0]:.1f} | {short(bh[1])} | "
                        f"{bh[0]:.1f} | {bf[0] / bh[0]:.2f} |"
                    )
                    lines.append(line)
                    print(line, flush=True)
                    plot.setdefault((coll, nbytes, order), {}).setdefault(rpn, []).append(
                        (P, bf[0] / bh[0])
                    )
    elapsed = time.time() - t_start
    store.write_csv()
    if args.no_write:
        return 0
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cmd = "python benchmarks/bench_hier.py" + (" --quick" if args.quick else "")
    text = (
        f"{stamp}. Command: `{cmd}` ({elapsed:.0f} s on {platform.node()}, load "
        f"{os.getloadavg()[0]:.1f}, "
        f"{reused} rows reused from an earlier run, "
        f"{platform.processor() or platform.machine()}, Python {sys.version.split()[0]}). "
        f"Model: {MODEL.describe()}, topology `{TOPOLOGY}` with the placement's ranks per node "
        "(see the module docstring for where each number comes from). Times are the simulated "
        "makespans (deterministic: no noise); 'flat / node-aware' > 1 is where the node-aware "
        "algorithm wins. Rows: hier-simulated.jsonl; plot: hier-simulated.png. "
        f"hier(rabenseifner parts) is `{next(iter(LABELS))}`.\n" + "\n".join(lines) + "\n"
    )
    heading = "## Simulated" + (" (--quick)" if args.quick else "")
    write_section(RESULTS / "hier.md", TITLE, heading, text)
    draw(plot, RESULTS / "hier-simulated.png")
    print(f"wrote its section of {RESULTS / 'hier.md'}")
    return 0


def draw(plot: dict[tuple[str, int, str], dict[int, list[tuple[int, float]]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    keys = sorted(plot)
    fig, axes = plt.subplots(2, (len(keys) + 1) // 2, figsize=(4.2 * ((len(keys) + 1) // 2), 7))
    for ax, key in zip(axes.flat, keys, strict=False):
        coll, nbytes, order = key
        for rpn, pts in sorted(plot[key].items()):
            xs, ys = zip(*sorted(pts), strict=True)
            ax.plot(xs, ys, marker="o", label=f"{rpn} ranks/node")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_title(f"{coll} {nbytes} B, {order}", fontsize=9)
        ax.set_xlabel("P")
        ax.set_ylabel("best flat / best node-aware")
        ax.legend(fontsize=7)
    fig.suptitle("Simulated: where node-aware algorithms win (> 1)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


HP = (
    "allreduce:hier(intra=reduce:rabenseifner,inter=allreduce:rabenseifner,"
    "bcast=bcast:scatter_allgather)"
)
MEASURED = [
    (
        "hier-measured-mpich.jsonl",
        ["allreduce", "--algos", f"rd,rabenseifner,hier,{HP},native,mpich:smp"],
        "8,64KiB",
    ),
    (
        "hier-measured-mpich-alltoall.jsonl",
        ["alltoall", "--algos", "bruck,bruck_local,native"],
        "8,1KiB",
    ),
    (
        "hier-measured-openmpi.jsonl",
        ["allreduce", "--mpiexec", "/usr/bin/mpirun", "--algos", "rd,hier,native,ompi:han"],
        "8,64KiB",
    ),
]


def measured() -> int:
    """Time the algorithms with `collkit bench` (resumes from the rows there) and write the
    tables, the commands and coll/han's own account of whether it ran."""
    import shutil
    import subprocess

    from collkit.results import read_jsonl

    collkit_cli = [sys.executable, "-m", "collkit", "bench"]
    lines: list[str] = []
    for out, argv, sizes in MEASURED:
        cmd = [*argv, "-P", "2,4", "--sizes", sizes, "-o", str(RESULTS / out), "--no-plot"]
        print("+ collkit bench", " ".join(cmd), flush=True)
        r = subprocess.run([*collkit_cli, *cmd], check=False)
        if r.returncode != 0:
            print(f"collkit bench failed ({r.returncode}): rows so far are kept", file=sys.stderr)
            return r.returncode
        rows = [x for x in read_jsonl(RESULTS / out) if not x.error]
        lines += [
            f"\n`collkit bench {' '.join(cmd).replace(str(RESULTS), 'benchmarks/results')}`\n",
            f"{rows[0].mpi}, {rows[0].machine}; median us over {rows[0].iterations} "
            "iterations (per-iteration maximum over ranks); x flat: the median over that of the "
            "flat algorithm named first at the same P and size (> 1: slower).\n",
            "| P | bytes | algorithm | median us | x flat |",
            "|---|---|---|---|---|",
        ]
        for P in sorted({x.P for x in rows}):
            for b in sorted({x.bytes for x in rows}):
                sel = [x for x in rows if x.P == P and x.bytes == b]
                flat = next(
                    (x.median_us for x in sel if x.algorithm in ("allreduce:rd", "alltoall:bruck")),
                    float("nan"),
                )
                for x in sel:
                    name = "hier(rabenseifner parts)" if x.algorithm == HP else x.algorithm
                    lines.append(
                        f"| {P} | {b} | {name} | {x.median_us:.2f} | {x.median_us / flat:.2f} |"
                    )
    han = "(Open MPI not found)"
    mpirun = shutil.which("mpirun")
    bench = sorted(
        Path(os.environ.get("COLLKIT_CACHE", "build/cache")).glob("mpi-openmpi-*/collkit_bench")
    )
    if mpirun and bench:
        env = dict(os.environ, OMPI_MCA_coll_han_priority="100", OMPI_MCA_coll_base_verbose="10")
        argv = [
            mpirun,
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            "4",
            str(bench[-1]),
            "--help",
        ]
        log = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=120, check=False
        )
        said = sorted(
            {
                ln.split("] ", 1)[-1]
                for ln in (log.stdout + log.stderr).splitlines()
                if "coll:han:comm_query" in ln
            }
        )
        han = "\n".join(f"    {x}" for x in said) or "    (no coll/han messages)"
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (
        f"{stamp}. Command: `python benchmarks/bench_hier.py --measured` on {platform.node()} "
        f"({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at the end, shared with other "
        "work while it ran: timings are noisy; P = 4 is oversubscribed). **One node, P <= 4: "
        "this says little about node-aware algorithms.** The executor finds every rank on one node "
        "(MPI_Comm_split_type), so allreduce:hier is a reduce and a bcast within the node and "
        "alltoall:bruck_local a Bruck within it.\n\nOpen MPI's coll/han (`ompi:han`: "
        "OMPI_MCA_coll_han_priority=100) **cannot run here**: it disqualifies itself on a "
        "communicator of one node, as its own log says (OMPI_MCA_coll_base_verbose=10):\n\n"
        f"{han}\n\nso the `ompi:han` rows time Open MPI's default (tuned) path, not han; a "
        "comparison with han needs two or more nodes (`collkit bench ... --hosts FILE`). As "
        "`native` and `ompi:han` then run the same code, the gap between their rows is this "
        "machine's noise.\n" + "\n".join(lines) + "\n"
    )
    write_section(RESULTS / "hier.md", TITLE, "## Measured on this machine", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
