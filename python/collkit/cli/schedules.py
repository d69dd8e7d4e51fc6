"""Rank a collective's algorithms by their cost: every registered algorithm of any collective,
simulated under one cost model; for allreduce also every recursive multiplying schedule, by
the pipelining postal model.

Every algorithm (all collectives): tune's candidates (every registered algorithm that can run at
P, with its parameter grid: k-nomial radixes, Bruck radixes, bucket's tori, segmented trees;
for allreduce the model's best --top rm schedules) are simulated under --model with its
parameters, and listed fastest first. Simulated, not the registry's closed forms: those are
the alpha-beta-gamma model's and many algorithms declare none (bcast:binomial, bcast:pipeline,
...), so a ranking mixing formulas and simulations would compare two models. Under --model
postal the registered formula at the same alpha, beta and gamma is printed beside (formula);
an algorithm that cannot run at P (its restrictions, a node-aware one without --rpn, too large
to simulate) is left out with a note. --rpn N and --order put every candidate on the same nodes
(the node-aware ones, allreduce:hier ..., are then ranked too), and --topology adds collkit
simulate's latency per pair of ranks (its node size from --rpn).

Model parameters are collkit simulate's flags, each the model parameter of its name:
pipelined-postal --alpha-p, --alpha-r, --beta; postal --alpha, --beta; logp --L, --o, --g;
loggp --G as well; loggops --O, --S as well; every model --gamma, --reduce-base, --copy-beta.
A flag the model has no parameter of is refused; the rest keep the simulator's defaults. Under
a model other than pipelined-postal, --alpha-p / --alpha-r (default 1.34us / 0.34us) only
choose which rm schedules are simulated.

Recursive multiplying (allreduce, with --model pipelined-postal): every valid schedule for P
ranks (factored a8,a4; split c6m2,a2,a2,e6m2; merged m1g2a3,n1g3a2, with at most --max-fanout
sends per rank and stage) is costed in the pipelining postal model of Ruefenacht et al. 2017
(Eq. 3 per stage: alpha_p + b (alpha_r + n beta + n gamma)) and listed cheapest first, then its
best by simulation. For large P (enumeration is infeasible past a few thousand ranks) --search
finds the cheapest schedule by dynamic programming over the factorisations instead. --family,
--max-fanout, --search, --totals and --simulate are about rm schedules only; --rm-only leaves
out the ranking of every algorithm.

examples:
  collkit schedules bcast -P 1024 --bytes 64 --top 10
  collkit schedules bcast -P 64,1024 --bytes 1MiB --model loggp --L 1us --o 200ns --g 200ns \\
      --G 0.1ns
  collkit schedules alltoall -P 96 --bytes 1KiB --model postal --alpha 1us --beta 0.1ns
  collkit schedules allreduce -P 64 --model postal --rpn 8 \\
      --topology 'fattree(k=16,hop=500ns,intra=50ns)'
  collkit schedules allreduce -P 96 --model pipelined-postal --alpha-p 1.34us --alpha-r 0.34us \\
      --bytes 8 --top 10
  collkit schedules allreduce -P 7 --verify --rm-only
  collkit schedules allreduce -P 1000000 --search
  collkit schedules allreduce -P 1..16 --totals

Times take a unit (ps, ns, us, ms, s; a bare number is ns); per-byte costs are ns/B or a
bandwidth (2.5GB/s); sizes are bytes or 4KiB.
"""

from __future__ import annotations

import argparse
import bisect
import sys
from typing import TYPE_CHECKING, TextIO

from collkit import units
from collkit.analysis.recmult import (
    PipelinedPostal,
    Ranked,
    count_schedules,
    rank_schedules,
    search,
)
from collkit.analysis.recmult.enumerate import DEFAULT_MAX_FANOUT, FAMILIES, useful_fanout
from collkit.analysis.recmult.timelines import simulator
from collkit.cli._common import (
    add_json_argument,
    add_p_argument,
    add_placement_arguments,
    parse_bytes,
    parse_nonnegative,
    parse_per_byte,
    parse_positive,
    parse_time,
    placement_of,
    print_json_lines,
)
from collkit.collectives import COLLECTIVES, PER_BLOCK
from collkit.errors import InvalidArgumentError, UnsupportedError

