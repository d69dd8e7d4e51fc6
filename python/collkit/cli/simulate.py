"""Simulate an algorithm under a network cost model and print its makespan.

Times take units (ps, ns, us, ms, s; a bare number is ns); per-byte costs take '0.4ns', '0.4ns/B'
or a bandwidth such as '2.5GB/s'; sizes take '8', '8B', '4KiB', '1MiB'.

Models and their parameters (defaults):
{models}

  postal            a message costs alpha + n*beta; a rank sends one message at a time and its
                    send completes when the message has arrived (Ruefenacht et al. 2017 Eq. 1)
  pipelined-postal  a rank's sends overlap: each occupies the send port alpha_r + n*beta, then
                    arrives alpha_p later; b sends issued together: alpha_p + b(alpha_r + n beta)
  logp/loggp/loggops
                    LogGOPSim semantics: sender CPU o+(n-1)O, gap g+(n-1)G, arrival o+L after the
                    send starts, receiver CPU o+max((n-1)O,(n-1)G); rendezvous above S bytes
  every model       reduce ops cost reduce_base + n*gamma, copies n*copy_beta, compute/sleep
                    their own time; local ops run one at a time per rank

Noise and skew specs: none, constant(50ns), uniform(0,100ns), exponential(50ns) (mean),
lognormal(100ns,0.5) (median, sigma), file(PATH) (measured times, one drawn per op; a
LogGOPSim noise trace is replayed in time instead, each rank from its own offset drawn from
--seed; file(PATH,cosched): one offset for all ranks).
Topology specs: fattree(k=16,hop=100ns), dragonfly(p=4,a=8,hop=100ns,global=500ns),
torus(dims=8x8x8,hop=50ns); each also takes rpn=N (ranks per node) and intra=TIME.

A saved schedule runs as it is: `collkit simulate --file rd.goal --model loggops` (text, JSON or
GOAL, LogGOPSim's plain GOAL included, with its `cpu N` / `nic N` and wildcard receives; read as
it goes; docs/simulator.md maps LogGOPSim's flags to collkit's).

A sweep runs in this one process: ALGO, -P, --count / --bytes and every model parameter take
comma lists, and every combination prints one JSON row of the results schema per line (a run
the algorithm refuses is named on stderr and skipped):
  collkit simulate allreduce:rd,allreduce:ring -P 8,64,2^10 --bytes 8,64KiB --model loggops \\
      --L 500,2500

Example (Ruefenacht et al. 2017's simulator settings, Fig. 18):
  collkit simulate allreduce:rd -P 8 --bytes 8 --model pipelined-postal --alpha-p 500ns \\
      --alpha-r 100ns --beta 0.4ns --reduce-base 10ns --timeline rd8.json --plot rd8.png
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
from pathlib import Path
from typing import Any

from collkit.cli._common import (
    DEFAULT_COUNT,
    add_problem_arguments,
    check_root,
    placement_of,
    plot_format_error,
    problem_counts,
)
from collkit.errors import CollkitError, InvalidArgumentError
from collkit.results import Row, row_to_json
from collkit.simulate import (
    LOCAL_PARAMS,
    MODELS,
    PARAM_DOCS,
    format_ns,
    memory_estimate,
    param_help,
    simulate,
    simulate_file,
)

# A timeline records every op: past these many it takes minutes and gigabytes.
TIMELINE_WARN_OPS = 1_000_000
TIMELINE_MAX_OPS = 20_000_000

NAME = "simulate"
HELP = "simulate an algorithm under postal, pipelined postal or LogGOPS models"
__doc__ = (__doc__ or "").replace("{models}", param_help())


def _flag(param: str) -> str:
    return "--" + param.replace("_", "-")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_problem_arguments(
        p, optional="omit with --file", with_bytes=True, lists=True, algorithms=True, counts=True
    )
    # A saved schedule says its own root: None tells "not given" from 0.
    p.set_defaults(root=None)
    p.add_argument(
        "--file",
        metavar="PATH",
        default=None,
        help="simulate a saved schedule (.txt, .json or .goal, LogGOPSim's GOAL included) "
        "instead of generating one",
    )
    p.add_argument(
        "--model", default="postal", choices=list(MODELS), help="cost model (default postal)"
    )
    seen: set[str] = set()
    g = p.add_argument_group("model parameters (a time, per-byte cost or size; see above)")
    g.add_argument(
        "--profile",
        metavar="FILE.json",
        default=None,
        help="a machine profile from `collkit calibrate`: the model's parameters and gamma, "
        "reduce_base, copy_beta measured on that machine (flags given as well win)",
    )
    g.add_argument(
        "--profile-stat",
        choices=["min", "median"],
        default="min",
        help="the profile's fits from minima or medians (default min)",
    )
    for params in [*MODELS.values(), LOCAL_PARAMS]:
        for name in params:
            if name in seen:
                continue
            seen.add(name)
            # L/G/O and l/g/o differ only in case: keep the paper's letters as flags.
            g.add_argument(
                _flag(name),
                dest=f"param_{name}",
                default=None,
                metavar="VALUE",
                help=PARAM_DOCS.get(name, "") + " (a comma list sweeps it)",
            )
    n = p.add_argument_group("noise, skew, topology, trials")
    n.add_argument(
        "--noise",
        default=None,
        metavar="SPEC",
        help="per-op delay distribution, e.g. exponential(50ns), or a LogGOPSim trace: file(T)",
    )
    n.add_argument(
        "--skew",
        default=None,
        metavar="SPEC",
        help="per-rank start time distribution, e.g. uniform(0,1us)",
    )
    n.add_argument(
        "--topology",
        default=None,
        metavar="SPEC",
        help="extra latency per pair of ranks, e.g. fattree(k=16,hop=100ns,rpn=4)",
    )
    n.add_argument(
        "--trials",
        type=int,
        default=1,
        metavar="N",
        help="repeat with fresh noise draws; prints min/quartiles/max (default 1)",
    )
    n.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    o = p.add_argument_group("output")
    o.add_argument(
        "--timeline",
        metavar="FILE.json",
        default=None,
        help="write a Perfetto / Chrome trace of the first trial",
    )
    o.add_argument(
        "--plot",
        metavar="FILE.png",
        default=None,
        help="write a timeline picture of the first trial (small P)",
    )
    o.add_argument("--per-rank", action="store_true", help="print every rank's finish time")
    o.add_argument(
        "--json",
        action="store_true",
        help="print the result as one JSON row of the results schema (times in us)",
    )


def _sweep(
    args: argparse.Namespace,
    algos: list[Any],
    Ps: list[Any],
    sizes: list[Any],
    values: dict[str, list[Any]],
) -> int:
    """Every combination, one JSON row of the results schema per line; a combination that
    cannot run (the algorithm refuses P, too much memory) is named on stderr and skipped."""
    if args.file is not None:
        return _fail("--file simulates one saved schedule: a sweep (lists) generates its own")
    if None in algos or None in Ps:
        return _fail("a sweep needs ALGO and -P (lists allowed: rd,ring -P 8,64)")
    if args.timeline is not None or args.plot is not None or args.per_rank:
        return _fail("a sweep prints one row per run: leave out --timeline, --plot, --per-rank")
    # What is the same for every run is read once, before any: a bad noise, skew or topology
    # spec is the user's error, not a run to skip (and a trace file is read once, not per run).
    from collkit.sim.noise import parse_distribution
    from collkit.sim.options import check_run
    from collkit.sim.topology import parse_topology

    check_run(args.trials, args.seed)
    args.noise = parse_distribution(args.noise, "noise")
    args.skew = parse_distribution(args.skew, "skew")
    args.topology = parse_topology(args.topology)
    esize = args.elem_size
    avail = _available_memory()
    names = list(values)
    ran = 0
    for algo, P, size, combo in itertools.product(
        algos, Ps, sizes, itertools.product(*values.values())
    ):
        count = DEFAULT_COUNT if size is None else size
        if args.bytes is not None:
            count = -(-size // esize)
        vec: list[int] | None = None
        if args.counts is not None and algo is not None:
            count, vec = problem_counts(args, algo.collective, P, None)
        what = f"{algo} P={P} count={count}" + "".join(
            f" {_flag(k)} {v}" for k, v in zip(names, combo, strict=True)
        )
        model_params: dict[str, Any] = dict(zip(names, combo, strict=True))
        try:
            args.algorithm = algo
            placement = placement_of(args)
            root = 0 if args.root is None else check_root(args.root, P)
            estimate, _ = memory_estimate(
                algo,
                P,
                count,
                esize,
                root,
                False,
                placement=placement,
                model=args.model,
                counts=vec,
            )
            if avail is not None and estimate > avail:
                raise MemoryError
            res = simulate(
                algo,
                P,
                count=count,
                elem_size=esize,
                root=root,
                placement=placement,
                model=args.model,
                noise=args.noise,
                skew=args.skew,
                topology=args.topology,
                trials=args.trials,
                seed=args.seed,
                counts=vec,
                **model_params,
            )
        except CollkitError as e:
            print(f"collkit simulate: skipped {what}: {e}", file=sys.stderr)
            continue
        except MemoryError:
            print(f"collkit simulate: skipped {what}: not enough memory", file=sys.stderr)
            continue
        print(row_to_json(_row(res, args, vec)), flush=True)
        ran += 1
    if ran == 0:
        return _fail("nothing simulated: every run of the sweep was skipped")
    return 0


def profile_params(path: str, model: str, stat: str, elem_size: int) -> dict[str, Any]:
    """The parameters of `model` from the profile at `path` (gamma of double, float or char by
    the element size; eager fits, S from the profile)."""
    from collkit.cli._common import input_file
    from collkit.profile import load_profile

    prof = load_profile(input_file(path, "--profile"))
    dt = {8: "double", 4: "float", 1: "char"}.get(elem_size, "double")
    return dict(prof.params(model, stat=stat, datatype=dt))


def _row(res: Any, args: argparse.Namespace, vec: list[int] | None) -> Row:
    """The result's row; with --counts it says the form and, as bench's rows do, the count and
    bytes of the whole vector (alltoallv: the whole matrix), not its largest entry."""
    row: Row = res.to_row()
    if vec is not None and args.counts is not None:
        row.count = sum(vec)
        row.bytes = row.count * args.elem_size
        row.counts = "".join(args.counts.text.split())
    return row


def _fail(msg: str) -> int:
    print(f"collkit simulate: error: {msg}", file=sys.stderr)
    return 2


def _writable(path: str, what: str) -> str | None:
    """Why `path` cannot be written, or None: checked before a long run, not after it."""
    p = Path(path)
    if p.is_dir():
        return f"{what} '{path}' is a directory"
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        return f"{what} '{path}': folder '{parent}' does not exist"
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        return f"{what} '{path}' is not writable"
    return None


def _available_memory() -> int | None:
    """What a run may take: MemAvailable, RLIMIT_AS / RLIMIT_DATA and the cgroup's limit."""
    from collkit.sim.memory import available_memory

    return available_memory()


