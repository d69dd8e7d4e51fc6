"""Non-uniform all-to-all ([Fan 2022b]): two-phase Bruck against the spread-out exchange and the
other alltoallv algorithms, simulated under LogGOPS on a dragonfly.

Fan et al. (HPDC 2022) claim that padded and two-phase Bruck beat the spread-out exchange
(`alltoallv:linear` here) for small loads, by as much as 50 % against Cray's MPI_Alltoallv. This
simulates collkit's alltoallv algorithms with the per-pair counts drawn uniformly at random, as
the paper's microbenchmarks draw them: `--counts random(seed,max)` with one-byte elements, so a
pair's block is uniform in [0, max] bytes (mean max / 2). For each P it prints and records the
makespan of every algorithm at every load, the ratio two-phase Bruck / spread-out and the loads
between which that ratio crosses 1.

Model: LogGOPS with the Aries-like numbers of benchmarks/bench_alltoall.py (o = g = 300 ns,
G = 0.1 ns/B, packing copies at 0.05 ns/B; L = 500 ns plus the topology's latency), on a
dragonfly like ARCHER's (24 ranks per node, 4 nodes per router, 16 routers per group, 100 ns a
hop, 500 ns a global link, 200 ns within a node), latency only (no link congestion).

The cost is the simulation itself: every alltoallv algorithm has at least P ops per rank and,
with random counts, no two ranks share a program, so a run holds and runs Theta(P^2) ops
(two-phase Bruck: P/2 ceil(lg P) packing copies a rank). Each row records the run's ops, CPU
seconds and peak memory, which say how far this machine goes.

    .venv/bin/python benchmarks/sim_alltoallv_bruck.py --jobs 2      # P = 256, 1024, 2048
    .venv/bin/python benchmarks/sim_alltoallv_bruck.py --P 1024,4096 --all-at 1024
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import resource
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import collkit
from collkit.counts import parse_counts

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "sim_alltoallv_bruck.md"
FIGURE = ROOT / "docs" / "img" / "alltoallv-bruck-dragonfly.png"
MODEL: dict[str, str] = {
    "model": "loggops",
    "L": "500ns",
    "o": "300ns",
    "g": "300ns",
    "G": "0.1ns",
    "copy_beta": "0.05ns",
}
TOPOLOGY = "dragonfly(p=4,a=16,hop=100ns,global=500ns,rpn=24,intra=200ns)"
BRUCK, SPREAD = "alltoallv:two_phase_bruck", "alltoallv:linear"
ALL = [SPREAD, "alltoallv:pairwise", "alltoallv:scattered", BRUCK]
MAXIMA = [2, 16, 128, 1024, 2048, 4096, 8192]  # a pair uniform in [0, max] B: means 1 B .. 4 KiB
SEED = 1


@dataclass
class Run:
    P: int
    max: int  # a pair's bytes uniform in [0, max]
    algo: str
    us: float
    ops: int
    cpu: float
    rss: float


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def simulate(algo: str, P: int, counts: list[int]) -> tuple[float, int, float, float]:
    cpu0 = time.process_time()
    model = collkit.Model.make(MODEL["model"], **{k: v for k, v in MODEL.items() if k != "model"})
    res = collkit.simulate(algo, P, counts=counts, elem_size=1, model=model, topology=TOPOLOGY)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return float(res.makespan) / 1e3, int(res.ops), time.process_time() - cpu0, rss


def point(P: int, most: int, algo: str) -> Run:
    """`algo` at P on the count matrix random(SEED, most)."""
    counts = parse_counts(f"random({SEED},{most})").vector(P, per_pair=True)
    us, ops, cpu, rss = simulate(algo, P, counts)
    return Run(P, most, algo, us, ops, cpu, rss)


def ratio(rows: list[Run], r: Run) -> float | None:
    """r's makespan over spread-out's at the same P and load (None: not run yet)."""
    base = [x.us for x in rows if x.algo == SPREAD and (x.P, x.max) == (r.P, r.max)]
    return r.us / base[0] if base else None


def shown(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def ns(t: str) -> float:
    return float(t.removesuffix("ns"))


def closed_form(P: int) -> float:
    """The mean bytes per pair m where the two meet by the model's terms alone. Spread-out:
    2 (P - 1) o of CPU overhead (a send and a receive a pair) + (P - 1) m G (G is charged at
    the receiver). Bruck: ceil(lg P) steps of 2 o + L, each about P/2 blocks packed (copy_beta)
    and received (G), and the final copy of P blocks. The topology's latencies are left out."""
    o, L, G, c = ns(MODEL["o"]), ns(MODEL["L"]), ns(MODEL["G"]), ns(MODEL["copy_beta"])
    lg = (P - 1).bit_length()
    fixed = 2 * (P - 1) * o - lg * (2 * o + L)
    per_byte = P * (lg / 2 * (G + c) + c) - (P - 1) * G
    return fixed / per_byte