if TYPE_CHECKING:
    from collkit.placement import Placement
    from collkit.ranking import AlgorithmRanking
    from collkit.sim import Model

NAME = "schedules"
HELP = (
    "rank every algorithm of a collective by simulated cost; allreduce's recursive multiplying "
    "schedules by modelled cost too"
)

RM_MODEL = "pipelined-postal"  # the model the rm enumeration, search and totals rank in
MAX_ENUMERATE_P = 4096  # beyond this, --search
MAX_TOTALS_P = 1 << 18  # counting takes ~50 s at 2^20 here and grows past it
# Counting the merged family takes ~P x fan-out steps: 9 s at P = 8192 with fan-out 8191.
MAX_TOTALS_WORK = 1 << 25
# The flags given a dest of their own: the rm model's, with its defaults.
_RM_FLAGS = ("alpha_p", "alpha_r", "beta", "gamma")


def _model_names() -> tuple[str, ...]:
    try:
        from collkit.sim.options import MODELS
    except ImportError:  # no simulator built in: the rm model alone
        return (RM_MODEL,)
    return tuple(MODELS)


def _other_params() -> list[tuple[str, str]]:
    """(name, doc) of the simulator's model parameters that have no flag of their own here."""
    try:
        from collkit.sim.options import LOCAL_PARAMS, MODELS, PARAM_DOCS
    except ImportError:
        return []
    names: list[str] = []
    for params in [*MODELS.values(), LOCAL_PARAMS]:
        names += [n for n in params if n not in names and n not in _RM_FLAGS]
    return [(n, PARAM_DOCS.get(n, "")) for n in names]


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "collective",
        metavar="COLLECTIVE",
        help="the collective: bcast, reduce, allgather, alltoall, allreduce, ... (`collkit "
        "algorithms` lists them)",
    )
    add_p_argument(p, lists=True)
    p.add_argument(
        "--model",
        choices=_model_names(),
        default=RM_MODEL,
        help="cost model every algorithm is simulated under (default pipelined-postal, the "
        "one the rm schedules are also ranked in)",
    )
    p.add_argument(
        "--alpha-p",
        type=parse_time,
        default=1340.0,
        metavar="TIME",
        help="pipelined postal: overlappable latency per stage (default 1.34us, Ruefenacht "
        "et al. 2017 Table 1 min)",
    )
    p.add_argument(
        "--alpha-r",
        type=parse_time,
        default=340.0,
        metavar="TIME",
        help="pipelined postal: non-overlappable cost per message (default 0.34us)",
    )
    p.add_argument(
        "--beta",
        type=parse_per_byte,
        default=None,
        metavar="PER_BYTE",
        help="postal models: time per byte on the wire (default 0; LogGP's is --G)",
    )
    p.add_argument(
        "--gamma",
        type=parse_per_byte,
        default=None,
        metavar="PER_BYTE",
        help="time per byte reduced, every model (default 0)",
    )
    g = p.add_argument_group(
        "other model parameters (as collkit simulate's; a flag the model has not is refused)"
    )
    for name, doc in _other_params():
        g.add_argument(_flag(name), dest=f"param_{name}", default=None, metavar="VALUE", help=doc)
    p.add_argument(
        "--bytes",
        type=parse_bytes,
        default=8,
        metavar="N",
        help="message size per rank, per block for " + ", ".join(PER_BLOCK) + " (default 8)",
    )
    add_placement_arguments(p)
    p.add_argument(
        "--topology",
        default=None,
        metavar="SPEC",
        help="every algorithm: collkit simulate's latency per pair of ranks, e.g. "
        "fattree(k=16,hop=100ns,intra=50ns) (its node size from --rpn)",
    )
    p.add_argument(
        "--max-ops",
        type=parse_positive,
        default=None,
        metavar="N",
        help="leave out an algorithm whose schedule has more ops (default 10000000: seconds each)",
    )
    p.add_argument(
        "--max-fanout",
        type=parse_positive,
        default=DEFAULT_MAX_FANOUT,
        metavar="B",
        help=f"rm: most sends per rank and stage (default {DEFAULT_MAX_FANOUT})",
    )
    p.add_argument(
        "--family",
        action="append",
        choices=FAMILIES,
        default=None,
        help="rm: only these families of recursive multiplying schedules, in both rankings "
        "(repeatable; default all); the other algorithms are ranked as without it",
    )
    p.add_argument(
        "--top",
        type=parse_positive,
        default=10,
        metavar="K",
        help="rows to show per P and ranking (default 10); allreduce: the rm model's best K "
        "schedules enter the ranking of every algorithm",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--search",
        action="store_true",
        help="rm: find the cheapest schedule by search instead of enumerating",
    )
    mode.add_argument(
        "--totals", action="store_true", help="rm: only the number of schedules per family"
    )
    mode.add_argument(
        "--rm-only",
        action="store_true",
        help="allreduce: only the rm schedules, not the ranking of every algorithm",
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="also verify each listed schedule (count 4) with the verifier",
    )
    add_json_argument(
        p,
        "one row a line: every algorithm (P, bytes, ranked_by 'simulation', rank, algorithm, "
        "family, sim_us, formula_us, model, verified); rm schedules (P, ranked_by 'model', "
        "model_rank, algorithm, schedule, family, model_us, sim_us, sim_rank, verified); with "
        "--totals one P a line (schedules, by_family)",
    )
    p.add_argument(
        "--simulate",
        type=parse_nonnegative,
        default=2000,
        metavar="K",
        help="rm: simulate the model's best K schedules too (pipelined postal, same "
        "parameters) and rank them by makespan; 0: off (default 2000)",
    )


