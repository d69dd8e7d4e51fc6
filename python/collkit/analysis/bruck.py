"""The radix-r Bruck all-to-all, counted ([Fan 2022]): numC, numD and the choice of r.

Three sources of the same numbers, so that each checks the others:

* ``poster_*``: the poster's closed forms, transcribed as printed (with ``w`` computed exactly);
* ``bruck_steps``: the step sequence the C++ generators use (``collkit/bruck.hpp``);
* ``schedule_counts``: the messages of a generated schedule, counted op by op.

>>> from collkit.analysis import bruck
>>> bruck.poster_num_c(64, 8), bruck.poster_num_d_total(64, 8)
(14, 112)
>>> bruck.schedule_counts("alltoall:bruck(r=8)", 64).num_c
14
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from collkit import _core
from collkit.algorithms import Algorithm
from collkit.errors import InvalidArgumentError

__all__ = [
    "DEFAULT_ALPHA_S",
    "DEFAULT_BETA_S_PER_BYTE",
    "BruckCounts",
    "bruck_steps",
    "candidate_radixes",
    "choose_r",
    "choose_r_simulated",
    "model_seconds",
    "plot_counts",
    "poster_num_c",
    "poster_num_d",
    "poster_num_d_total",
    "poster_rounds_float",
    "resolved_radix",
    "rounds",
    "schedule_counts",
    "sqrt_rule",
    "step_counts",
]

DEFAULT_ALPHA_S: float = float(_core.bruck_default_alpha_s)
"""alpha of the model behind r=auto: start-up per message, seconds."""
DEFAULT_BETA_S_PER_BYTE: float = float(_core.bruck_default_beta_s_per_byte)
"""beta of the model behind r=auto: transfer time per byte, seconds."""


def _check(P: int, r: int) -> None:
    if not isinstance(P, int) or not isinstance(r, int) or P < 1 or r < 2:
        raise InvalidArgumentError(f"need integers P >= 1 and r >= 2, not P={P!r}, r={r!r}")


def rounds(P: int, r: int) -> int:
    """w = ceil(log_r P), exactly (integer arithmetic)."""
    _check(P, r)
    return int(_core.bruck_rounds(P, r))


def poster_rounds_float(P: int, r: int) -> int:
    """w as floating point computes it, ``ceil(log(P) / log(r))``: one too many for some exact
    powers (P = 243, r = 3 gives 6), which breaks every formula that uses w."""
    _check(P, r)
    return math.ceil(math.log(P) / math.log(r)) if P > 1 else 0


def poster_num_c(P: int, r: int, w: int | None = None) -> int:
    """numC = w (r - 1) - floor((r^w - P) / r^(w-1)), the poster's closed form.

    For P = 1 (w = 0) the form reads 0 - floor(0 / r^-1) = 0 steps."""
    _check(P, r)
    w = rounds(P, r) if w is None else w
    if w == 0:
        return 0
    rw: int = r**w  # int ** int is typed Any (a negative exponent gives a float); w >= 1 here
    return w * (r - 1) - (rw - P) // (rw // r)


def poster_num_d(P: int, r: int, x: int, z: int) -> int:
    """numD of step z of round x, the poster's piecewise form:

    lc = floor(P / r^(x+1)) r^x, re = P mod r^(x+1), t = re - z r^x;
    numD = lc if t <= 0; lc + r^x if t / r^x > 0 (integer division: t >= r^x); lc + t mod r^x
    otherwise. Meaningful for 0 <= x < w and 1 <= z < r (see docs/alltoall.md on the ranges the
    poster prints)."""
    _check(P, r)
    if x < 0:
        raise InvalidArgumentError(f"round x = {x} must be >= 0")
    rx: int = r**x
    lc = (P // (rx * r)) * rx
    re = P % (rx * r)
    t = re - z * rx
    if t <= 0:
        return lc
    if t // rx > 0:
        return lc + rx
    return lc + t % rx


def _poster_steps(P: int, r: int) -> npt.NDArray[np.int64]:
    """numD of every step the poster's formula counts (x < w, 1 <= z < r, numD > 0), in order,
    vectorised: the P <= 512 x every r check evaluates ~10^7 steps."""
    w = rounds(P, r)
    if w == 0:
        return np.zeros(0, dtype=np.int64)
    x = np.repeat(np.arange(w, dtype=np.int64), r - 1)
    z = np.tile(np.arange(1, r, dtype=np.int64), w)
    rx = np.int64(r) ** x
    lc = (P // (rx * r)) * rx
    re = P % (rx * r)
    t = re - z * rx
    d: npt.NDArray[np.int64] = np.where(t <= 0, lc, np.where(t // rx > 0, lc + rx, lc + t % rx))
    return d[d > 0]


def poster_num_d_total(P: int, r: int) -> int:
    """Total blocks sent by one rank: the poster's numD summed over the steps."""
    _check(P, r)
    return int(_poster_steps(P, r).sum())


