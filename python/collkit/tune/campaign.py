"""A tuning campaign: candidates per (collective, P), measured through the bench driver with
per-iteration samples (or simulated), then the winners and the three files.

The rows go to one results file (the bench row schema) as they are measured; a rerun of the same
campaign measures nothing that is already there.
"""

from __future__ import annotations

import datetime as _dt
import functools
import itertools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from collkit.algorithms import Algorithm, algorithms, is_mpi_algorithm
from collkit.analysis.bruck import candidate_radixes
from collkit.analysis.recmult.model import PipelinedPostal
from collkit.analysis.recmult.rank import rank_schedules
from collkit.analysis.torus import candidate_dims
from collkit.bench import DATATYPES, Campaign, planned_rows, run_campaign
from collkit.collectives import REDUCTIONS, ROOTED
from collkit.collectives import collective as collective_spec
from collkit.drift import MAX_RETRIES
from collkit.errors import CollkitError, InvalidArgumentError
from collkit.mpi import MPI
from collkit.progress import Ticker
from collkit.results import PATTERNS, ResultStore, Row
from collkit.tune.irregular import DEFAULT_FORMS, batches, forms_at, is_irregular
from collkit.tune.select import (
    Routing,
    alone_wanted,
    choose,
    compare,
    is_win,
    latest,
    shape_of,
)
from collkit.tune.table import Table

if TYPE_CHECKING:
    from collkit.placement import Placement
    from collkit.sim import Model
    from collkit.sim.topology import Topology

# The model that ranks `rm` schedules for the campaign ([Ruefenacht 2017]'s ARCHER-like ratio);
# only the
# order matters here, the measurement decides.
RANK_MODEL = PipelinedPostal(alpha_p=1.5e-6, alpha_r=0.4e-6, beta=1e-10)


# Segmented trees tried when a campaign has sizes above twice this: pieces of 2 KiB travel
# through the shared-memory transport's small bodies, one piece read while the next is written.
# At P = 2 on the AMD EPYC VM (MPICH, 8-10 jobs each in turn): bcast 8-16 KiB 0.60-0.79 and
# reduce 8 KiB 0.72 of the unsegmented tree's time; no gain at 4 KiB or 32 KiB, where pieces of
# 1-2 KiB cost 1.13-1.31 (benchmarks/results/shm-small-bodies.md).
SEGMENT = 2048
SEGMENTED = ("bcast:binomial", "reduce:binomial")


def candidates(
    collective: str,
    P: int,
    *,
    top_k: int = 3,
    nbytes: int = 8,
    largest: int = 0,
    exact_op: bool = False,
) -> list[str]:
    """collkit's candidates for one (collective, P): every registered algorithm at its defaults,
    the top_k `rm` schedules the model ranks for P, the Bruck radixes worth trying
    (:func:`collkit.analysis.bruck.candidate_radixes`: 2..8, the powers of two, ceil(sqrt P) and
    its neighbours, P; O(log P) of them, where every r in 2..P made 65,535 at P = 65536),
    k-nomial radices 2..4, bucket's ring and most balanced 2-d and 3-d tori
    (:func:`collkit.analysis.torus.candidate_dims`), Swing folded and, where P is not a power
    of two, on P itself (nonpof2=direct), and the binomial trees in 2 KiB segments
    when `largest` (the campaign's largest size) is above 4 KiB; those whose restrictions
    exclude P are left out, and those that need an op exact under any grouping
    (allreduce:swing_lat) unless `exact_op`: tune times reductions in doubles, which the MPI
    side hands to the MPI for them (a simulation, which has no op, takes them: `exact_op`)."""
    out: list[str] = []
    for spec in algorithms(collective):
        name = str(spec["name"])
        r = spec["restrictions"]
        if r["min_P"] > P or 0 < r["max_P"] < P or (r["power_of_two"] and P & (P - 1)):
            continue
        if r["exact_op"] and not exact_op:
            continue
        if name == "allreduce:rm":
            if P >= 2:
                ranked = rank_schedules(P, RANK_MODEL, nbytes, top=top_k)
                out += [f"allreduce:rm({x.schedule})" for x in ranked]
        elif name in ("alltoall:bruck", "alltoall:bruck_modified", "allgather:bruck"):
            out += [f"{name}(r={k})" for k in candidate_radixes(P)]
        elif name.endswith(":knomial"):
            out += [f"{name}(k={k})" for k in (2, 3, 4)]
        elif name == "allreduce:bucket":
            out += [f"{name}(dims={d})" for d in candidate_dims(P)]
        elif name == "allreduce:swing" and P & (P - 1):
            out += [name, f"{name}(nonpof2=direct)"]  # no fold (the same on powers of two)
        else:
            out.append(name)
            if name in SEGMENTED and largest > 2 * SEGMENT:
                out.append(f"{name}(seg={SEGMENT})")
    seen: set[str] = set()
    canon = []
    for n in out:
        c = str(Algorithm(n).canonical)
        if c not in seen:
            seen.add(c)
            canon.append(c)
    return canon


