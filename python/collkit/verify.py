"""The verifier: prove a schedule correct, or say exactly what is wrong with it.

>>> import collkit
>>> r = collkit.verify(collkit.generate("allreduce:rd", P=6, count=3), commutative=False)
>>> r.ok
True
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from collkit import _core
from collkit.algorithms import Algorithm, Schedule, Shape
from collkit.collectives import buffer_elems
from collkit.errors import CollkitError, InvalidArgumentError
from collkit.schedule import as_schedule, printable

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's from Python 3.11 on

__all__ = [
    "Diagnostic",
    "TreeComparison",
    "VerificationError",
    "VerifyResult",
    "check_buffers_fit",
    "compare_trees",
    "verify",
    "verify_algorithm",
]


class VerificationError(CollkitError):
    """A schedule failed verification; `.result` holds the diagnosis."""

    def __init__(self, result: VerifyResult) -> None:
        super().__init__(result.summary())
        self.result = result


@dataclass(frozen=True)
class Diagnostic:
    """One problem: its kind (e.g. 'deadlock', 'hazard'), where, and what was expected vs found."""

    kind: str
    rank: int | None
    op: int | None
    message: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.message}"


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    diagnostics: list[Diagnostic] = field(default_factory=list)
    total_problems: int = 0
    consistent_commutative: bool = False
    consistent_noncommutative: bool = False
    ops: int = 0
    messages: int = 0
    bytes: int = 0
    algorithm: str = ""
    P: int = 0
    count: int = 0

    def __bool__(self) -> bool:
        return self.ok

    @property
    def kinds(self) -> set[str]:
        return {d.kind for d in self.diagnostics}

    def summary(self) -> str:
        head = f"{self.algorithm or 'schedule'} P={self.P} count={self.count}: "
        if self.ok:
            order = (
                "any op (rank order kept)"
                if self.consistent_noncommutative
                else "commutative ops only"
            )
            return head + f"verified ({self.ops} ops, {self.messages} messages; valid for {order})"
        lines = [head + f"{self.total_problems} problem(s)"]
        lines += [f"  {d}" for d in self.diagnostics]
        if self.total_problems > len(self.diagnostics):
            lines.append(f"  ... and {self.total_problems - len(self.diagnostics)} more")
        return "\n".join(lines)

    def raise_if_failed(self) -> VerifyResult:
        if not self.ok:
            raise VerificationError(self)
        return self


def _result(raw: dict[str, Any], s: Schedule) -> VerifyResult:
    diags = [
        Diagnostic(
            kind=d["kind"],
            rank=None if d["rank"] < 0 else d["rank"],
            op=None if d["op"] < 0 else d["op"],
            message=d["message"],
        )
        for d in raw["diagnostics"]
    ]
    return VerifyResult(
        ok=raw["ok"],
        diagnostics=diags,
        total_problems=raw["total_problems"],
        consistent_commutative=raw["consistent_commutative"],
        consistent_noncommutative=raw["consistent_noncommutative"],
        ops=raw["ops"],
        messages=raw["messages"],
        bytes=raw["bytes"],
        algorithm=printable(s.algorithm),
        P=s.P,
        count=s.count,
    )


_VAL_BYTES = 4  # the verifier holds one 32-bit value per element of every out and scratch buffer


_RANK_BYTES = 256  # the verifier's own state per rank (queues, cursors), and the schedule's


def check_buffers_fit(
    collective: str, P: int, count: int, root: int = 0, scratch_elems: float = 0.0
) -> None:
    """Refuse, with the estimate, a problem whose symbolic buffers could not be held in this
    machine's memory: from P, count and root alone, so that a caller can ask before generating
    (P = 2^20 with count 2^20 is 4 TiB of values).
    Sizes are summed as Python ints and floats: nothing wraps. Values that are not a problem
    (P < 1, a count that is not an integer) are left to the generator, which says why."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (P, count, root)):
        return
    if P < 1 or count < 0 or not 0 <= root < P:
        return
    per_out = max(  # `out`, or under MPI_IN_PLACE the larger of `in` and `out`
        buffer_elems(collective, buf, P, count, root, rank)
        for buf in ("in", "out")
        for rank in {root, (root + 1) % P}
    )
    slots = P * per_out + scratch_elems
    need = slots * _VAL_BYTES + P * _RANK_BYTES
    have = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if need > have:
        raise InvalidArgumentError(
            f"verifying P = {P}, count = {count} needs about {need / 2**30:.3g} GiB for its "
            f"buffers ({slots:.3g} elements), more than this machine's {have / 2**30:.3g} GiB"
        )