def run(args: argparse.Namespace) -> int:
    params = {
        k[len("param_") :]: v
        for k, v in vars(args).items()
        if k.startswith("param_") and v is not None
    }
    allowed = set(MODELS[args.model]) | set(LOCAL_PARAMS)
    extra = sorted(set(params) - allowed)
    if args.profile is not None and not extra:
        params = {
            **profile_params(args.profile, args.model, args.profile_stat, args.elem_size),
            **params,
        }
    if extra:
        flags = ", ".join(_flag(x) for x in extra)
        return _fail(
            f"{flags} not a parameter of model {args.model} "
            f"(its parameters: {', '.join(_flag(x) for x in sorted(allowed))})"
        )
    # A sweep: every combination of the listed algorithms, P, sizes and parameter values.
    algos = args.algorithm or [None]
    Ps = args.P or [None]
    sizes = args.bytes if args.bytes is not None else args.count or [None]
    # Flags are text (a comma list sweeps); a profile's values are numbers, one each.
    values: dict[str, list[Any]] = {
        k: [x.strip() for x in v.split(",")] if isinstance(v, str) else [v]
        for k, v in params.items()
    }
    # Every value of every list is checked before anything runs: '--alpha 1,,2' is an error
    # (exit 2, nothing simulated), not a sweep that skips its empty element.
    from collkit.sim.options import Model

    for k, vs in values.items():
        for x in vs:
            try:
                Model.make(args.model, **{k: x})
            except CollkitError as e:
                raise InvalidArgumentError(f"{_flag(k)} {params[k]}: {e}") from None
    runs = len(algos) * len(Ps) * len(sizes) * math.prod(len(v) for v in values.values())
    if runs > 1:
        return _sweep(args, algos, Ps, sizes, values)
    args.algorithm, args.P = algos[0], Ps[0]
    if args.bytes is not None:
        args.bytes = sizes[0]
    elif args.count is not None:
        args.count = sizes[0]
    params = {k: v[0] for k, v in values.items()}
    if args.json and args.per_rank:
        return _fail("--json prints one result row: leave out --per-rank (or --json)")
    record = args.timeline is not None or args.plot is not None
    for path, what in ((args.timeline, "--timeline"), (args.plot, "--plot")):
        if path is not None and (why := _writable(path, what)):
            return _fail(why)
    if args.plot is not None and (why := plot_format_error(args.plot, "--plot")):
        return _fail(why)

    source: Any
    placement = None
    if args.file is not None:
        given = [
            name
            for name, v in (
                ("ALGO", args.algorithm),
                ("-P", args.P),
                ("--bytes", args.bytes),
                ("--count", args.count),
                ("--counts", args.counts),
                ("--root", args.root),
                ("--rpn", args.rpn),
                ("--order", args.order),
            )
            if v is not None
        ]
        if given or args.elem_size != 8:
            given += ["--elem-size"] if args.elem_size != 8 else []
            return _fail(
                f"--file brings its own problem: leave out {', '.join(given)} "
                "(the file says its P, count, element size, root and placement)"
            )
        if not os.path.isfile(args.file):
            what = "is a directory" if os.path.isdir(args.file) else "no such file"
            return _fail(f"cannot read '{args.file}': {what}")
        P, nops, estimate = 0, 0, 0
    else:
        if args.algorithm is None or args.P is None:
            return _fail("give ALGO and -P N, or --file PATH (see collkit simulate -h)")
        source, P = args.algorithm, args.P
        esize = args.elem_size
        if args.bytes is not None:
            count = -(-args.bytes // esize)
        else:
            count = DEFAULT_COUNT if args.count is None else args.count
        vec: list[int] | None = None
        if args.counts is not None:
            count, vec = problem_counts(args, source.collective, P, None)
        root = 0 if args.root is None else check_root(args.root, P)
        placement = placement_of(args)
        estimate, nops = memory_estimate(
            source, P, count, esize, root, record, placement=placement, model=args.model, counts=vec
        )
    if record and nops > TIMELINE_MAX_OPS:
        return _fail(
            f"--timeline/--plot record every op: {nops:,} ops here (at most "
            f"{TIMELINE_MAX_OPS:,}); lower -P, or simulate without them"
        )
    avail = _available_memory()
    if avail is not None and estimate > avail:
        return _fail(
            f"this run needs about {estimate / 2**30:.1f} GiB ({nops:,} ops"
            + (", recorded for the timeline" if record else "")
            + f"), more than the {avail / 2**30:.1f} GiB available: lower -P"
            + (" or drop --timeline/--plot" if record else "")
        )
    if record and nops > TIMELINE_WARN_OPS:
        print(
            f"collkit simulate: recording {nops:,} ops for the timeline: this takes a while "
            f"(about {nops * 2e-6:.0f} s) and {nops * 200 / 2**30:.1f} GiB",
            file=sys.stderr,
        )
    try:
        # The model and run options, the same for a saved schedule and a generated one.
        run = dict(
            model=args.model,
            noise=args.noise,
            skew=args.skew,
            topology=args.topology,
            trials=args.trials,
            seed=args.seed,
            timeline=record,
            **params,
        )
        if args.file is not None:
            res = simulate_file(args.file, **run)
        else:
            res = simulate(
                source,
                args.P,
                count=count,
                elem_size=args.elem_size,
                root=root,
                placement=placement,
                counts=vec,
                **run,
            )
    except OSError as e:
        return _fail(f"cannot read '{args.file}': {e.strerror or e}")
    except MemoryError:
        what = f"'{args.file}'" if args.file is not None else f"P = {P} ({nops:,} ops"
        est = f"; estimated {estimate / 2**30:.1f} GiB)" if args.file is None else ""
        return _fail(f"out of memory simulating {what}{est}: lower -P or free memory")
    written: list[str] = []
    try:
        if args.timeline:
            from collkit.timeline import write_perfetto

            written.append(f"timeline: {write_perfetto(res, args.timeline)}")
        if args.plot:
            import matplotlib

            matplotlib.use("Agg")  # a file, never a window
            from collkit.plotting import save_figure
            from collkit.timeline import plot_timeline

            written.append(f"plot: {save_figure(plot_timeline(res), args.plot)}")
    except OSError as e:
        return _fail(f"cannot write {e.filename}: {e.strerror}")
    if args.json:
        print(row_to_json(_row(res, args, vec if args.file is None else None)))
        return 0
    print(res.summary())
    if args.per_rank:
        for r, t in enumerate(res.finish):
            print(f"rank {r:6d}  {format_ns(float(t))}")
    for line in written:
        print(line)
    return 0