def element_type(collective: str, nbytes: int) -> str | None:
    """The datatype tune times `nbytes` of `collective` in: a reduction in doubles, or in ints
    where the size is no whole number of doubles (a 4-byte allreduce of a flag, as programs make
    every step: LAMMPS's neighbour-list check), other collectives in bytes; None for a reduction
    of no whole number of ints (1, 2 or 3 bytes), which tune does not time."""
    if collective not in REDUCTIONS:
        return "char"
    if nbytes % DATATYPES["double"] == 0:
        return "double"
    return "int" if nbytes % DATATYPES["int"] == 0 else None


def by_element_type(collective: str, sizes: list[int]) -> dict[str | None, list[int]]:
    """`sizes` grouped by element_type (one campaign each; None: not timed)."""
    out: dict[str | None, list[int]] = {}
    for s in sizes:
        out.setdefault(element_type(collective, s), []).append(s)
    return out


@dataclass
class TuneOptions:
    """A tuning campaign: what `collkit tune` takes (collkit.tune.tune runs it); each field is
    the option of the same name (docs/tuning.md), the defaults are its defaults."""

    collectives: list[str]
    P: list[int]
    sizes: list[int]
    top_k: int = 3
    iterations: int = 100  # --iters
    warmup: int = 10
    max_ms: int = 500
    mpi_algorithms: bool = True  # the MPI's own algorithms, forced, are candidates too
    only: list[str] | None = None  # restrict collkit's candidates to these names
    rounds: int = 3  # interleaved rounds per size (collkit.drift)
    hosts: str | None = None  # host file, to run across nodes (bench's --hosts)
    block: int = 1  # calls per timed sample (bench's --block): 1 single calls, N back-to-back
    # The call patterns every candidate is measured in (results.PATTERNS; None: default_patterns)
    # and the one a rule must win in alone (None: every pattern measured).
    patterns: list[str] | None = None
    decide_by: str | None = None
    alpha: float = 0.01  # significance level of a win
    # the speedup interval must lie above 1 + this: a smaller gain in tune's jobs does not hold
    # in programs (docs/tuning.md, on --min-gain)
    min_gain: float = 0.1
    routing_us: float | None = None  # the interposition library's cost a call; None: measured
    simulate: str | None = None  # a model: tune from the simulator (no MPI)
    params: dict[str, str] = field(default_factory=dict)  # the model's parameters (--param)
    profile: str | None = None  # for simulate: the parameters from a machine profile
    mpiexec: str | None = None
    mpi_prefix: str | None = None
    out: str = "tune-results"  # the folder the rows and the tuning files go into
    plot: bool = True  # draw tune.png
    # The shapes to measure (--nodes x --ppn): (nodes, ranks per node) pairs, each P = their
    # product (in P); empty: each P as few ranks per node as fit (collkit.mpi.launch).
    shapes: list[tuple[int, int]] = field(default_factory=list)
    # For simulate: collkit simulate's topology (latency per pair of ranks; its node size from
    # the shapes' ranks per node), None: none.
    topology: str | None = None
    # The irregular collectives' --counts forms (collkit.counts), each measured at every size
    # (collkit.tune.irregular); empty: irregular.DEFAULT_FORMS.
    counts: list[str] = field(default_factory=list)

    def forms(self, collective: str, P: int, datatype: str, sizes: list[int]) -> list[str]:
        """The count vectors an irregular collective is measured at, at P: each form at each
        of `sizes` (collkit.tune.irregular.forms_at); [] for any other collective."""
        if not is_irregular(collective):
            return []
        forms = list(self.counts) or list(DEFAULT_FORMS)
        return forms_at(forms, collective, P, DATATYPES[datatype], sizes)

    def shapes_at(self, P: int) -> list[int | None]:
        """The node counts P is measured on: those of its shapes, or [None] (no shapes)."""
        if not self.shapes:
            return [None]
        return [n for n, k in self.shapes if n * k == P]


def shapes_of(nodes: list[int], ppn: list[int]) -> list[tuple[int, int]]:
    """tune's --nodes x --ppn: every (nodes, ranks per node) of two ranks or more (a shape of
    one rank has nothing to tune), in order of P, then nodes."""
    if not nodes or not ppn:
        raise InvalidArgumentError("--nodes and --ppn are given together (the shapes are both)")
    for flag, xs in (("--nodes", nodes), ("--ppn", ppn)):
        if any(x < 1 for x in xs):
            raise InvalidArgumentError(f"{flag} {','.join(map(str, xs))}: each must be >= 1")
    out = sorted({(n, k) for n in nodes for k in ppn if n * k >= 2}, key=lambda s: (s[0] * s[1], s))
    if not out:
        raise InvalidArgumentError("--nodes x --ppn: every shape is of one rank (nothing to tune)")
    return out