def bruck_steps(P: int, r: int) -> list[tuple[int, int, int, int]]:
    """The steps the generators perform: (round x, digit z, distance z r^x, blocks numD)."""
    _check(P, r)
    return [tuple(s) for s in _core.bruck_steps(P, r)]  # type: ignore[misc]


def step_counts(P: int, r: int) -> tuple[int, int]:
    """(numC, total numD) of the generators' step list, counted in C++."""
    _check(P, r)
    c, d = _core.bruck_counts(P, r)
    return int(c), int(d)


@dataclass(frozen=True)
class BruckCounts:
    """What one rank of a schedule sends: one entry per message, in op order."""

    num_c: int
    num_d: tuple[int, ...]  # blocks per message

    @property
    def num_d_total(self) -> int:
        return sum(self.num_d)


def schedule_counts(algorithm: str | Algorithm, P: int, rank: int = 0) -> BruckCounts:
    """numC and numD counted from the messages of `rank` in the generated schedule (count = 1
    element per block, so a message's length is its number of blocks)."""
    algo = algorithm if isinstance(algorithm, Algorithm) else Algorithm(algorithm)
    a = algo.generate_rank(P, rank, 1).arrays()
    sends = a["len"][a["kind"] == 0]
    return BruckCounts(len(sends), tuple(int(v) for v in sends))


def sqrt_rule(P: int) -> int:
    """The poster's rule of thumb: r = ceil(sqrt(P)) (at least 2)."""
    if P < 1:
        raise InvalidArgumentError(f"P = {P} must be >= 1")
    return max(2, math.isqrt(P - 1) + 1) if P > 1 else 2


def model_seconds(
    P: int,
    r: int,
    block_bytes: int,
    alpha: float = DEFAULT_ALPHA_S,
    beta: float = DEFAULT_BETA_S_PER_BYTE,
) -> float:
    """T(r) = numC alpha + numD_total N beta (N = block_bytes)."""
    _check(P, r)
    return float(_core.bruck_model_seconds(P, r, block_bytes, alpha, beta))


def choose_r(
    P: int,
    block_bytes: int,
    alpha: float = DEFAULT_ALPHA_S,
    beta: float = DEFAULT_BETA_S_PER_BYTE,
) -> dict[str, Any]:
    """The r with the least model time (what r=auto picks with the default alpha, beta),
    reported beside the sqrt(P) rule of thumb and the model's times for both."""
    _check(P, 2)
    best = int(_core.bruck_best_radix(P, block_bytes, alpha, beta))
    rule = min(sqrt_rule(P), max(P, 2))
    return {
        "P": P,
        "block_bytes": block_bytes,
        "r_model": best,
        "r_sqrt": rule,
        "t_model_s": model_seconds(P, best, block_bytes, alpha, beta),
        "t_sqrt_s": model_seconds(P, rule, block_bytes, alpha, beta),
    }


