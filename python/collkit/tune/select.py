"""Choosing winners from result rows: only where the win is real.

Per (collective, P, size), every candidate's per-iteration samples are compared with the native
call's: a one-sided Mann-Whitney U test (is the candidate faster?) and a bootstrap 95% confidence
interval of the speedup (native median / candidate median). A measured candidate wins only when
p < alpha, the whole interval lies above 1 + min_gain, it was measured interleaved with native
(collkit.drift), it is not suspect, and it beat native in every compared round (probes agreeing,
at least drift.MIN_ROUNDS of them); the winner is the one with the largest speedup, else the native
call stays. Of a row re-measured because it was suspect, the latest attempt counts. Simulated rows
have no samples and no native row: the fastest simulated candidate wins, and the rule says it was
simulated (where the fastest costs nothing, a 0-byte call in a model without per-call cost, the
native call stays).

Call patterns (collkit.results.PATTERNS; docs/tuning.md, "Patterns"): where a (collective, P,
bytes) was measured in several patterns (back to back, a barrier before each call, a rotating
root, other buffers, evicted caches), each candidate is compared with the native call of the same
pattern, and it wins only if it wins in every pattern that decides (all those measured, or the
one `decide_by` names); its speedup is the smallest of its patterns' (`speedups` keeps each).

The program without collkit (the reference alone): where a pattern's native call was also timed
in a job of its own (no collkit call in it: the plain program, as a third-party benchmark's plain
run is), a candidate must beat that too, and its figures are the worse of the two comparisons. In
a job that interleaves collkit's candidates the MPI's own calls can run slower than in a job of
their own (MPICH's 8 B allreduce after its barrier: 1.30 us interleaved, 0.36 us alone,
docs/tuning.md), which would credit collkit with a gain no program sees. collkit's candidates can
run slower there too (alltoallv:linear 0.35-0.49 us interleaved, 0.14-0.18 us alone, on Open MPI):
where a candidate was also timed in a job of its own (own_alone; tune times there those that win
in their job and lose to the MPI's call alone: alone_wanted), that job is what is set against the
MPI's call alone, as a third-party benchmark's two runs compare.

Two statistics: each iteration's time is the slowest rank's (the collective is done when its last
rank is) and, where rows carry them, the mean over ranks (IMB's t_avg, OSU's average: a bcast's
root that leaves early counts for its own time, as in a program that goes on computing). A win
must hold in both; its figures are the worse.

`routing_us` is added to every sample of collkit's own candidates (not the MPI's forced
algorithms) before the comparison: what the interposition library adds to a call it routes to
collkit (collkit.mpi.routing), which a program pays and tune's blocks through the C API do not.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from collkit.algorithms import is_mpi_algorithm
from collkit.drift import MIN_ROUNDS, rounds_won
from collkit.results import PATTERNS, Row
from collkit.tune.irregular import BY_P_ALONE, EVERY_SIZE, IRREGULAR
from collkit.tune.table import Rule

# What the interposition library adds to a routed call, µs: one figure for every collective, or
# per collective (collkit.mpi.routing: an alltoallv's routing costs more than an allreduce's); a
# collective a mapping lacks is charged nothing.
Routing = float | Mapping[str, float]


def routing_of(routing_us: Routing, collective: str) -> float:
    """The routing cost `collective`'s candidates are charged."""
    if isinstance(routing_us, Mapping):
        return float(routing_us.get(collective, 0.0))
    return float(routing_us)


@dataclass
class Comparison:
    algorithm: str
    median_us: float
    native_median_us: float
    speedup: float
    p_value: float
    ci95: tuple[float, float]
    rounds_won: int = 0  # interleaved rounds in which the candidate beat native on both sides
    rounds_compared: int = 0  # rounds whose probes agreed
    suspect: str = ""  # why the comparison is not trusted ("" when it is)
    interleaved: bool = False
    pattern: str = "back_to_back"  # the call pattern of these figures: the one it gains least in
    speedups: dict[str, float] = field(default_factory=dict)  # per pattern measured
    lost_in: list[str] = field(default_factory=list)  # deciding patterns it did not win in
    # against the native call timed in a job of its own (nan: no such row): the speedup and its
    # native median
    alone_speedup: float = math.nan
    alone_native_us: float = math.nan
    alone_us: float = math.nan  # the candidate's median in a job of its own (nan: none)
    # in the per-iteration means over ranks (inf: not compared so)
    rank_mean_speedup: float = math.inf