# evict is in the default when the work it adds before a row's calls costs less than this part
# of the row's time budget (--max-ms).
EVICT_SHARE = 0.3


def llc_bytes() -> int:
    """The last-level cache in bytes, as collkit_bench reads it (sysfs, cpu0's largest), else
    32 MiB."""
    from pathlib import Path

    best = 0
    for d in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            v = (d / "size").read_text().strip()
        except OSError:
            continue
        mult = {"K": 1 << 10, "M": 1 << 20}.get(v[-1:], 1)
        digits = v.rstrip("KM")
        if digits.isascii() and digits.isdigit():
            best = max(best, int(digits) * mult)
    return best or 32 << 20


@functools.cache
def evict_seconds() -> float:
    """What evict's work before one call costs here: writing an array twice the last-level
    cache, the fastest of three (once a process)."""
    import numpy as np

    a = np.zeros(2 * llc_bytes(), dtype=np.uint8)
    best = float("inf")
    for k in range(3):
        t0 = time.perf_counter()
        a.fill(k + 1)
        best = min(best, time.perf_counter() - t0)
    return best


def default_patterns(
    collectives: list[str], block: int, iterations: int, max_ms: int, evict_s: float
) -> list[str]:
    """tune's patterns when --patterns is not given: back_to_back and barrier (at --block 1 the
    same measurement, one call after a barrier: back_to_back alone), rotate_root where a
    collective has a root, and evict where its work (`evict_s` before each call) over a row's
    calls costs less than EVICT_SHARE of the row's budget."""
    out = ["back_to_back"] if block == 1 else ["back_to_back", "barrier"]
    if any(c in ROOTED for c in collectives):
        out.append("rotate_root")
    if iterations * block * evict_s < EVICT_SHARE * max_ms * 1e-3:
        out.append("evict")
    return out


def patterns_for(opts: TuneOptions, collective: str) -> list[str]:
    """The patterns `collective` is measured in: rotate_root only where it has a root."""
    pats = opts.patterns if opts.patterns is not None else ["back_to_back"]
    return [p for p in pats if p != "rotate_root" or collective in ROOTED]


def check_patterns(
    collectives: list[str], patterns: list[str] | None, decide_by: str | None
) -> None:
    """--patterns and --decide-by: known names, rotate_root with a rooted collective among the
    collectives, and the pattern that decides among those measured."""
    for p in [*(patterns or []), *([decide_by] if decide_by else [])]:
        if p not in PATTERNS:
            raise InvalidArgumentError(f"pattern {p[:40]!r} must be one of {', '.join(PATTERNS)}")
    if patterns is not None:
        if not patterns:
            raise InvalidArgumentError("--patterns '': give one or more patterns")
        if "rotate_root" in patterns and not any(c in ROOTED for c in collectives):
            raise InvalidArgumentError(
                f"--patterns rotate_root moves the root: none of {', '.join(collectives)} has one"
            )
        if decide_by is not None and decide_by not in patterns:
            raise InvalidArgumentError(
                f"--decide-by {decide_by} is not among --patterns {','.join(patterns)}"
            )
    if decide_by == "rotate_root" and not all(c in ROOTED for c in collectives):
        raise InvalidArgumentError(
            "--decide-by rotate_root: every collective must have a root (rotate_root moves it)"
        )


def only(collective: str, names: list[str]) -> list[str]:
    """The canonical names among `names` ('rd' or 'allreduce:rd') of `collective`'s algorithms."""
    out = []
    for n in names:
        full = n if ":" in n else f"{collective}:{n}"
        if full.split(":", 1)[0] != collective:
            continue
        try:
            out.append(str(Algorithm(full).canonical))
        except CollkitError:
            if ":" in n:
                raise
    return out


def check_only(collectives: list[str], names: list[str]) -> None:
    """Every name must be an algorithm of one of the collectives (bad names fail up front)."""
    for n in names:
        if not any(only(c, [n]) for c in collectives):
            Algorithm(n if ":" in n else f"{collectives[0]}:{n}")  # raises, with the reason
            raise InvalidArgumentError(f"'{n}' is not an algorithm of {', '.join(collectives)}")


