"""The count limit of [Rabenseifner]: from which count on a large-count protocol (Rabenseifner's
reduce
or allreduce, the ring) beats the small-count one, per P, and the bandwidths on both sides.

Times come from a *source*: the alpha-beta-gamma closed forms here (`model_time`), or any
function (P, count) -> seconds, such as the simulator or measurements once they exist. The limit
is the smallest count of a sweep from which on the new protocol stays faster; for the closed
forms, which are linear in the count, it is also solved exactly (`model_limit`).

>>> m = AlphaBetaGamma(alpha=2e-6, beta=1e-10, gamma=2.5e-10)
>>> model_limit("allreduce:rd", "allreduce:rabenseifner", 16, m) > 0
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from collkit.algorithms import Algorithm, algorithms
from collkit.errors import InvalidArgumentError

__all__ = [
    "SEED_001_P",
    "AlphaBetaGamma",
    "LimitRow",
    "TimeSource",
    "format_limit_table",
    "limit_from_times",
    "limit_rows",
    "model_limit",
    "model_time",
    "modeled",
]

# The communicator sizes of [Rabenseifner]'s measurements.
SEED_001_P = [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256]


@dataclass(frozen=True)
class AlphaBetaGamma:
    """Hockney's model with a reduction term: a message of m bytes costs alpha + m beta, and
    combining m bytes costs m gamma. Units: alpha in s, beta and gamma in s per byte."""

    alpha: float = 2e-6  # s per message
    beta: float = 1e-10  # s per byte sent (10 GB/s)
    gamma: float = 2.5e-10  # s per byte reduced (4 GB/s: a sum of doubles out of cache)

    def __post_init__(self) -> None:
        for k in ("alpha", "beta", "gamma"):
            v = getattr(self, k)
            if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0):
                raise InvalidArgumentError(f"model parameter {k} = {v!r} must be finite and >= 0")


def modeled() -> list[str]:
    """The algorithms that register a closed-form cost (AlgorithmSpec::model in the core)."""
    return [str(s["name"]) for s in algorithms() if s["has_model"]]


def model_time(algorithm: str | Algorithm, P: int, nbytes: float, model: AlphaBetaGamma) -> float:
    """Seconds for one call of `algorithm` on P ranks with nbytes per rank, by the closed form
    its file registers: alpha, beta and gamma weighted by the cost's coefficients."""
    algo = algorithm if isinstance(algorithm, Algorithm) else Algorithm(algorithm)
    if not algo.spec["has_model"]:
        raise InvalidArgumentError(
            f"no closed form for {algo.canonical}; modeled: {', '.join(modeled())}"
        )
    if P < 1 or nbytes < 0:
        raise InvalidArgumentError(f"P = {P} must be >= 1 and bytes = {nbytes} >= 0")
    c = algo.cost(P, float(nbytes))
    return float(c["alpha"] * model.alpha + c["beta"] * model.beta + c["gamma"] * model.gamma)


TimeSource = Callable[[str, int, int], float]  # (algorithm, P, count) -> seconds


def limit_from_times(
    counts: Sequence[int], t_old: Sequence[float], t_new: Sequence[float]
) -> int | None:
    """The smallest count of the sweep from which on the new protocol is faster at every larger
    count of the sweep; None if it is not faster at the largest."""
    if not (len(counts) == len(t_old) == len(t_new)) or not counts:
        raise InvalidArgumentError("counts and times must be non-empty and of the same length")
    if list(counts) != sorted(counts):
        raise InvalidArgumentError("counts must be sorted")
    limit = None
    for c, o, n in zip(reversed(counts), reversed(t_old), reversed(t_new), strict=True):
        if n < o:
            limit = c
        else:
            break
    return limit


def model_limit(
    old: str, new: str, P: int, model: AlphaBetaGamma, elem_size: int = 8
) -> int | None:
    """The smallest count (elements) from which on `new` is faster than `old` by the closed forms.
    Both are linear in the count (the segmented ring piecewise linear), so they cross at most once
    and bisection finds the crossing exactly. None if `new` never wins (up to 2^40 elements)."""

    def f(c: int) -> bool:
        return model_time(new, P, c * elem_size, model) < model_time(old, P, c * elem_size, model)

    lo, hi = 1, 1
    while not f(hi):
        hi *= 2
        if hi > 1 << 40:
            return None
    while lo < hi:  # the first count that wins (the forms cross once)
        mid = (lo + hi) // 2
        if f(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


@dataclass(frozen=True)
class LimitRow:
    P: int
    limit: int | None  # elements
    bw_new: float  # bytes/s at the reference count
    bw_old: float

    @property
    def ratio(self) -> float:
        return self.bw_new / self.bw_old if self.bw_old > 0 else math.inf


def limit_rows(
    old: str,
    new: str,
    Ps: Sequence[int],
    model: AlphaBetaGamma,
    ref_bytes: int = 1 << 20,
    elem_size: int = 8,
) -> list[LimitRow]:
    """Per P: the limit, and the bandwidth (bytes per rank / time) of both at ref_bytes."""
    rows = []
    for P in Ps:
        t_new = model_time(new, P, ref_bytes, model)
        t_old = model_time(old, P, ref_bytes, model)
        rows.append(
            LimitRow(
                P=P,
                limit=model_limit(old, new, P, model, elem_size),
                bw_new=ref_bytes / t_new if t_new > 0 else math.inf,
                bw_old=ref_bytes / t_old if t_old > 0 else math.inf,
            )
        )
    return rows


def _group(P: int) -> str:
    if P in (2, 3):
        return str(P)
    return "2**n" if P & (P - 1) == 0 else "others"


def _span(values: list[float], fmt: str) -> str:
    if not values:
        return "-"
    a, b = values[0], values[-1]
    return format(a, fmt) if format(a, fmt) == format(b, fmt) else f"{a:{fmt}} .. {b:{fmt}}"


def format_limit_table(title: str, rows: Sequence[LimitRow]) -> str:
    """Seed 001's table: limit [count], bandwidth of the new and the old protocol [MB/s] and
    their ratio, for P = 2, 3, the powers of two and the others (ranges in order of P)."""
    groups = ["2", "3", "2**n", "others"]
    by: dict[str, list[LimitRow]] = {g: [] for g in groups}
    for r in rows:
        by[_group(r.P)].append(r)
    cols = [g for g in groups if by[g]]
    width = 18
    lines = [f"{title}:", " " * 30 + "communicator size".center(width * len(cols))]
    lines.append(" " * 30 + "".join(c.center(width) for c in cols))
    lines.append("")

    def row(label: str, cells: list[str]) -> str:
        return f"  {label}".ljust(30) + "".join(c.center(width) for c in cells)

    lim = []
    for g in cols:
        vals = [r.limit for r in by[g]]
        known = sorted({v for v in vals if v is not None})
        text = (
            "-" if not known else str(known[0]) if len(known) == 1 else f"{known[0]}..{known[-1]}"
        )
        lim.append(text + ("*" if None in vals else ""))
    lines.append(row("limit [count value]", lim))
    lines.append(
        row(
            "bandwidth [MB/s] new prot.",
            [_span([r.bw_new / 1e6 for r in by[g]], ".1f") for g in cols],
        )
    )
    lines.append(
        row(
            "                 old prot.",
            [_span([r.bw_old / 1e6 for r in by[g]], ".1f") for g in cols],
        )
    )
    lines.append(row("ratio new/old", [_span([r.ratio for r in by[g]], ".1f") for g in cols]))
    if any(r.limit is None for r in rows):
        lines.append("  * the new protocol never wins for some P of the group")
    return "\n".join(lines)