def _rm_name(schedule: str) -> str:
    return f"allreduce:rm({schedule})" if schedule else "allreduce:rm"


def _verify(name: str, P: int, placement: Placement | None = None) -> str:
    from collkit.algorithms import Algorithm, generate
    from collkit.errors import CollkitError
    from collkit.verify import verify

    try:
        # An algorithm right only for exact ops (allreduce:swing_lat) is verified as one.
        exact = Algorithm(name).needs_exact
        sched = generate(name, P=P, count=4, placement=placement)
        r = verify(sched, commutative=True, exact=exact)
    except CollkitError as e:
        return f"not verified: {str(e).splitlines()[0]}"
    if not r.ok:
        return "FAILED"
    if exact:
        return "ok, exact ops"
    return "ok, any op" if r.consistent_noncommutative else "ok, commutative"


def _simulate(
    schedules: list[str], P: int, model: PipelinedPostal, nbytes: int
) -> dict[str, float] | None:
    """Simulated makespans (us) of allreduce:rm(schedule), or None without a simulator."""
    try:
        sim = simulator()
    except UnsupportedError:
        return None
    out = {}
    for sched in schedules:
        r = sim(
            _rm_name(sched),
            P=P,
            bytes=nbytes,
            model="pipelined-postal",
            alpha_p=model.alpha_p * 1e9,
            alpha_r=model.alpha_r * 1e9,
            beta=model.beta * 1e9,
            gamma=model.gamma * 1e9,
        )
        out[sched] = float(r.makespan) / 1e3
    return out


def _records(
    rows: list[tuple[int, str, str, float]],
    sims: dict[str, float] | None,
    sim_rank: dict[str, int],
    P: int,
    verify: bool,
    by: str,
) -> tuple[list[dict[str, object]], int]:
    """The table's rows as `collkit schedules --json` prints them, and the exit status."""
    status, out = 0, []
    for i, sched, fam, cost in rows:
        v = _verify(_rm_name(sched), P) if verify else None
        status = status or (1 if v == "FAILED" else 0)
        out.append(
            {
                "P": P,
                "ranked_by": by,
                "model_rank": i,
                "algorithm": _rm_name(sched),
                "schedule": sched,
                "family": fam,
                "model_us": cost * 1e6,
                "sim_us": sims.get(sched) if sims is not None else None,
                "sim_rank": sim_rank.get(sched),
                "verified": v,
            }
        )
    return out, status