def compare(
    algorithm: str,
    cand: Sequence[float],
    native: Sequence[float],
    *,
    resamples: int = 1000,
    seed: int = 0,
) -> Comparison:
    """The speedup of `cand` over `native`, its bootstrap CI and the Mann-Whitney p-value."""
    from scipy.stats import mannwhitneyu  # type: ignore[import-untyped]

    c, n = np.asarray(cand, dtype=float), np.asarray(native, dtype=float)
    mc, mn = float(np.median(c)), float(np.median(n))
    p = float(mannwhitneyu(c, n, alternative="less").pvalue)
    rng = np.random.default_rng(seed)
    bc = np.median(rng.choice(c, size=(resamples, c.size)), axis=1)
    bn = np.median(rng.choice(n, size=(resamples, n.size)), axis=1)
    ratio = bn / np.maximum(bc, 1e-12)
    lo, hi = np.percentile(ratio, [2.5, 97.5])
    return Comparison(algorithm, mc, mn, mn / max(mc, 1e-12), p, (float(lo), float(hi)))


def is_win(c: Comparison, alpha: float, min_gain: float) -> bool:
    return (
        not c.lost_in
        and c.interleaved
        and not c.suspect
        and c.rounds_compared > 0
        and c.rounds_won == c.rounds_compared
        and c.p_value < alpha
        and c.ci95[0] > 1.0 + min_gain
    )


def compare_row(row: Row, native: Row, *, min_gain: float = 0.0) -> Comparison:
    """`compare` of a measured candidate row with the native row, with its rounds (drift)."""
    c = compare(row.algorithm, row.samples, native.samples)
    won = rounds_won(row, min_gain)
    c.rounds_won, c.rounds_compared = sum(won), len(won)
    c.interleaved = row.interleaved
    c.suspect = row.suspect
    c.pattern = row.pattern
    if (
        c.interleaved
        and not c.suspect
        and c.rounds_compared < min(MIN_ROUNDS, len(row.round_median_us))
    ):
        c.suspect = f"only {c.rounds_compared} rounds with agreeing probes"
    return c


def latest(rows: Iterable[Row]) -> list[Row]:
    """Of rows measured more than once (a suspect row re-measured), the latest attempt."""
    best: dict[tuple[object, ...], Row] = {}
    for r in rows:
        k = r.key()[:-1]  # the key without the attempt
        if k not in best or r.attempt >= best[k].attempt:
            best[k] = r
    return list(best.values())


@dataclass
class Choice:
    """The decision for one (collective, P, shape, bytes)."""

    collective: str
    P: int
    bytes: int
    source: str
    collkit: Comparison | None  # None: the native call stays
    mpi: Comparison | None  # the MPI's own algorithm to force; None: its default stays
    candidates: list[Comparison]
    # The rows' shape (shape_of): nodes, and ranks on each (None: different numbers); None,
    # None where the rows do not say.
    nodes: int | None = None
    ppn: int | None = None
    # An irregular collective's count vector (the rows' --counts form; collkit.tune.irregular),
    # "" for the others; of choices merged across forms (merge_forms), theirs joined by "; ".
    counts: str = ""
    # collkit's candidates that won, the fastest first (`collkit` is the first; simulated: the
    # fastest alone).
    winners: list[str] = field(default_factory=list)


