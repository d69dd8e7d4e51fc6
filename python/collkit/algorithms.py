"""Algorithms by name: the registry, the name grammar and generation.

>>> import collkit
>>> s = collkit.generate("allreduce:rd", P=6, count=4)
>>> s.P, s.total_ops
(6, ...)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from collkit import _core, units
from collkit.errors import AlgorithmNameError, InvalidArgumentError
from collkit.placement import Placement, core_args
from collkit.schedule import RankProgram, Schedule

__all__ = [
    "Algorithm",
    "RankProgram",
    "RowName",
    "Schedule",
    "algorithms",
    "format_size",
    "generate",
    "generate_rank",
    "parse_name",
    "parse_row_name",
    "parse_size",
]


_INT64_MAX = 2**63 - 1
# count_ops generates every rank's program: about 35 s at 2^24 ranks on one core, minutes
# beyond (2^31: about an hour). Above it, count some ranks (generate_rank) instead.
MAX_COUNT_P = 1 << 24


def _int(value: object, what: str, lo: int, hi: int = _INT64_MAX) -> int:
    """An int in [lo, hi], else InvalidArgumentError (the binding would raise TypeError)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{what} must be an integer, got {value!r}")
    if not lo <= value <= hi:
        raise InvalidArgumentError(f"{what} = {value} must be in [{lo}, {hi}]")
    return value


class Algorithm:
    """An algorithm by name: 'allreduce:rd', 'allreduce:ring(seg=64KiB)', 'alltoall:bruck(r=4)'.

    Construction parses the name and checks it against the registry: a malformed name, an
    unknown algorithm or parameter, or a value outside its declared range raises
    AlgorithmNameError saying what is wrong and where. Values whose validity depends on the
    problem (a stage list for P, Bruck's radix) are checked when one is bound (check/generate).
    Equal algorithms have equal canonical names (defaults left out):
    Algorithm("alltoall:bruck(r=2)") == Algorithm("alltoall:bruck").

    >>> a = Algorithm("allreduce:rd")
    >>> a.collective, a.generate(P=6, count=4).total_ops
    ('allreduce', ...)
    """

    __slots__ = ("_algo",)

    def __init__(self, name: str | Algorithm) -> None:
        if isinstance(name, Algorithm):
            self._algo: _core.Algorithm = name._algo
            return
        if not isinstance(name, str):
            raise AlgorithmNameError(
                f"an algorithm name is a str such as 'allreduce:rd', not {type(name).__name__}"
            )
        if len(name) > 10_000:
            raise AlgorithmNameError(f"a {len(name)}-character algorithm name is not a name")
        self._algo = _core.Algorithm(name)

    @property
    def canonical(self) -> str:
        """The name with defaults left out: the identity of the algorithm."""
        return str(self._algo.canonical)

    @property
    def collective(self) -> str:
        return str(self._algo.collective)

    @property
    def spec(self) -> dict[str, Any]:
        """The registry entry: parameters, restrictions, cost, phases, reference."""
        spec: dict[str, Any] = self._algo.spec
        return spec

    @property
    def params(self) -> dict[str, Any]:
        """Parameter values as parsed (defaults filled in): int, str, or list of str."""
        params: dict[str, Any] = self._algo.params
        return params

    def cost(self, P: int, bytes: float, *, placement: Placement | None = None) -> dict[str, float]:
        """The registered closed-form cost for P ranks and `bytes` per rank (per block for
        collectives.PER_BLOCK) as coefficients {alpha: messages, beta: bytes sent, gamma: bytes
        reduced}; raises UnsupportedError if the algorithm registers none. Node-aware algorithms
        read the placement (none: one node of P ranks)."""
        P = _int(P, "P", 1, 1 << 31)
        if isinstance(bytes, bool) or not isinstance(bytes, (int, float)) or not bytes >= 0:
            raise InvalidArgumentError(f"bytes must be a number >= 0, got {bytes!r}")
        cost: dict[str, float] = self._algo.cost(P, float(bytes), *core_args(placement))
        return cost

    @property
    def core(self) -> _core.Algorithm:
        """The compiled core's object (for collkit's own modules)."""
        return self._algo

    def _args(self, P: int, count: int, elem_size: int, root: int) -> tuple[int, int, int, int]:
        return (
            _int(P, "P", 1, 1 << 31),
            _int(count, "count", 0),
            _int(elem_size, "elem_size", 1, 1 << 20),
            _int(root, "root", 0, 1 << 31),
        )

    @property
    def needs_placement(self) -> bool:
        """Node-aware: generating needs a Placement (ranks per node and their order)."""
        return bool(self.spec["restrictions"]["needs_placement"])

    def needs_commutative(self, placement: Placement | None = None) -> bool:
        """Whether it is wrong on a non-commutative op with this placement (a composition's
        parts, or round-robin node groups, may not keep rank order)."""
        return bool(self._algo.needs_commutative(*core_args(placement)))

    def check(
        self,
        P: int,
        count: int,
        elem_size: int = 8,
        root: int = 0,
        *,
        placement: Placement | None = None,
    ) -> None:
        """Raise if this algorithm cannot serve (P, count, elem_size, root, placement)."""
        self._algo.check(*self._args(P, count, elem_size, root), *core_args(placement))

    def refusal(
        self,
        P: int,
        count: int = 0,
        elem_size: int = 8,
        root: int = 0,
        *,
        commutative: bool = True,
        placement: Placement | None = None,
        full: bool = True,
    ) -> str:
        """Why this algorithm cannot run the call ("" when it can): the registry's one answer,
        as the C API, the interposition library and the tuning-table reader ask it. `full=False`
        asks only the declared limits (what a per-call decision affords)."""
        return str(
            self._algo.refusal(
                _int(P, "P", 0, 1 << 40),
                _int(count, "count", -(1 << 62), 1 << 62),
                _int(elem_size, "elem_size", -(1 << 62), 1 << 62),
                _int(root, "root", -(1 << 31), 1 << 40),
                commutative,
                *core_args(placement),
                full,
            )
        )

    def generate(
        self,
        P: int,
        count: int,
        elem_size: int = 8,
        root: int = 0,
        *,
        placement: Placement | None = None,
    ) -> Schedule:
        """Every rank's program for P ranks and `count` elements per rank (per block). The
        placement goes into the schedule's header; node-aware algorithms need it."""
        return Schedule(
            self._algo.generate(*self._args(P, count, elem_size, root), *core_args(placement))
        )

    def generate_rank(
        self,
        P: int,
        rank: int,
        count: int,
        elem_size: int = 8,
        root: int = 0,
        *,
        placement: Placement | None = None,
    ) -> RankProgram:
        """One rank's program alone, in time proportional to its ops."""
        P, count, elem_size, root = self._args(P, count, elem_size, root)
        return RankProgram(
            self._algo.generate_rank(
                P, _int(rank, "rank", 0, P - 1), count, elem_size, root, *core_args(placement)
            )
        )

    def count_ops(
        self,
        P: int,
        count: int,
        elem_size: int = 8,
        root: int = 0,
        *,
        placement: Placement | None = None,
    ) -> int:
        """Ops of the whole schedule, counted rank by rank in constant memory. P above
        MAX_COUNT_P (2^24) is refused up front: the count would take minutes."""
        P, count, elem_size, root = self._args(P, count, elem_size, root)
        if P > MAX_COUNT_P:
            raise InvalidArgumentError(
                f"P = {P}: counting every rank's ops would take minutes (at most 2^24 ranks "
                "are counted); count some ranks (generate_rank; collkit show --stats --rank R)"
            )
        return int(
            self._algo.count_ops(*self._args(P, count, elem_size, root), *core_args(placement))
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Algorithm) and self.canonical == other.canonical

    def __hash__(self) -> int:
        return hash(self.canonical)

    def __repr__(self) -> str:
        return f"Algorithm({self.canonical!r})"

    def __str__(self) -> str:
        return self.canonical


