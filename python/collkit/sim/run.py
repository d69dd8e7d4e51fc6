"""The two entry points: simulate an algorithm or a Schedule, and simulate a saved schedule file."""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from collkit import _core, units
from collkit.algorithms import Algorithm
from collkit.errors import (
    ArgumentTypeError,
    CollkitError,
    InvalidArgumentError,
    ScheduleFormatError,
)
from collkit.placement import Placement, core_args
from collkit.progress import format_duration
from collkit.results import ResultStore, Row
from collkit.schedule import Schedule, count_vector, printable
from collkit.sim.noise import Distribution, parse_distribution
from collkit.sim.options import (
    Model,
    Time,
    check_flag,
    check_placement,
    check_run,
    core_options,
    model_of,
)
from collkit.sim.result import (
    SimResult,
    row_labels,
    set_makespans,
    simulated_row,
)
from collkit.sim.topology import Topology, parse_topology, placed_topology

# The simulator's rate, ops per CPU second, from its slowest measured schedule to its fastest
# (benchmarks/results/bench_simulate.md: bcast:binomial's loop 2-3 M events/s, rd's about 40 M):
# what a long simulation is announced with.
SIM_OPS_PER_S = (2e6, 4e7)
# Simulations with more ops than this (5 s to 2 min) are announced before they run.
ANNOUNCE_OPS = 200_000_000


def simulate_file(
    path: str | os.PathLike[str],
    *,
    model: str | Model = "postal",
    noise: str | Distribution | None = None,
    skew: str | Distribution | None = None,
    topology: str | Topology | None = None,
    trials: int = 1,
    seed: int = 0,
    timeline: bool = False,
    **params: Time | None,
) -> SimResult:
    """Simulate a saved schedule (text, JSON or GOAL, LogGOPSim's plain GOAL included).

    A file in the text form, JSON or a GOAL file written by collkit is parsed as it is read and
    each rank's program interned as it comes (memory of the distinct programs, not of the file);
    a plain GOAL file is read twice (its sends indexed, 12 bytes each, then each rank's messages
    paired by tag as it comes); a file with a timeline is loaded whole first (by the same
    readers).
    """
    from collkit import files, io

    m = model_of(model, params)
    timeline = check_flag(timeline, "timeline")
    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentTypeError(f"path must be a str or a path, not {type(path).__name__}")
    files.check_regular(path, "schedule file")  # /dev/zero or a FIFO would be read forever
    fmt = io.format_for_path(path)
    if fmt is None:
        with open(path, "rb") as f:
            fmt = io.sniff_format(f.read(1 << 16).decode("utf-8", errors="replace"))
    if timeline:
        return simulate(
            io.load(path, fmt),
            model=m,
            noise=noise,
            skew=skew,
            topology=topology,
            trials=trials,
            seed=seed,
            timeline=timeline,
        )
    check_run(trials, seed)
    noise_d, skew_d = parse_distribution(noise, "noise"), parse_distribution(skew, "skew")
    topo = parse_topology(topology)
    opts = core_options(m, noise_d, skew_d, topo, trials, seed, False)
    try:
        core, h = _core.simulate_file(os.fspath(path), fmt, opts)
    except UnicodeDecodeError as e:  # a name in the file that is not UTF-8
        raise ScheduleFormatError(f"{os.fspath(path)}: text that is not UTF-8: {e}") from None
    if h["rpn"]:  # the file's placement gave the topology its nodes (the core checked they agree)
        topo = placed_topology(topo, Placement(int(h["rpn"]), str(h["order"])))
    return SimResult(
        core,
        algorithm=printable(str(h["algorithm"])) or "(schedule)",
        count=int(h["count"]),
        elem_size=int(h["elem_size"]),
        model=m,
        noise=noise_d,
        skew=skew_d,
        topology=topo,
        seed=seed,
        collective=str(h["collective"]),
    )