_ROW = re.compile(
    r"\| (\d+) \| `random\(\d+,(\d+)\)` \| [0-9.e+]+ \| (alltoallv:\w+) \| ([0-9.]+) \| "
    r"[0-9.]* \| (\d+) \| ([0-9.]+) \| ([0-9.]+) \|"
)


_HEAD = re.compile(r"started (\S+ \S+ UTC); .*load average (\S+) at the start")


def first_start() -> tuple[str, str] | None:
    """When the result file's first rows were started and the load then (--resume keeps it)."""
    m = _HEAD.search(RESULT.read_text()) if RESULT.exists() else None
    return (m[1], m[2]) if m else None


def recorded() -> list[Run]:
    """The rows of the result file (--resume): makespans as recorded, to 0.1 us."""
    if not RESULT.exists():
        return []
    return [
        Run(int(m[1]), int(m[2]), m[3], float(m[4]), int(m[5]), float(m[6]), float(m[7]))
        for m in _ROW.finditer(RESULT.read_text())
    ]


def crossover(P: int, rows: list[Run]) -> str:
    """Where two-phase Bruck / spread-out crosses 1 on the grid of loads at P."""
    pts = sorted(
        (r.max, x)
        for r in rows
        if r.P == P and r.algo == BRUCK and (x := ratio(rows, r)) is not None
    )
    if not pts:
        return "not run yet"
    loses = [m for m, x in pts if x >= 1]
    if not loses:
        return f"Bruck faster at every load (up to mean {pts[-1][0] / 2:g} B)"
    first = min(loses)
    below = [m for m, x in pts if x < 1 and m < first]
    above = [m / 2 for m, x in pts if x < 1 and m > first]
    if not below:
        return f"spread-out faster at every load from mean {pts[0][0] / 2:g} B"
    more = f" (faster again at mean {above} B)" if above else ""
    return f"Bruck faster up to mean {max(below) / 2:g} B, slower from mean {first / 2:g} B{more}"


def write(rows: list[Run], args: argparse.Namespace, started: str) -> None:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = (
        "| P | counts | mean B/pair | algorithm | makespan us | / spread-out | ops | CPU s "
        "| peak RSS MiB |"
    )
    lines = [head, "|" + "---|" * 9]
    order = {a: i for i, a in enumerate(ALL)}
    for r in sorted(rows, key=lambda r: (r.P, r.max, order[r.algo])):
        lines.append(
            f"| {r.P} | `random({SEED},{r.max})` | {r.max / 2:g} | {r.algo} | {r.us:.1f} | "
            f"{shown(ratio(rows, r))} | {r.ops} | {r.cpu:.1f} | {r.rss:.0f} |"
        )
    Ps = sorted({r.P for r in rows})
    every = {int(x) for x in args.all_at.split(",") if x}
    asked = [
        (int(P), int(m), a)
        for P in args.P.split(",")
        for m in args.maxima.split(",")
        for a in (ALL if int(P) in every else [SPREAD, BRUCK])
    ]
    have = {(r.P, r.max, r.algo) for r in rows}
    missing = [f"{a} P = {P} max {m}" for P, m, a in asked if (P, m, a) not in have]
    reached = f" (stopped before {', '.join(missing)} were done)" if missing else ""
    cross = "\n".join(
        f"- P = {P}: {crossover(P, rows)}; closed form: mean {closed_form(P):.0f} B" for P in Ps
    )
    beyond = ", ".join(f"{P}: {closed_form(P):.0f} B" for P in (4096, 16384, 65536))
    cmd = (
        f"python benchmarks/sim_alltoallv_bruck.py --P {args.P} --all-at {args.all_at} "
        f"--maxima {args.maxima} --jobs {args.jobs}" + (" --resume" if args.resume else "")
    )
    text = (
        "# Non-uniform all-to-all: two-phase Bruck against spread-out, simulated\n\n"
        f"By `benchmarks/sim_alltoallv_bruck.py` (docs: docs/alltoall.md). {stamp}, started "
        f"{started}; machine {platform.node()} ({os.cpu_count()} cores, "
        f"{platform.processor() or platform.machine()}), shared: load average {args.load0} at "
        f"the start, {load()} at the end (the simulated times are deterministic).\n\n"
        f"Command: `{cmd}`{reached}"
        + (
            " (--resume: the rows already in the file are kept as recorded, to 0.1 us, and the "
            "ratios computed from them)"
            if args.resume
            else ""
        )
        + "\n\n"
        f"Model {MODEL}; topology `{TOPOLOGY}`; one-byte elements, a pair's block uniform in "
        "[0, max] bytes (`--counts random(seed,max)`); CPU s: the simulation's; peak RSS: its "
        f"worker process's so far ({args.jobs} worker(s)).\n\n"
        "Where two-phase Bruck / spread-out crosses 1:\n\n"
        f"{cross}\n\nThe closed form (`closed_form` in the script: the model's terms, no "
        f"simulation) at larger P, mean bytes per pair: {beyond}.\n\n" + "\n".join(lines) + "\n"
    )
    RESULT.write_text(text)
    figure(rows)


