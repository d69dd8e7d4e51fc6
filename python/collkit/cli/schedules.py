"""Rank the recursive multiplying schedules of an allreduce by their modelled cost.

Every valid schedule for P ranks (factored a8,a4; split c6m2,a2,a2,e6m2; merged m1g2a3,n1g3a2,
with at most --max-fanout sends per rank and stage) is costed in the pipelining postal model of
Ruefenacht et al. 2017 (Eq. 3 per stage: alpha_p + b (alpha_r + n beta + n gamma)) and listed
cheapest first.
For large P (enumeration is infeasible past a few thousand ranks) --search finds the cheapest
schedule by dynamic programming over the factorisations instead.

examples:
  collkit schedules allreduce -P 96 --model pipelined-postal --alpha-p 1.34us --alpha-r 0.34us \\
      --bytes 8 --top 10
  collkit schedules allreduce -P 7 --verify
  collkit schedules allreduce -P 1000000 --search
  collkit schedules allreduce -P 1..16 --totals

Times take a unit (ps, ns, us, ms, s; a bare number is ns); per-byte costs are ns/B or a
bandwidth (2.5GB/s); sizes are bytes or 4KiB.
"""

from __future__ import annotations

import argparse
import bisect
import sys

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
    parse_bytes,
    parse_nonnegative,
    parse_per_byte,
    parse_positive,
    parse_time,
    print_json_lines,
)
from collkit.errors import InvalidArgumentError, UnsupportedError

NAME = "schedules"
HELP = "rank recursive multiplying schedules by modelled cost (enumeration or search)"

MODELS = ("pipelined-postal",)
MAX_ENUMERATE_P = 4096  # beyond this, --search
MAX_TOTALS_P = 1 << 18  # counting takes ~50 s at 2^20 here and grows past it
# Counting the merged family takes ~P x fan-out steps: 9 s at P = 8192 with fan-out 8191.
MAX_TOTALS_WORK = 1 << 25


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("collective", metavar="COLLECTIVE", help="allreduce (the only one rm serves)")
    add_p_argument(p, lists=True)
    p.add_argument(
        "--model",
        choices=MODELS,
        default="pipelined-postal",
        help="cost model (default pipelined-postal)",
    )
    p.add_argument(
        "--alpha-p",
        type=parse_time,
        default=1340.0,
        metavar="TIME",
        help="overlappable latency per stage (default 1.34us, Ruefenacht et al. 2017 Table 1 min)",
    )
    p.add_argument(
        "--alpha-r",
        type=parse_time,
        default=340.0,
        metavar="TIME",
        help="non-overlappable cost per message (default 0.34us)",
    )
    p.add_argument(
        "--beta",
        type=parse_per_byte,
        default=0.0,
        metavar="PER_BYTE",
        help="time per byte on the wire (default 0)",
    )
    p.add_argument(
        "--gamma",
        type=parse_per_byte,
        default=0.0,
        metavar="PER_BYTE",
        help="time per byte reduced (default 0)",
    )
    p.add_argument(
        "--bytes",
        type=parse_bytes,
        default=8,
        metavar="N",
        help="message size per rank (default 8)",
    )
    p.add_argument(
        "--max-fanout",
        type=parse_positive,
        default=DEFAULT_MAX_FANOUT,
        metavar="B",
        help=f"most sends per rank and stage (default {DEFAULT_MAX_FANOUT})",
    )
    p.add_argument(
        "--family",
        action="append",
        choices=FAMILIES,
        default=None,
        help="only these families (repeatable; default all)",
    )
    p.add_argument(
        "--top",
        type=parse_positive,
        default=10,
        metavar="K",
        help="rows to show per P (default 10)",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--search",
        action="store_true",
        help="find the cheapest schedule by search instead of enumerating",
    )
    mode.add_argument(
        "--totals", action="store_true", help="only the number of schedules per family"
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="also verify each listed schedule (count 4) with the verifier",
    )
    add_json_argument(
        p,
        "one schedule a line (P, model_rank, schedule, family, model_us, sim_us, sim_rank, "
        "verified); with --totals one P a line (schedules, by_family)",
    )
    p.add_argument(
        "--simulate",
        type=parse_nonnegative,
        default=2000,
        metavar="K",
        help="simulate the model's best K schedules too (pipelined postal, same "
        "parameters) and rank them by makespan; 0: off (default 2000)",
    )


def _verify(schedule: str, P: int) -> str:
    from collkit.algorithms import generate
    from collkit.verify import verify

    name = f"allreduce:rm({schedule})" if schedule else "allreduce:rm"
    r = verify(generate(name, P=P, count=4), commutative=True)
    if not r.ok:
        return "FAILED"
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
        name = f"allreduce:rm({sched})" if sched else "allreduce:rm"
        r = sim(
            name,
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
        v = _verify(sched, P) if verify else None
        status = status or (1 if v == "FAILED" else 0)
        out.append(
            {
                "P": P,
                "ranked_by": by,
                "model_rank": i,
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
            v = _verify(sched, P)
            status = status or (1 if v == "FAILED" else 0)
            line += f"  {v}"
        print(line)
    return status


def _ranks(values: dict[str, float]) -> dict[str, int]:
    """1 + how many are strictly better (ties share a rank); values rounded to 0.1 ns."""
    keyed = {k: round(v, 4) for k, v in values.items()}
    ordered = sorted(keyed.values())
    return {k: 1 + bisect.bisect_left(ordered, v) for k, v in keyed.items()}


def run(args: argparse.Namespace) -> int:
    if args.collective != "allreduce":
        raise InvalidArgumentError(
            f"'{args.collective}': recursive multiplying schedules exist for allreduce only"
        )
    sec = units.seconds
    model = PipelinedPostal(sec(args.alpha_p), sec(args.alpha_r), sec(args.beta), sec(args.gamma))
    families = tuple(args.family) if args.family else FAMILIES
    status = 0
    info = sys.stderr if args.json else sys.stdout
    # No schedule of P ranks sends more than P - 1 messages a stage: a larger limit is that one.
    fanout = max(useful_fanout(P, args.max_fanout) for P in args.P)
    print(
        f"model {args.model}: alpha_p = {model.alpha_p * 1e6:g} us, alpha_r = "
        f"{model.alpha_r * 1e6:g} us, beta = {model.beta * 1e9:g} ns/B, gamma = "
        f"{model.gamma * 1e9:g} ns/B; n = {args.bytes} B; fan-out <= {fanout}",
        file=info,
    )
    for P in args.P:
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
            found = search(P, model, args.bytes, args.max_fanout, families)
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
            keep = max(args.top, args.simulate)
            ranked = rank_schedules(P, model, args.bytes, args.max_fanout, families, top=keep)
            print(
                f"\nP = {P}: {total} schedules, best {min(args.top, len(ranked))} by model",
                file=info,
            )
        model_rank = _ranks({r.schedule: r.cost * 1e6 for r in ranked})
        sims = None
        if args.simulate > 0 and not searched:
            sims = _simulate([r.schedule for r in ranked[: args.simulate]], P, model, args.bytes)
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
            status = st or status
            continue
        status = _table(rows, sims, sim_rank, P, args.verify) or status
        if sims and len(sims) > 1:
            by_sim = sorted(
                ranked[: len(sims)], key=lambda r: (sims[r.schedule], model_rank[r.schedule])
            )[: args.top]
            print(f"best {len(by_sim)} by simulation (# is the model's rank):")
            rows = [(model_rank[r.schedule], r.schedule, r.family, r.cost) for r in by_sim]
            status = _table(rows, sims, sim_rank, P, args.verify) or status
    return status
