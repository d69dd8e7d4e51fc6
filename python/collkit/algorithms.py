"""Algorithms by name: the registry, the name grammar and generation.

>>> import collkit
>>> s = collkit.generate("allreduce:rd", P=6, count=4)
>>> s.P, s.total_ops
(6, ...)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from collkit import _core, units
from collkit.errors import AlgorithmNameError, InvalidArgumentError
from collkit.placement import Placement, core_args
from collkit.schedule import RankProgram, Schedule, count_vector

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's from Python 3.11 on

__all__ = [
    "Algorithm",
    "RankProgram",
    "RowName",
    "Schedule",
    "Shape",
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


# An irregular call's vectors as the core takes them: (counts, in_displs, out_displs).
Vectors = tuple[list[int], list[int], list[int]]


def _vectors(counts: object, in_displs: object, out_displs: object) -> Vectors:
    return (
        count_vector(counts, "counts"),
        count_vector(in_displs, "in_displs"),
        count_vector(out_displs, "out_displs"),
    )


class Shape(TypedDict, total=False):
    """The keywords that say where the ranks run and how an irregular call's data lies, taken
    alike by Algorithm.check, refusal, generate, generate_rank and count_ops, collkit.generate,
    generate_rank and verify_algorithm:

    - placement: ranks per node and their order (node-aware algorithms need it; it goes into the
      schedule's header);
    - counts: the irregular collectives' count vector: P entries (block b holds counts[b]
      elements; alltoallv: P^2, [r * P + q] from rank r to rank q);
    - in_displs, out_displs: where MPI has them, displacements in elements, P entries alike on
      every rank or P^2 per rank (none: packed).

    Without counts a v collective is its regular form, every block `count` elements."""

    placement: Placement | None
    counts: object
    in_displs: object
    out_displs: object


def _vectors_of(shape: Shape) -> Vectors:
    return _vectors(shape.get("counts"), shape.get("in_displs"), shape.get("out_displs"))


def _where(shape: Shape) -> tuple[int, str]:
    """The placement as the core takes it (rpn, order)."""
    return core_args(shape.get("placement"))


def _count_of(count: int | None, vectors: Vectors) -> int:
    """The header's count: given, or with a count vector its largest entry (the core checks
    that a given one is)."""
    if count is not None:
        return count
    if not vectors[0] and not (vectors[1] or vectors[2]):
        raise InvalidArgumentError("give count (elements per rank, per block), or counts")
    return max(vectors[0], default=0)


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

    @property
    def needs_exact(self) -> bool:
        """Whether it is right only for an op exact under any grouping (integer sum, product,
        min or max; a logical or bitwise op): its ranks combine different groupings."""
        return bool(self.spec["restrictions"]["exact_op"])

    def needs_commutative(self, placement: Placement | None = None) -> bool:
        """Whether it is wrong on a non-commutative op with this placement (a composition's
        parts, or round-robin node groups, may not keep rank order)."""
        return bool(self._algo.needs_commutative(*core_args(placement)))

    def check(
        self, P: int, count: int, elem_size: int = 8, root: int = 0, **shape: Unpack[Shape]
    ) -> None:
        """Raise if this algorithm cannot serve (P, count, elem_size, root) with this Shape
        (placement, count vector and displacements)."""
        self._algo.check(
            *self._args(P, count, elem_size, root), *_where(shape), *_vectors_of(shape)
        )

    def refusal(
        self,
        P: int,
        count: int = 0,
        elem_size: int = 8,
        root: int = 0,
        *,
        commutative: bool = True,
        full: bool = True,
        exact: bool = False,
        **shape: Unpack[Shape],
    ) -> str:
        """Why this algorithm cannot run the call ("" when it can): the registry's one answer,
        as the C API, the interposition library and the tuning-table reader ask it. `full=False`
        asks only the declared limits (what a per-call decision affords); `exact`: the op is
        exact under any grouping (an integer sum, a bitwise op; Restrictions::exact_op)."""
        return str(
            self._algo.refusal(
                _int(P, "P", 0, 1 << 40),
                _int(count, "count", -(1 << 62), 1 << 62),
                _int(elem_size, "elem_size", -(1 << 62), 1 << 62),
                _int(root, "root", -(1 << 31), 1 << 40),
                commutative,
                *_where(shape),
                full,
                *_vectors_of(shape),
                bool(exact),
            )
        )

    def generate(
        self,
        P: int,
        count: int | None = None,
        elem_size: int = 8,
        root: int = 0,
        **shape: Unpack[Shape],
    ) -> Schedule:
        """Every rank's program for P ranks and `count` elements per rank (per block), with the
        placement, count vector and displacements of `shape` (Shape); with a count vector
        `count` is its largest entry (None: taken so)."""
        v = _vectors_of(shape)
        return Schedule(
            self._algo.generate(
                *self._args(P, _count_of(count, v), elem_size, root), *_where(shape), *v
            )
        )

    def generate_rank(
        self,
        P: int,
        rank: int,
        count: int | None = None,
        elem_size: int = 8,
        root: int = 0,
        **shape: Unpack[Shape],
    ) -> RankProgram:
        """One rank's program alone, in time proportional to its ops (shape: see Shape)."""
        v = _vectors_of(shape)
        P, n, elem_size, root = self._args(P, _count_of(count, v), elem_size, root)
        return RankProgram(
            self._algo.generate_rank(
                P, _int(rank, "rank", 0, P - 1), n, elem_size, root, *_where(shape), *v
            )
        )

    def count_ops(
        self,
        P: int,
        count: int | None = None,
        elem_size: int = 8,
        root: int = 0,
        **shape: Unpack[Shape],
    ) -> int:
        """Ops of the whole schedule, counted rank by rank in constant memory. P above
        MAX_COUNT_P (2^24) is refused up front: the count would take minutes."""
        v = _vectors_of(shape)
        P, count, elem_size, root = self._args(P, _count_of(count, v), elem_size, root)
        if P > MAX_COUNT_P:
            raise InvalidArgumentError(
                f"P = {P}: counting every rank's ops would take minutes (at most 2^24 ranks "
                "are counted); count some ranks (generate_rank; collkit show --stats --rank R)"
            )
        return int(self._algo.count_ops(P, count, elem_size, root, *_where(shape), *v))

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
    count: int | None = None,
    elem_size: int = 8,
    root: int = 0,
    **shape: Unpack[Shape],
) -> Schedule:
    """The whole schedule of `algorithm` for P ranks and `count` elements per rank; the
    irregular collectives take a count vector and displacements (Shape, Algorithm.generate).

    >>> generate("allgather:ring", 3, 2).counts  # the regular form: no count vector
    []
    """
    return Algorithm(algorithm).generate(P, count, elem_size, root, **shape)


def generate_rank(
    algorithm: str | Algorithm,
    P: int,
    rank: int,
    count: int | None = None,
    elem_size: int = 8,
    root: int = 0,
    **shape: Unpack[Shape],
) -> RankProgram:
    """One rank's program alone, in time proportional to its ops (P may be 10^6 or more)."""
    return Algorithm(algorithm).generate_rank(P, rank, count, elem_size, root, **shape)
