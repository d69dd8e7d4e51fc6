"""Find, per (collective, P, size range), the algorithm that is really faster than the MPI's own
call, and write it where programs will use it.

  collkit tune allreduce -np 2,4 --sizes 8B..1MiB
  collkit tune allreduce bcast -np 4 --sizes 8B..64KiB --top-k 5 -o tune-results
  collkit tune allreduce -np 64,1024 --sizes 8B..1MiB --simulate loggp --param L=1us
  collkit tune allreduce --nodes 8,64 --ppn 16 --sizes 8B..1MiB --simulate loggp \
      --param L=1us --topology 'fattree(k=16,hop=500ns,intra=50ns)'
  collkit tune allgatherv gatherv -np 2,4 --sizes 8B..64KiB --counts 'random(7,1)'

Candidates: collkit's registry with parameter grids (every algorithm at its defaults, the model's
top-k `rm` schedules for each P, Bruck radixes 2..8, powers of 2, ~sqrt P and P, k-nomial
radices, binomial bcast and reduce in 2 KiB segments when a size is above 4 KiB), the MPI's
native call, and
the MPI's own algorithms forced one at a time (MPICH CVARs / Open MPI coll_tuned / Intel
MPI I_MPI_ADJUST_<COLL>). Each is timed
by collkit's bench driver with its per-iteration samples kept, interleaved with the native call
in --rounds rounds (native re-measured around every candidate, a core-to-core probe around every
block, the load in every row); a candidate wins only when it beat native in every round whose
probes agree, is not suspect (a speedup > 10x, or native moving between its blocks: re-measured at
most twice, never written as a win), and a one-sided Mann-Whitney test (p < --alpha) and the
bootstrap 95% interval of its speedup over the native call (all above 1 + --min-gain) agree, else
the native call stays. The MPI's own algorithms are forced per job and so cannot be interleaved
with native: they are measured and shown, never chosen. Adjacent sizes with the same winner merge
into one range.

Every candidate and native are measured in each call pattern of --patterns (docs/tuning.md,
"Patterns": back to back, a barrier before each call as IMB does by default, a rotating root,
other buffers each call, evicted caches); a candidate wins only if it wins in every one (or in
the one --decide-by names), its speedup the smallest of its patterns' (each is in the table and
in the rule's `speedups`).

The irregular collectives (those whose MPI call takes a count vector) are measured at each
--counts form (default equal(1) and random(1,2)) at each size, the size the vector's mean
entry; the rules of those whose every rank has the whole vector (allgatherv, reduce_scatter)
are keyed by the call's total bytes, the others' are one rule of every size per P: the
candidate that won at every size and form, else native (docs/tuning.md, "Tuning them"). scan
and exscan take one count per rank, as allreduce.

Writes into -o DIR: tune.jsonl / .csv (every row, appended as measured: rerun the same command
to resume; nothing is measured twice), collkit-tuning.json (for libcollkit_pmpi.so and `collkit
run --tuning`), mpich-selection.json (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE; tuning with
MPICH only), openmpi-rules.txt (coll_tuned_dynamic_rules_filename), impi-tuning.env (Intel MPI's
I_MPI_ADJUST_<COLL> variables) and tune.png (winner by P x size). --simulate tunes from the
simulator instead (for P this machine cannot run), and the rules say `simulated`. The files are
chosen from every row in the folder made the same way (the MPI or model, machine and --block), so
a campaign of another collective or P adds to the folder's table and keeps its rules; a folder
whose table was made another way, or holds a collkit-tuning.json that is not a table, is refused
before anything runs (give another -o).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from collkit.cli._common import (
    add_json_argument,
    console,
    counts_form,
    default_np,
    parse_p_list,
    print_json_lines,
    table,
)
from collkit.cli.bench import parse_sizes
from collkit.collectives import COLLECTIVES
from collkit.errors import InvalidArgumentError
from collkit.progress import CampaignProgress
from collkit.results import PATTERNS
from collkit.tune.campaign import TuneOptions, shapes_of
from collkit.tune.irregular import BY_P_ALONE, BY_TOTAL, DEFAULT_FORMS, IRREGULAR
from collkit.tune.run import tune
from collkit.tune.select import Choice, shaped_keys

NAME = "tune"
HELP = "pick the really-faster algorithm per size and write tuning files (collkit and the MPIs')"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "collectives",
        nargs="+",
        choices=COLLECTIVES,
        metavar="COLLECTIVE",
        help=f"one or more of {', '.join(COLLECTIVES)}",
    )
    p.add_argument(
        "-P",
        "-np",
        "--np",
        dest="P",
        type=parse_p_list,
        default=None,
        metavar="LIST",
        help="process counts: 4, 2,4, 2..8 (default 4; in a Slurm allocation, its SLURM_NTASKS)",
    )
    p.add_argument(
        "--sizes",
        type=parse_sizes,
        default=parse_sizes("8B..1MiB"),
        metavar="LIST",
        help="bytes per rank: 8B..1MiB (powers of two; the default), 8,64,1KiB; for an "
        "irregular collective, the mean entry of its count vector in bytes (per block; "
        "per pair for an all-to-all)",
    )
    p.add_argument(
        "--counts",
        type=counts_form,
        action="append",
        default=[],
        metavar="FORM",
        help=f"for the irregular collectives ({', '.join(IRREGULAR)}): the shape of the "
        "count vector, in bench's grammar (1,0,5 / equal(n) "
        "/ random(seed,max) / skewed(max[,seed]) / zeros-but-one[(n[,k])]), each measured at "
        "every --sizes size as its mean entry (random(seed,2n), skewed's maximum, "
        "zeros-but-one's n and a list's scale set by the size; seed, k and a list's "
        "proportions kept); repeatable. Default: "
        + " and ".join(DEFAULT_FORMS)
        + ", the regular layout and a random one with zeros (seed 1), at every size. "
        f"{' and '.join(BY_TOTAL)} rules are keyed by the call's total bytes; "
        f"{', '.join(BY_P_ALONE)} get one rule of every size, a candidate that won at every "
        "size and form, else native (docs/tuning.md)",
    )
    p.add_argument("--top-k", type=int, default=3, help="rm schedules per P, by the model (3)")
    p.add_argument(
        "--only",
        default=None,
        metavar="NAMES",
        help="comma list: only these collkit candidates (e.g. rd,ring)",
    )
    p.add_argument(
        "--no-mpi-algos",
        action="store_true",
        help="leave out the MPI's own algorithms (the MPI files then map by family)",
    )
    p.add_argument("--iters", type=int, default=100, help="timed iterations per row (100)")
    p.add_argument(
        "--block",
        type=int,
        default=1,
        metavar="N",
        help="calls per timed sample: 1 (default) times one call after a barrier, the latency "
        "of an isolated call; N > 1 times N back-to-back calls, as OSU measures, which is what "
        "a program that calls the collective in a loop sees (--block 16 for such programs). "
        "The table records it",
    )
    p.add_argument(
        "--patterns",
        type=parse_patterns,
        default=None,
        metavar="LIST",
        help="comma list of the call patterns every candidate is measured in, of "
        f"{', '.join(PATTERNS)} (docs/tuning.md, Patterns); a rule needs a win in each. "
        "Default: back_to_back and barrier (at --block 1 they time the same, one call after a "
        "barrier: back_to_back alone), rotate_root for rooted collectives, and evict where "
        "its work before the calls costs < 30%% of a row's --max-ms",
    )
    p.add_argument(
        "--decide-by",
        default=None,
        choices=PATTERNS,
        metavar="PATTERN",
        help="the one pattern a rule must win in (the others are measured and shown); "
        "default: every pattern measured. Alone, only it is measured",
    )
    p.add_argument("--warmup", type=int, default=10, help="untimed calls first (10)")
    p.add_argument("--max-ms", type=int, default=500, help="time budget per row in ms (500)")
    p.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="interleaved rounds per size: native around every candidate; a win must hold in "
        "each (3)",
    )
    p.add_argument("--alpha", type=float, default=0.01, help="significance level (0.01)")
    p.add_argument(
        "--min-gain",
        type=float,
        default=0.1,
        help="the speedup interval must lie above 1 + this (default 0.1: gains of a few per "
        "cent in tune's jobs lose in IMB under load)",
    )
    p.add_argument(
        "--routing-us",
        type=float,
        default=None,
        metavar="US",
        help="µs a call pays for the interposition library's routing to collkit, added to every "
        "collkit candidate before choosing (programs pay it, tune's calls through the C API do "
        "not); this figure for every collective; default: measured now per kind of call "
        "(a regular call's ~10 ns, an irregular one's ~60 ns on a 2-core VM); 0: not added",
    )
    p.add_argument(
        "--simulate",
        default=None,
        metavar="MODEL",
        help="tune from the simulator with this model (postal, loggp, ...)",
    )
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="K=V",
        help="a model parameter for --simulate, e.g. L=1us (repeatable)",
    )
    p.add_argument(
        "--profile",
        default=None,
        metavar="FILE.json",
        help="for --simulate: the model's parameters from a machine profile (`collkit "
        "calibrate`); --param values win",
    )
    p.add_argument(
        "--hosts",
        default=None,
        metavar="FILE",
        help="host file, to run across nodes (`collkit cluster up` writes one)",
    )
    p.add_argument(
        "--nodes",
        type=parse_p_list,
        default=None,
        metavar="LIST",
        help="with --ppn: measure each shape nodes x ranks per node (P their product, shapes "
        "of one rank left out; no -np), on an emulated cluster's --hosts or in a Slurm "
        "allocation; with --simulate, simulate each on those nodes (the node-aware algorithms, "
        "allreduce:hier ..., among the candidates); a P of several shapes gets rules per shape",
    )
    p.add_argument(
        "--ppn",
        type=parse_p_list,
        default=None,
        metavar="LIST",
        help="with --nodes: the ranks per node of the shapes",
    )
    p.add_argument(
        "--topology",
        default=None,
        metavar="SPEC",
        help="for --simulate: collkit simulate's latency per pair of ranks, e.g. "
        "fattree(k=16,hop=500ns,intra=50ns) (its node size from --ppn)",
    )
    p.add_argument("--mpiexec", default=None, help="the MPI's mpiexec / mpirun")
    p.add_argument("--mpi-prefix", default=None, help="the MPI's install prefix")
    p.add_argument("-o", "--out", default="tune-results", help="output folder (tune-results)")
    p.add_argument("--no-plot", action="store_true", help="do not draw tune.png")
    add_json_argument(
        p,
        "one decision per (collective, P, bytes) a line, with the tuning table's keys "
        "(algorithm, median_us, native_median_us, speedup, p_value, ci95, speedups) and the "
        "table's columns (rounds_won, rounds_compared, mpi_algorithm, note); the rows are in "
        "tune.jsonl",
    )


def parse_patterns(text: str) -> list[str]:
    """'back_to_back,barrier' -> ['back_to_back', 'barrier'] (repeats once); an unknown or empty
    name is an argparse error naming the known ones."""
    names = [x.strip() for x in text.split(",")]
    if not text.strip() or not all(names):
        raise argparse.ArgumentTypeError(
            f"{text[:60]!r}: give a comma list of {', '.join(PATTERNS)}"
        )
    bad = [x for x in names if x not in PATTERNS]
    if bad:
        raise argparse.ArgumentTypeError(
            f"unknown pattern {bad[0][:40]!r} (one of {', '.join(PATTERNS)})"
        )
    return list(dict.fromkeys(names))


def split_names(text: str) -> list[str]:
    """'rd,rm(a2,a2)' -> ['rd', 'rm(a2,a2)']: commas inside parentheses belong to the name."""
    out, cur, depth = [], "", 0
    for ch in text:
        depth += (ch == "(") - (ch == ")" and depth > 0)
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    out.append(cur.strip())
    return [x for x in out if x]


def _print(choices: list[Choice], mpi_label: str) -> None:
    t = table(f"winners per size ({mpi_label}); speedup = native median / winner median")
    forms = any(c.counts for c in choices)
    for col in (
        "coll",
        "P",
        "bytes",
        *(["counts"] if forms else []),
        "source",
        "collkit winner",
        "speedup",
        "per pattern",
        "95% CI",
        "p",
        "rounds won",
        "MPI's own",
        "note",
    ):
        t.add_column(
            col,
            justify="left"
            if col in ("coll", "counts", "collkit winner", "MPI's own", "source")
            else "right",
        )
    shaped = shaped_keys(choices)
    for c in choices:
        w = c.collkit
        t.add_row(
            c.collective,
            f"{c.P} ({c.nodes}x{c.ppn or '?'})" if (c.collective, c.P) in shaped else str(c.P),
            str(c.bytes),
            *([c.counts] if forms else []),
            c.source,
            w.algorithm if w else "native",
            f"{w.speedup:.2f}" if w else "",
            _per_pattern(w.speedups) if w else "",
            f"{w.ci95[0]:.2f}..{w.ci95[1]:.2f}" if w and not math.isnan(w.ci95[0]) else "",
            f"{w.p_value:.1e}" if w and not math.isnan(w.p_value) else "",
            f"{w.rounds_won}/{w.rounds_compared}" if w and w.interleaved else "",
            c.mpi.algorithm if c.mpi else "default",
            _note(c),
        )
    console().print(t)


def _per_pattern(speedups: dict[str, float]) -> str:
    return " ".join(f"{p} {x:.2f}" for p, x in speedups.items())


def choice_json(c: Choice) -> dict[str, object]:
    """One decision as printed by `collkit tune --json`: the keys of a tuning-table rule
    (collkit.tune.table.Rule) for the one (collective, P, bytes), and the table's columns."""
    w = c.collkit
    nan = math.nan
    return {
        "collective": c.collective,
        "P": c.P,
        "bytes": c.bytes,  # irregular: the whole vector's (an all-to-all's: the matrix's)
        "counts": c.counts,  # irregular: the form of the row's count vector ("" otherwise)
        "nodes": c.nodes,  # the rows' shape (null: not said)
        "ppn": c.ppn,
        "source": c.source,
        "algorithm": w.algorithm if w else "native",
        "median_us": w.median_us if w else nan,
        "native_median_us": w.native_median_us if w else nan,
        "speedup": w.speedup if w else nan,
        "p_value": w.p_value if w else nan,
        "ci95": list(w.ci95) if w else [nan, nan],
        "speedups": dict(w.speedups) if w else {},
        "rounds_won": w.rounds_won if w and w.interleaved else None,
        "rounds_compared": w.rounds_compared if w and w.interleaved else None,
        "mpi_algorithm": c.mpi.algorithm if c.mpi else "default",
        "note": _note(c),
    }


