"""Every algorithm of a collective at P ranks and n bytes, ranked by its simulated time under one
cost model (`collkit schedules COLLECTIVE`).

The candidates are `collkit tune`'s (:func:`collkit.tune.campaign.candidates`): every registered
algorithm that can run at P, with its parameter grid; for allreduce the recursive multiplying
schedules are the ones given (`collkit schedules` passes the pipelining postal model's best).

Why the simulator and not the registry's closed forms: those are the alpha-beta-gamma model's,
many algorithms declare none (bcast:binomial, bcast:pipeline, bcast:scatter_allgather, ...), and
allreduce:rm's is the pipelining postal model's. A ranking that took a formula where there is
one and a simulation elsewhere would compare numbers of different models. The simulator runs
each algorithm's own schedule under the one model chosen, so every row is the same measure.
Under `postal` (a message costs alpha + n beta, one send at a time per rank: the model the
formulas are written in) each row also carries its registered formula at the same alpha, beta
and gamma (`formula_us`), a cross-check; under other models it is None, since it would be
another model's number.

>>> from collkit.ranking import rank_algorithms
>>> from collkit.sim import Model
>>> r = rank_algorithms("bcast", 16, 8, Model.make("postal", alpha="1us"))
>>> r.rows[0].algorithm, r.rows[0].sim_us
('bcast:binomial', 4.0)
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from collkit.algorithms import Algorithm, algorithms
from collkit.bench import DATATYPES
from collkit.collectives import COLLECTIVES
from collkit.errors import CollkitError, InvalidArgumentError
from collkit.placement import Placement
from collkit.sim import Model, simulate
from collkit.sim.memory import memory_estimate
from collkit.sim.topology import Topology, parse_topology

__all__ = [
    "MAX_OPS",
    "AlgorithmRanking",
    "LeftOut",
    "RankedAlgorithm",
    "candidate_names",
    "problem_of",
    "rank_algorithms",
]

# A candidate whose schedule has more ops is left out (with a note): the simulator ran 1-2.5 M
# ops a second on the 2-core VM under load 8 (allgather:circ_graph at P = 4096, 64 B: 3.4e7 ops
# in 34 s), so about 10 s per candidate at most; ring at 1 MiB and P = 65536 has 2.7e9 ops.
MAX_OPS = 10_000_000


@dataclass(frozen=True)
class RankedAlgorithm:
    """One row: its rank (1 + how many are strictly faster), the algorithm's name in the one
    grammar, its simulated makespan, its registered formula (postal only), for an allreduce:rm
    schedule its family, and whether it needs an op exact under any grouping (integer sum,
    min, max, a logical or bitwise op: allreduce:swing_lat; the MPI side declines the others)."""

    rank: int
    algorithm: str
    sim_us: float
    formula_us: float | None
    family: str = ""
    exact_op: bool = False


@dataclass(frozen=True)
class LeftOut:
    """A candidate not ranked, and why (its restrictions, its size, the simulator's refusal)."""

    algorithm: str
    reason: str


@dataclass(frozen=True)
class AlgorithmRanking:
    collective: str
    P: int
    bytes: int  # per rank (per block for the per-block collectives), as simulated
    elem_size: int
    model: Model
    rows: list[RankedAlgorithm]
    left_out: list[LeftOut]
    placement: Placement | None = None
    topology: str = "none"  # the topology every candidate was simulated on (its spec)


def problem_of(collective: str, nbytes: int) -> tuple[int, int]:
    """(count, elem_size) of `nbytes` as tune times them: reductions in doubles or ints, the
    others in bytes, barrier none."""
    from collkit.tune.campaign import element_type

    if collective == "barrier":
        return 0, 1
    dtype = element_type(collective, nbytes)
    if dtype is None:
        raise InvalidArgumentError(
            f"{collective} of {nbytes} B: a reduction is of whole ints or doubles "
            f"(4 or 8 bytes each); give --bytes a multiple of 4"
        )
    elem = DATATYPES[dtype]
    return nbytes // elem, elem


def candidate_names(
    collective: str, P: int, nbytes: int, rm: Sequence[tuple[str, str]] = ()
) -> tuple[list[tuple[str, str]], list[LeftOut]]:
    """The candidates (name, rm family or "") at P: tune's, with the rm schedules `rm` (schedule
    text, family) in place of tune's; and each registered algorithm that has none, with why."""
    from collkit.tune.campaign import candidates

    if collective not in COLLECTIVES:
        raise InvalidArgumentError(
            f"unknown collective '{collective}' (known: {', '.join(COLLECTIVES)})"
        )
    count, elem = problem_of(collective, nbytes)
    names = [
        (n, "")
        for n in candidates(collective, P, top_k=0, largest=nbytes, exact_op=True)
        if not n.startswith("allreduce:rm")
    ]
    if collective == "allreduce":
        names += [(f"allreduce:rm({s})" if s else "allreduce:rm", f) for s, f in rm]
    have = {n.split("(", 1)[0] for n, _ in names}
    left = []
    for spec in algorithms(collective):
        base = str(spec["name"])
        if base in have or (base == "allreduce:rm" and P >= 2):
            continue
        why = Algorithm(base).refusal(P, count, elem)
        left.append(LeftOut(base, _reason(base, why) or f"no candidate of it at P = {P}"))
    return names, left


def _reason(name: str, why: str) -> str:
    """`why` without the algorithm's name in front (the note names it)."""
    return why.removeprefix(f"{name}: ")


def _formula_us(name: str, P: int, nbytes: int, model: Model) -> float | None:
    """The registered closed-form cost at postal's alpha, beta and gamma (us), or None."""
    if model.name != "postal":
        return None
    try:
        c = Algorithm(name).cost(P, nbytes)
    except CollkitError:
        return None  # none declared, or node-aware
    p = model.params
    return (c["alpha"] * p["alpha"] + c["beta"] * p["beta"] + c["gamma"] * p["gamma"]) / 1e3


def rank_algorithms(
    collective: str,
    P: int,
    nbytes: int,
    model: Model,
    *,
    rm: Sequence[tuple[str, str]] = (),
    max_ops: int = MAX_OPS,
    available: int | None = None,
    placement: Placement | None = None,
    topology: str | Topology | None = None,
) -> AlgorithmRanking:
    """Simulate every candidate (:func:`candidate_names`) of `collective` at P ranks and
    `nbytes` under `model` and rank them by makespan, fastest first (ties by name). A candidate
    with more than `max_ops` ops, or whose simulation would take more than `available` bytes
    (collkit.sim.memory.memory_estimate), or that the simulator refuses, is left out with why.
    With `placement` (ranks on nodes) the node-aware algorithms (allreduce:hier, ...) are ranked
    too, every candidate on the same nodes; `topology` (collkit simulate's, e.g.
    ``fattree(k=16,hop=100ns,intra=50ns)``) adds its latency per pair of ranks to every one, and
    takes its node size from `placement`. Without a placement a node-aware one is left out."""
    if isinstance(P, bool) or not isinstance(P, int) or P < 1:
        raise InvalidArgumentError(f"P = {P!r} must be an integer >= 1")
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
        raise InvalidArgumentError(f"bytes = {nbytes!r} must be an integer >= 0")
    count, elem = problem_of(collective, nbytes)
    topo = parse_topology(topology)  # a bad spec is said once, before any simulation
    names, left = candidate_names(collective, P, nbytes, rm)
    timed: list[tuple[float, str, str]] = []
    for name, family in names:
        try:
            mem, ops = memory_estimate(name, P, count, elem, placement=placement, model=model.name)
            if ops > max_ops:
                left.append(LeftOut(name, f"{ops:,} ops to simulate (more than {max_ops:,})"))
                continue
            if available is not None and mem > available:
                left.append(
                    LeftOut(name, f"needs about {mem >> 20} MiB, {available >> 20} MiB available")
                )
                continue
            r = simulate(
                name,
                P,
                count=count,
                elem_size=elem,
                model=model,
                placement=placement,
                topology=topo,
            )
        except CollkitError as e:
            left.append(LeftOut(name, _reason(name, str(e).splitlines()[0])))
            continue
        timed.append((float(r.makespan) / 1e3, name, family))
    timed.sort(key=lambda t: (round(t[0], 4), t[1]))
    ordered = [round(t[0], 4) for t in timed]
    rows = [
        RankedAlgorithm(
            rank=1 + bisect.bisect_left(ordered, round(us, 4)),
            algorithm=name,
            sim_us=us,
            # the formulas know no topology: beside a simulation with one they would mislead
            formula_us=_formula_us(name, P, count * elem, model)
            if topo.describe() == "none"
            else None,
            family=family,
            exact_op=Algorithm(name).needs_exact,
        )
        for us, name, family in timed
    ]
    return AlgorithmRanking(
        collective, P, count * elem, elem, model, rows, left, placement, topo.describe()
    )
