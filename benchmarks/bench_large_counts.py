"""Large counts: bandwidth of reduce:rabenseifner against tree reduces and of
allreduce:rabenseifner / allreduce:ring against allreduce:rd, from 8 B to 16 MiB per rank, measured
on this machine's MPI (collkit bench, results checked against the MPI's own call), simulated at
P = 16..1024 and by the alpha-beta-gamma closed forms; the count limit per P in the shape of
[Rabenseifner]'s table.

    .venv/bin/python benchmarks/bench_large_counts.py                 # the recorded run
    .venv/bin/python benchmarks/bench_large_counts.py --quick         # a few sizes, P = 2
    .venv/bin/python benchmarks/bench_large_counts.py --no-measure    # model and simulation only

Measured rows go to benchmarks/results/large_counts.jsonl (a rerun skips rows already there);
the report, with machine, date and this command, to benchmarks/results/large_counts.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import math
import platform
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import collkit
from collkit.analysis.limits import (
    AlphaBetaGamma,
    LimitRow,
    format_limit_table,
    limit_from_times,
    model_time,
)

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"

# (collective, old protocol, new protocols): the old one first is the switch-safe partner.
COMPARISONS = [
    ("reduce", "reduce:folded_binomial", ["reduce:rabenseifner"]),
    ("allreduce", "allreduce:rd", ["allreduce:rabenseifner", "allreduce:ring"]),
]
SIM_P = [16, 24, 32, 48, 64, 96, 128, 192, 256, 512, 1000, 1024]
MODEL = AlphaBetaGamma()


def sizes_between(lo: int, hi: int) -> list[int]:
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s *= 2
    return out


def tree_reduces() -> list[str]:
    """The tree reduces registered besides folded_binomial (those of them this build has)."""
    names = {a["name"] for a in collkit.algorithms("reduce")}
    return [n for n in ("reduce:binomial", "reduce:binary") if n in names]


def bandwidth_table(title: str, sizes: Sequence[int], times: dict[str, list[float]]) -> list[str]:
    """Bandwidth (bytes per rank / time, MB/s) of each algorithm at each size."""
    algos = list(times)
    lines = [f"#### {title}", "", "| bytes | " + " | ".join(algos) + " |"]
    lines.append("| ---: | " + " | ".join("---:" for _ in algos) + " |")
    for i, s in enumerate(sizes):
        cells = []
        for a in algos:
            t = times[a][i]
            cells.append("-" if not (t > 0 and math.isfinite(t)) else f"{s / t / 1e6:.1f}")
        lines.append(f"| {collkit.format_size(s)} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def limit_row(
    P: int, sizes: Sequence[int], t_old: Sequence[float], t_new: Sequence[float], elem: int
) -> LimitRow:
    lim = limit_from_times(list(sizes), list(t_old), list(t_new))
    return LimitRow(
        P=P,
        limit=None if lim is None else lim // elem,
        bw_new=sizes[-1] / t_new[-1],
        bw_old=sizes[-1] / t_old[-1],
    )


# ---------------------------------------------------------------- model


def model_section(Ps: Sequence[int], sizes: Sequence[int]) -> list[str]:
    out = [
        "## Model (alpha-beta-gamma closed forms)",
        "",
        f"alpha = {MODEL.alpha:g} s, beta = {MODEL.beta:g} s/B, gamma = {MODEL.gamma:g} s/B; "
        f"limits from the same size sweep as the other sections, bandwidth at "
        f"{collkit.format_size(sizes[-1])}.",
        "",
    ]
    for coll, old, news in COMPARISONS:
        for new in news:
            rows = []
            for P in Ps:
                to = [model_time(old, P, s, MODEL) for s in sizes]
                tn = [model_time(new, P, s, MODEL) for s in sizes]
                rows.append(limit_row(P, sizes, to, tn, 8))
            out += ["```", format_limit_table(f"{coll}: {new} vs {old}", rows), "```", ""]
    return out


# ---------------------------------------------------------------- simulation


def sim_section(Ps: Sequence[int], sizes: Sequence[int]) -> list[str]:
    try:
        simulate: Callable[..., object] = importlib.import_module("collkit.simulate").simulate
    except ImportError:
        return [
            "## Simulation",
            "",
            "Not run: the simulator (collkit.simulate) cannot be imported here.",
            "",
        ]
    params = {
        "alpha": f"{MODEL.alpha * 1e9:g}ns",
        "beta": f"{MODEL.beta * 1e9:g}ns",
        "gamma": f"{MODEL.gamma * 1e9:g}ns",
    }
    out = [
        "## Simulation (postal model, the schedules themselves)",
        "",
        f"collkit.simulate(model='postal', {params}); limits from the size sweep, bandwidth at "
        f"{collkit.format_size(sizes[-1])}.",
        "",
    ]
    for coll, old, news in COMPARISONS:
        for new in news:
            rows = []
            for P in Ps:
                t: dict[str, list[float]] = {}
                for a in (old, new):
                    t[a] = [
                        float(simulate(a, P, bytes=s, model="postal", **params).makespan) * 1e-9  # type: ignore[attr-defined]
                        for s in sizes
                    ]
                rows.append(limit_row(P, sizes, t[old], t[new], 8))
            out += ["```", format_limit_table(f"{coll}: {new} vs {old}", rows), "```", ""]
    return out


# ---------------------------------------------------------------- measurement


def measure_section(
    Ps: Sequence[int], sizes: Sequence[int], iterations: int, max_ms: int
) -> list[str]:
    try:
        bench = importlib.import_module("collkit.bench")
        results = importlib.import_module("collkit.results")
        mpirun = importlib.import_module("collkit.mpi")
    except ImportError:
        return [
            "## Measurement",
            "",
            "Not run: the MPI executor (collkit.bench) cannot be imported here.",
            "",
        ]
    mpi = mpirun.find_mpi()
    store = results.ResultStore(RESULTS / "large_counts.jsonl")
    out = ["## Measurement (collkit bench, validated against the MPI's own call)", ""]
    out.append(
        f"MPI: {mpi.version}; up to {iterations} iterations per size (at most {max_ms} ms), "
        "median time; bandwidth = bytes per rank / median time."
    )
    out.append("")
    for coll, old, news in COMPARISONS:
        extra = tree_reduces() if coll == "reduce" else []
        algos = [old, *news, *extra, "native"]
        c = bench.Campaign(
            collective=coll,
            algorithms=algos,
            P=list(Ps),
            sizes=list(sizes),
            iterations=iterations,
            max_ms=max_ms,
        )
        bench.run_campaign(c, mpi, store)
        rows = [r for r in store if r.collective == coll and r.source == "measured"]
        invalid = [r for r in rows if r.valid is False]
        for P in Ps:
            times: dict[str, list[float]] = {}
            for a in c.algorithms:
                by_size = {
                    r.bytes: r.median_us * 1e-6 for r in rows if r.P == P and r.algorithm == a
                }
                times[a] = [by_size.get(s, math.nan) for s in sizes]
            out += bandwidth_table(f"{coll}, P = {P} (MB/s)", sizes, times)
        lrows = []
        for new in news:
            lrows = []
            for P in Ps:
                to = [r for r in rows if r.P == P and r.algorithm == old]
                tn = [r for r in rows if r.P == P and r.algorithm == new]
                bo = {r.bytes: r.median_us * 1e-6 for r in to}
                bn = {r.bytes: r.median_us * 1e-6 for r in tn}
                common = [s for s in sizes if s in bo and s in bn]
                if common:
                    lrows.append(
                        limit_row(P, common, [bo[s] for s in common], [bn[s] for s in common], 8)
                    )
            out += ["```", format_limit_table(f"{coll}: {new} vs {old}", lrows), "```", ""]
        out.append(
            f"Validation: {len(rows) - len(invalid)} of {len(rows)} rows checked against the MPI's "
            f"own {coll} on random data"
            + (f"; INVALID: {[r.algorithm for r in invalid]}" if invalid else ".")
        )
        out.append("")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="few sizes, P = 2, no report file")
    ap.add_argument("--no-measure", action="store_true")
    ap.add_argument("--no-sim", action="store_true")
    ap.add_argument("--P", default="2,4", help="measured process counts (default 2,4)")
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--max-ms", type=int, default=1000, help="time budget per measured row")
    args = ap.parse_args(argv)

    sizes = sizes_between(8, 1 << 24)
    measured_P = [int(p) for p in args.P.split(",")]
    sim_P = SIM_P
    if args.quick:
        sizes, measured_P, sim_P = [8, 1 << 12, 1 << 20], [2], [16, 64]

    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cmd = "python benchmarks/bench_large_counts.py " + " ".join(argv or sys.argv[1:])
    head = [
        "# Large counts: Rabenseifner and ring versus trees and recursive doubling",
        "",
        f"- machine: {platform.node()} ({platform.processor() or platform.machine()}), shared "
        f"with other jobs; date: {now}",
        f"- command: `{cmd.strip()}`",
        "",
    ]
    body = model_section(sim_P, sizes)
    if not args.no_sim:
        body += sim_section(sim_P, sizes)
    if not args.no_measure:
        body += measure_section(measured_P, sizes, args.iterations, args.max_ms)
    text = "\n".join(head + body)
    print(text)
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "large_counts.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