def measure(
    opts: TuneOptions,
    mpi: MPI,
    store: ResultStore,
    progress: Callable[[str, Row | None], None] | None = None,
    ticker: Ticker | None = None,
    *,
    barriers: dict[int, str] | None = None,
    routing_us: Routing = 0.0,
    harmed: dict[int, list[tuple[str, list[tuple[str, int, float]]]]] | None = None,
) -> list[Row]:
    """Runs what the campaign still misses; returns the campaign's rows (old and new). Every
    campaign is planned first, so `ticker` knows the rows to come from the start (re-measured
    suspects are added when they are found).

    The patterns barrier and evict time a collkit call after the barrier the table will route a
    program's MPI_Barrier to (the native call after the MPI's own: the program without collkit),
    since a call right after a barrier starts where that barrier left the ranks: `barriers` (P
    -> the collkit barrier algorithm, from the folder's table), and when barrier is among the
    collectives it is tuned first and its winners are those barriers (written into `barriers`);
    a winner that slows a call the table leaves to the MPI is passed over for the next
    (`harmed`: P -> each barrier passed over and the (collective, bytes, slowdown) it cost)."""
    barriers = {} if barriers is None else barriers  # updated in place: the caller's table
    harmed = {} if harmed is None else harmed
    plan: list[Campaign] = []
    siblings: dict[int, int] = {}  # a native-alone campaign's index -> its interleaved one's
    for coll in sorted(opts.collectives, key=lambda c: c != "barrier"):
        for P in opts.P:
            own = candidates(
                coll,
                P,
                top_k=opts.top_k,
                nbytes=opts.sizes[0] if opts.sizes else 8,
                largest=max(opts.sizes, default=0),
            )
            if opts.only is not None:
                keep = only(coll, opts.only)
                own = [a for a in own if a in keep] + [a for a in keep if a not in own]
            forced = mpi.native_algorithms(coll) if opts.mpi_algorithms else []
            for dtype, sizes in by_element_type(coll, opts.sizes).items():
                if dtype is None:
                    if progress:
                        progress(
                            f"{coll}: {', '.join(f'{s} B' for s in sizes)} not timed (a "
                            "reduction is timed in doubles, or ints: no whole number of them)",
                            None,
                        )
                    continue
                # The MPI's own algorithms are forced per job, never interleaved and so never
                # chosen: shown in the first pattern only. An irregular collective's vectors go
                # to as many jobs as the driver's command line needs.
                forms = opts.forms(coll, P, dtype, sizes)
                for nodes, (k, pattern), counts in itertools.product(
                    opts.shapes_at(P),
                    enumerate(patterns_for(opts, coll)),
                    batches(forms, coll, P) if forms else [[]],
                ):
                    plan.append(
                        camp := Campaign(
                            collective=coll,
                            algorithms=["native", *own, *(forced if k == 0 else [])],
                            P=[P],
                            sizes=sizes,
                            datatype=dtype,
                            iterations=opts.iterations,
                            warmup=opts.warmup,
                            max_ms=opts.max_ms,
                            validate=True,
                            raw=True,
                            rounds=opts.rounds,
                            hosts=opts.hosts,
                            block=opts.block,
                            pattern=pattern,
                            nodes=nodes,
                            counts=counts,
                        )
                    )
                    # The MPI's own call in a job of its own, after the MPI's own barrier: the
                    # program without collkit, which every candidate must beat too (select).
                    plan.append(replace(camp, algorithms=["native"], interleave=False))
                    siblings[len(plan) - 1] = len(plan) - 2
    if ticker:
        ticker.grow(sum(planned_rows(c) for c in plan))
    tuned_barrier = "barrier" in opts.collectives
    chosen = False
    winners: dict[int, list[str]] = {}
    after: list[Campaign] = []  # the campaigns timed after a barrier
    ran: dict[int, Campaign] = {}  # plan index -> the campaign as run (its barrier set)
    for i, c in enumerate(plan):
        if c.collective != "barrier" and tuned_barrier and not chosen:
            chosen = True
            winners = barrier_winners(opts, store, routing_us)
            barriers.update({P: w[0] if w else "" for P, w in winners.items()})
        if c.collective != "barrier" and c.pattern in ("barrier", "evict") and c.interleave:
            after.append(c)
            c = replace(c, barrier=barriers.get(c.P[0], ""))
            if c.barrier and progress:
                progress(f"{c.collective} P={c.P[0]} {c.pattern}: after {c.barrier}", None)
        run_campaign(c, mpi, store, progress, ticker)
        remeasure_suspects(c, mpi, store, progress, ticker)
        ran[i] = c
        if i in siblings:
            time_alone(opts, ran[siblings[i]], mpi, store, progress, ticker, routing_us)
    if tuned_barrier:
        # A barrier rule must not make a call after it slower than after the MPI's barrier
        # where the table leaves that call to the MPI (in IMB, MPICH's own allreduce took 1.5x
        # and its bcast 1.1-2.4x their time after collkit's barrier, collkit's allreduce 1.6x
        # after MPICH's: docs/tuning.md). The barriers that won alone are tried fastest first,
        # at most MAX_BARRIERS; the first that slows nothing is the rule, else the MPI's barrier,
        # and each try times the barrier patterns after it. Barriers are per P, whatever the shape.
        for P in sorted({c.P[0] for c in after if winners.get(c.P[0])}):
            mine = [c for c in after if c.P[0] == P]
            tries: list[tuple[str, list[tuple[str, int, float]]]] = []
            for k, b in enumerate(winners[P][:MAX_BARRIERS]):
                barriers[P] = b
                if k > 0:
                    run_after(opts, mine, b, mpi, store, progress, ticker, routing_us)
                hurt = barrier_harm(opts, mine, b, mpi, store, progress, ticker, routing_us)
                if not hurt:
                    break
                tries.append((b, hurt))
            else:
                barriers[P] = ""
                run_after(opts, mine, "", mpi, store, progress, ticker, routing_us)
            if tries:
                harmed[P] = tries
    return campaign_rows(opts, store, barriers)


