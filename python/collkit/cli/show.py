"""Show an algorithm's schedule as text, rank by rank.

Each rank's program is a DAG of ops on its buffers: `in` (the user's input), `out` (the user's
output) and scratch buffers s0, s1, ...; regions are [start:stop) in elements; `after` lists the
ops of the same rank an op waits on.

Examples:
  collkit show allreduce:rd -P 6
  collkit show allreduce:rd -P 1000000 --rank 0 --rank 999999     (one rank alone: instant)
  collkit show allreduce:rd -P 6 --stats
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from collkit.algorithms import Algorithm
from collkit.cli._common import (
    add_problem_arguments,
    check_root,
    parse_rank,
    placement_of,
    problem_counts,
)
from collkit.errors import InvalidArgumentError

NAME = "show"
HELP = "print a schedule, per rank, as text"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_problem_arguments(p, counts=True)
    p.add_argument(
        "--rank",
        type=parse_rank,
        action="append",
        metavar="R",
        help="show only this rank (repeatable); generated alone, so P may be huge",
    )
    p.add_argument("--stats", action="store_true", help="a summary instead of the ops")


def run(args: argparse.Namespace) -> int:
    from collkit import io

    algo: Algorithm = args.algorithm
    P: int = args.P
    count, vec = problem_counts(args, algo.collective, P, args.count)
    root = check_root(args.root, P)
    placement = placement_of(args)
    ranks: Sequence[int] = args.rank if args.rank else range(P)  # a range: P may be 2^31
    for r in args.rank or []:
        if not 0 <= r < P:  # main() prints it on stderr and exits 2
            raise InvalidArgumentError(f"--rank {r} is not in [0, {P}), the ranks of P = {P}")
    if args.stats:
        if args.rank:
            progs = [
                algo.generate_rank(
                    P, r, count, args.elem_size, root, placement=placement, counts=vec
                )
                for r in ranks
            ]
            ops = sum(len(p) for p in progs)
        else:  # refused above MAX_COUNT_P (2^24): "count some ranks", here with --rank R
            ops = algo.count_ops(P, count, args.elem_size, root, placement=placement, counts=vec)
        print(f"{algo.canonical} P={P} count={count}: {ops} ops over {len(ranks)} rank(s)")
        return 0
    if not args.rank and P > 64:
        raise InvalidArgumentError(
            f"P = {P} would print {P} ranks; pick some with --rank R (or use collkit export)"
        )
    print(
        io.header_text(
            algo.canonical, P, count, args.elem_size, root, placement=placement, counts=vec
        ),
        end="",
    )
    for r in ranks:
        prog = algo.generate_rank(
            P, r, count, args.elem_size, root, placement=placement, counts=vec
        )
        print(
            io.rank_to_text(
                prog,
                count=count,
                P=P,
                elem_size=args.elem_size,
                collective=algo.collective,
                root=root,
            ),
            end="",
        )
    return 0
