"""Fit linear models of latency to result rows (measured or simulated: the same code).

Models: seed-p (the latency-model slides's per-algorithm `latency ~ P + [P > 128] + P:[P > 128]`, no
intercept, one fit per algorithm-allocation group), seed-log (`latency ~ log2(P):group +
size:group`, all rows at once), or any formula over the columns latency, P, log2P, big, size,
algorithm, allocation, group, collective, name (e.g. 'latency ~ P + size').

Prints each fit's table (Estimate, Std. Error, t value) with R²; --plots writes residual and
predicted-versus-measured pictures; --predict extrapolates (e.g. P=4096) with a prediction
interval; --against PREDICTED compares measured rows with predicted (simulated) rows: relative
difference of minimum and median, as in Ruefenacht et al. 2017 Figs. 12, 14 and 15.

examples:
  collkit fit results/bcast.jsonl --collective bcast --plots out/
  collkit fit results/bcast.jsonl --model seed-log --predict P=4096,size=8,group=binary-core
  collkit fit sim.jsonl --model 'latency ~ log2P + P' --by algorithm
  collkit fit measured.jsonl --against simulated.jsonl --plots out/
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from collkit import fit as F
from collkit import units
from collkit.cli._common import add_json_argument, output_dir, print_json_lines
from collkit.errors import InvalidArgumentError, UnsupportedError

NAME = "fit"
HELP = "fit linear latency models to result rows; predict; compare with a model"


def _parse_assignments(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise argparse.ArgumentTypeError(f"expected KEY=VALUE[,KEY=VALUE...], got '{text}'")
        out[key.strip()] = value.strip()
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("rows", nargs="+", metavar="ROWS", help="result files (.jsonl or .csv)")
    p.add_argument(
        "--model",
        default="seed-p",
        help="seed-p, seed-log or a formula such as 'latency ~ P + size' (default seed-p)",
    )
    p.add_argument(
        "--stat", default="median", choices=F.STATS, help="statistic fitted (default median)"
    )
    p.add_argument(
        "--threshold",
        type=int,
        default=128,
        metavar="T",
        help="the P of the latency-model slides's [P > T] term (default 128)",
    )
    p.add_argument("--collective", help="keep the rows of this collective only")
    for flag, what in (
        ("--where", "keep rows whose column has this value"),
        ("--predict", "predict at these values, e.g. P=4096,size=8"),
    ):
        p.add_argument(
            flag,
            type=_parse_assignments,
            action="append",
            default=[],
            metavar="COL=VALUE",
            help=what,
        )
    p.add_argument(
        "--by",
        metavar="COLS",
        help="fit separately per value of these columns (comma-separated); "
        "default: group for seed-p, none otherwise; 'none' for one fit",
    )
    p.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="1 - confidence of the prediction interval (default 0.05)",
    )
    p.add_argument(
        "--plots",
        metavar="DIR",
        help="write residuals.png and predicted.png (and comparison.png) into this folder "
        "(made if its parent exists)",
    )
    p.add_argument(
        "--against",
        metavar="PREDICTED",
        nargs="+",
        help="compare the rows with these predicted rows instead of fitting",
    )
    add_json_argument(
        p,
        "one fit a line (formula, group, n, r_squared, adj_r_squared, coefficients, "
        "predictions); with --against one matched row a line (measured and predicted min_us / "
        "median_us, their relative differences)",
    )


def read_rows(paths: list[str]) -> list[Any]:
    try:
        from collkit import results
    except ImportError:  # the result schema arrives with the MPI executor's branch
        raise UnsupportedError("collkit.results (the result row schema) is not installed") from None

    rows: list[Any] = []
    for path in paths:
        p = Path(path)
        if not p.is_file():
            raise InvalidArgumentError(f"no such results file: {path}")
        # A line that is not a row is said at once and left out; the fit goes on with the rest.
        rejected: list[results.Rejected] = []
        rows += (
            results.read_csv(p, rejected) if p.suffix == ".csv" else results.read_jsonl(p, rejected)
        )
        for bad in rejected:
            print(f"collkit fit: {bad}: line left out", file=sys.stderr)
    return rows


def fit_json(f: F.FitResult, predictions: list[dict[str, object]]) -> dict[str, object]:
    """One fit as `collkit fit --json` prints it (the numbers of its table)."""
    return {
        "formula": f.formula,
        "group": f.group,
        "stat": f.stat,
        "threshold": f.threshold,
        "n": f.n,
        "r_squared": f.r_squared,
        "adj_r_squared": f.adj_r_squared,
        "coefficients": [dataclasses.asdict(c) for c in f.coefficients],
        "predictions": predictions,
    }


def run(args: argparse.Namespace) -> int:
    rows = read_rows(args.rows)
    if args.plots is not None:
        args.plots = output_dir(args.plots, "--plots")
    where: dict[str, str] = {}
    for w in args.where:
        where.update(w)
    if args.collective:
        where["collective"] = args.collective
    if args.against:
        predicted = read_rows(args.against)
        keep = [r for r in rows if all(str(getattr(r, k, "")) == v for k, v in where.items())]
        c = F.compare(keep, predicted)
        if args.json:
            print_json_lines(
                {
                    "collective": coll,
                    "algorithm": algo,
                    "P": P,
                    "bytes": nbytes,
                    "measured_min_us": float(c.measured_min[i]),
                    "predicted_min_us": float(c.predicted_min[i]),
                    "rel_diff_min": float(c.rel_min[i]),
                    "measured_median_us": float(c.measured_median[i]),
                    "predicted_median_us": float(c.predicted_median[i]),
                    "rel_diff_median": float(c.rel_median[i]),
                }
                for i, (coll, algo, P, nbytes) in enumerate(c.keys)
            )
        else:
            print(c.table())
        info = sys.stderr if args.json else sys.stdout
        print(f"\n{len(c.keys)} rows matched, {c.unmatched} without a prediction", file=info)
        if args.plots:
            F.plot_comparison(c, args.plots / "comparison.png")
            print(f"wrote {args.plots / 'comparison.png'}", file=info)
        return 0
    by = None if args.by is None else ([] if args.by == "none" else args.by.split(","))
    fits = F.fit(rows, args.model, stat=args.stat, threshold=args.threshold, by=by, where=where)
    info = sys.stderr if args.json else sys.stdout
    for f in fits:
        if not args.json:
            print(f.table())
        predictions: list[dict[str, object]] = []
        for values in args.predict:
            numeric: dict[str, float | str] = {}
            for k, v in values.items():
                # units' ASCII grammar: float() would take '٣', '８' and '1_0'
                numeric[k] = (
                    units.parse_float(v, f"--predict {k}") if k in ("P", "size", "bytes") else v
                )
            pr = f.predict(alpha=args.alpha, **numeric)
            at = ", ".join(f"{k}={v}" for k, v in values.items())
            predictions.append(
                {
                    "at": dict(values),
                    "mean_us": float(pr["mean"]),
                    "lower_us": float(pr["lower"]),
                    "upper_us": float(pr["upper"]),
                    "confidence": 1 - args.alpha,
                }
            )
            if not args.json:
                print(
                    f"\nprediction at {at}: {pr['mean']:.4g} us, "
                    f"{100 * (1 - args.alpha):g}% interval [{pr['lower']:.4g}, {pr['upper']:.4g}]"
                )
        if args.json:
            print_json_lines([fit_json(f, predictions)])
        else:
            print()
    if args.plots:
        for name, fn in (("residuals", F.plot_residuals), ("predicted", F.plot_predicted)):
            fn(fits, args.plots / f"{name}.png")
            print(f"wrote {args.plots / f'{name}.png'}", file=info)
    return 0