MAX_BARRIERS = 3  # barrier candidates tune tries, fastest first, before it keeps the MPI's
MAX_ALONE = 3  # collkit candidates of one campaign tune times in jobs of their own, at most


def time_alone(
    opts: TuneOptions,
    c: Campaign,
    mpi: MPI,
    store: ResultStore,
    progress: Callable[[str, Row | None], None] | None,
    ticker: Ticker | None,
    routing_us: Routing = 0.0,
) -> None:
    """Times in a job of its own each of collkit's candidates of the interleaved campaign `c`
    that wins against the MPI's call of its job but loses to the MPI's call timed alone
    (select.alone_wanted; at most MAX_ALONE, the one gaining most first): in a job that
    interleaves them, the switches between collkit's calls and the MPI's slow collkit's too, as
    no program under the table is (alltoallv:linear on Open MPI, P = 2: 0.35-0.49 us interleaved,
    0.14-0.18 us alone, against the MPI's 0.21 us alone)."""
    mine = of_campaign(c)
    rows = [r for r in latest(store) if mine(r)]
    for algo in alone_wanted(rows, alpha=opts.alpha, min_gain=opts.min_gain, routing_us=routing_us)[
        :MAX_ALONE
    ]:
        solo = replace(c, algorithms=[algo], interleave=False)
        if progress:
            progress(
                f"{c.collective} P={c.P[0]} {c.pattern}: {algo} in a job of its own (it wins in"
                " the interleaved job, not against the MPI's call alone)",
                None,
            )
        if ticker:
            ticker.grow(planned_rows(solo))
        run_campaign(solo, mpi, store, progress, ticker)


def of_campaign(c: Campaign) -> Callable[[Row], bool]:
    """Whether a row is one of the campaign `c`'s: its collective, P, sizes (an irregular one:
    its vectors), datatype, block, pattern and shape; a collkit row timed after `c`'s barrier,
    a native one after the MPI's (its job's, or its call timed alone)."""
    sizes = {c.count(s) * DATATYPES[c.datatype] for s in c.sizes}
    forms = set(c.forms()) if c.irregular else {""}

    def mine(r: Row) -> bool:
        return (
            r.collective == c.collective
            and r.P in c.P
            and (c.irregular or r.bytes in sizes)
            and r.counts in forms
            and r.datatype == c.datatype
            and r.block == c.block
            and r.pattern == c.pattern
            and (r.barrier == "" if r.algorithm == "native" else r.barrier == c.barrier)
            and (c.nodes is None or shape_of(r.allocation, r.P)[0] == c.nodes)
        )

    return mine


def run_after(
    opts: TuneOptions,
    campaigns: list[Campaign],
    barrier: str,
    mpi: MPI,
    store: ResultStore,
    progress: Callable[[str, Row | None], None] | None,
    ticker: Ticker | None,
    routing_us: Routing = 0.0,
) -> None:
    """The campaigns timed again after `barrier` ("": the MPI's), each with its candidates
    timed alone where they need it (time_alone; the MPI's call alone is timed once, after the
    MPI's barrier)."""
    for c in campaigns:
        again = replace(c, barrier=barrier)
        if progress:
            progress(
                f"{c.collective} P={c.P[0]} {c.pattern}: after {barrier or 'the MPI barrier'}", None
            )
        if ticker:
            ticker.grow(planned_rows(again))
        run_campaign(again, mpi, store, progress, ticker)
        remeasure_suspects(again, mpi, store, progress, ticker)
        time_alone(opts, again, mpi, store, progress, ticker, routing_us)