def algorithms(collective: str | None = None) -> list[dict[str, Any]]:
    """Every registered algorithm (optionally of one collective) with its parameters and docs."""
    specs: list[dict[str, Any]] = _core.algorithms()
    return [s for s in specs if collective is None or s["collective"] == collective]


def parse_name(name: str) -> dict[str, Any]:
    """Parse an algorithm name without resolving it: collective, algorithm, (key, value) args."""
    result: dict[str, Any] = _core.parse_name(name)
    return result


@dataclass(frozen=True)
class RowName:
    """What a result row, `bench --algos` or a tuning table names (the one grammar's row_name,
    core/include/collkit/name.hpp): a collkit algorithm, `native` (the MPI's own collective) or
    one of an MPI's own algorithms forced (`impl:algo`: mpich:ring, ompi:ring, impi:ring).

    >>> parse_row_name("ompi:ring")
    RowName(kind='mpi', impl='ompi', algorithm='ring', collective=None)
    >>> parse_row_name("allreduce:native").kind, parse_row_name("allreduce:rm(a4)").algorithm
    ('native', 'rm')
    """

    kind: Literal["collkit", "native", "mpi"]
    impl: str  # mpi: mpich, ompi or impi; else ""
    algorithm: str  # mpi: the MPI's algorithm; collkit: the registry name; native: "native"
    collective: str | None  # as written (None for `native` and `impl:algo`)


def parse_row_name(name: str) -> RowName:
    """Parse a row name; AlgorithmNameError with a caret if it is none (not resolved against
    the registry: Algorithm(name) does that)."""
    d = _core.parse_row_name(name)
    return RowName(d["kind"], d["impl"], d["algorithm"], d["collective"])


def is_mpi_algorithm(name: str) -> bool:
    """Whether `name` is one of an MPI's own algorithms (impl:algo); False for anything else,
    malformed names included."""
    try:
        return parse_row_name(name).kind == "mpi"
    except AlgorithmNameError:
        return False


def parse_size(text: str) -> int:
    """Bytes in a size such as '8', '8B', '4KiB', '1MiB', '1.5MB' (collkit.units.parse_size)."""
    return units.parse_size(text)


def format_size(nbytes: int) -> str:
    """The largest exact binary unit: 8192 -> '8KiB'."""
    return str(_core.format_size(nbytes))


def generate(
    algorithm: str | Algorithm,
    P: int,
    count: int,
    elem_size: int = 8,
    root: int = 0,
    *,
    placement: Placement | None = None,
) -> Schedule:
    """The whole schedule of `algorithm` for P ranks and `count` elements per rank."""
    algo = algorithm if isinstance(algorithm, Algorithm) else Algorithm(algorithm)
    return algo.generate(P, count, elem_size, root, placement=placement)


def generate_rank(
    algorithm: str | Algorithm,
    P: int,
    rank: int,
    count: int,
    elem_size: int = 8,
    root: int = 0,
    *,
    placement: Placement | None = None,
) -> RankProgram:
    """One rank's program alone, in time proportional to its ops (P may be 10^6 or more)."""
    algo = algorithm if isinstance(algorithm, Algorithm) else Algorithm(algorithm)
    return algo.generate_rank(P, rank, count, elem_size, root, placement=placement)
