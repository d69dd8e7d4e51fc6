"""Schedules as Python sees them: every rank's program (Schedule) or one rank's alone
(RankProgram).

Both are typed views over the compiled core's objects, which stay private (as boost-histogram
keeps its C++ histogram behind its Python class): collkit makes them (generate, load, from_arrays)
and hands them to the verifier, the simulator and the exporters, which unwrap them with `.core`.

>>> import collkit
>>> s = collkit.generate("reduce:binomial", P=5, count=2, root=3)
>>> s
Schedule('reduce:binomial', P=5, count=2, elem_size=8, root=3, ops=14)
>>> s.rank(3).arrays()["kind"].tolist()[:2], OP_KINDS[3]
([3, 1], 'copy')
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from collkit import _core
from collkit.errors import ArgumentTypeError, InvalidArgumentError, ScheduleFormatError

__all__ = [
    "BUFFERS",
    "OP_KINDS",
    "Arrays",
    "RankProgram",
    "Schedule",
    "as_schedule",
    "count_vector",
    "printable",
]

# The values of the `kind` column, in the core's OpKind order (core/include/collkit/schedule.hpp).
OP_KINDS: tuple[str, ...] = ("send", "recv", "reduce", "copy", "compute", "sleep")
# Buffer ids of the `buf` / `src` columns: 0 and 1; scratch buffer k is 2 + k.
BUFFERS: tuple[str, ...] = ("in", "out")


# arrays(): one numpy column per op field, as the JSON format stores them
# (docs/schedule-formats.md): rank, kind (OP_KINDS), peer (send / recv: the other rank, else -1),
# buf (send: read; recv / reduce / copy: written), off, src (reduce / copy: read), src_off, len
# (elements; compute / sleep: ns), side (reduce: 0 dst = src (+) dst, 1 dst = dst (+) src),
# stage, and dep_begin / deps (op i waits on deps[dep_begin[i] : dep_begin[i + 1]], op indices
# of its own rank). A Schedule's adds scratch_begin / scratch: rank r's scratch buffers hold
# scratch[scratch_begin[r] : scratch_begin[r + 1]] elements.
Arrays = dict[str, NDArray[Any]]

# The dtype of each column (Schedule.arrays() holds them so); from_arrays takes any integer
# dtype at least as wide whose values fit, and refuses floats, bools, values that would wrap and
# narrower dtypes (an int8 peer column has wrapped its ranks before from_arrays sees it).
ARRAY_DTYPES: dict[str, type[np.integer[Any]]] = {
    "rank": np.int64,
    "kind": np.uint8,
    "peer": np.int32,
    "buf": np.uint8,
    "off": np.int64,
    "src": np.uint8,
    "src_off": np.int64,
    "len": np.int64,
    "side": np.uint8,
    "cpu": np.uint8,
    "nic": np.uint8,
    "stage": np.uint16,
    "dep_begin": np.int64,
    "deps": np.uint32,
    "scratch_begin": np.int64,
    "scratch": np.int64,
}
_MAX_P = 1 << 31
_MAX_ELEM_SIZE = (1 << 31) - 1
_INT64_MAX = (1 << 63) - 1


def as_schedule(value: object, what: str = "schedule") -> Schedule:
    """`value` if it is a Schedule, else InvalidArgumentError saying what it is (not the
    AttributeError that `.core` of a string would raise)."""
    if not isinstance(value, Schedule):
        raise ArgumentTypeError(
            f"{what} must be a collkit Schedule (collkit.generate, collkit.load), not "
            f"{type(value).__name__}"
        )
    return value


def printable(text: str) -> str:
    """`text` with its control characters written as \\xHH: a name read from a file, printed
    to a terminal, cannot move the cursor, change colours or fake an output line."""
    return "".join(
        f"\\x{ord(c):02x}" if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 else c for c in text
    )


def integer_column(value: object, name: str, dtype: type[np.integer[Any]]) -> NDArray[Any]:
    """`value` as a one-dimensional array of `dtype`: integers of a dtype at least as wide (a
    float, bool or object array is refused, not truncated; a narrower one may have wrapped),
    each value in the dtype's range (none wraps)."""
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError, OverflowError):
        raise ScheduleFormatError(f"{name} must be a flat array of integers") from None
    if arr.ndim != 1:
        raise ScheduleFormatError(f"{name} must be one-dimensional, not of shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=dtype)
    if arr.dtype.kind not in "iu":
        raise ScheduleFormatError(
            f"{name} must hold integers, not {arr.dtype.name} (a float or bool array is "
            "refused rather than truncated)"
        )
    if arr.dtype.itemsize < np.dtype(dtype).itemsize:
        raise ScheduleFormatError(
            f"{name} is {arr.dtype.name}, narrower than its {np.dtype(dtype).name}: values may "
            f"have wrapped before they got here (give it as {np.dtype(dtype).name})"
        )
    info = np.iinfo(dtype)
    lo, hi = int(arr.min()), int(arr.max())
    if lo < info.min or hi > info.max:
        bad = lo if lo < info.min else hi
        raise ScheduleFormatError(
            f"{name} holds {bad}, outside the range of {np.dtype(dtype).name} "
            f"[{info.min}, {info.max}]"
        )
    return np.ascontiguousarray(arr.astype(dtype, copy=False))


# Entries of a count vector or displacements: a buffer holds at most 2^48 elements.
_MAX_ELEMS = 1 << 48


def count_vector(value: object, name: str) -> list[int]:
    """A count vector or displacements (irregular collectives) as a list of ints: a sequence or
    one-dimensional integer array, each entry in [0, 2^48]; None is the empty vector (the
    regular form). A str, float, bool or nested value is refused."""
    if value is None:
        return []
    if isinstance(value, (str, bytes, bytearray, dict, set, frozenset)):
        raise InvalidArgumentError(
            f"{name} must be a sequence of integers, not {type(value).__name__}"
        )
    if isinstance(value, np.ndarray):
        if value.ndim != 1 or (value.size and value.dtype.kind not in "iu"):
            raise InvalidArgumentError(
                f"{name} must be a one-dimensional integer array, not {value.dtype.name} of "
                f"shape {value.shape}"
            )
        items: list[object] = list(value.tolist())
    else:
        try:
            items = list(value)  # type: ignore[call-overload]
        except TypeError:
            raise InvalidArgumentError(
                f"{name} must be a sequence of integers, not {type(value).__name__}"
            ) from None
    out: list[int] = []
    for i, v in enumerate(items):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise InvalidArgumentError(f"{name}[{i}] must be an integer, not {type(v).__name__}")
        if not 0 <= int(v) <= _MAX_ELEMS:
            raise InvalidArgumentError(f"{name}[{i}] = {int(v)} is not in [0, 2^48]")
        out.append(int(v))
    return out


def _header_int(value: object, name: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidArgumentError(f"{name} must be an integer, not {type(value).__name__}")
    v = int(value)
    if not lo <= v <= hi:
        raise InvalidArgumentError(f"{name} = {v} is not in [{lo}, {hi}]")
    return v


def _utf8_str(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be a string, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ScheduleFormatError(f"{name} {value[:40]!r} is not valid Unicode text") from None
    return value


def _check_regions(core: _core.Schedule, a: dict[str, NDArray[Any]]) -> None:
    """Every data op's regions inside their buffers (the verifier's bad_op check, up front).
    `a` holds the columns the core was built from; check_fields has vouched for their buffers,
    ranks and lengths (a compute op's unused buffer fields are not looked at)."""
    kind, rank, length = a["kind"], a["rank"], a["len"]
    P, count, root, coll = int(core.P), int(core.count), int(core.root), str(core.collective)
    # in / out sizes depend only on whether the rank is the root
    own = [_core.buffer_elems(coll, b, P, count, root, root) for b in BUFFERS]
    other = [_core.buffer_elems(coll, b, P, count, root, (root + 1) % P) for b in BUFFERS]
    reads_src = (kind == OP_KINDS.index("reduce")) | (kind == OP_KINDS.index("copy"))
    regions = [
        ("buf", "off", np.flatnonzero(kind < OP_KINDS.index("compute"))),
        ("src", "src_off", np.flatnonzero(reads_src)),
    ]
    for bcol, ocol, idx in regions:
        if idx.size == 0:
            continue
        r, buf, off, n = rank[idx], a[bcol][idx].astype(np.int64), a[ocol][idx], length[idx]
        at_root = r == root
        size = np.where(
            buf == 0,
            np.where(at_root, own[0], other[0]),
            np.where(at_root, own[1], other[1]),
        ).astype(np.int64)
        k = buf - len(BUFFERS)
        sc = k >= 0
        size[sc] = a["scratch"][a["scratch_begin"][r[sc]] + k[sc]]
        bad = (off < 0) | (off > size) | (n > size - off)
        if not bad.any():
            continue
        j = int(np.flatnonzero(bad)[0])
        i, b = int(idx[j]), int(buf[j])
        first = int(np.searchsorted(rank, rank[i]))  # the op's index within its rank
        name = BUFFERS[b] if b < len(BUFFERS) else f"s{b - len(BUFFERS)}"
        op = OP_KINDS[int(kind[i])]
        what = "source" if bcol == "src" or op == "send" else "destination"
        start, stop = int(off[j]), int(off[j]) + int(n[j])
        raise ScheduleFormatError(
            f"rank {int(rank[i])}, op {i - first} ({op}): {what} region {name}[{start}:{stop}] "
            f"is outside {name}, which has {int(size[j])} elements"
        )


class RankProgram:
    """One rank's program: its ops (a DAG over this rank's buffers) and scratch buffer sizes.
    Made by collkit (Schedule.rank, collkit.generate_rank), not constructed directly."""

    __slots__ = ("_p",)

    def __init__(self, core: _core.RankProgram) -> None:
        if not isinstance(core, _core.RankProgram):
            raise ArgumentTypeError("RankProgram is made by collkit.generate_rank or Schedule.rank")
        self._p = core

    @property
    def core(self) -> _core.RankProgram:
        """The compiled core's object (for collkit's own modules)."""
        return self._p

    @property
    def rank(self) -> int:
        return int(self._p.rank)

    def __len__(self) -> int:
        return len(self._p)

    @property
    def scratch(self) -> list[int]:
        """Elements of each scratch buffer s0, s1, ..."""
        return list(self._p.scratch)

    def deps(self, op: int) -> list[int]:
        """The ops of this rank that op `op` waits on."""
        if isinstance(op, bool) or not isinstance(op, int) or not 0 <= op < len(self):
            raise InvalidArgumentError(f"op {op!r} is not an op of this rank (0..{len(self) - 1})")
        return list(self._p.deps(op))

    def arrays(self) -> Arrays:
        """The ops as columns (numpy arrays; see `Arrays`)."""
        a: Arrays = self._p.arrays()
        return a

    def __repr__(self) -> str:
        return f"RankProgram(rank={self.rank}, ops={len(self)}, scratch={self.scratch})"


class Schedule:
    """Every rank's program for one problem: the collective, its size (P, count per rank or per
    block, element size, root) and the algorithm that made it. Made by collkit.generate,
    collkit.load / from_text / from_json / from_goal, or Schedule.from_arrays."""

    __slots__ = ("_s",)

    def __init__(self, core: _core.Schedule) -> None:
        if not isinstance(core, _core.Schedule):
            raise ArgumentTypeError(
                "Schedule is made by collkit.generate, collkit.load or from_arrays"
            )
        self._s = core

    @classmethod
    def from_arrays(
        cls,
        arrays: Arrays | dict[str, Any],
        *,
        collective: str,
        P: int,
        count: int,
        elem_size: int = 8,
        root: int = 0,
        algorithm: str = "",
        rpn: int = 0,
        order: str = "contiguous",
        check_ops: bool = True,
        counts: object = None,
        in_displs: object = None,
        out_displs: object = None,
    ) -> Schedule:
        """A schedule from columns as arrays() returns them; every field is checked (a bad one
        raises ScheduleFormatError / InvalidArgumentError naming it). `rpn` / `order`: the
        placement of ranks on nodes (rpn 0: none). Columns must be the ones arrays() returns
        (`cpu` and `nic` optional), integer arrays of their dtype or a wider one (a float, NaN,
        bool or narrower array is refused, never truncated); root must be a rank of P. Each op
        is checked as the text reader checks it (peers in [0, P), lengths >= 0, buffers the
        rank has, dependencies on its own ops) and its regions must lie inside their buffers.
        `check_ops=False` leaves the ops to the verifier (to build a schedule it must refuse).
        `counts` / `in_displs` / `out_displs`: an irregular collective's vectors (see
        Schedule.counts)."""
        if not isinstance(arrays, dict):
            raise InvalidArgumentError(
                f"arrays must be a dict of columns, not {type(arrays).__name__}"
            )
        collective = _utf8_str(collective, "collective")
        algorithm = _utf8_str(algorithm, "algorithm")
        order = _utf8_str(order, "order")
        P = _header_int(P, "P", 1, _MAX_P)
        count = _header_int(count, "count", 0, _INT64_MAX)
        elem_size = _header_int(elem_size, "elem_size", 1, _MAX_ELEM_SIZE)
        root = _header_int(root, "root", 0, P - 1)
        rpn = _header_int(rpn, "rpn", 0, _MAX_P)
        if not isinstance(check_ops, bool):
            raise ArgumentTypeError(f"check_ops must be a bool, not {type(check_ops).__name__}")
        columns: dict[str, NDArray[Any]] = {}
        for key, value in arrays.items():
            if not isinstance(key, str):
                raise ScheduleFormatError(f"array names are strings, not {key!r}")
            dtype = ARRAY_DTYPES.get(key)
            if dtype is None:  # a misspelt column would be dropped silently
                raise ScheduleFormatError(
                    f"unknown array {printable(key[:40])!r} (the arrays: {', '.join(ARRAY_DTYPES)})"
                )
            columns[key] = integer_column(value, f"array {key!r}", dtype)
        vectors = (
            count_vector(counts, "counts"),
            count_vector(in_displs, "in_displs"),
            count_vector(out_displs, "out_displs"),
        )
        core = _core.Schedule.from_arrays(
            collective, P, count, elem_size, root, algorithm, columns, rpn, order, *vectors
        )
        if check_ops:
            _core.check_fields(core)  # the text reader's checks of every op
            _check_regions(core, columns)
        return cls(core)

    @property
    def core(self) -> _core.Schedule:
        """The compiled core's object (for collkit's own modules)."""
        return self._s

    @property
    def collective(self) -> str:
        return str(self._s.collective)

    @property
    def algorithm(self) -> str:
        """The canonical name of the algorithm that made it ('' if none was recorded)."""
        return str(self._s.algorithm)

    @property
    def P(self) -> int:
        return int(self._s.P)

    @property
    def count(self) -> int:
        """Elements per rank (per block for collectives with a block per rank)."""
        return int(self._s.count)

    @property
    def counts(self) -> list[int]:
        """An irregular collective's count vector: P entries (block b holds counts[b]
        elements), P^2 for alltoallv ([r * P + q]: rank r to rank q); [] for the regular form
        (every block `count` elements). `count` is then its largest entry."""
        return list(self._s.counts)

    @property
    def in_displs(self) -> list[int]:
        """Where `in`'s blocks start (elements): P entries alike on every rank, or P^2 (rank
        r's at [r * P, r * P + P]); [] for packed blocks."""
        return list(self._s.in_displs)

    @property
    def out_displs(self) -> list[int]:
        """Where `out`'s blocks start, as in_displs."""
        return list(self._s.out_displs)

    def in_elems(self, rank: int) -> int:
        """Elements of `rank`'s input buffer (the end of its last-lying block)."""
        return int(self._s.in_elems(_header_int(rank, "rank", 0, self.P - 1)))

    def out_elems(self, rank: int) -> int:
        """Elements of `rank`'s output buffer."""
        return int(self._s.out_elems(_header_int(rank, "rank", 0, self.P - 1)))

    @property
    def elem_size(self) -> int:
        return int(self._s.elem_size)

    @property
    def root(self) -> int:
        return int(self._s.root)

    @property
    def rpn(self) -> int:
        """Ranks per node of its placement (0: none given; node-aware algorithms need one)."""
        return int(self._s.rpn)

    @property
    def order(self) -> str:
        """How its ranks fill nodes: 'contiguous' or 'round_robin' (see collkit.Placement)."""
        return str(self._s.order)

    @property
    def total_ops(self) -> int:
        return int(self._s.total_ops)

    @property
    def memory_bytes(self) -> int:
        """Bytes the core holds for it."""
        return int(self._s.memory_bytes)

    def rank(self, r: int) -> RankProgram:
        """Rank r's program (a copy)."""
        if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < self.P:
            raise InvalidArgumentError(f"rank {r!r} is not a rank of P = {self.P}")
        return RankProgram(self._s.rank(r))

    def ranks(self) -> Iterator[RankProgram]:
        """Every rank's program, in rank order."""
        return (self.rank(r) for r in range(self.P))

    def arrays(self) -> Arrays:
        """Every op as columns (numpy arrays), ranks in order, and the scratch buffers."""
        a: Arrays = self._s.arrays()
        return a

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schedule):
            return NotImplemented
        return bool(self._s == other._s)

    __hash__ = None  # type: ignore[assignment]  # equal by value; a hash would read every op

    def __repr__(self) -> str:
        name = self.algorithm or self.collective
        root = f", root={self.root}" if self.root else ""
        return (
            f"Schedule({name!r}, P={self.P}, count={self.count}, elem_size={self.elem_size}"
            f"{root}, ops={self.total_ops})"
        )