def barrier_harm(
    opts: TuneOptions,
    campaigns: list[Campaign],
    barrier: str,
    mpi: MPI,
    store: ResultStore,
    progress: Callable[[str, Row | None], None] | None,
    ticker: Ticker | None,
    routing_us: Routing = 0.0,
) -> list[tuple[str, int, float]]:
    """(collective, bytes, slowdown) where no collkit candidate wins after `barrier` (so the
    table leaves the call to the MPI) and the MPI's own call after it is slower than after the
    MPI's barrier: a one-sided Mann-Whitney test (p < --alpha) and the bootstrap interval of the
    slowdown above 1 + --min-gain, as for a win."""
    hurt: list[tuple[str, int, float]] = []
    for c in campaigns:
        check = replace(c, algorithms=["native"], barrier=barrier, native_after_barrier=True)
        if progress:
            progress(f"{c.collective} P={c.P[0]}: the MPI's own call after {barrier}", None)
        if ticker:
            ticker.grow(planned_rows(check))
        run_campaign(check, mpi, store, progress, ticker)
        P = c.P[0]
        mine = [
            r
            for r in after_barriers(campaign_rows(opts, store), {P: barrier})
            if r.collective == c.collective and r.P == P
        ]
        routed = {
            (ch.bytes, ch.counts, (ch.nodes, ch.ppn))
            for ch in choose(
                mine,
                alpha=opts.alpha,
                min_gain=opts.min_gain,
                routing_us=routing_us,
                patterns={c.collective: patterns_for(opts, c.collective)},
                decide_by=opts.decide_by,
            )
            if ch.collkit is not None
        }
        rows = [
            r
            for r in latest(store)
            if r.collective == c.collective
            and r.P == P
            and r.pattern == c.pattern
            and r.algorithm == "native"
            and r.block == c.block
            and r.datatype == c.datatype
            and not r.error
        ]
        for nbytes, form, alloc in sorted({(r.bytes, r.counts, r.allocation) for r in rows}):
            same = [
                r for r in rows if r.bytes == nbytes and r.counts == form and r.allocation == alloc
            ]
            if (nbytes, form, shape_of(alloc, P)) in routed:
                continue  # collkit's call runs there, after collkit's barrier: it won so
            # the reference: the MPI's call after its own barrier, timed in a job of its own
            # where there is one (the program without collkit), else in the campaign's job
            plain = sorted(
                (r for r in same if r.barrier == ""), key=lambda r: (not r.interleaved, r.date)
            )
            behind = [r for r in same if r.barrier == barrier]
            if not plain or not behind:
                continue
            if len(plain[-1].samples) < 5 or len(behind[-1].samples) < 5:
                continue
            # one job each (the MPI's barrier and collkit's cannot alternate inside one native
            # row): the samples' test and the speedup's interval, no rounds
            cmp = compare("native", plain[-1].samples, behind[-1].samples)
            if cmp.p_value < opts.alpha and cmp.ci95[0] > 1.0 + opts.min_gain:
                hurt.append((c.collective, nbytes, cmp.speedup))
    return hurt


def barrier_winners(
    opts: TuneOptions, store: ResultStore, routing_us: Routing
) -> dict[int, list[str]]:
    """P -> the collkit barriers the measured barrier rows say win alone, the fastest first."""
    rows = [r for r in campaign_rows(opts, store) if r.collective == "barrier"]
    out: dict[int, list[str]] = {}
    for ch in choose(
        rows,
        alpha=opts.alpha,
        min_gain=opts.min_gain,
        routing_us=routing_us,
        patterns={"barrier": patterns_for(opts, "barrier")},
        decide_by=opts.decide_by,
    ):
        wins = [
            c
            for c in ch.candidates
            if is_win(c, opts.alpha, opts.min_gain) and not is_mpi_algorithm(c.algorithm)
        ]
        out[ch.P] = [c.algorithm for c in sorted(wins, key=lambda c: -c.speedup)]
    return out


def after_barriers(rows: Iterable[Row], barriers: dict[int, str]) -> list[Row]:
    """`rows` less the collkit rows of the patterns barrier and evict timed after another
    barrier than the one in effect at their P (`barriers`: P -> algorithm, "" the MPI's), and
    the native rows timed after a collkit barrier (barrier_harm's: the reference is native
    after the MPI's)."""
    return [
        r
        for r in rows
        if r.collective == "barrier"
        or r.pattern not in ("barrier", "evict")
        or (r.barrier == "" if r.algorithm == "native" else r.barrier == barriers.get(r.P, ""))
    ]


def table_barriers(table: Table | None, Ps: list[int]) -> dict[int, str]:
    """P -> the collkit barrier `table` routes MPI_Barrier to at P ("": the MPI's own)."""
    if table is None:
        return {}
    out = {}
    for P in Ps:
        algo = table.lookup("barrier", P, 0)
        out[P] = "" if algo == "native" else algo
    return out


