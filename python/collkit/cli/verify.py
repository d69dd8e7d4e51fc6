"""Prove an algorithm correct over a sweep of process counts and counts.

For each P and count, the verifier executes the schedule symbolically and checks that every
rank ends with the collective's result, that every reduced element has the same reduction tree
on every rank (in rank order unless --commutative), that every send has its receive, that
nothing deadlocks and that no buffer is overwritten while a message is in flight.

Examples:
  collkit verify allreduce:rd -P 1..1024
  collkit verify allreduce:rd -P 2^10,2^12 --count 0,1,7
  collkit verify --file my-schedule.txt
Exit status: 0 all verified, 1 some failed, 2 bad input.
"""

from __future__ import annotations

import argparse
import time

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from collkit.algorithms import Algorithm
from collkit.cli._common import (
    add_json_argument,
    add_problem_arguments,
    console,
    counts_of,
    input_file,
    placement_of,
    print_json_lines,
    problem_counts,
    refuse_problem_options,
)
from collkit.cli._common import table as new_table
from collkit.collectives import IN_PLACE_COLLECTIVES, ROOTED
from collkit.errors import InvalidArgumentError, UnsupportedError
from collkit.verify import VerifyResult, check_buffers_fit, verify

NAME = "verify"
HELP = "prove an algorithm correct over a sweep of P (or verify a schedule file)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_problem_arguments(
        p,
        lists=True,
        counts=True,
        optional="omit with --file",
        root_help=f"root of {' / '.join(ROOTED)} (default: every root for P <= 16, else 0 and P-1)",
    )
    p.set_defaults(root=None, elem_size=None)  # None: not given (refused with --file)
    op = p.add_mutually_exclusive_group()
    op.add_argument(
        "--commutative",
        dest="commutative",
        action="store_true",
        default=None,
        help="allow operands to be swapped (a commutative op)",
    )
    op.add_argument(
        "--non-commutative",
        dest="commutative",
        action="store_false",
        help="require rank order (default unless the algorithm needs commutativity)",
    )
    p.add_argument(
        "--exact",
        action="store_true",
        default=None,
        help="the op is exact under any grouping (an integer sum, a bitwise op): the ranks' "
        "trees may differ (default for an algorithm that needs such an op)",
    )
    p.add_argument(
        "--in-place",
        action="store_true",
        help="also check the schedule under MPI_IN_PLACE "
        f"({', '.join(IN_PLACE_COLLECTIVES)}): `in` aliases `out`",
    )
    p.add_argument("--file", metavar="PATH", help="verify a saved schedule (text, JSON or GOAL)")
    p.add_argument("-v", "--verbose", action="store_true", help="a row per case, not a summary")
    add_json_argument(
        p,
        "one case a line (algorithm, P, count, root, result: verified / failed / skipped, ops, "
        "messages, seconds, problems, diagnostics)",
    )


def case_json(
    r: VerifyResult | None,
    *,
    algorithm: str,
    P: int,
    count: int,
    root: int | None,
    seconds: float | None = None,
    skipped: str = "",
) -> dict[str, object]:
    """One verified (or failed, or skipped) case as `collkit verify --json` prints it."""
    return {
        "algorithm": algorithm,
        "P": P,
        "count": count,
        "root": root,
        "result": "skipped" if r is None else ("verified" if r.ok else "failed"),
        "ops": r.ops if r else None,
        "messages": r.messages if r else None,
        "seconds": seconds,
        "problems": r.total_problems if r else None,
        "diagnostics": [str(d) for d in r.diagnostics[:20]] if r else [],
        "reason": skipped,
    }


def algo_rooted(algo: Algorithm) -> bool:
    return algo.collective in ROOTED


def _roots(collective: str, P: int, root: int | None) -> list[int]:
    if collective not in ROOTED:
        return [0]
    if root is not None:
        return [root]
    return list(range(P)) if P <= 16 else sorted({0, P - 1})


