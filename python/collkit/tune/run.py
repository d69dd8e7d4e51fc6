"""A tuning campaign from start to end, as `collkit tune` runs it, for a program or a notebook:
``tune(TuneOptions(...)) -> TuneResult``.

Every option is checked, and the output folder's table read, before anything is measured or
simulated (check); then the rows are measured with the MPI (or simulated with a model), the
winners chosen from every row of the folder made the same way, and collkit's table, the MPIs'
files and the picture written into the folder (docs/tuning.md).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import math
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path

from collkit.bench import machine_name
from collkit.cli._common import _same_file, check_launchable, input_file, output_dir
from collkit.errors import CollkitError, InvalidArgumentError
from collkit.mpi import IMPLEMENTATIONS, MPI, build, find_mpi
from collkit.mpi.launch import allocation as launch_allocation
from collkit.progress import CampaignProgress
from collkit.results import ResultStore, Row
from collkit.sim import Model
from collkit.tune.campaign import (
    TuneOptions,
    after_barriers,
    check_only,
    check_patterns,
    default_patterns,
    evict_seconds,
    folder_rows,
    measure,
    patterns_for,
    simulate_rows,
    table_barriers,
)
from collkit.tune.irregular import IRREGULAR, batches, is_irregular
from collkit.tune.select import Choice, choose, irregular_notes, merge_forms, rules
from collkit.tune.table import MAX_BLOCK, Rule, Table, load, save

__all__ = ["WRITES", "TunePlan", "TuneResult", "check", "tune"]

# The files tune writes into its folder: none of them may be a file it reads.
WRITES = (
    "tune.jsonl",
    "tune.csv",
    "collkit-tuning.json",
    "tune.png",
    *(impl.tuning_file_name for impl in IMPLEMENTATIONS),
)


@dataclass
class TunePlan:
    """A campaign checked and ready to run (check): where it writes, what it runs on."""

    options: TuneOptions
    out: Path  # the folder, made if it was not there
    old: Table | None  # the folder's table before this run
    params: dict[str, str]  # the model's parameters (the profile's, then options.params)
    model: Model | None  # simulating: the model
    mpi: MPI | None  # measuring: the MPI
    label: str  # the MPI's version, or "simulated, MODEL"
    machine: str
    keys: set[tuple[str, int]]  # the (collective, P) this run decides


@dataclass
class TuneResult:
    """What a campaign found and wrote.

    `choices`: the decision per (collective, P, bytes) this run tuned; `every_choice`: those of
    every row in the folder made the same way (what the files are chosen from); `rows`: this
    run's rows; `table`: the collkit-tuning.json written (None with no usable rows: nothing is
    written then); `kept`: its rules kept from the folder's table; `notes`: what tune said on
    the way (the routing cost, rules kept, files not written)."""

    choices: list[Choice]
    every_choice: list[Choice]
    rows: list[Row]
    table: Table | None
    written: list[Path]
    label: str
    routing_us: dict[str, float]  # per collective tuned (collkit.mpi.routing)
    kept: list[Rule] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def routing(opts: TuneOptions, mpi: MPI, note: Callable[[str], None]) -> dict[str, float]:
    """Per collective tuned, µs a call pays for the interposition library's routing
    (--routing-us for every one, else measured: collkit.mpi.routing, once per kind of call)."""
    from collkit.mpi.routing import routing_cost_us, stand_in

    if opts.routing_us is not None:
        note(
            f"routing: {opts.routing_us * 1e3:.0f} ns a call through libcollkit_pmpi "
            "(--routing-us), added to every collkit candidate"
        )
        return dict.fromkeys(opts.collectives, opts.routing_us)
    measured: dict[str, float] = {}
    out: dict[str, float] = {}
    for c in opts.collectives:
        kind = stand_in(c)
        if kind not in measured:
            try:
                measured[kind] = routing_cost_us(mpi, collective=kind)
            except CollkitError as e:
                note(f"routing of {c}: not measured ({str(e)[:200]}): collkit's own calls compared")
                measured[kind] = 0.0
        out[c] = measured[kind]
    note(
        "routing: "
        + ", ".join(f"{c} {us * 1e3:.0f} ns" for c, us in out.items())
        + " a call through libcollkit_pmpi (measured now), added to every collkit candidate"
    )
    return out


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


def rules_text(n: int) -> str:
    return f"{n} rule" if n == 1 else f"{n} rules"


def rule_keys(rules: list[Rule]) -> str:
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
    rules of the folder's table for a (collective, P) it decides while it simulates; measuring
    with another MPI or on another machine, any measured rules (one table's measured rules come
    from one MPI on one machine); measuring with another --block, the measured rules it would
    keep beside its own (those it decides it measures again)."""
    if old is None:
        return
    measured = [r for r in old.rules if r.source == "measured"]
    if not measured:
        return  # simulated rules are made again at will: replaced or kept, never refused
    if label.startswith("simulated"):
        hit = [r for r in measured if _decides(r, keys)]
        why = f"measured with {old.mpi}"
    elif old.mpi != label or old.machine != machine:
        why = f"measured with {old.mpi}" if old.mpi != label else f"measured on {old.machine}"
        hit = measured
    else:
        # Another --block on the same MPI and machine: the rules this run decides are measured
        # again (replaced, their rows kept in tune.jsonl); any other would stay beside rules of
        # another block in one table, whose block is one number.
        why = f"measured with --block {old.block}" if old.block != block else ""
        hit = [r for r in measured if not _decides(r, keys)] if why else []
    if hit:
        raise InvalidArgumentError(
            f"-o {out}: its collkit-tuning.json holds {rules_text(len(hit))} "
            f"({rule_keys(hit)}) {why}; this run ({label}, --block {block}) would replace "
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


def refuse_inputs_among_outputs(opts: TuneOptions) -> None:
    """An error if the profile or the host file is one of the files tune writes into the
    folder (by inode)."""
    for flag, path in (("--profile", opts.profile), ("--hosts", opts.hosts)):
        if path is None:
            continue
        for name in WRITES:
            if _same_file(str(Path(opts.out) / name), path):
                raise InvalidArgumentError(
                    f"{flag} {path} is {Path(opts.out) / name}, which tune writes: writing it "
                    "would destroy the input; give another -o folder"
                )


def check_options(opts: TuneOptions) -> None:
    """The options alone: each in its range, and those of one mode not given to the other."""
    if opts.simulate is not None and not opts.simulate.strip():
        raise InvalidArgumentError("--simulate '': give a model (postal, loggp, ...)")
    if not opts.out.strip():
        raise InvalidArgumentError("-o '': give the folder to write into")
    simulating = opts.simulate is not None
    if opts.top_k < 1 or opts.iterations < 5 or opts.warmup < 0 or opts.max_ms < 1:
        raise InvalidArgumentError("--top-k >= 1, --iters >= 5, --warmup >= 0, --max-ms >= 1")
    if not 1 <= opts.block <= MAX_BLOCK:
        raise InvalidArgumentError(f"--block {opts.block} must be in 1..{MAX_BLOCK}")
    if opts.block != 1 and simulating:
        raise InvalidArgumentError("--block is for measuring, not --simulate")
    if not 1 <= opts.rounds <= 100:
        raise InvalidArgumentError(f"--rounds {opts.rounds} must be in 1..100")
    if not 0 < opts.alpha < 1 or not 0 <= opts.min_gain < math.inf:  # NaN fails both
        raise InvalidArgumentError("--alpha must be in (0, 1) and --min-gain >= 0")
    if opts.routing_us is not None and not 0 <= opts.routing_us < 1e6:
        raise InvalidArgumentError(f"--routing-us {opts.routing_us} must be in [0, 1e6)")
    if opts.routing_us is not None and simulating:
        raise InvalidArgumentError("--routing-us is for measuring, not --simulate")
    for k in opts.params:
        if not k:
            raise InvalidArgumentError(f"--param '={opts.params[k]}' must be KEY=VALUE")
    if opts.params and not simulating:
        raise InvalidArgumentError("--param is for --simulate")
    if opts.profile is not None and not simulating:
        raise InvalidArgumentError("--profile is for --simulate")
    if opts.hosts is not None and simulating:
        raise InvalidArgumentError("--hosts is for measuring, not --simulate")
    if opts.topology is not None:
        if not simulating:
            raise InvalidArgumentError(
                "--topology is for --simulate (measured rows cross the machine's own network)"
            )
        from collkit.sim.topology import parse_topology

        topo = parse_topology(opts.topology)  # said before any work
        if topo.ranks_per_node:
            raise InvalidArgumentError(
                f"--topology {opts.topology}: its node size comes from --ppn (the shapes' ranks "
                "per node): leave out rpn="
            )
    for nodes, ppn in opts.shapes:
        if nodes * ppn not in opts.P:
            raise InvalidArgumentError(
                f"shape {nodes} nodes x {ppn} ranks: its P = {nodes * ppn} is not among the P "
                f"({opts.P})"
            )
    if (opts.patterns is not None or opts.decide_by is not None) and simulating:
        raise InvalidArgumentError("--patterns and --decide-by are for measuring, not --simulate")
    check_counts(opts)


def check_counts(opts: TuneOptions) -> None:
    """--counts: forms of bench's grammar, each at every size a vector that grammar holds (a
    list of P entries, P^2 for alltoallv), for an irregular collective among the collectives."""
    from collkit.counts import parse_counts
    from collkit.tune.campaign import by_element_type

    forms = ["".join(f.split()) for f in opts.counts]
    for f in forms:
        parse_counts(f)
    if len(set(forms)) != len(forms):
        raise InvalidArgumentError(f"--counts: a form given twice ({', '.join(forms)})")
    irregular = [c for c in opts.collectives if is_irregular(c)]
    if forms and not irregular:
        raise InvalidArgumentError(
            f"--counts: {', '.join(opts.collectives)} take one count for every rank (--sizes); "
            f"a count vector is for {', '.join(IRREGULAR)}"
        )
    for c in irregular:
        for P in opts.P:
            for dtype, sizes in by_element_type(c, opts.sizes).items():
                if dtype is not None:
                    # a list of the wrong length, a vector past the driver's argument: refused here
                    forms = opts.forms(c, P, dtype, sizes)
                    if opts.simulate is None:
                        batches(forms, c, P)


def check(opts: TuneOptions) -> TunePlan:
    """Every check tune makes before it runs anything, and the plan: an InvalidArgumentError
    (nothing written, no folder made) for bad options, a model or MPI that cannot run it, an
    input among the files it writes, or a folder whose table it would break; else the folder
    (made if it was not there), its table and the MPI or model."""
    check_options(opts)
    defaulted = opts.patterns is None and opts.decide_by is None and opts.simulate is None
    opts = replace(
        opts,
        collectives=list(dict.fromkeys(opts.collectives)),
        counts=["".join(f.split()) for f in opts.counts],
    )
    check_patterns(opts.collectives, opts.patterns, opts.decide_by)
    if opts.patterns is not None:
        opts = replace(opts, patterns=list(dict.fromkeys(opts.patterns)))
    elif opts.decide_by is not None:
        opts = replace(opts, patterns=[opts.decide_by])  # the others would decide nothing
    elif opts.simulate is None:
        opts = replace(
            opts,
            patterns=default_patterns(
                opts.collectives, opts.block, opts.iterations, opts.max_ms, evict_seconds()
            ),
        )
    params = dict(opts.params)
    if opts.profile is not None:
        from collkit.profile import load_profile

        assert opts.simulate is not None  # check_options
        prof = load_profile(input_file(opts.profile, "--profile"))
        params = {**prof.param_strings(opts.simulate), **params}
    if opts.hosts is not None:
        input_file(opts.hosts, "--hosts")
    if opts.only is not None:
        check_only(opts.collectives, opts.only)
    model = None
    if opts.simulate is not None:
        model = Model.make(opts.simulate, **params)  # a bad name or value before any file
        check_simulation_fits(opts.P, opts.simulate)
    else:
        check_launchable(opts.P, opts.hosts)
        for nodes, ppn in opts.shapes:  # each shape launchable here, before anything runs
            launch_allocation(nodes * ppn, opts.hosts, nodes)
    refuse_inputs_among_outputs(opts)
    out = output_dir(opts.out, "-o")  # a folder: an existing one, or one made in an existing one
    old = existing_table(out)
    machine = machine_name()
    mpi = None
    if model is not None:
        label = f"simulated, {opts.simulate}"
    else:
        mpi = find_mpi(opts.mpiexec, opts.mpi_prefix)
        label = mpi.version
    keys = {(c, P) for c in opts.collectives for P in opts.P}
    check_merge(old, out, label, opts.block, machine, keys)
    if defaulted and opts.patterns is not None:
        opts = replace(opts, patterns=resumed_patterns(opts.patterns, out, opts.block, machine))
    return TunePlan(opts, out, old, params, model, mpi, label, machine, keys)


def resumed_patterns(patterns: list[str], out: Path, block: int, machine: str) -> list[str]:
    """The default patterns of a campaign resumed in `out`: whether `evict` is among them is
    decided by a timing here (default_patterns), which another run may read the other side of;
    where the folder has measured rows of this machine and block, their choice stands, so that
    the same command measures only what is missing."""
    path = out / "tune.jsonl"
    if not path.exists():
        return patterns
    seen = {
        r.pattern
        for r in ResultStore(path)
        if r.source == "measured" and r.block == block and r.machine == machine
    }
    if not seen:
        return patterns
    kept = [p for p in patterns if p != "evict"]
    return [*kept, "evict"] if "evict" in seen else kept


class Terminated(KeyboardInterrupt):
    """SIGTERM while a campaign measures: an interruption as Ctrl-C is (nothing catches it as
    an error and goes on), with its own name."""


@contextlib.contextmanager
def _stop_on_sigterm(store: ResultStore, note: Callable[[str], None]) -> Iterator[None]:
    """SIGTERM (what Slurm sends a job KillWait seconds before its SIGKILL at the time limit,
    and `scancel`) stops the campaign as Ctrl-C does: the driver running is ended (bench's
    _stream_rows), every row measured is already in tune.jsonl (appended and synced one by
    one), and the same command resumes, measuring only what is missing. Handlers can be set
    in the main thread only: elsewhere the signal keeps its default."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(_sig: int, _frame: object) -> None:
        raise Terminated()

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    except Terminated:
        note(
            f"stopped by SIGTERM: {len(store.rows)} rows kept in {store.jsonl}; the same "
            "command resumes the campaign, measuring only what is missing"
        )
        raise
    finally:
        signal.signal(signal.SIGTERM, before)


def _no_progress(_what: str) -> AbstractContextManager[CampaignProgress | None]:
    return contextlib.nullcontext(None)


def tune(
    opts: TuneOptions,
    *,
    say: Callable[[str], None] | None = None,
    progress: Callable[[str], AbstractContextManager[CampaignProgress | None]] = _no_progress,
) -> TuneResult:
    """Run the campaign `opts` (check first): measure or simulate what the folder's rows still
    lack, choose the winners and write the files into `opts.out`. `say` receives what tune
    says on the way (also in the result's notes); `progress(what)` gives the context the rows
    are made in (collkit.progress.CampaignProgress: a bar or a line every 10 s)."""
    plan = check(opts)
    return run(plan, say=say, progress=progress)


def run(
    plan: TunePlan,
    *,
    say: Callable[[str], None] | None = None,
    progress: Callable[[str], AbstractContextManager[CampaignProgress | None]] = _no_progress,
) -> TuneResult:
    """Run a checked campaign (check): see tune."""
    opts, out, old, model, mpi, label = (
        plan.options,
        plan.out,
        plan.old,
        plan.model,
        plan.mpi,
        plan.label,
    )
    notes: list[str] = []

    def note(msg: str) -> None:
        notes.append(msg)
        if say:
            say(msg)

    date = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    store = ResultStore(out / "tune.jsonl")
    if mpi is not None:
        note(f"MPI: {mpi.describe()}; rows: {store.jsonl}")
    # rows done of rows planned, with an ETA: a bar on a terminal, a line every 10 s otherwise
    stop = _stop_on_sigterm(store, note)
    with stop, progress("tune" + (" (simulated)" if opts.simulate else "")) as ticker:

        def message(msg: str) -> None:
            if ticker is not None:
                ticker.message(msg)
            elif say:
                say(msg)

        def on_row(msg: str, row: Row | None = None) -> None:
            if row is None:
                message(msg)
            elif row.error:
                message(f"  {row.algorithm} {row.bytes:>9} B  error: {row.error[:80]}")

        routing_us: dict[str, float] = {}
        barriers: dict[int, str] = {}
        harmed: dict[int, list[tuple[str, list[tuple[str, int, float]]]]] = {}
        if model is not None:
            assert opts.simulate is not None
            rows = simulate_rows(opts, opts.simulate, plan.params, store, on_row, ticker)
        else:
            assert mpi is not None
            routing_us = routing(opts, mpi, note)
            barriers = table_barriers(old, opts.P)
            rows = measure(
                opts,
                mpi,
                store,
                on_row,
                ticker,
                barriers=barriers,
                routing_us=routing_us,
                harmed=harmed,
            )
            for P, tries in sorted(harmed.items()):
                for b, hurt in tries:
                    note(
                        f"barrier at P={P}: {b} won alone but calls the table leaves to the MPI "
                        "were slower after it than after the MPI's barrier ("
                        + ", ".join(f"{c} {n} B {x:.2f}x" for c, n, x in hurt[:6])
                        + (f", {len(hurt) - 6} more" if len(hurt) > 6 else "")
                        + "): passed over"
                    )
                chosen = barriers.get(P, "")
                note(
                    f"barrier at P={P}: "
                    + (f"{chosen} (timed after it: nothing slower)" if chosen else "the MPI's own")
                )
    mine = {(r.collective, r.P, r.bytes) for r in rows}
    # The files are chosen from every row of the folder made this way, not only this run's:
    # a campaign of bcast into a folder that holds allreduce keeps allreduce's rules.
    every = after_barriers(
        folder_rows(
            store,
            source="simulated" if model is not None else "measured",
            mpi=model.describe() if model is not None else label,
            block=opts.block,
            machine=None if model is not None else plan.machine,
        ),
        barriers,
    )
    if mpi is not None:
        note(
            "patterns: "
            + "; ".join(f"{c} {', '.join(patterns_for(opts, c))}" for c in opts.collectives)
            + (
                f" (a rule must win in {opts.decide_by})"
                if opts.decide_by
                else " (a rule must win in each)"
            )
        )
    choices = choose(
        every,
        alpha=opts.alpha,
        min_gain=opts.min_gain,
        routing_us=routing_us,
        patterns={c: patterns_for(opts, c) for c in opts.collectives} if mpi else None,
        decide_by=opts.decide_by,
    )
    for ch in choices:  # the barrier measure kept (a faster one slowed calls after it)
        if ch.collective == "barrier" and ch.P in harmed:
            chosen = barriers.get(ch.P, "")
            ch.collkit = next((c for c in ch.candidates if c.algorithm == chosen), None)
    shown = [c for c in choices if (c.collective, c.P, c.bytes) in mine]
    for msg in irregular_notes([c for c in choices if (c.collective, c.P) in plan.keys]):
        note(msg)
    result = TuneResult(shown, choices, rows, None, [], label, routing_us, notes=notes)
    if not shown:
        return result
    merged, kept = merged_rules(old, choices, plan.keys)
    result.kept = kept
    if kept:
        note(
            f"kept {rules_text(len(kept))} of {out / 'collkit-tuning.json'} for collectives "
            f"and P this run does not tune ({rule_keys(kept)})"
        )
    # A table with measured rules is described by its measurement (a simulated run adds rules
    # for other P, each saying it was simulated).
    keep_label = old is not None and model is not None and any(r.source == "measured" for r in kept)
    table = Table(
        rules=merged,
        mpi=old.mpi if keep_label and old else label,
        machine=old.machine if keep_label and old else plan.machine,
        date=date,
        block=old.block if keep_label and old else opts.block,
    )
    written = [store.jsonl, store.csv]
    save(table, out / "collkit-tuning.json")
    written.append(out / "collkit-tuning.json")
    result.table, result.written = table, written
    header = f"collkit tune {' '.join(opts.collectives)} -np {opts.P} ({label}, {date})"
    # Each MPI's own file: for the MPI measured, its forced algorithms that won; for the others,
    # their algorithms of the winners' families (the registry's mpi_equivalents).
    for impl in IMPLEMENTATIONS:
        if keep_label:
            if (out / impl.tuning_file_name).exists():
                note(
                    f"{impl.tuning_file_name} left as it is: it holds the measured campaign's "
                    "choices (a simulated run adds only to collkit-tuning.json)"
                )
            continue
        measured = mpi is not None and isinstance(mpi, impl)
        program = build(mpi, ["collkit_bench"]) / "collkit_bench" if measured and mpi else None
        path = impl.write_tuning_file(merge_forms(choices), out, header, program)
        if path is not None:
            written.append(path)
        else:
            note(
                f"{impl.tuning_file_name} not written: it is built on the {impl.kind} library's "
                f"own selection tree (tune with {impl.kind} to get it)"
            )
    if opts.plot:
        from collkit.tune.plot import plot

        plot(merge_forms(choices), out / "tune.png", f"collkit tune: winner by P x size ({label})")
        written.append(out / "tune.png")
    return result