def _table(
    rows: list[tuple[int, str, str, float]],
    sims: dict[str, float] | None,
    sim_rank: dict[str, int],
    P: int,
    verify: bool,
) -> int:
    status = 0
    width = max([len(r[1]) for r in rows] + [8])
    header = f"{'#':>3}  {'schedule':<{width}}  {'family':<8}  {'model (us)':>10}"
    if sims is not None:
        header += f"  {'sim (us)':>9}  {'sim #':>5}"
    if verify:
        header += "  verified"
    print(header)
    for i, sched, fam, cost in rows:
        line = f"{i:>3}  {sched or '(none)':<{width}}  {fam:<8}  {cost * 1e6:>10.3f}"
        if sims is not None:
            if sched in sims:
                line += f"  {sims[sched]:>9.3f}  {sim_rank[sched]:>5}"
            else:
                line += f"  {'-':>9}  {'-':>5}"
        if verify:
            v = _verify(_rm_name(sched), P)
            status = status or (1 if v == "FAILED" else 0)
            line += f"  {v}"
        print(line)
    return status


def _ranks(values: dict[str, float]) -> dict[str, int]:
    """1 + how many are strictly better (ties share a rank); values rounded to 0.1 ns."""
    keyed = {k: round(v, 4) for k, v in values.items()}
    ordered = sorted(keyed.values())
    return {k: 1 + bisect.bisect_left(ordered, v) for k, v in keyed.items()}


def _sim_model(args: argparse.Namespace) -> Model:
    """The simulator's model for the ranking of every algorithm: each flag is the parameter of
    its name; one the model has not is refused (--alpha-p / --alpha-r apart: outside the
    pipelining postal model they choose the rm schedules only)."""
    from collkit.sim import Model
    from collkit.sim.options import LOCAL_PARAMS, MODELS

    allowed = set(MODELS[args.model]) | set(LOCAL_PARAMS)
    given: dict[str, float | str] = {
        k[len("param_") :]: v
        for k, v in vars(args).items()
        if k.startswith("param_") and v is not None
    }
    for k in ("beta", "gamma"):
        if getattr(args, k) is not None:
            given[k] = getattr(args, k)
    if args.model == RM_MODEL:
        given.update(alpha_p=args.alpha_p, alpha_r=args.alpha_r)
    extra = sorted(set(given) - allowed)
    if extra:
        flags = ", ".join(_flag(x) for x in extra)
        hint = " (LogGP's time per byte is --G)" if "beta" in extra else ""
        raise InvalidArgumentError(
            f"{flags}: not a parameter of model {args.model}{hint}; its parameters: "
            f"{', '.join(_flag(x) for x in sorted(allowed))}"
        )
    return Model.make(args.model, **given)


def _every_algorithm(
    args: argparse.Namespace,
    model: Model,
    P: int,
    rm: list[tuple[str, str]],
    info: TextIO,
) -> int:
    """Print (or --json) the ranking of every algorithm of the collective at P."""
    from collkit.ranking import MAX_OPS, rank_algorithms
    from collkit.sim.memory import available_memory

    placement = placement_of(args)
    r: AlgorithmRanking = rank_algorithms(
        args.collective,
        P,
        args.bytes,
        model,
        rm=rm,
        max_ops=args.max_ops or MAX_OPS,
        available=available_memory(),
        placement=placement,
        topology=args.topology,
    )
    rows = r.rows[: args.top]
    where = ""
    if placement is not None:
        where += f", {placement.rpn} ranks per node ({placement.order})"
    if r.topology != "none":
        where += f", on {r.topology}"
    print(
        f"\nP = {P}, n = {r.bytes} B{where}: every {args.collective} algorithm, {len(r.rows)} "
        f"simulated (best {len(rows)}), fastest first",
        file=info,
    )
    status = 0
    verified = (
        {x.algorithm: _verify(x.algorithm, P, placement) for x in rows} if args.verify else {}
    )
    if any(v == "FAILED" for v in verified.values()):
        status = 1
    if args.json:
        print_json_lines(
            {
                "P": P,
                "bytes": r.bytes,
                "ranked_by": "simulation",
                "rank": x.rank,
                "algorithm": x.algorithm,
                "family": x.family,
                "sim_us": x.sim_us,
                "formula_us": x.formula_us,
                "exact_op": x.exact_op,
                "model": model.describe(),
                "rpn": placement.rpn if placement is not None else None,
                "order": placement.order if placement is not None else None,
                "topology": r.topology,
                "verified": verified.get(x.algorithm),
            }
            for x in rows
        )
    else:
        formula = model.name == "postal" and r.topology == "none"
        width = max([len(x.algorithm) + x.exact_op for x in rows] + [9])
        header = f"{'#':>3}  {'algorithm':<{width}}  {'sim (us)':>11}"
        header += f"  {'formula (us)':>12}" if formula else ""
        print(header + ("  verified" if args.verify else ""))
        for x in rows:
            name = x.algorithm + ("*" if x.exact_op else "")
            line = f"{x.rank:>3}  {name:<{width}}  {x.sim_us:>11.3f}"
            if formula:
                line += f"  {x.formula_us:>12.3f}" if x.formula_us is not None else f"  {'-':>12}"
            print(line + (f"  {verified[x.algorithm]}" if args.verify else ""))
        if any(x.exact_op for x in rows):
            print(
                "* right only for an op exact under any grouping (integer sum, product, min or "
                "max, a logical or bitwise op): the MPI side hands the others to the MPI",
                file=info,
            )
    for lo in r.left_out:
        print(f"left out: {lo.algorithm}: {lo.reason}", file=info)
    return status