def run(args: argparse.Namespace) -> int:
    out = console()
    if args.file is not None:
        from collkit import io

        if args.algorithm is not None or args.P is not None:
            raise InvalidArgumentError("give either ALGO -P LIST or --file PATH, not both")
        refuse_problem_options(args, "--file")
        s = io.load(str(input_file(args.file)))
        commutative = True if args.commutative is None else args.commutative
        exact = bool(args.exact)
        # The same checks as collkit.verify(s, in_place=...): the plain run, then MPI_IN_PLACE.
        r = verify(s, commutative=commutative, exact=exact)
        if r.ok and args.in_place:
            r = verify(s, commutative=commutative, in_place=True, exact=exact)
        if args.json:
            print_json_lines([case_json(r, algorithm=r.algorithm, P=r.P, count=r.count, root=None)])
        else:
            out.print(r.summary(), markup=False)
        return 0 if r.ok else 1
    if args.algorithm is None or args.P is None:
        raise InvalidArgumentError("give ALGO and -P LIST, or --file PATH (see collkit verify -h)")
    for P in args.P:
        if args.root is not None and args.root >= P and algo_rooted(args.algorithm):
            raise InvalidArgumentError(f"--root {args.root} is not a rank of P = {P}")
    algo: Algorithm = args.algorithm
    placement = placement_of(args)
    commutative = (
        algo.needs_commutative(placement) if args.commutative is None else args.commutative
    )
    exact = algo.needs_exact if args.exact is None else bool(args.exact)
    # With --counts, one case per P and root: the vector drawn for that P.
    vectors = {P: problem_counts(args, algo.collective, P, None) for P in args.P}
    cases = [
        (P, c, root)
        for P in args.P
        for c in ([vectors[P][0]] if args.counts is not None else counts_of(args))
        for root in _roots(algo.collective, P, args.root)
    ]
    for P, count, root in cases:  # every case before the first: main verified P = 1..2^30 for
        check_buffers_fit(algo.collective, P, count, root)  # minutes, then refused 2^31
    failures: list[VerifyResult] = []
    skipped: dict[str, list[int]] = {}
    passed: list[tuple[int, int, int, int, float]] = []
    records: list[dict[str, object]] = []  # every case, for --json
    t_all = time.perf_counter()
    with Progress(
        TextColumn("verifying {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console(stderr=True) if args.json else out,
        transient=True,
    ) as prog:
        task = prog.add_task(algo.canonical, total=len(cases))
        for P, count, root in cases:
            prog.update(task, description=f"{algo.canonical} P={P} count={count}")
            t0 = time.perf_counter()
            try:
                s = algo.generate(
                    P, count, args.elem_size or 8, root, placement=placement, counts=vectors[P][1]
                )
            except UnsupportedError as e:
                skipped.setdefault(str(e).split(": ", 1)[-1], []).append(P)
                records.append(
                    case_json(
                        None,
                        algorithm=algo.canonical,
                        P=P,
                        count=count,
                        root=root if algo_rooted(algo) else None,
                        skipped=str(e),
                    )
                )
                prog.advance(task)
                continue
            r = verify(s, commutative=commutative, exact=exact)
            if r.ok and args.in_place:
                r = verify(s, commutative=commutative, in_place=True, exact=exact)
            dt = time.perf_counter() - t0
            records.append(
                case_json(
                    r,
                    algorithm=algo.canonical,
                    P=P,
                    count=count,
                    root=root if algo_rooted(algo) else None,
                    seconds=dt,
                )
            )
            if r.ok:
                passed.append((P, count, r.ops, r.messages, dt))
            else:
                failures.append(r)
            prog.advance(task)
    elapsed = time.perf_counter() - t_all
    if args.json:
        print_json_lines(records)
        if not records or all(x["result"] == "skipped" for x in records):
            raise UnsupportedError(f"nothing verified: {algo.canonical} refused every P asked for")
        return 1 if failures else 0

    mode = (
        "exact (integer or bitwise)"
        if exact
        else "commutative"
        if commutative
        else "non-commutative (rank order)"
    )
    table = new_table(f"verify {algo.canonical} with a {mode} op")
    for col in ("P", "count", "result", "ops", "messages", "time"):
        table.add_column(col, justify="right" if col != "result" else "left", no_wrap=True)
    if args.verbose or len(passed) <= 12:
        for P, count, ops, msgs, dt in passed:
            table.add_row(
                str(P),
                str(count),
                "[green]verified[/green]",
                str(ops),
                str(msgs),
                f"{dt * 1e3:.1f} ms",
            )
    elif passed:
        ps = sorted({p for p, *_ in passed})
        big = max(passed, key=lambda x: x[0])
        table.add_row(
            f"{len(ps)} values in {ps[0]}..{ps[-1]}",
            ",".join(str(c) for c in sorted({c for _, c, *_ in passed})),
            "[green]all verified[/green]",
            f"≤ {big[2]}",
            f"≤ {big[3]}",
            f"{max(x[4] for x in passed) * 1e3:.1f} ms max",
        )
    for r in failures[:20]:
        first = r.diagnostics[0] if r.diagnostics else None
        table.add_row(
            str(r.P),
            str(r.count),
            f"[red]FAILED[/red] {first.kind if first else ''}",
            str(r.ops),
            str(r.messages),
            "",
        )
    out.print(table)
    for reason, ps in skipped.items():
        out.print(f"[yellow]skipped {len(set(ps))} P[/yellow] ({reason})")
    for r in failures[:3]:
        out.print(r.summary(), markup=False)
    total = len(passed) + len(failures)
    if total == 0:
        # Not "all verified: 0 of 0": the algorithm refused every case asked for.
        raise UnsupportedError(
            f"nothing verified: {algo.canonical} refused every P asked for (reasons above)"
        )
    status = "[green]all verified[/green]" if not failures else f"[red]{len(failures)} failed[/red]"
    out.print(f"{status}: {len(passed)} of {total} cases in {elapsed:.2f} s")
    return 1 if failures else 0