def remeasure_suspects(
    c: Campaign,
    mpi: MPI,
    store: ResultStore,
    progress: Callable[[str, Row | None], None] | None = None,
    ticker: Ticker | None = None,
) -> None:
    """Re-measures, interleaved with native again, every candidate whose latest row is suspect
    (collkit.drift), at most drift.MAX_RETRIES times; a resumed campaign reads the attempts from
    the file and goes on where it stopped."""
    ours = of_campaign(c)
    for attempt in range(1, MAX_RETRIES + 1):
        mine = [
            r for r in latest(store) if ours(r) and r.algorithm in c.algorithms and r.interleaved
        ]
        todo = [r for r in mine if r.suspect and r.attempt < attempt]
        if not todo:
            return
        for nbytes, form in sorted({(r.bytes, r.counts) for r in todo}):
            names = sorted({r.algorithm for r in todo if (r.bytes, r.counts) == (nbytes, form)})
            if progress:
                progress(
                    f"P={c.P} {nbytes} B{f' {form}' if form else ''}: re-measuring "
                    f"{len(names)} suspect (attempt {attempt} of {MAX_RETRIES}): "
                    f"{', '.join(names)}",
                    None,
                )
            again = replace(
                c,
                algorithms=["native", *names],
                sizes=c.sizes[:1] if form else [nbytes],
                counts=[form] if form else [],
                attempt=attempt,
            )
            if ticker:
                ticker.grow(planned_rows(again))
            run_campaign(again, mpi, store, progress, ticker)


def campaign_rows(
    opts: TuneOptions, store: ResultStore, barriers: dict[int, str] | None = None
) -> list[Row]:
    """The folder's rows of this campaign; with `barriers`, a collkit row of the patterns
    barrier and evict only where it was timed after the barrier in effect at its P."""
    out = []
    # the irregular collectives' rows: those of the vectors this campaign measures at
    forms = {
        (c, P, dtype, form)
        for c in opts.collectives
        if is_irregular(c)
        for P in opts.P
        for dtype, sizes in by_element_type(c, opts.sizes).items()
        if dtype is not None
        for form in opts.forms(c, P, dtype, sizes)
    }
    for r in store if barriers is None else after_barriers(store, barriers):
        if (
            r.collective in opts.collectives
            and r.P in opts.P
            and r.block == opts.block  # a folder may hold rows timed both ways: never mixed
            and r.pattern in patterns_for(opts, r.collective)
            and (
                r.collective == "barrier"
                or (
                    (r.collective, r.P, r.datatype, r.counts) in forms
                    if is_irregular(r.collective)
                    else r.bytes in opts.sizes and element_type(r.collective, r.bytes) is not None
                )
            )
        ):
            out.append(r)
    return out