def candidate_radixes(P: int) -> list[int]:
    """The radixes worth simulating for P: 2..8, powers of two, ceil(sqrt P) and its
    neighbours, and P (every r >= P is r = P)."""
    if P < 1:
        raise InvalidArgumentError(f"P = {P} must be >= 1")
    top = max(2, P)
    rs = set(range(2, min(top, 8) + 1)) | {top}
    rs |= {1 << k for k in range(1, top.bit_length()) if 1 << k <= top}
    s = sqrt_rule(P)
    rs |= {r for r in (s - 1, s, s + 1) if 2 <= r <= top}
    return sorted(rs)


def choose_r_simulated(
    P: int,
    block_bytes: int,
    variant: str = "alltoall:bruck",
    radixes: list[int] | None = None,
    **simulate_args: Any,
) -> dict[str, Any]:
    """The r with the least simulated time among `radixes` (default: candidate_radixes(P);
    the model's r and the sqrt rule's r are always among them),
    with `collkit.simulate` and its model arguments (e.g. model="loggp", L="1us", G="0.1ns").
    Returns the choice, every simulated time (ns), and the model's and the sqrt rule's r."""
    import collkit

    if not hasattr(collkit, "simulate"):
        raise InvalidArgumentError("the simulator (collkit.simulate) is not available")
    r_model = choose_r(P, block_bytes)["r_model"]
    r_sqrt = min(sqrt_rule(P), max(P, 2))
    times: dict[int, float] = {}
    for r in sorted(set(radixes or candidate_radixes(P)) | {r_model, r_sqrt}):
        res = collkit.simulate(
            f"{variant}(r={r})", P, count=block_bytes, elem_size=1, **simulate_args
        )
        times[r] = float(res.makespan)
    best = min(times, key=lambda r: (times[r], r))
    return {
        "P": P,
        "block_bytes": block_bytes,
        "r_simulated": best,
        "r_model": r_model,
        "r_sqrt": r_sqrt,
        "times_ns": times,
    }


def resolved_radix(algorithm: str | Algorithm, P: int, count: int, elem_size: int = 8) -> int:
    """The radix a Bruck algorithm name runs with for this problem (r=auto resolved)."""
    algo = algorithm if isinstance(algorithm, Algorithm) else Algorithm(algorithm)
    algo.generate_rank(P, 0, 0, elem_size)  # raises the generator's own error for a bad r
    r = str(algo.params["r"])
    if r == "auto":
        return int(
            _core.bruck_best_radix(P, count * elem_size, DEFAULT_ALPHA_S, DEFAULT_BETA_S_PER_BYTE)
        )
    return int(r)


def plot_counts(P: int, path: str | None = None, linear: bool = True) -> Any:
    """The poster's Fig. 4: numC and total numD against r for one P (log-scaled r), with the
    spread-out values (P-1 each) and r = ceil(sqrt P) marked. Returns the Figure (the backend
    is left alone); with `path` it is also written there."""
    from collkit.plotting import new_figure

    rs = np.arange(2, P + 1)
    num_c = [poster_num_c(P, int(r)) for r in rs]
    num_d = [poster_num_d_total(P, int(r)) for r in rs]
    fig = new_figure(figsize=(7, 4))
    ax = fig.subplots()
    ax.plot(rs, num_c, label="numC (steps)", color="tab:blue")
    ax.plot(rs, num_d, label="numD (blocks sent, total)", color="tab:red")
    if linear:
        ax.axhline(P - 1, color="gray", ls=":", label=f"spread-out: P-1 = {P - 1}")
    s = sqrt_rule(P)
    ax.axvline(s, color="k", ls="--", lw=0.8, label=f"r = ceil(sqrt P) = {s}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("radix r")
    ax.set_ylabel("count")
    ax.set_title(f"Radix-r Bruck, P = {P}: steps and blocks sent per rank")
    ax.legend(fontsize=8)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