def _check(args: argparse.Namespace) -> None:
    """Refuse what cannot be done before any work."""
    if args.collective not in COLLECTIVES:
        raise InvalidArgumentError(
            f"unknown collective '{args.collective}' (known: {', '.join(COLLECTIVES)})"
        )
    if args.collective != "allreduce":
        rm_only = [
            f
            for f, on in (
                ("--search", args.search),
                ("--totals", args.totals),
                ("--rm-only", args.rm_only),
                ("--family", args.family),
            )
            if on
        ]
        if rm_only:
            raise InvalidArgumentError(
                f"{', '.join(rm_only)}: recursive multiplying schedules exist for allreduce "
                f"only; `collkit schedules {args.collective} -P ...` without these ranks every "
                f"{args.collective} algorithm"
            )
    placement_of(args)  # --order without --rpn
    if args.search or args.totals or args.rm_only:
        given = [f for f, v in (("--rpn", args.rpn), ("--topology", args.topology)) if v]
        if given:
            raise InvalidArgumentError(
                f"{', '.join(given)}: the placement and the topology are the simulator's, for "
                "the ranking of every algorithm; --search, --totals and --rm-only rank rm "
                "schedules in the pipelining postal model, which has neither"
            )
    if not (args.search or args.totals or args.rm_only):
        try:
            from collkit.ranking import problem_of
            from collkit.sim.topology import parse_topology
        except ImportError:
            return  # no simulator: run() says so
        problem_of(args.collective, args.bytes)
        args.topology = parse_topology(args.topology)  # said before any simulation
    if args.model != RM_MODEL and (args.search or args.totals or args.rm_only):
        raise InvalidArgumentError(
            "--search, --totals and --rm-only rank rm schedules in the pipelining postal "
            f"model: leave out --model {args.model}"
        )