def simulate_rows(
    opts: TuneOptions,
    model: str,
    params: dict[str, str],
    store: ResultStore,
    progress: Callable[[str], None],
    ticker: Ticker | None = None,
) -> list[Row]:
    """Rows from the simulator for every candidate (collkit.sim.simulated_row: source simulated,
    `mpi` the model and its parameters). The candidates are listed first, so `ticker` knows every
    row to come before the first is simulated."""
    from collkit.cli.simulate import _available_memory
    from collkit.placement import Placement
    from collkit.sim import Model, simulate_row
    from collkit.sim.result import row_labels
    from collkit.sim.topology import parse_topology

    made = Model.make(model, **params)  # bad names fail before any work
    avail = _available_memory()  # collkit simulate's memory limit, for every candidate
    date = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    topo = parse_topology(opts.topology)  # a bad spec is said before any simulation
    # Each P on its shapes' nodes (--nodes x --ppn: ppn ranks per node), or on no nodes.
    placements = {
        P: [None if n is None else Placement(P // n) for n in opts.shapes_at(P)] for P in opts.P
    }
    plan: list[tuple[str, int, list[str], list[tuple[str, str]]]] = []
    for coll in opts.collectives:
        for P in opts.P:
            own = candidates(coll, P, top_k=opts.top_k, largest=max(opts.sizes, default=0))
            if opts.only is not None:
                keep = only(coll, opts.only)
                own = [a for a in own if a in keep] + [a for a in keep if a not in own]
            # an irregular collective's points: (datatype, vector's form), each form at each size
            points = [
                (dtype, form)
                for dtype, sizes in by_element_type(coll, opts.sizes).items()
                if dtype is not None
                for form in opts.forms(coll, P, dtype, sizes)
            ]
            plan.append((coll, P, own, points))
    if ticker:
        ticker.grow(
            sum(
                len(own)
                * len(placements[P])
                * (len(pts) or (1 if coll == "barrier" else len(opts.sizes)))
                for coll, P, own, pts in plan
            )
        )
    for (coll, P, own, points), placement in (
        (p, where) for p in plan for where in placements[p[1]]
    ):
        what = f"{len(points)} vectors" if points else f"{len(opts.sizes)} sizes"
        on = "" if placement is None else f" ({placement.rpn} ranks per node)"
        progress(f"simulating {coll} P={P}{on}: {len(own)} candidates x {what}")
        for algo in own:
            for vtype, form in points:
                _, new = simulate_vector(
                    store, coll, algo, P, form, vtype, made, date=date, available=avail,
                    placement=placement, topology=topo,
                )  # fmt: skip
                if ticker:
                    ticker.advance(1, measured=new)
            for size in [] if points else [0] if coll == "barrier" else opts.sizes:
                dtype = element_type(coll, size)
                if dtype is None:
                    continue
                elem = DATATYPES[dtype]
                count = size // elem
                _, new = simulate_row(
                    store,
                    coll,
                    algo,
                    P,
                    count,
                    elem,
                    made,
                    date=date,
                    available=avail,
                    announce=progress,
                    placement=placement,
                    topology=topo,
                )
                if ticker:
                    ticker.advance(1, measured=new)
    store.write_csv()
    # this campaign's rows: a folder may hold other sizes, and rows of other models, which
    # must not be compared with these
    # (and the allocations and topology of this campaign: rows on other nodes are other problems)
    made_on = {row_labels(where, topo) for wheres in placements.values() for where in wheres}
    return [
        r
        for r in campaign_rows(opts, store)
        if r.source == "simulated"
        and r.mpi == made.describe()
        and (r.allocation, r.settings) in made_on
    ]


def simulate_vector(
    store: ResultStore,
    collective: str,
    algorithm: str,
    P: int,
    form: str,
    datatype: str,
    model: Model,
    *,
    date: str = "",
    available: int | None = None,
    placement: Placement | None = None,
    topology: str | Topology | None = None,
) -> tuple[Row, bool]:
    """The simulated row of an irregular collective at the vector `form` draws for P (as
    collkit.sim.simulate_row makes a regular one's, on `placement` and `topology` alike): the
    form in `counts`, the whole vector's count and bytes; the row `store` holds already, else
    simulated and appended, an error (the memory it would need past `available`, the
    algorithm's refusal) kept in its `error`."""
    from collkit.counts import parse_counts
    from collkit.sim import memory_estimate, simulate, simulated_row
    from collkit.sim.result import row_labels, set_makespans
    from collkit.sim.topology import parse_topology

    topo = parse_topology(topology)
    placed, settings = row_labels(placement, topo)

    elem = DATATYPES[datatype]
    vec = parse_counts(form).vector(
        P, per_pair=str(collective_spec(collective)["counts"]) == "per_pair"
    )
    row = simulated_row(
        collective=collective,
        algorithm=algorithm,
        P=P,
        count=sum(vec),
        elem_size=elem,
        model=model,
        allocation=placed,
        settings=settings,
        date=date,
    )
    row.counts, row.datatype = form, datatype
    if row in store:
        return row, False
    try:
        if available is not None:
            need, ops = memory_estimate(
                algorithm, P, max(vec, default=0), elem, placement=placement, model=model.name,
                counts=vec,
            )  # fmt: skip
            if need > available:
                raise InvalidArgumentError(
                    f"simulating it needs about {need / 2**30:.1f} GiB ({ops:,} ops), more "
                    f"than the {available / 2**30:.1f} GiB available"
                )
        res = simulate(
            algorithm, P, elem_size=elem, model=model, counts=vec, placement=placement,
            topology=topo,
        )  # fmt: skip
        set_makespans(row, res.makespans)
    except CollkitError as e:
        row.error = str(e)
    store.append(row)
    return row, True


def folder_rows(
    store: ResultStore, *, source: str, mpi: str, block: int, machine: str | None = None
) -> list[Row]:
    """Every row of the folder made the way a campaign makes them (`source`; `mpi`, the MPI's
    version or the model with its parameters; `block`; `machine` when measured): the rows its
    tuning files are chosen from, so that a campaign of one collective keeps the rules of the
    others measured there before."""
    return [
        r
        for r in store
        if r.source == source
        and r.mpi == mpi
        and r.block == block
        and (machine is None or r.machine == machine)
        and (r.collective == "barrier" or element_type(r.collective, r.bytes) is not None)
    ]


__all__ = [
    "PATTERNS",
    "TuneOptions",
    "after_barriers",
    "barrier_winners",
    "by_element_type",
    "campaign_rows",
    "candidates",
    "check_patterns",
    "default_patterns",
    "element_type",
    "folder_rows",
    "measure",
    "patterns_for",
    "simulate_rows",
    "table_barriers",
]