def _check_fits(s: Schedule) -> None:
    """check_buffers_fit for a schedule at hand (its scratch buffers counted too)."""
    scratch = float(np.asarray(s.arrays()["scratch"]).sum(dtype=np.float64))
    check_buffers_fit(s.collective, s.P, s.count, s.root, scratch)


def verify(
    schedule: Schedule,
    commutative: bool = True,
    max_diagnostics: int = 20,
    in_place: bool = False,
    exact: bool = False,
) -> VerifyResult:
    """Execute `schedule` symbolically and check it (see docs/verifier.md).

    commutative: whether the reduction op may swap operands. With False, every reduced element
    must be combined in rank order with the same tree on every rank.
    exact: whether the op's result is the same however its operands are grouped (an integer
    sum, a bitwise op): each result must combine the right inputs once each, in any tree.
    in_place: check the schedule as it runs under MPI_IN_PLACE (allreduce and reduce): `in` is
    the same memory as `out`, so reading `in` after writing `out` is caught.
    """
    as_schedule(schedule)
    if isinstance(max_diagnostics, bool) or not isinstance(max_diagnostics, int):
        raise InvalidArgumentError(f"max_diagnostics must be an integer, not {max_diagnostics!r}")
    if max_diagnostics < 0:
        raise InvalidArgumentError("max_diagnostics must be >= 0")
    for name, flag in (("commutative", commutative), ("in_place", in_place), ("exact", exact)):
        if not isinstance(flag, (bool, np.bool_)):
            raise InvalidArgumentError(f"{name} must be True or False, not {flag!r}")
    _check_fits(schedule)
    raw = _core.verify(
        schedule.core, bool(commutative), max_diagnostics, bool(in_place), bool(exact)
    )
    return _result(raw, schedule)


def verify_algorithm(
    algorithm: str | Algorithm,
    P: int,
    count: int | None = None,
    elem_size: int = 8,
    root: int = 0,
    commutative: bool | None = None,
    in_place: bool = False,
    exact: bool | None = None,
    **shape: Unpack[Shape],
) -> VerifyResult:
    """Generate and verify. commutative=None: as the algorithm declares for this placement
    (non-commutative unless it requires a commutative op); exact=None: as it declares (an op
    exact under any grouping only where it requires one). The irregular collectives take a
    count vector and displacements (collkit.algorithms.Shape)."""
    algo = Algorithm(algorithm)
    if commutative is None:
        commutative = algo.needs_commutative(shape.get("placement"))
    if exact is None:
        exact = algo.needs_exact
    if count is not None:
        check_buffers_fit(algo.collective, P, count, root)  # before generating, not after
    return verify(
        algo.generate(P, count, elem_size, root, **shape),
        commutative=commutative,
        in_place=in_place,
        exact=exact,
    )


@dataclass(frozen=True)
class TreeComparison:
    """Whether two schedules reduce every element with the same tree ([Rabenseifner]'s requirement
    for switching protocols at a count limit without changing a bit of the result)."""

    same_exact: bool
    same_commutative: bool
    difference: str

    def __bool__(self) -> bool:
        return self.same_exact


def compare_trees(a: Schedule, b: Schedule) -> TreeComparison:
    """Compare the reduction trees of two allreduce (or reduce) schedules of the same P, count
    and root, element by element. Both must verify; raises InvalidArgumentError otherwise."""
    raw = _core.compare_trees(as_schedule(a, "a").core, as_schedule(b, "b").core)
    return TreeComparison(raw["same_exact"], raw["same_commutative"], raw["difference"])
