"""Find, per (collective, P, size range), the algorithm that is really faster than the MPI's own
call, and write it where programs will use it.

  collkit tune allreduce -np 2,4 --sizes 8B..1MiB
  collkit tune allreduce bcast -np 4 --sizes 8B..64KiB --top-k 5 -o tune-results
  collkit tune allreduce -np 64,1024 --sizes 8B..1MiB --simulate loggp --param L=1us

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
import datetime as _dt
import math
import sys
from pathlib import Path

from collkit.bench import machine_name
from collkit.cli._common import (
    _same_file,
    add_json_argument,
    check_launchable,
    console,
    input_file,
    output_dir,
    parse_p_list,
    print_json_lines,
    table,
)
from collkit.cli.bench import parse_sizes
from collkit.collectives import COLLECTIVES
from collkit.errors import CollkitError, InvalidArgumentError
from collkit.mpi import IMPLEMENTATIONS, build, find_mpi
from collkit.progress import CampaignProgress
from collkit.results import ResultStore, Row
from collkit.tune.campaign import TuneOptions, check_only, folder_rows, measure, simulate_rows
from collkit.tune.select import Choice, choose, rules
from collkit.tune.table import MAX_BLOCK, Rule, Table, load, save

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
        default=[4],
        metavar="LIST",
        help="process counts: 4, 2,4, 2..8 (default 4)",
    )
    p.add_argument(
        "--sizes",
        type=parse_sizes,
        default=parse_sizes("8B..1MiB"),
        metavar="LIST",
        help="bytes per rank: 8B..1MiB (powers of two; the default), 8,64,1KiB",
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
        default=0.0,
        help="the speedup interval must lie above 1 + this (default 0)",
    )
    p.add_argument(
        "--routing-us",
        type=float,
        default=None,
        metavar="US",
        help="µs a call pays for the interposition library's routing to collkit, added to every "
        "collkit candidate before choosing (programs pay it, tune's calls through the C API do "
        "not); default: measured now on one rank (~0.1 µs on a 2-core VM); 0: not added",
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
    p.add_argument("--mpiexec", default=None, help="the MPI's mpiexec / mpirun")
    p.add_argument("--mpi-prefix", default=None, help="the MPI's install prefix")
    p.add_argument("-o", "--out", default="tune-results", help="output folder (tune-results)")
    p.add_argument("--no-plot", action="store_true", help="do not draw tune.png")
    add_json_argument(
        p,
        "one decision per (collective, P, bytes) a line, with the tuning table's keys "
        "(algorithm, median_us, native_median_us, speedup, p_value, ci95) and the table's "
        "columns (rounds_won, rounds_compared, mpi_algorithm, note); the rows are in tune.jsonl",
    )


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
    for col in (
        "coll",
        "P",
        "bytes",
        "source",
        "collkit winner",
        "speedup",
        "95% CI",
        "p",
        "rounds won",
        "MPI's own",
        "note",
    ):
        t.add_column(
            col,
            justify="left" if col in ("coll", "collkit winner", "MPI's own", "source") else "right",
        )
    for c in choices:
        w = c.collkit
        t.add_row(
            c.collective,
            str(c.P),
            str(c.bytes),
            c.source,
            w.algorithm if w else "native",
            f"{w.speedup:.2f}" if w else "",
            f"{w.ci95[0]:.2f}..{w.ci95[1]:.2f}" if w and not math.isnan(w.ci95[0]) else "",
            f"{w.p_value:.1e}" if w and not math.isnan(w.p_value) else "",
            f"{w.rounds_won}/{w.rounds_compared}" if w and w.interleaved else "",
            c.mpi.algorithm if c.mpi else "default",
            _note(c),
        )
    console().print(t)


def choice_json(c: Choice) -> dict[str, object]:
    """One decision as printed by `collkit tune --json`: the keys of a tuning-table rule
    (collkit.tune.table.Rule) for the one (collective, P, bytes), and the table's columns."""
    w = c.collkit
    nan = math.nan
    return {
        "collective": c.collective,
        "P": c.P,
        "bytes": c.bytes,
        "source": c.source,
        "algorithm": w.algorithm if w else "native",
        "median_us": w.median_us if w else nan,
        "native_median_us": w.native_median_us if w else nan,
        "speedup": w.speedup if w else nan,
        "p_value": w.p_value if w else nan,
        "ci95": list(w.ci95) if w else [nan, nan],
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
    parts = []
    if sus:
        parts.append(
            f"{len(sus)} suspect: " + "; ".join(f"{x.algorithm}: {x.suspect}" for x in sus[:2])
        )
    if lost:
        parts.append(
            f"{len(lost)} faster by median but lost a round: "
            + ", ".join(f"{x.algorithm} {x.rounds_won}/{x.rounds_compared}" for x in lost[:2])
        )
    return "; ".join(parts)[:200]


def plot(choices: list[Choice], path: Path, title: str) -> None:
    """Winner by P (rows) x size (columns); hatched cells are simulated."""
    from matplotlib import colormaps
    from matplotlib.patches import Rectangle

    from collkit.plotting import new_figure

    colls = sorted({c.collective for c in choices})
    fig = new_figure(
        figsize=(9, 1.2 + 1.1 * len(colls) + 0.35 * max(len({c.P for c in choices}), 1))
    )
    axes = fig.subplots(len(colls), 1, squeeze=False)
    for ax, coll in zip(axes[:, 0], colls, strict=True):
        cs = [c for c in choices if c.collective == coll]
        Ps = sorted({c.P for c in cs})
        sizes = sorted({c.bytes for c in cs})
        names = sorted({c.collkit.algorithm if c.collkit else "native" for c in cs})
        if "native" in names:
            names.remove("native")
            names.insert(0, "native")
        cmap = colormaps["tab20"]
        for c in cs:
            name = c.collkit.algorithm if c.collkit else "native"
            x, y = sizes.index(c.bytes), Ps.index(c.P)
            color = "#dddddd" if name == "native" else cmap(names.index(name) % 20)
            ax.add_patch(
                Rectangle(
                    (x, y), 1, 1, color=color, hatch="//" if c.source == "simulated" else None
                )
            )
            if c.collkit:
                ax.text(
                    x + 0.5,
                    y + 0.5,
                    f"{c.collkit.speedup:.2f}x",
                    ha="center",
                    va="center",
                    fontsize=6,
                )
        ax.set_xlim(0, len(sizes))
        ax.set_ylim(0, len(Ps))
        ax.set_xticks([i + 0.5 for i in range(len(sizes))])
        ax.set_xticklabels([_fmt(s) for s in sizes], rotation=60, fontsize=7)
        ax.set_yticks([i + 0.5 for i in range(len(Ps))])
        ax.set_yticklabels([f"P={P}" for P in Ps], fontsize=7)
        ax.set_title(coll, fontsize=9)
        handles = [
            Rectangle((0, 0), 1, 1, color="#dddddd" if n == "native" else cmap(names.index(n) % 20))
            for n in names
        ]
        ax.legend(handles, names, fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _fmt(n: int) -> str:
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k}{unit}"
    return f"{n}B"


def check_simulation_fits(Ps: list[int], model: str | None = None) -> None:
    """Refuse, with the estimate, a P whose simulation could not fit in the memory available
    (-np 2^31 grew to 24 GB and was killed): said before any candidate is simulated. The floor
    is collkit.simulate.memory_estimate's per-rank state, whatever the algorithm."""
    from collkit.cli.simulate import _available_memory
    from collkit.simulate import rank_memory_bytes

    avail = _available_memory()
    per_rank = rank_memory_bytes(model)
    for P in Ps:
        need = P * per_rank
        if avail is not None and need > avail:
            raise InvalidArgumentError(
                f"-np {P}: simulating it needs at least {need / 2**30:.1f} GiB "
                f"({per_rank} B per rank), more than the {avail / 2**30:.1f} GiB "
                "available: lower -np"
            )


# The files tune writes into its folder: none of them may be a file it reads.
WRITES = (
    "tune.jsonl",
    "tune.csv",
    "collkit-tuning.json",
    "tune.png",
    *(impl.tuning_file_name for impl in IMPLEMENTATIONS),
)


def existing_table(out: Path) -> Table | None:
    """The tuning table already in the folder (None: none), or an error: a file there that is
    not a table collkit reads must not be written over."""
    path = out / "collkit-tuning.json"
    if not path.exists() and not path.is_symlink():
        return None
    try:
        return load(path)
    except CollkitError as e:
        raise InvalidArgumentError(
            f"-o {out}: {path} is not a tuning table collkit can read ({str(e)[:300]}); tune "
            "would write over it: move it away, or give another -o folder"
        ) from None


def _rules(n: int) -> str:
    return f"{n} rule" if n == 1 else f"{n} rules"


def _rule_keys(rules: list[Rule]) -> str:
    by: dict[str, set[int]] = {}
    for r in rules:
        by.setdefault(r.collective, set()).update({r.P[0], r.P[1]})
    return "; ".join(f"{c} at P = {', '.join(map(str, sorted(ps)))}" for c, ps in by.items())


def _decides(r: Rule, keys: set[tuple[str, int]]) -> bool:
    return any(c == r.collective and r.P[0] <= P <= r.P[1] for c, P in keys)


def check_merge(
    old: Table | None, out: Path, label: str, block: int, machine: str, keys: set[tuple[str, int]]
) -> None:
    """An error, before any work, where this run would lose rules a user measured: measured
    rules of the folder's table for a (collective, P) it decides while it simulates, or measures
    with another MPI, machine or --block; or, measuring, any measured rules made another way
    (one table's measured rules come from one MPI on one machine)."""
    if old is None:
        return
    measured = [r for r in old.rules if r.source == "measured"]
    if not measured:
        return  # simulated rules are made again at will: replaced or kept, never refused
    if label.startswith("simulated"):
        hit = [r for r in measured if _decides(r, keys)]
        why = f"measured with {old.mpi}"
    else:
        why = (
            f"measured with {old.mpi}" if old.mpi != label
            else f"measured with --block {old.block}" if old.block != block
            else f"measured on {old.machine}" if old.machine != machine
            else ""
        )  # fmt: skip
        hit = measured if why else []
    if hit:
        raise InvalidArgumentError(
            f"-o {out}: its collkit-tuning.json holds {_rules(len(hit))} "
            f"({_rule_keys(hit)}) {why}; this run ({label}, --block {block}) would replace "
            "them: give another -o folder, or leave those collectives and P out"
        )


def merged_rules(
    old: Table | None, choices: list[Choice], keys: set[tuple[str, int]]
) -> tuple[list[Rule], list[Rule]]:
    """The table's rules, and those kept from the folder's table: for a (collective, P) this run
    decides (`keys`), its rules; for another that the folder's table has rules for, those rules
    (a campaign of bcast keeps allreduce's); for the rest, the rules of the folder's rows."""
    kept = [r for r in old.rules if not _decides(r, keys)] if old else []
    fresh = [
        c
        for c in choices
        if (c.collective, c.P) in keys
        or not any(c.collective == r.collective and r.P[0] <= c.P <= r.P[1] for r in kept)
    ]
    out = sorted(rules(fresh) + kept, key=lambda r: (r.collective, r.P, r.bytes))
    return out, kept


def refuse_inputs_among_outputs(args: argparse.Namespace) -> None:
    """An error if --profile or --hosts is one of the files tune writes into -o (by inode)."""
    for flag, path in (("--profile", args.profile), ("--hosts", args.hosts)):
        if path is None:
            continue
        for name in WRITES:
            if _same_file(str(Path(args.out) / name), path):
                raise InvalidArgumentError(
                    f"{flag} {path} is {Path(args.out) / name}, which tune writes: writing it "
                    "would destroy the input; give another -o folder"
                )


def run(args: argparse.Namespace) -> int:
    if args.simulate is not None and not args.simulate.strip():
        raise InvalidArgumentError("--simulate '': give a model (postal, loggp, ...)")
    if not args.out.strip():
        raise InvalidArgumentError("-o '': give the folder to write into")
    simulating = args.simulate is not None
    if args.top_k < 1 or args.iters < 5 or args.warmup < 0 or args.max_ms < 1:
        raise InvalidArgumentError("--top-k >= 1, --iters >= 5, --warmup >= 0, --max-ms >= 1")
    if not 1 <= args.block <= MAX_BLOCK:
        raise InvalidArgumentError(f"--block {args.block} must be in 1..{MAX_BLOCK}")
    if args.block != 1 and simulating:
        raise InvalidArgumentError("--block is for measuring, not --simulate")
    if not 1 <= args.rounds <= 100:
        raise InvalidArgumentError(f"--rounds {args.rounds} must be in 1..100")
    if not 0 < args.alpha < 1 or not 0 <= args.min_gain < math.inf:  # NaN fails both
        raise InvalidArgumentError("--alpha must be in (0, 1) and --min-gain >= 0")
    if args.routing_us is not None and not 0 <= args.routing_us < 1e6:
        raise InvalidArgumentError(f"--routing-us {args.routing_us} must be in [0, 1e6)")
    if args.routing_us is not None and simulating:
        raise InvalidArgumentError("--routing-us is for measuring, not --simulate")
    params: dict[str, str] = {}
    for kv in args.param:
        k, eq, v = kv.partition("=")
        if not eq or not k:
            raise InvalidArgumentError(f"--param '{kv}' must be KEY=VALUE")
        params[k] = v
    if params and not simulating:
        raise InvalidArgumentError("--param is for --simulate")
    if args.profile is not None:
        if not simulating:
            raise InvalidArgumentError("--profile is for --simulate")
        from collkit.profile import load_profile

        prof = load_profile(input_file(args.profile, "--profile"))
        params = {**prof.param_strings(args.simulate), **params}
    if args.hosts is not None:
        if simulating:
            raise InvalidArgumentError("--hosts is for measuring, not --simulate")
        input_file(args.hosts, "--hosts")
    opts = TuneOptions(
        collectives=list(dict.fromkeys(args.collectives)),
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
    )
    if opts.only is not None:
        check_only(opts.collectives, opts.only)
    model = None
    if simulating:
        from collkit.sim import Model

        model = Model.make(args.simulate, **params)  # a bad name or value before any file
        check_simulation_fits(opts.P, args.simulate)
    else:
        check_launchable(opts.P, args.hosts)
    refuse_inputs_among_outputs(args)
    out = output_dir(args.out, "-o")  # a folder: an existing one, or one made in an existing one
    old = existing_table(out)
    date = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    machine = machine_name()

    mpi = None
    if model is not None:
        label = f"simulated, {args.simulate}"
    else:
        mpi = find_mpi(args.mpiexec, args.mpi_prefix)
        label = mpi.version
    keys = {(c, P) for c in opts.collectives for P in opts.P}
    check_merge(old, out, label, opts.block, machine, keys)
    store = ResultStore(out / "tune.jsonl")
    if mpi is not None:
        print(f"MPI: {mpi.describe()}; rows: {store.jsonl}", file=sys.stderr)
    # rows done of rows planned, with an ETA: a bar on a terminal, a line every 10 s otherwise
    with CampaignProgress("tune" + (" (simulated)" if args.simulate else "")) as ticker:

        def progress(msg: str, row: Row | None = None) -> None:
            if row is None:
                ticker.message(msg)
            elif row.error:
                ticker.message(f"  {row.algorithm} {row.bytes:>9} B  error: {row.error[:80]}")

        if model is not None:
            rows = simulate_rows(opts, args.simulate, params, store, progress, ticker)
        else:
            assert mpi is not None
            rows = measure(opts, mpi, store, progress, ticker)
    routing_us = 0.0
    if mpi is not None:
        from collkit.mpi.routing import routing_cost_us

        how = "--routing-us"
        if args.routing_us is not None:
            routing_us = args.routing_us
        else:
            try:  # the rows are measured: a failure here must not lose them
                routing_us, how = routing_cost_us(mpi), "measured now"
            except CollkitError as e:
                how = f"not measured ({str(e)[:200]}): collkit's own calls compared"
        print(
            f"routing: {routing_us * 1e3:.0f} ns a call through libcollkit_pmpi ({how}), added "
            "to every collkit candidate",
            file=sys.stderr,
        )
    mine = {(r.collective, r.P, r.bytes) for r in rows}
    # The files are chosen from every row of the folder made this way, not only this run's:
    # a campaign of bcast into a folder that holds allreduce keeps allreduce's rules.
    every = folder_rows(
        store,
        source="simulated" if model is not None else "measured",
        mpi=model.describe() if model is not None else label,
        block=opts.block,
        machine=None if model is not None else machine,
    )
    choices = choose(every, alpha=args.alpha, min_gain=args.min_gain, routing_us=routing_us)
    shown = [c for c in choices if (c.collective, c.P, c.bytes) in mine]
    if not shown:
        print("collkit tune: no usable rows (every candidate failed?)", file=sys.stderr)
        return 1
    if args.json:
        print_json_lines(choice_json(c) for c in shown)
    else:
        _print(shown, label)
    merged, kept = merged_rules(old, choices, keys)
    if kept:
        print(
            f"kept {_rules(len(kept))} of {out / 'collkit-tuning.json'} for collectives and P "
            f"this run does not tune ({_rule_keys(kept)})",
            file=sys.stderr,
        )
    # A table with measured rules is described by its measurement (a simulated run adds rules
    # for other P, each saying it was simulated).
    keep_label = old is not None and model is not None and any(r.source == "measured" for r in kept)
    table = Table(
        rules=merged,
        mpi=old.mpi if keep_label and old else label,
        machine=old.machine if keep_label and old else machine,
        date=date,
        block=old.block if keep_label and old else opts.block,
    )
    written = [store.jsonl, store.csv]
    save(table, out / "collkit-tuning.json")
    written.append(out / "collkit-tuning.json")
    header = f"collkit tune {' '.join(opts.collectives)} -np {args.P} ({label}, {date})"
    # Each MPI's own file: for the MPI measured, its forced algorithms that won; for the others,
    # their algorithms of the winners' families (the registry's mpi_equivalents).
    for impl in IMPLEMENTATIONS:
        if keep_label:
            if (out / impl.tuning_file_name).exists():
                print(
                    f"{impl.tuning_file_name} left as it is: it holds the measured campaign's "
                    "choices (a simulated run adds only to collkit-tuning.json)",
                    file=sys.stderr,
                )
            continue
        measured = mpi is not None and isinstance(mpi, impl)
        program = build(mpi, ["collkit_bench"]) / "collkit_bench" if measured and mpi else None
        path = impl.write_tuning_file(choices, out, header, program)
        if path is not None:
            written.append(path)
        else:
            print(
                f"{impl.tuning_file_name} not written: it is built on the {impl.kind} library's "
                f"own selection tree (tune with {impl.kind} to get it)",
                file=sys.stderr,
            )
    if not args.no_plot:
        plot(choices, out / "tune.png", f"collkit tune: winner by P x size ({label})")
        written.append(out / "tune.png")
    print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    print(
        f"use it: collkit run -np {args.P[-1]} --tuning {out / 'collkit-tuning.json'} -- "
        "./app args",
        file=sys.stderr,
    )
    return 0
