"""Seed 004 on this machine: a bcast / reduce campaign (linear, pipeline, binary, binomial and the
MPI's native call) over P and message sizes, [Latency models]'s linear models fitted to it, the
same fit on
simulated rows up to P = 4096, and the measured rows against the simulated ones ([Ruefenacht 2017]
Figs.
12, 14, 15).

    python benchmarks/rooted_campaign.py measure    # collkit bench; appends, resumes
    python benchmarks/rooted_campaign.py simulate   # postal model calibrated on the P = 2 rows
    python benchmarks/rooted_campaign.py report     # fits, pictures, benchmarks/results/rooted.md

Options: --P, --sizes, --iters, --warmup (the seed used 20000 and 1000; this 2-core machine, shared,
gets less), --sim-P.
Rows go to docs/data/rooted/{measured,simulated}.jsonl (the data the fit example in
docs/rooted-and-fit.md reads), pictures to docs/img/rooted/.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import socket
import sys
from pathlib import Path

from collkit import fit as F

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = ROOT / "docs" / "data" / "rooted"
IMG = ROOT / "docs" / "img" / "rooted"
ALGOS = ["linear", "pipeline", "binary", "binomial"]
COLLECTIVES = ("bcast", "reduce")
SIM_ALLOCATION = "simulated"
# fmt: off
SIM_P = [2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024,
         1536, 2048, 3072, 4096]
# fmt: on


def measure(args: argparse.Namespace) -> None:
    from collkit.bench import Campaign, run_campaign
    from collkit.mpi import find_mpi
    from collkit.results import ResultStore

    mpi = find_mpi()
    store = ResultStore(RESULTS / "measured.jsonl")
    for coll in COLLECTIVES:
        c = Campaign(
            collective=coll,
            algorithms=[*ALGOS, "native"],
            P=args.P,
            sizes=args.sizes,
            datatype="double" if coll == "reduce" else "char",
            iterations=args.iters,
            warmup=args.warmup,
            max_ms=args.max_ms,
            # MPICH's hydra binds each rank to one core (or leaves it free in its socket); the
            # setting goes into the rows, and collkit fit reads it as the placement.
            extra_env={"HYDRA_BINDING": args.binding} if args.binding else {},
            placements=args.map_by.split(","),
        )

        def progress(msg: str, row: object) -> None:
            if row is None:
                print(msg, flush=True)

        added = run_campaign(c, mpi, store, progress)
        print(f"{coll}: {len(added)} rows added, {len(store)} in {store.jsonl}")


def _calibration(measured: list) -> dict[str, float]:
    """Postal alpha, beta from the P = 2 bcast:linear rows (one message: alpha + n beta), and
    gamma from reduce:linear at P = 2 (one message and one reduction), in ns."""
    import numpy as np

    def pts(coll: str) -> tuple[np.ndarray, np.ndarray]:
        rs = [
            r
            for r in measured
            if r.P == 2 and r.algorithm == f"{coll}:linear" and math.isfinite(r.min_us)
        ]
        return np.array([r.bytes for r in rs], float), np.array([r.min_us * 1e3 for r in rs], float)

    x, y = pts("bcast")
    if len(x) < 2:
        raise SystemExit("calibration needs bcast:linear rows at P = 2 with two sizes: measure")
    beta, alpha = np.polyfit(x, y, 1)
    xr, yr = pts("reduce")
    gamma = 0.0
    if len(xr) >= 2:
        slope, _ = np.polyfit(xr, yr, 1)
        gamma = max(slope - beta, 0.0)
    return {"alpha": max(alpha, 1.0), "beta": max(beta, 0.0), "gamma": gamma}


def simulate(args: argparse.Namespace) -> None:
    from collkit.results import ResultStore, read_jsonl
    from collkit.sim import Model, simulate_row

    cal = _calibration(read_jsonl(RESULTS / "measured.jsonl"))
    print(
        "postal model calibrated on P = 2: " + ", ".join(f"{k} = {v:.4g}" for k, v in cal.items())
    )
    store = ResultStore(RESULTS / "simulated.jsonl")
    model = Model.make("postal", alpha=cal["alpha"], beta=cal["beta"], gamma=cal["gamma"])
    date = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    for coll in COLLECTIVES:
        esize = 8 if coll == "reduce" else 1
        for algo in ALGOS:
            name = f"{coll}:{algo}"
            for P in args.sim_P:
                for size in args.sizes:
                    problem = (coll, name, P, size // esize, esize, model)
                    simulate_row(store, *problem, date=date, allocation=SIM_ALLOCATION)
            print(f"{name}: simulated P = {args.sim_P[0]} .. {args.sim_P[-1]}", flush=True)
    store.write_csv()


def _slopes(fits: list[F.FitResult]) -> dict[str, float]:
    return {f.group: f.coefficient("P").estimate for f in fits}


def report(args: argparse.Namespace) -> None:
    from collkit.results import read_jsonl

    measured = [r for r in read_jsonl(RESULTS / "measured.jsonl") if not r.error]
    simulated = read_jsonl(RESULTS / "simulated.jsonl")
    out: list[str] = [
        "# Seed 004 on this machine: rooted collectives, fitted",
        "",
        f"Machine: {measured[0].machine if measured else socket.gethostname()}, "
        f"{_cores()} cores shared with other work; report written "
        f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC.",
        f"MPI: {measured[0].mpi if measured else '-'}; allocation: "
        f"{measured[0].allocation if measured else '-'} (one node: the core mapping; rows "
        "with HYDRA_BINDING in their settings were bound as it says). Iterations / warm-up: "
        + ", ".join(sorted({f"{r.iterations} / {r.warmup}" for r in measured[:1]}))
        + " per row (fewer where a row hit its time budget).",
        "",
        "Reproduce: `python benchmarks/rooted_campaign.py measure && python "
        "benchmarks/rooted_campaign.py simulate && python benchmarks/rooted_campaign.py report`",
        "",
    ]
    IMG.mkdir(parents=True, exist_ok=True)
    smallest = min((r.bytes for r in measured), default=0)
    for coll in COLLECTIVES:
        for source, rows, tag in (
            ("measured", measured, "measured"),
            ("simulated", simulated, "simulated"),
        ):
            rs = [r for r in rows if r.collective == coll and r.algorithm != "native"]
            if not rs:
                continue
            small = [r for r in rs if r.bytes == smallest]
            out += [
                f"## {coll}, {source}: `latency ~ 0 + P + [P > {args.threshold}] + "
                f"P:[P > {args.threshold}]`, {smallest} B",
                "",
            ]
            fits = F.fit(small, "seed-p", threshold=args.threshold, stat=args.stat)
            for f in fits:
                out += [f.table(), ""]
            order = sorted(_slopes(fits).items(), key=lambda kv: kv[1], reverse=True)
            out += [
                "Per-process slopes, steepest first: "
                + ", ".join(f"{g} {s:.4g} us" for g, s in order),
                "",
            ]
            F.plot_residuals(fits, IMG / f"{coll}-{tag}-seed-p-residuals.png")
            F.plot_predicted(fits, IMG / f"{coll}-{tag}-seed-p-predicted.png")
            out += [
                f"![residuals](../../docs/img/rooted/{coll}-{tag}-seed-p-residuals.png)",
                f"![predicted](../../docs/img/rooted/{coll}-{tag}-seed-p-predicted.png)",
                "",
            ]
            (g,) = F.fit(rs, "seed-log", threshold=args.threshold, stat=args.stat)
            out += [
                f"### {coll}, {source}: `latency ~ 0 + log2(P):group + size:group`",
                "",
                g.table(),
                "",
            ]
            F.plot_predicted([g], IMG / f"{coll}-{tag}-seed-log-predicted.png")
            out += [f"![predicted](../../docs/img/rooted/{coll}-{tag}-seed-log-predicted.png)", ""]
            if source == "measured":
                big = max(args.sim_P)
                out += [f"Extrapolated to P = {big} ({smallest} B, 95% prediction interval):", ""]
                for f in fits:
                    p = f.predict(P=big)
                    out.append(
                        f"- {f.group}: {p['mean']:.4g} us [{p['lower']:.4g}, {p['upper']:.4g}]"
                    )
                out.append("")
        out += _side_by_side(coll, measured, simulated, smallest, args)
        if simulated and measured:
            ms = [r for r in measured if r.collective == coll and r.algorithm != "native"]
            try:
                c = F.compare(ms, [r for r in simulated if r.collective == coll])
            except Exception as e:  # nothing matched
                out += [f"(no comparison for {coll}: {e})", ""]
                continue
            F.plot_comparison(c, IMG / f"{coll}-measured-vs-simulated.png")
            out += [
                f"## {coll}: measured versus simulated (postal, calibrated at P = 2)",
                "",
                f"Median relative difference (measured - simulated) / simulated: minimum "
                f"{_median(c.rel_min):+.0%}, median {_median(c.rel_median):+.0%} "
                f"over {len(c.keys)} rows.",
                "",
                f"![comparison](../../docs/img/rooted/{coll}-measured-vs-simulated.png)",
                "",
                "<details><summary>rows</summary>",
                "",
                c.table(),
                "",
                "</details>",
                "",
            ]
    path = HERE / "results" / "rooted.md"
    path.write_text("\n".join(out) + "\n")
    print(f"wrote {path}")


def _side_by_side(coll: str, measured: list, simulated: list, size: int, args) -> list[str]:
    """Per-process slopes (seed-p's P coefficient, us per process) of every algorithm: measured
    (median and minimum, per placement) beside simulated (to P = 4096, and over the measured P)."""

    def slopes(rows: list, stat: str, max_p: int | None = None) -> dict[tuple[str, str], float]:
        rs = [
            r
            for r in rows
            if r.collective == coll
            and r.algorithm != "native"
            and r.bytes == size
            and (max_p is None or max_p >= r.P)
        ]
        if not rs:
            return {}
        fits = F.fit(rs, "seed-p", threshold=args.threshold, stat=stat)
        return {tuple(f.group.split("-", 1)): f.coefficient("P").estimate for f in fits}

    pmax = max((r.P for r in measured), default=0)
    cols: list[tuple[str, dict[str, float]]] = []
    for stat in ("median", "min"):
        by = slopes(measured, stat)
        for place in sorted({p for _, p in by}):
            cols.append(
                (f"measured {place}, {stat}", {a: v for (a, p), v in by.items() if p == place})
            )
    for label, max_p in (
        (f"simulated, P <= {max(args.sim_P)}", None),
        (f"simulated, P <= {pmax}", pmax),
    ):
        cols.append((label, {a: v for (a, _), v in slopes(simulated, "median", max_p).items()}))
    out = [
        f"### {coll}: per-process slope (P coefficient of seed-p, us), {size} B",
        "",
        "| algorithm | " + " | ".join(c for c, _ in cols) + " |",
        "| --- |" + " ---: |" * len(cols),
    ]
    for algo in ALGOS:
        cells = [f"{d[algo]:.4g}" if algo in d else "-" for _, d in cols]
        out.append(f"| {algo} | " + " | ".join(cells) + " |")
    out.append("")
    for c, d in cols:
        if d:
            order = sorted(d, key=d.__getitem__, reverse=True)
            out.append(f"- {c}: steepest to flattest: {' > '.join(order)}")
    return [*out, ""]


def _median(x: object) -> float:
    import numpy as np

    return float(np.median(np.asarray(x)))


def _cores() -> int:
    import os

    return os.cpu_count() or 1


def _plist(text: str) -> list[int]:
    return [int(x) for x in text.split(",")]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("step", choices=["measure", "simulate", "report"])
    p.add_argument("--P", type=_plist, default=[2, 3, 4, 5, 6, 8, 10, 12, 16])
    p.add_argument("--sizes", type=_plist, default=[8, 1024, 65536])
    p.add_argument("--iters", type=int, default=500)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--max-ms", type=int, default=1500)
    p.add_argument(
        "--sim-P",
        type=_plist,
        default=SIM_P,
    )
    p.add_argument("--binding", choices=["core", "socket"], help="bind ranks (MPICH hydra)")
    p.add_argument("--map-by", default="", help="placements to sweep: core,socket,node")
    p.add_argument("--threshold", type=int, default=128)
    p.add_argument("--stat", default="median")
    args = p.parse_args()
    {"measure": measure, "simulate": simulate, "report": report}[args.step](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