def _own_problem(
    schedule: Schedule,
    given: dict[str, int | None],
    nbytes: int | str | None,
    placement: Placement | None,
) -> Placement | None:
    """A Schedule carries its problem and placement: anything given as well must agree."""
    own = {
        "P": schedule.P,
        "count": schedule.count,
        "elem_size": schedule.elem_size,
        "root": schedule.root,
    }
    for k, v in given.items():
        if v is not None and v != own[k]:
            raise InvalidArgumentError(
                f"{k}={v!r} conflicts with the schedule's own {k} = {own[k]}: a Schedule "
                "carries its problem; leave it out"
            )
    if nbytes is not None:
        raise InvalidArgumentError(
            f"bytes={nbytes!r} cannot apply to a ready Schedule (its size is "
            f"{schedule.count} x {schedule.elem_size} B per rank): leave it out"
        )
    own_placement = Placement(schedule.rpn, schedule.order) if schedule.rpn else None
    if placement is not None and placement != own_placement:
        raise InvalidArgumentError(
            f"placement {placement.describe()} conflicts with the schedule's own "
            f"({own_placement.describe() if own_placement else 'none'}): leave it out"
        )
    return own_placement


def _count_of(count: int | None, nbytes: int | str | None, elem_size: int) -> int:
    """Elements per rank from `count` or `bytes` (rounded up to whole elements; default 1)."""
    if count is not None and nbytes is not None:
        raise InvalidArgumentError("give count or bytes, not both")
    if nbytes is not None:
        # an int or a size string: int() of a float would raise OverflowError for inf, ValueError
        # for NaN, and truncate 1.5
        if isinstance(nbytes, str):
            n = units.parse_size(nbytes, "bytes")
        elif isinstance(nbytes, (int, np.integer)) and not isinstance(nbytes, bool):
            n = int(nbytes)
        else:
            raise ArgumentTypeError(
                f"bytes must be an integer or a size such as '64KiB', not {nbytes!r:.60}"
            )
        if n < 0:
            raise InvalidArgumentError(f"bytes must be >= 0, got {nbytes!r}")
        return -(-n // elem_size)
    return 1 if count is None else count


def simulate(
    algorithm: str | Algorithm | Schedule,
    P: int | None = None,
    *,
    count: int | None = None,
    bytes: int | str | None = None,
    elem_size: int | None = None,
    root: int | None = None,
    model: str | Model = "postal",
    noise: str | Distribution | None = None,
    skew: str | Distribution | None = None,
    topology: str | Topology | None = None,
    placement: Placement | None = None,
    trials: int = 1,
    seed: int = 0,
    timeline: bool = False,
    counts: object = None,
    in_displs: object = None,
    out_displs: object = None,
    **params: Time | None,
) -> SimResult:
    """Simulate `algorithm` (a name, an Algorithm or a whole Schedule) on P ranks.

    The problem size is `count` elements of `elem_size` bytes (default 8), or `bytes` per rank
    (rounded up to whole elements). A Schedule carries its own P, count, element size and root:
    giving any of them as well is an error unless it agrees. Model parameters go in `params`
    (e.g. ``alpha="1.34us"``) or in a ready `Model`. `noise` is a per-op delay, `skew` a
    per-rank start time (distribution specs, see :func:`parse_distribution`); `trials` repeats
    the run with fresh draws from `seed`. `timeline=True` records per-op times, messages and the
    critical path of the first trial (it holds the whole schedule: use it for small P).
    `placement` puts the ranks on nodes (node-aware algorithms need it; a Schedule carries its
    own); the topology's node size comes from it (a topology rpn=N must agree). The irregular
    collectives take `counts` and displacements as collkit.generate does (count then their
    largest entry).
    """
    m = model_of(model, params)
    check_run(trials, seed)
    timeline = check_flag(timeline, "timeline")
    check_placement(placement)
    noise_d = parse_distribution(noise, "noise")
    skew_d = parse_distribution(skew, "skew")
    topo = parse_topology(topology)

    vectors = (
        count_vector(counts, "counts"),
        count_vector(in_displs, "in_displs"),
        count_vector(out_displs, "out_displs"),
    )
    schedule: Schedule | None = None
    source: object  # what the core simulates: a Schedule, or an Algorithm pulled rank by rank
    if isinstance(algorithm, Schedule):
        schedule = algorithm
        if any(vectors):
            raise InvalidArgumentError(
                "a Schedule carries its own count vector: leave out counts and displacements"
            )
        given = {"P": P, "count": count, "elem_size": elem_size, "root": root}
        placement = _own_problem(schedule, given, bytes, placement)
        P, count, elem_size, root = schedule.P, schedule.count, schedule.elem_size, schedule.root
        name = schedule.algorithm or "(schedule)"
        source = schedule.core
    else:
        algo = algorithm if isinstance(algorithm, Algorithm) else Algorithm(algorithm)
        name = algo.canonical
        if P is None:
            raise InvalidArgumentError("P is required")
        elem_size = 8 if elem_size is None else elem_size
        root = 0 if root is None else root
        if isinstance(elem_size, bool) or not isinstance(elem_size, int) or elem_size < 1:
            raise InvalidArgumentError(f"elem_size must be a positive integer, got {elem_size!r}")
        if vectors[0] and count is None and bytes is None:
            count = max(vectors[0])
        count = _count_of(count, bytes, elem_size)
        P, count, elem_size, root = algo._args(P, count, elem_size, root)  # types and ranges
        if timeline:
            schedule = algo.generate(
                P,
                count,
                elem_size,
                root,
                placement=placement,
                counts=vectors[0],
                in_displs=vectors[1],
                out_displs=vectors[2],
            )
        source = schedule.core if schedule is not None else algo.core
    topo = placed_topology(topo, placement)
    opts = core_options(m, noise_d, skew_d, topo, trials, seed, timeline)
    core = _core.simulate(source, P, count, elem_size, root, opts, *core_args(placement), *vectors)
    return SimResult(
        core,
        algorithm=name,
        count=int(count),
        elem_size=int(elem_size),
        model=m,
        schedule=schedule,
        noise=noise_d,
        skew=skew_d,
        topology=topo,
        seed=seed,
    )


def simulate_row(
    store: ResultStore,
    collective: str,
    algorithm: str,
    P: int,
    count: int,
    elem_size: int,
    model: Model,
    *,
    date: str = "",
    allocation: str | None = None,
    available: int | None = None,
    announce: Callable[[str], None] | None = None,
    announce_ops: int | None = None,
    placement: Placement | None = None,
    topology: str | Topology | None = None,
) -> tuple[Row, bool]:
    """The simulated row (simulated_row) of one problem, for campaigns that resume: the row
    `store` holds already, else a new one, simulated and appended (an error the algorithm raises
    kept in its `error`). With `available` (bytes), a problem whose memory_estimate exceeds it is
    a row with the reason, not hours of simulation (collkit simulate's limit: ring at 1 MiB,
    P = 65536 is 8.6e9 ops). With `announce`, a problem of more than `announce_ops` ops (default
    ANNOUNCE_OPS) is said
    before it is simulated (its op count and the minutes it may take), so a sweep does not sit
    silent for a quarter of an hour on one candidate. `placement` and `topology` are
    simulate's; the row's `allocation` (unless given: a campaign's own label) and `settings`
    say them, as SimResult.to_row does.
    Returns (row, whether it is new)."""
    topo = parse_topology(topology)
    placed, settings = row_labels(placement, topo)
    row = simulated_row(
        collective=collective,
        algorithm=algorithm,
        P=P,
        count=count,
        elem_size=elem_size,
        model=model,
        allocation=placed if allocation is None else allocation,
        settings=settings,
        date=date,
    )
    if row in store:
        return row, False
    try:
        if available is not None:
            from collkit.sim.memory import memory_estimate

            need, ops = memory_estimate(
                algorithm, P, count, elem_size, placement=placement, model=model.name
            )
            if need > available:
                raise InvalidArgumentError(
                    f"simulating it needs about {need / 2**30:.1f} GiB ({ops:,} ops), "
                    f"more than the {available / 2**30:.1f} GiB available"
                )
            limit = ANNOUNCE_OPS if announce_ops is None else announce_ops
            if announce is not None and ops > limit:
                lo, hi = ops / SIM_OPS_PER_S[1], ops / SIM_OPS_PER_S[0]
                announce(
                    f"  {algorithm} P={P} {count * elem_size} B: {ops:,} ops to simulate, "
                    f"{format_duration(lo)} to {format_duration(hi)} "
                    f"(Ctrl-C stops; the same command resumes after it)"
                )
        res = simulate(
            algorithm,
            P,
            count=count,
            elem_size=elem_size,
            model=model,
            placement=placement,
            topology=topo,
        )
        set_makespans(row, res.makespans)
    except CollkitError as e:
        row.error = str(e)
    store.append(row)
    return row, True