def shape_of(allocation: str, P: int) -> tuple[int | None, int | None]:
    """(nodes, ranks per node) of a row's allocation, as collkit writes it: "2 nodes x 4 ranks
    ...", "5 ranks on 2 nodes of up to 3 ..." (ppn None), a simulated row's "4 ranks per node"
    (the topology's nodes); (None, None) where it does not say (a host file's "8 ranks from
    hostfile h", a simulation without a topology)."""
    if m := re.match(r"(\d+) nodes? x (\d+) ranks\b", allocation):
        return int(m[1]), int(m[2])
    if m := re.match(r"\d+ ranks on (\d+) nodes of up to \d+\b", allocation):
        return int(m[1]), None
    if (m := re.match(r"(\d+) ranks per node\b", allocation)) and int(m[1]) > 0:
        k = int(m[1])
        return -(-P // k), k if P % k == 0 else None
    return None, None


def worse_of(c: Comparison, a: Comparison) -> Comparison:
    """`c` made the worse of it and `a` (the same candidate against another reference or in
    another statistic): the smaller speedup (with its medians) and interval ends, the larger
    p-value."""
    out = dataclasses.replace(c)
    if a.speedup < c.speedup:
        out.speedup, out.median_us, out.native_median_us = (
            a.speedup,
            a.median_us,
            a.native_median_us,
        )
    out.p_value = max(c.p_value, a.p_value)
    out.ci95 = (min(c.ci95[0], a.ci95[0]), min(c.ci95[1], a.ci95[1]))
    return out


def against_alone(c: Comparison, row: Row, alone: Row) -> Comparison:
    """`c` (a candidate against the native call of its own job) made the worse of it and the
    comparison of `row` (the candidate in that job, or in a job of its own: own_alone) with
    `alone`, the native call timed in a job without collkit; that speedup kept."""
    a = compare(row.algorithm, row.samples, alone.samples)
    out = worse_of(c, a)
    out.alone_speedup, out.alone_native_us = a.speedup, a.native_median_us
    out.alone_us = a.median_us if not row.interleaved else math.nan
    return out


MIN_RANK_MEANS = 5  # per-iteration means over ranks a row needs for that comparison


def in_rank_means(c: Comparison, row: Row, natives: Sequence[Row]) -> Comparison:
    """`c` made the worse of it and the same comparisons in the per-iteration means over ranks
    (IMB's t_avg: a rank that leaves a call early counts for its own time), against each of
    `natives` that has them; rows without them (older rows) leave `c` as it is."""
    if len(row.rank_mean_samples) < MIN_RANK_MEANS:
        return c
    out = c
    for n in natives:
        if len(n.rank_mean_samples) >= MIN_RANK_MEANS:
            a = compare(row.algorithm, row.rank_mean_samples, n.rank_mean_samples)
            out = worse_of(out, a)
            out.rank_mean_speedup = min(out.rank_mean_speedup, a.speedup)
    return out


def own_alone(rows: Iterable[Row]) -> dict[tuple[str, str], Row]:
    """(pattern, algorithm) -> the latest row of a collkit candidate timed in a job of its own
    (not interleaved), where the same candidate was also timed interleaved with the MPI's call:
    its figures against the MPI's call alone (the program under the table against the program
    without collkit, as a third-party benchmark's two runs are). A candidate timed alone only
    is a candidate as any other (and, not interleaved, never wins)."""
    rows = list(rows)
    mixed = {(r.pattern, r.algorithm) for r in rows if r.interleaved}
    out: dict[tuple[str, str], Row] = {}
    for r in sorted(rows, key=lambda r: r.date):
        k = (r.pattern, r.algorithm)
        own = r.algorithm != "native" and not is_mpi_algorithm(r.algorithm)
        if own and not r.interleaved and k in mixed:
            out[k] = r
    return out


def alone_wanted(
    rows: Iterable[Row],
    *,
    alpha: float = 0.01,
    min_gain: float = 0.0,
    routing_us: Routing = 0.0,
) -> list[str]:
    """collkit's candidates that win against the MPI's call of their own job at some size of
    `rows` (one campaign: one collective, P and pattern) but not once the MPI's call timed alone
    is the reference too, the one gaining most in its job first: whether that loss is theirs or
    the interleaving's (which slows collkit's calls too) only a job of their own says."""
    rows = list(rows)
    in_job = choose(
        [r for r in rows if r.interleaved or r.algorithm != "native"],
        alpha=alpha,
        min_gain=min_gain,
        routing_us=routing_us,
    )
    full = choose(rows, alpha=alpha, min_gain=min_gain, routing_us=routing_us)
    won = {(ch.collective, ch.P, ch.bytes, ch.counts, a) for ch in full for a in ch.winners}
    gain: dict[str, float] = {}
    for ch in in_job:
        for c in ch.candidates:
            if (
                c.algorithm in ch.winners
                and (ch.collective, ch.P, ch.bytes, ch.counts, c.algorithm) not in won
            ):
                gain[c.algorithm] = max(gain.get(c.algorithm, 0.0), c.speedup)
    return sorted(gain, key=lambda a: -gain[a])


def alone_reference(natives: Mapping[tuple[bool, int], Row]) -> Row | None:
    """Of one pattern's native rows, the latest timed in a job of its own after the MPI's own
    barrier (not interleaved; None: there is none)."""
    alone = [r for (inter, _), r in natives.items() if not inter and r.barrier == ""]
    return max(alone, key=lambda r: r.date) if alone else None


def _usable(r: Row) -> bool:
    return not r.error and r.valid is not False and (r.source == "simulated" or len(r.samples) >= 5)


def through_library(row: Row, routing_us: float) -> Row:
    """A collkit candidate's row as a program through the interposition library would time it:
    every sample and round median `routing_us` slower."""
    if routing_us == 0 or is_mpi_algorithm(row.algorithm) or row.algorithm == "native":
        return row
    return dataclasses.replace(
        row,
        samples=[x + routing_us for x in row.samples],
        rank_mean_samples=[x + routing_us for x in row.rank_mean_samples],
        round_median_us=[x + routing_us for x in row.round_median_us],
        median_us=row.median_us + routing_us,
    )


def across_patterns(
    per_pattern: Mapping[str, Comparison | None],
    deciding: Sequence[str],
    alpha: float,
    min_gain: float,
) -> Comparison | None:
    """One candidate's comparisons, one per pattern measured (None: no row in that pattern), as
    one: the figures of the deciding pattern it gains least in, every pattern's speedup, and the
    deciding patterns it did not win in (missing ones too): a win needs none of those."""
    have = {p: c for p, c in per_pattern.items() if c is not None}
    if not have:
        return None
    pool = [have[p] for p in deciding if p in have] or list(have.values())
    worst = min(pool, key=lambda c: c.speedup)
    out = dataclasses.replace(worst)
    out.speedups = {p: c.speedup for p, c in have.items()} if len(per_pattern) > 1 else {}
    out.lost_in = [p for p in deciding if p not in have or not is_win(have[p], alpha, min_gain)]
    return out


def choose(
    rows: Iterable[Row],
    *,
    alpha: float = 0.01,
    min_gain: float = 0.0,
    routing_us: Routing = 0.0,
    patterns: Mapping[str, Sequence[str]] | None = None,
    decide_by: str | None = None,
) -> list[Choice]:
    """One Choice per (collective, P, bytes) in the rows. `patterns`: per collective, the call
    patterns whose rows count (a collective not in it: every pattern its rows have); a
    candidate must win in each of them, or only in `decide_by` where that is one of them."""
    groups: dict[tuple[str, int, tuple[int, int], int, str, str], list[Row]] = {}
    shapes: dict[tuple[int, int], tuple[int | None, int | None]] = {}
    for r in rows:
        if _usable(r):
            shape = shape_of(r.allocation, r.P)
            key = (-1 if shape[0] is None else shape[0], -1 if shape[1] is None else shape[1])
            shapes[key] = shape
            groups.setdefault((r.collective, r.P, key, r.bytes, r.counts, r.source), []).append(r)
    out: list[Choice] = []
    for (coll, P, key, nbytes, form, source), rs in sorted(groups.items()):
        nodes, ppn = shapes[key]
        if source == "simulated":
            sim = [r for r in rs if not is_mpi_algorithm(r.algorithm)]
            if not sim:
                continue
            best = min(sim, key=lambda r: r.median_us)
            comps = [
                Comparison(
                    r.algorithm,
                    r.median_us,
                    math.nan,
                    # a 0-byte call can cost nothing in a model: equal times are a tie
                    best.median_us / r.median_us if r.median_us > 0 else 1.0,
                    math.nan,
                    (math.nan, math.nan),
                )
                for r in sim
            ]
            # where the fastest costs nothing, no candidate gains anything: native stays
            win = (
                next(c for c in comps if c.algorithm == best.algorithm)
                if best.median_us > 0
                else None
            )
            out.append(
                Choice(
                    coll,
                    P,
                    nbytes,
                    source,
                    win,
                    None,
                    comps,
                    nodes,
                    ppn,
                    form,
                    [win.algorithm] if win else [],
                )
            )
            continue
        present = {r.pattern for r in rs}
        wanted = patterns.get(coll) if patterns is not None else None
        measured = [p for p in PATTERNS if p in (present if wanted is None else wanted)]
        rs = [r for r in rs if r.pattern in measured]
        natives: dict[str, dict[tuple[bool, int], Row]] = {}
        solos = own_alone(rs)
        for r in sorted(rs, key=lambda r: r.date):
            # (a native call timed after a collkit barrier is barrier_harm's, never a reference)
            if r.algorithm == "native" and r.barrier == "":
                natives.setdefault(r.pattern, {})[(r.interleaved, r.attempt)] = r
        if not natives:
            continue
        deciding = [decide_by] if decide_by in measured else measured
        by_algo: dict[str, dict[str, Comparison | None]] = {}
        for r in latest(rs):
            if r.algorithm == "native" or (not r.interleaved and (r.pattern, r.algorithm) in solos):
                continue
            mine = natives.get(r.pattern)
            if not mine:
                continue
            native = mine.get((r.interleaved, r.attempt)) or mine[max(mine)]
            routed = through_library(r, routing_of(routing_us, coll))
            comp = compare_row(routed, native, min_gain=min_gain)
            alone = alone_reference(mine) if r.interleaved else None
            if alone is not None and alone is not native:
                # the candidate's own job where it has one: like against like
                solo = solos.get((r.pattern, r.algorithm))
                solo = (
                    routed if solo is None else through_library(solo, routing_of(routing_us, coll))
                )
                comp = against_alone(comp, solo, alone)
                comp = in_rank_means(in_rank_means(comp, routed, [native]), solo, [alone])
            else:
                comp = in_rank_means(comp, routed, [native])
            by_algo.setdefault(r.algorithm, dict.fromkeys(measured))[r.pattern] = comp
        comps = []
        for per in by_algo.values():
            c = across_patterns(per, deciding, alpha, min_gain)
            if c is not None:
                comps.append(c)
        wins = [c for c in comps if is_win(c, alpha, min_gain)]
        own = sorted(
            (c for c in wins if not is_mpi_algorithm(c.algorithm)), key=lambda c: -c.speedup
        )
        forced = [c for c in wins if is_mpi_algorithm(c.algorithm)]
        out.append(
            Choice(
                coll,
                P,
                nbytes,
                source,
                own[0] if own else None,
                max(forced, key=lambda c: c.speedup) if forced else None,
                comps,
                nodes,
                ppn,
                form,
                [c.algorithm for c in own],
            )
        )
    return out


def shaped_keys(choices: Sequence[Choice]) -> set[tuple[str, int]]:
    """The (collective, P) measured in more than one shape: their rules, and the MPIs' files,
    carry each shape; a (collective, P) of one shape keeps rules for any shape (a table tuned on
    one machine applies to every shape)."""
    seen: dict[tuple[str, int], set[tuple[int | None, int | None]]] = {}
    for c in choices:
        seen.setdefault((c.collective, c.P), set()).add((c.nodes, c.ppn))
    return {k for k, s in seen.items() if len(s) > 1}


def size_ranges(sizes: Sequence[int]) -> list[tuple[int, int]]:
    """The byte range each measured size stands for: up to the next size, the last up to twice
    itself (one binary size class past the largest measured)."""
    s = sorted(set(sizes))
    out = [(a, b - 1) for a, b in itertools.pairwise(s)]
    if s:
        out.append((s[-1], max(2 * s[-1] - 1, s[-1])))
    return out


def _worst(cs: Sequence[Choice], algorithm: str) -> Comparison:
    """`algorithm`'s comparison at the point of `cs` where it gains least."""
    return min(
        (x for c in cs for x in c.candidates if x.algorithm == algorithm),
        key=lambda x: x.speedup,
    )


def _common(cs: Sequence[Choice]) -> list[str]:
    """collkit's candidates that won at every one of `cs`, the one gaining most at its worst
    point first."""
    common = [a for a in cs[0].winners if all(a in c.winners for c in cs[1:])]
    return sorted(common, key=lambda a: -_worst(cs, a).speedup)


def merge_forms(choices: Sequence[Choice]) -> list[Choice]:
    """Choices of one (collective, P, shape, bytes) measured at several count vectors (an
    irregular collective's forms whose totals are equal) as one, since a call is keyed by its
    total alone: collkit's winner is a candidate that won at each (where it gains least stands
    for it), the MPI's forced algorithm one that won at each, else the native call and the
    MPI's default stay. Every other choice as it is."""
    groups: dict[tuple[object, ...], list[Choice]] = {}
    for c in choices:
        groups.setdefault((c.collective, c.P, c.nodes, c.ppn, c.bytes, c.source), []).append(c)
    out: list[Choice] = []
    for cs in groups.values():
        if len(cs) == 1:
            out.append(cs[0])
            continue
        common = _common(cs)
        forced = {c.mpi.algorithm if c.mpi else None for c in cs}
        mpi = None
        if len(forced) == 1 and None not in forced:
            mpi = min((c.mpi for c in cs if c.mpi), key=lambda x: x.speedup)
        first = cs[0]
        out.append(
            Choice(
                first.collective,
                first.P,
                first.bytes,
                first.source,
                _worst(cs, common[0]) if common else None,
                mpi,
                [x for c in cs for x in c.candidates],
                first.nodes,
                first.ppn,
                "; ".join(c.counts for c in cs),
                common,
            )
        )
    return out


def irregular_notes(choices: Sequence[Choice]) -> list[str]:
    """Why a collective keyed by P alone (gatherv, scatterv, alltoallv) got its candidate or
    the native call in its rule of every size, and where the forms at one total of one keyed
    by its total (allgatherv, reduce_scatter) chose differently."""
    out: list[str] = []
    by: dict[tuple[str, int, int | None, int | None], list[Choice]] = {}
    for c in choices:
        if c.collective in IRREGULAR:
            by.setdefault((c.collective, c.P, c.nodes, c.ppn), []).append(c)
    for (coll, P, nodes, ppn), cs in sorted(by.items(), key=lambda kv: str(kv[0])):
        where = f"{coll} P={P}" + (f" ({nodes}x{ppn or '?'})" if nodes is not None else "")
        if coll not in BY_P_ALONE:
            for m in merge_forms(cs):
                if (
                    "; " in m.counts
                    and m.collkit is None
                    and any(c.collkit for c in cs if c.bytes == m.bytes)
                ):
                    said = "; ".join(
                        f"{c.counts}: {c.collkit.algorithm if c.collkit else 'native'}"
                        for c in cs
                        if c.bytes == m.bytes
                    )
                    out.append(
                        f"{where} {m.bytes} B: the forms at this total chose differently "
                        f"({said}): native (a call is keyed by its total alone)"
                    )
            continue
        common = _common(cs)
        if common:
            how = (
                "was the fastest simulated"
                if all(c.source == "simulated" for c in cs)
                else f"won by {_worst(cs, common[0]).speedup:.2f}x at least"
            )
            out.append(
                f"{where}: {common[0]} {how} at every one of its {len(cs)} points (sizes x "
                f"forms): one rule of every size ({coll} is routed by P alone)"
            )
            continue
        won: dict[str, int] = {}
        for c in cs:
            for a in c.winners:
                won[a] = won.get(a, 0) + 1
        best = sorted(won.items(), key=lambda kv: -kv[1])[:2]
        out.append(
            f"{where}: no candidate won at every one of its {len(cs)} points (sizes x forms"
            + ("; " + ", ".join(f"{a} at {n}" for a, n in best) if best else "; none won at any")
            + f"): native for every size ({coll} is routed by P alone)"
        )
    return out


def _every_size(
    coll: str,
    P: int,
    nodes: tuple[int, int] | None,
    ppn: tuple[int, int] | None,
    cs: Sequence[Choice],
) -> Rule:
    """The one rule of a collective keyed by P alone: a candidate that won at every point of
    `cs` (its figures where it gains least), else native; of every size."""
    common = _common(cs)
    native_median = next(
        (
            x.native_median_us
            for c in cs
            for x in c.candidates
            if not math.isnan(x.native_median_us)
        ),
        math.nan,
    )
    w = _worst(cs, common[0]) if common else None
    return Rule(
        collective=coll,
        P=(P, P),
        bytes=EVERY_SIZE,
        algorithm=w.algorithm if w else "native",
        source=min(c.source for c in cs),
        median_us=w.median_us if w else native_median,
        native_median_us=w.native_median_us if w else native_median,
        speedup=w.speedup if w else math.nan,
        p_value=w.p_value if w else math.nan,
        ci95=w.ci95 if w else (math.nan, math.nan),
        speedups=dict(w.speedups) if w else {},
        nodes=nodes,
        ppn=ppn,
    )


def rules(choices: Sequence[Choice]) -> list[Rule]:
    """collkit table rules: per (collective, P) and shape, adjacent sizes with the same winner
    merged. A rule carries its shape (nodes, ppn) where its P was measured in several shapes
    (shaped_keys), else it is for any shape, as tables without shapes are. An irregular
    collective's choices at one total are one (merge_forms); one keyed by P alone gets one rule
    of every size (a candidate that won at every point, else native)."""
    out: list[Rule] = []
    choices = merge_forms(choices)
    shaped = shaped_keys(choices)
    by: dict[tuple[str, int, int, int], list[Choice]] = {}
    for c in choices:
        s = (c.collective, c.P) in shaped
        n = c.nodes if s and c.nodes is not None else -1
        k = c.ppn if s and c.nodes is not None and c.ppn is not None else -1
        by.setdefault((c.collective, c.P, n, k), []).append(c)
    for (coll, P, n, k), cs in sorted(by.items()):
        nodes = (n, n) if n > 0 else None
        ppn = (k, k) if k > 0 else None
        if coll in BY_P_ALONE:
            out.append(_every_size(coll, P, nodes, ppn, cs))
            continue
        cs.sort(key=lambda c: c.bytes)
        ranges = size_ranges([c.bytes for c in cs])
        for c, (lo, hi) in zip(cs, ranges, strict=True):
            algo = c.collkit.algorithm if c.collkit else "native"
            last = out[-1] if out else None
            if (
                last is not None
                and last.collective == coll
                and last.P == (P, P)
                and (last.nodes, last.ppn) == (nodes, ppn)
                and last.algorithm == algo
                and last.source == c.source
                and last.bytes[1] + 1 == lo
            ):
                last.bytes = (last.bytes[0], hi)
                continue
            w = c.collkit
            native_median = next(
                (x.native_median_us for x in c.candidates if not math.isnan(x.native_median_us)),
                math.nan,
            )
            out.append(
                Rule(
                    collective=coll,
                    P=(P, P),
                    bytes=(lo, hi),
                    algorithm=algo,
                    source=c.source,
                    median_us=w.median_us if w else native_median,
                    native_median_us=native_median,
                    speedup=w.speedup if w else math.nan,
                    p_value=w.p_value if w else math.nan,
                    ci95=w.ci95 if w else (math.nan, math.nan),
                    speedups=dict(w.speedups) if w else {},
                    nodes=nodes,
                    ppn=ppn,
                )
            )
    return out