def _note(c: Choice) -> str:
    """Why faster-looking candidates did not win: suspect rows, rounds lost."""
    if c.source != "measured":
        return ""
    sus = [x for x in c.candidates if x.suspect]
    lost = [
        x
        for x in c.candidates
        if not x.suspect and x.interleaved and x.speedup > 1 and x.rounds_won < x.rounds_compared
    ]
    # faster in some patterns, not in every one that decides
    partial = [
        x
        for x in c.candidates
        if x.lost_in and any(v > 1 for v in x.speedups.values()) and x.interleaved
    ]
    parts = []
    if partial:
        parts.append(
            f"{len(partial)} did not win in every pattern: "
            + "; ".join(
                f"{x.algorithm}: {_per_pattern(x.speedups)}, not in {','.join(x.lost_in)}"
                for x in partial[:2]
            )
        )
    if sus:
        parts.append(
            f"{len(sus)} suspect: " + "; ".join(f"{x.algorithm}: {x.suspect}" for x in sus[:2])
        )
    if lost:
        parts.append(
            f"{len(lost)} faster by median but lost a round: "
            + ", ".join(f"{x.algorithm} {x.rounds_won}/{x.rounds_compared}" for x in lost[:2])
        )
    # timed in a job of their own (they won in theirs, not against the MPI's call alone)
    solo = [x for x in c.candidates if not math.isnan(x.alone_us) and x.algorithm not in c.winners]
    if solo:
        parts.append(
            "alone, no win over the MPI's call alone: "
            + ", ".join(
                f"{x.algorithm} {x.alone_us:.2f} us against {x.alone_native_us:.2f}"
                for x in solo[:2]
            )
        )
    return "; ".join(parts)[:200]


