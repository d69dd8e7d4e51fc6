"""Simulate an algorithm under a network cost model and print its makespan.

Times take units (ps, ns, us, ms, s; a bare number is ns); per-byte costs take '0.4ns', '0.4ns/B'
or a bandwidth such as '2.5GB/s'; sizes take '8', '8B', '4KiB', '1MiB'.

Models and their parameters (defaults):
{models}

  postal            a message costs alpha + n*beta; a rank sends one message at a time and its
                    send completes when the message has arrived (seed 002 Eq. 1)
  pipelined-postal  a rank's sends overlap: each occupies the send port alpha_r + n*beta, then
                    arrives alpha_p later; b sends issued together: alpha_p + b(alpha_r + n beta)
  logp/loggp/loggops
                    LogGOPSim semantics: sender CPU o+(n-1)O, gap g+(n-1)G, arrival o+L after the
                    send starts, receiver CPU o+max((n-1)O,(n-1)G); rendezvous above S bytes
  every model       reduce ops cost reduce_base + n*gamma, copies n*copy_beta, compute/sleep
                    their own time; local ops run one at a time per rank

Noise and skew specs: none, constant(50ns), uniform(0,100ns), exponential(50ns) (mean),
lognormal(100ns,0.5) (median, sigma), file(PATH) (measured times, one drawn per op).
Topology specs: fattree(k=16,hop=100ns), dragonfly(p=4,a=8,hop=100ns,global=500ns),
torus(dims=8x8x8,hop=50ns); each also takes rpn=N (ranks per node) and intra=TIME.

Example (seed 002's simulator settings, Fig. 18):
  collkit simulate allreduce:rd -P 8 --bytes 8 --model pipelined-postal --alpha-p 500ns \\
      --alpha-r 100ns --beta 0.4ns --reduce-base 10ns --timeline rd8.json --plot rd8.png
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from collkit.cli._common import algorithm, parse_bytes, parse_count, parse_p
from collkit.simulate import (
    LOCAL_PARAMS,
    MODELS,
    PARAM_DOCS,
    format_ns,
    param_help,
    simulate,
)

NAME = "simulate"
HELP = "simulate an algorithm under postal, pipelined postal or LogGOPS models"
__doc__ = (__doc__ or "").replace("{models}", param_help())


def _flag(param: str) -> str:
    return "--" + param.replace("_", "-")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "algorithm",
        type=algorithm,
        metavar="ALGO",
        help="algorithm name, e.g. allreduce:rd (see `collkit algorithms`)",
    )
    p.add_argument(
        "-P", dest="P", type=parse_p, required=True, metavar="N", help="number of processes"
    )
    size = p.add_mutually_exclusive_group()
    size.add_argument(
        "--bytes",
        type=parse_bytes,
        default=None,
        metavar="SIZE",
        help="bytes per rank (rounded up to whole elements); default one element",
    )
    size.add_argument(
        "--count",
        type=parse_count,
        default=None,
        metavar="C",
        help="elements per rank (alltoall: per block)",
    )
    p.add_argument(
        "--elem-size",
        type=parse_bytes,
        default=8,
        metavar="BYTES",
        help="bytes per element (default 8)",
    )
    p.add_argument("--root", type=int, default=0, help="root rank of reduce / bcast (default 0)")
    p.add_argument(
        "--model", default="postal", choices=list(MODELS), help="cost model (default postal)"
    )
    seen: set[str] = set()
    g = p.add_argument_group("model parameters (a time, per-byte cost or size; see above)")
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
                help=PARAM_DOCS.get(name, ""),
            )
    n = p.add_argument_group("noise, skew, topology, trials")
    n.add_argument(
        "--noise",
        default=None,
        metavar="SPEC",
        help="per-op delay distribution, e.g. exponential(50ns)",
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
    o.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    params = {
        k[len("param_") :]: v
        for k, v in vars(args).items()
        if k.startswith("param_") and v is not None
    }
    allowed = set(MODELS[args.model]) | set(LOCAL_PARAMS)
    extra = sorted(set(params) - allowed)
    if extra:
        flags = ", ".join(_flag(x) for x in extra)
        print(
            f"collkit simulate: error: {flags} not a parameter of model {args.model} "
            f"(its parameters: {', '.join(_flag(x) for x in sorted(allowed))})",
            file=sys.stderr,
        )
        return 2
    record = args.timeline is not None or args.plot is not None
    res = simulate(
        args.algorithm,
        args.P,
        count=args.count,
        bytes=args.bytes,
        elem_size=args.elem_size,
        root=args.root,
        model=args.model,
        noise=args.noise,
        skew=args.skew,
        topology=args.topology,
        trials=args.trials,
        seed=args.seed,
        timeline=record,
        **params,
    )
    if args.timeline:
        from collkit.timeline import write_perfetto

        write_perfetto(res, args.timeline)
    if args.plot:
        from collkit.timeline import plot_timeline

        plot_timeline(res, args.plot)
    if args.json:
        out = {
            "algorithm": res.algorithm,
            "P": res.P,
            "bytes": res.bytes_per_rank,
            "model": res.model.name,
            "params": {k: (v if math.isfinite(v) else None) for k, v in res.model.params.items()},
            "makespan_ns": res.makespan,
            "messages": res.messages,
            "bytes_sent": res.bytes_sent,
            "stats_ns": res.stats(),
            "events": res.events,
            "run_seconds": res.run_seconds,
        }
        if args.per_rank:
            out["finish_ns"] = res.finish.tolist()
        print(json.dumps(out))
        return 0
    print(res.summary())
    if args.per_rank:
        for r, t in enumerate(res.finish):
            print(f"rank {r:6d}  {format_ns(float(t))}")
    if args.timeline:
        print(f"timeline: {args.timeline}")
    if args.plot:
        print(f"plot: {args.plot}")
    return 0