def run(args: argparse.Namespace) -> int:
    _check(args)
    sec = units.seconds
    beta = args.beta if args.beta is not None else 0.0
    gamma = args.gamma if args.gamma is not None else 0.0
    pp = PipelinedPostal(sec(args.alpha_p), sec(args.alpha_r), sec(beta), sec(gamma))
    families = tuple(args.family) if args.family else FAMILIES
    status = 0
    info = sys.stderr if args.json else sys.stdout
    every = not (args.search or args.totals or args.rm_only)
    model: Model | None = None
    if every:
        try:
            model = _sim_model(args)
        except ImportError:
            print(
                "(no ranking of every algorithm: the simulator, collkit.simulate, is not built in)",
                file=info,
            )
    rm_tables = args.collective == "allreduce" and args.model == RM_MODEL
    # No schedule of P ranks sends more than P - 1 messages a stage: a larger limit is that one.
    fanout = max(useful_fanout(P, args.max_fanout) for P in args.P)
    if args.collective == "allreduce":
        what = "rm schedules by" if rm_tables else "rm schedules simulated: the best by"
        print(
            f"{what} model {RM_MODEL}: alpha_p = {pp.alpha_p * 1e6:g} us, alpha_r = "
            f"{pp.alpha_r * 1e6:g} us, beta = {pp.beta * 1e9:g} ns/B, gamma = "
            f"{pp.gamma * 1e9:g} ns/B; n = {args.bytes} B; fan-out <= {fanout}",
            file=info,
        )
    if model is not None:
        print(f"every algorithm simulated under {model.describe()}", file=info)
    for P in args.P:
        if args.collective != "allreduce":
            if model is not None:
                status = _every_algorithm(args, model, P, [], info) or status
            continue
        if args.totals:
            if P > MAX_TOTALS_P:
                raise InvalidArgumentError(
                    f"P = {P}: counting every schedule would take minutes or hours "
                    f"(--totals serves P <= 2^18); --search finds the best one"
                )
            f = useful_fanout(P, args.max_fanout)
            if "merged" in families and P * f > MAX_TOTALS_WORK:
                raise InvalidArgumentError(
                    f"P = {P} with --max-fanout {args.max_fanout}: counting the merged "
                    f"schedules would take minutes or hours (--totals serves P x fan-out <= "
                    f"2^25; here {P * f}); lower --max-fanout or leave out --family merged"
                )
            c = count_schedules(P, args.max_fanout, families)
            parts = ", ".join(f"{k} {v}" for k, v in c.items())
            if args.json:
                print_json_lines([{"P": P, "schedules": sum(c.values()), "by_family": c}])
            else:
                print(f"P = {P}: {sum(c.values())} schedules ({parts})")
            continue
        searched = args.search or P > MAX_ENUMERATE_P
        if searched:
            found = search(P, pp, args.bytes, args.max_fanout, families)
            print(
                f"\nP = {P}: search over {found.candidates} candidates in {found.seconds:.3f} s",
                file=info,
            )
            ranked = [Ranked(found.schedule, found.family, found.cost, 0)]
            total = 1
        else:
            # Only the rows shown and simulated, not every schedule (millions at P = 4096 with
            # a large fan-out): the same first rows as the full ranking.
            total = sum(count_schedules(P, args.max_fanout, families).values())
            keep = max(args.top, args.simulate if rm_tables else 0)
            ranked = rank_schedules(P, pp, args.bytes, args.max_fanout, families, top=keep)
            if rm_tables:
                print(
                    f"\nP = {P}: {total} schedules, best {min(args.top, len(ranked))} by model",
                    file=info,
                )
        if rm_tables:
            status = _rm_tables(args, P, pp, ranked, total, searched, info) or status
        if model is not None:
            rm = [(r.schedule, r.family) for r in ranked[: args.top]]
            status = _every_algorithm(args, model, P, rm, info) or status
    return status


def _rm_tables(
    args: argparse.Namespace,
    P: int,
    pp: PipelinedPostal,
    ranked: list[Ranked],
    total: int,
    searched: bool,
    info: TextIO,
) -> int:
    """The rm schedules by the model (and by simulation, same model and parameters)."""
    status = 0
    model_rank = _ranks({r.schedule: r.cost * 1e6 for r in ranked})
    sims = None
    if args.simulate > 0 and not searched:
        sims = _simulate([r.schedule for r in ranked[: args.simulate]], P, pp, args.bytes)
        if sims is None:
            print(
                "(no simulated column: the simulator, collkit.simulate, is not built in)",
                file=info,
            )
        elif total > len(sims):
            print(f"(simulated: the model's best {len(sims)} of {total})", file=info)
    sim_rank = _ranks(sims) if sims else {}
    rows = [(model_rank[r.schedule], r.schedule, r.family, r.cost) for r in ranked[: args.top]]
    if args.json:
        recs, st = _records(rows, sims, sim_rank, P, args.verify, "model")
        print_json_lines(recs)
        return st
    status = _table(rows, sims, sim_rank, P, args.verify) or status
    if sims and len(sims) > 1:
        by_sim = sorted(
            ranked[: len(sims)], key=lambda r: (sims[r.schedule], model_rank[r.schedule])
        )[: args.top]
        print(f"best {len(by_sim)} by simulation (# is the model's rank):")
        rows = [(model_rank[r.schedule], r.schedule, r.family, r.cost) for r in by_sim]
        status = _table(rows, sims, sim_rank, P, args.verify) or status
    return status