def options_of(args: argparse.Namespace) -> TuneOptions:
    """The campaign the command line asks for (its checks are collkit.tune.check's)."""
    shapes: list[tuple[int, int]] = []
    if args.nodes is not None or args.ppn is not None:
        if args.P is not None:
            raise InvalidArgumentError("-np and --nodes/--ppn: the shapes give the P (give one)")
        shapes = shapes_of(args.nodes or [], args.ppn or [])
        args.P = sorted({n * k for n, k in shapes})
    default_np(args, 4, lists=True)
    params: dict[str, str] = {}
    for kv in args.param:
        k, eq, v = kv.partition("=")
        if not eq or not k:
            raise InvalidArgumentError(f"--param '{kv}' must be KEY=VALUE")
        params[k] = v
    return TuneOptions(
        collectives=list(args.collectives),
        P=args.P,
        sizes=args.sizes,
        top_k=args.top_k,
        iterations=args.iters,
        warmup=args.warmup,
        max_ms=args.max_ms,
        mpi_algorithms=not args.no_mpi_algos,
        only=split_names(args.only) if args.only else None,
        rounds=args.rounds,
        hosts=args.hosts,
        block=args.block,
        patterns=args.patterns,
        decide_by=args.decide_by,
        alpha=args.alpha,
        min_gain=args.min_gain,
        routing_us=args.routing_us,
        simulate=args.simulate,
        params=params,
        profile=args.profile,
        mpiexec=args.mpiexec,
        mpi_prefix=args.mpi_prefix,
        out=args.out,
        plot=not args.no_plot,
        shapes=shapes,
        topology=args.topology,
        counts=list(args.counts),
    )


def _say(msg: str) -> None:
    print(msg, file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    opts = options_of(args)
    result = tune(opts, say=_say, progress=CampaignProgress)
    if not result.choices:
        print("collkit tune: no usable rows (every candidate failed?)", file=sys.stderr)
        return 1
    if args.json:
        print_json_lines(choice_json(c) for c in result.choices)
    else:
        _print(result.choices, result.label)
    print("wrote " + ", ".join(str(p) for p in result.written), file=sys.stderr)
    print(
        f"use it: collkit run -np {opts.P[-1]} --tuning {Path(opts.out) / 'collkit-tuning.json'} "
        "-- ./app args",
        file=sys.stderr,
    )
    return 0
