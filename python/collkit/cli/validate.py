"""Hold the simulator against this machine: predict with a profile, measure, compare.

For each collective, P and size, every registered algorithm (or --algos) is simulated with the
profile's parameters (fitted from minima and from medians; `collkit calibrate` writes the
profile) and measured with the bench driver (all algorithms in one run, interleaved size by
size, in rounds whose algorithm order rotates). It prints per case the prediction, the measured
minimum and median and the relative error, the median |error| and the fraction of algorithm
pairs the simulator orders as measured; it writes OUT.jsonl / OUT.csv (measured and simulated
rows of the results schema side by side), OUT.md (the tables, with machine, date, load and
command; with a profile that has the executor's costs, also the same measurement predicted
without them), OUT.png (relative difference by size and algorithm) and OUT-predicted.png
(predicted against measured, without and with the executor's costs).

  collkit calibrate -o this-machine.json
  collkit validate --profile this-machine.json -P 2 --collectives allreduce,bcast \\
      --sizes 8,1KiB,64KiB,1MiB -o validate
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from collkit.cli._common import (
    add_json_argument,
    add_p_argument,
    input_file,
    print_json_lines,
    split_names,
)
from collkit.collectives import COLLECTIVES
from collkit.errors import InvalidArgumentError

NAME = "validate"
HELP = "compare the simulator's predictions (with a calibrated profile) to measurements"

# The default selection (the collectives of the validation in docs/simulator.md), not a list of
# the collectives: that is the registry's.
DEFAULT_COLLECTIVES = "allreduce,reduce,bcast,alltoall,allgather"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from collkit.cli.bench import parse_sizes
    from collkit.profile import SIM_MODELS

    p.add_argument(
        "--profile",
        default=None,
        metavar="FILE.json",
        help="machine profile (required, but with --baseline)",
    )
    p.add_argument(
        "--collectives",
        default=DEFAULT_COLLECTIVES,
        help=f"comma list (default {DEFAULT_COLLECTIVES})",
    )
    p.add_argument(
        "--algos",
        default=None,
        help="comma list of algorithm names (default: every registered one that runs on P)",
    )
    add_p_argument(p, lists=True, default=[2])
    p.add_argument(
        "--sizes",
        type=parse_sizes,
        default=[8, 1024, 16384, 131072, 1048576],
        metavar="LIST",
        help="bytes per rank (per block for alltoall/allgather): default 8,1KiB,16KiB,128KiB,1MiB",
    )
    p.add_argument("--model", default="loggops", choices=SIM_MODELS, help="model (loggops)")
    # 300 calls a case by default: on a shared 2-core VM, 60 (3 x 20, the earlier default) did not
    # reproduce themselves (two back-to-back runs 17-18 % apart by median |difference|), 300 do
    # (3-8 %), well below the error the model is judged by (docs/simulator.md).
    p.add_argument("--rounds", type=int, default=5, help="measurement rounds (5)")
    p.add_argument("--iters", type=int, default=60, help="iterations per round and case (60)")
    p.add_argument("--hosts", default=None, help="host file, to measure across nodes")
    p.add_argument("--mpiexec", default=None, help="the MPI's mpiexec / mpirun")
    p.add_argument("--mpi-prefix", default=None, help="the MPI's install prefix")
    p.add_argument(
        "-o", "--out", default="validate", metavar="PREFIX", help="writes PREFIX.{jsonl,md,png}"
    )
    p.add_argument(
        "--measured",
        default=None,
        metavar="ROWS.jsonl",
        help="predict the measured rows of an earlier validation again (another --model or "
        "profile) instead of measuring",
    )
    p.add_argument(
        "--baseline",
        default=None,
        metavar="ROWS.jsonl",
        help="with --measured: hold those rows against this earlier measurement of the same "
        "cases instead of a prediction (how well the measurement reproduces itself: the floor "
        "of any model's error on this machine); writes PREFIX.md",
    )
    p.add_argument(
        "--sync",
        choices=("barrier", "window"),
        default="barrier",
        help="how measured iterations start: after an MPI_Barrier (barrier, the default) or at "
        "one instant on aligned clocks (window, as the simulator starts every rank at 0; "
        "iterations a rank starts late are dropped)",
    )
    p.add_argument("--no-plot", action="store_true", help="do not draw PREFIX.png")
    p.add_argument(
        "--no-executor",
        action="store_true",
        help="predict with the kernel's MPI parameters alone, without the profile's executor "
        "fits (per-call and per-op costs of collkit's executor)",
    )
    add_json_argument(
        p,
        "the rows of PREFIX.jsonl (each case measured and simulated, side by side), with the "
        "row files' keys; the summary goes to stderr",
    )


def run(args: argparse.Namespace) -> int:
    from collkit.algorithms import Algorithm
    from collkit.cli.bench import _build
    from collkit.mpi import find_mpi
    from collkit.profile import load_profile
    from collkit.results import ResultStore
    from collkit.validate import plot_validation, results_markdown, validate, validate_rows

    out = Path(args.out)
    if args.baseline is not None:
        return _repeatability(args, out)
    if args.profile is None:
        raise InvalidArgumentError("--profile is required (collkit calibrate writes one)")
    prof = load_profile(input_file(args.profile, "--profile"))
    if args.hosts is not None:
        input_file(args.hosts, "--hosts")
    colls = [c.strip() for c in args.collectives.split(",")]
    if len(colls) > 1 and not all(colls):  # 'allreduce,,bcast': a typo, not a list to shorten
        raise InvalidArgumentError(f"--collectives '{args.collectives}': empty entry")
    colls = [c for c in colls if c]
    for c in colls:
        if c not in COLLECTIVES:
            raise InvalidArgumentError(f"--collectives: unknown '{c}' (one of {COLLECTIVES})")
    if not colls:
        raise InvalidArgumentError("--collectives: none given")
    if args.rounds < 1 or args.iters < 1:
        raise InvalidArgumentError("--rounds and --iters must be >= 1")
    if any(P < 2 for P in args.P):
        raise InvalidArgumentError("-P: validation needs at least 2 ranks")
    algos: dict[str, list[str]] | None = None
    if args.algos:
        algos = {}
        for name in split_names(args.algos):
            if not name:
                raise InvalidArgumentError(f"--algos '{args.algos}': empty entry")
            if ":" not in name:  # 'rd' is allreduce:rd when one collective is validated
                if len(colls) != 1:
                    raise InvalidArgumentError(
                        f"--algos: '{name}' needs its collective (e.g. {colls[0]}:{name}) "
                        "when --collectives names several"
                    )
                name = f"{colls[0]}:{name}"
            a = Algorithm(name)
            if a.collective not in colls:
                raise InvalidArgumentError(f"--algos: {a.canonical} is not of {', '.join(colls)}")
            algos.setdefault(a.collective, []).append(str(a.canonical))
    out = Path(args.out)
    if not (out.parent if str(out.parent) else Path(".")).is_dir():
        raise InvalidArgumentError(f"-o {args.out}: folder {out.parent} does not exist")
    if args.measured is not None:
        from collkit.results import read_jsonl

        rows = read_jsonl(input_file(args.measured, "--measured"))
        v = validate_rows(
            prof, rows, model=args.model, source=args.measured, executor=not args.no_executor
        )
        command = shlex.join(
            [
                "collkit",
                "validate",
                "--profile",
                str(args.profile),
                "--measured",
                args.measured,
                "--model",
                args.model,
            ]
            + (["--no-executor"] if args.no_executor else [])
            + ["-o", str(args.out)]
        )
    else:
        mpi = find_mpi(args.mpiexec, args.mpi_prefix)
        _build(mpi, ["collkit_bench"])
        v = validate(
            prof,
            mpi,
            collectives=colls,
            P=args.P,
            sizes=args.sizes,
            model=args.model,
            algos=algos,
            rounds=args.rounds,
            iterations=args.iters,
            hosts=args.hosts,
            progress=lambda m: print(m, file=sys.stderr),
            executor=not args.no_executor,
            sync=args.sync,
        )
        command = shlex.join(
            ["collkit", "validate", "--profile", str(args.profile)]
            + ["--collectives", ",".join(colls)]
            + (["--algos", args.algos] if args.algos else [])
            + ["-P", ",".join(map(str, args.P)), "--sizes", ",".join(map(str, args.sizes))]
            + ["--model", args.model, "--rounds", str(args.rounds), "--iters", str(args.iters)]
            + ["--sync", args.sync]
            + (["--hosts", args.hosts] if args.hosts else [])
            + (["--no-executor"] if args.no_executor else [])
            + ["-o", str(args.out)]
        )
    if args.json:
        print(v.summary(), file=sys.stderr)
        print_json_lines(v.rows())
    else:
        print(v.summary())
    jsonl = out.with_name(out.name + ".jsonl")
    if args.measured is not None and jsonl.resolve() == Path(args.measured).resolve():
        raise InvalidArgumentError("-o would overwrite the --measured rows: give another -o")
    if jsonl.exists():
        jsonl.unlink()  # a validation is one run: its rows are not merged with an older one's
    store = ResultStore(jsonl)
    for row in v.rows():
        store.append(row)
    store.write_csv()
    md = out.with_name(out.name + ".md")
    text = results_markdown(v, command)
    before = None
    if v.executor and v.ok():
        # The same measurement predicted with the kernel's MPI parameters alone: what the
        # executor's calibrated costs change.
        before = validate_rows(prof, v.rows(), model=args.model, executor=False)
        text += (
            "\n## The same measurement predicted without the executor's costs "
            "(--no-executor)\n\n" + before.summary() + "\n"
        )
    md.write_text(text)
    written = [jsonl, store.csv, md]
    if not args.no_plot and v.ok():
        import matplotlib

        matplotlib.use("Agg")  # a file, never a window
        from collkit.plotting import save_figure
        from collkit.validate import plot_predicted_vs_measured

        written.append(save_figure(plot_validation(v), out.with_name(out.name + ".png")))
        pair = (before, v) if before is not None else (v,)
        labels = (
            [f"{args.model}, MPI's parameters alone", f"{args.model} + executor's costs"]
            if before is not None
            else []
        )
        written.append(
            save_figure(
                plot_predicted_vs_measured(*pair, labels=labels),
                out.with_name(out.name + "-predicted.png"),
            )
        )
    print("wrote " + ", ".join(map(str, written)), file=sys.stderr if args.json else sys.stdout)
    return 0


def _repeatability(args: argparse.Namespace, out: Path) -> int:
    from collkit.profile import machine_load
    from collkit.results import read_jsonl
    from collkit.validate import repeatability

    if args.measured is None:
        raise InvalidArgumentError("--baseline needs --measured (the rows held against it)")
    if not (out.parent if str(out.parent) else Path(".")).is_dir():
        raise InvalidArgumentError(f"-o {args.out}: folder {out.parent} does not exist")
    base = read_jsonl(input_file(args.baseline, "--baseline"))
    rows = read_jsonl(input_file(args.measured, "--measured"))
    v = repeatability(base, rows, source=args.baseline)
    print(v.summary())
    md = out.with_name(out.name + ".md")
    if md.resolve() in (Path(args.baseline).resolve(), Path(args.measured).resolve()):
        raise InvalidArgumentError("-o would overwrite an input: give another -o")
    md.write_text(
        "\n".join(
            [
                f"# collkit validate: {args.measured} held against {args.baseline}",
                "",
                f"- machine: {v.machine}; {v.mpi}; measured {v.date}",
                f"- load now: {machine_load()}",
                "- error = (this run - the baseline run) / the baseline run, per case: what the "
                "measurement reproduces of itself (no model involved)",
                "- command: `"
                + shlex.join(
                    [
                        "collkit",
                        "validate",
                        "--measured",
                        args.measured,
                        "--baseline",
                        args.baseline,
                        "-o",
                        str(args.out),
                    ]
                )
                + "`",
                "",
                "## Summary",
                "",
                v.summary(),
                "",
                "## Where they differ (minima)",
                "",
                v.breakdown("min"),
                "",
            ]
        )
    )
    print(f"wrote {md}")
    return 0