def figure(rows: list[Run]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    Ps = sorted({r.P for r in rows})
    fig, axes = plt.subplots(1, len(Ps), figsize=(4.2 * len(Ps), 3.6), squeeze=False)
    for ax, P in zip(axes[0], Ps, strict=True):
        for algo in ALL:
            pts = sorted((r.max / 2, r.us) for r in rows if r.P == P and r.algo == algo)
            if pts:
                xs, ys = [x for x, _ in pts], [y for _, y in pts]
                color = f"C{ALL.index(algo)}"  # one color an algorithm, in every panel
                ax.plot(xs, ys, marker="o", color=color, label=algo.split(":")[1])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"P = {P}")
        ax.set_xlabel("mean bytes per pair (uniform random)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("simulated makespan (us)")
    for ax in axes[0]:
        ax.legend(fontsize=8)
    fig.suptitle("alltoallv, LogGOPS on a dragonfly (24 ranks per node)", fontsize=10)
    fig.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE, dpi=110)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--P", default="256,1024,2048", help="process counts (default 256,1024,2048)")
    ap.add_argument(
        "--all-at",
        default="256",
        help="P values that run every alltoallv algorithm; the others run two-phase Bruck and "
        "spread-out only (default 256)",
    )
    ap.add_argument("--maxima", default=",".join(map(str, MAXIMA)), help="per-pair maxima (B)")
    ap.add_argument("--jobs", type=int, default=1, help="processes running points at once")
    ap.add_argument(
        "--resume",
        action="store_true",
        help="keep the result file's rows and run only the points it lacks (then rewrite it)",
    )
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    Ps = [int(x) for x in args.P.split(",")]
    every = {int(x) for x in args.all_at.split(",") if x}
    maxima = [int(x) for x in args.maxima.split(",")]
    args.load0 = load()
    started = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rows: list[Run] = recorded() if args.resume else []
    if rows and (first := first_start()) is not None:
        started, args.load0 = first  # the rows kept span from the first run on
    done = {(r.P, r.max, r.algo) for r in rows}
    # The smaller P first (cheaper: P^2 ops), at each P spread-out and two-phase Bruck first.
    tasks = []
    for P in sorted(Ps):
        tasks += [(P, most, a) for most in maxima for a in (SPREAD, BRUCK)]
        tasks += [(P, most, a) for most in maxima for a in ALL[1:-1] if P in every]
    tasks = [t for t in tasks if t not in done]
    if rows and not args.no_write:
        write(rows, args, started)
    print("| P | max B | algorithm | makespan us | ops | CPU s | RSS MiB |")
    # Each (P, load, algorithm) is independent and deterministic: run them on --jobs processes,
    # record after each (a stopped run keeps its rows).
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for fut in as_completed([pool.submit(point, *t) for t in tasks]):
            r = fut.result()
            rows.append(r)
            print(
                f"| {r.P} | {r.max} | {r.algo} | {r.us:.1f} | {r.ops} | {r.cpu:.1f} | "
                f"{r.rss:.0f} |",
                flush=True,
            )
            if not args.no_write:
                write(rows, args, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
