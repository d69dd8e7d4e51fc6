"""The pipelining postal model of [Ruefenacht 2017] §3 and the optimal fan-out b_opt.

A stage in which a rank issues b overlapping sends of n bytes costs (Eq. 3)

    alpha_p + b (alpha_r + n beta + n gamma)

alpha_p: the part of a send's latency that overlaps with later sends (propagation); alpha_r: the
part that does not (library and NIC work); beta: seconds per byte on the wire; gamma: seconds per
byte reduced. Per stage kind (b = B - 1, c = alpha_r + n beta, g = n gamma, k = ceil(R / G)):

    aB       alpha_p + b (c + g)                       Eq. 3 as printed
    cTmB     alpha_p + c + b g                          one send each, the last rank reduces b
    eTmB     alpha_p + b c                              the last rank sends b, nothing to reduce
    mRgGaB   alpha_p + B c + (b + k) g                  a remainder rank sends to all B of a group
    nRgGaB   alpha_p + (b + k) c + b g                  a group rank also sends to k remainders

A schedule costs the sum of its stages; for uniform b and N = (b+1)^s that is Eq. 4,
(alpha_p + b alpha_r) log_{b+1} N when n = 0.

b_opt: Eq. 4 over a continuous b is N-independent: minimise f(b) = (rho + b) / ln(b + 1) with
rho = alpha_p / alpha_r (alpha_r + n beta + n gamma in place of alpha_r when n > 0).
f'(b) = 0  <=>  (b+1)(ln(b+1) - 1) = rho - 1  <=>  b_opt = exp(W((rho - 1)/e) + 1) - 1.
The seed's Eq. 5 prints exp(W(rho - 1) + 1) - 1, without the 1/e inside W; it agrees only at
rho = 1 and overestimates b_opt elsewhere (rho = 4: 6.77 instead of 3.95). b_opt_brute checks
the closed form against a direct minimisation (docs/recursive-multiplying.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from collkit import units
from collkit.analysis.recmult.stages import Plan, Stage, plan
from collkit.errors import InvalidArgumentError


def parse_time(text: str) -> float:
    """Seconds in '1.34us', '500ns', '0.4ns', '2e-6s' (bare numbers are ns, as everywhere)."""
    return units.seconds(units.parse_time(text))


@dataclass(frozen=True)
class PipelinedPostal:
    """Pipelining postal model parameters ([Ruefenacht 2017] Eq. 3), in seconds (beta, gamma: per
    byte).
    """

    alpha_p: float
    alpha_r: float
    beta: float = 0.0
    gamma: float = 0.0

    def __post_init__(self) -> None:
        for name in ("alpha_p", "alpha_r", "beta", "gamma"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise InvalidArgumentError(f"{name} = {v!r} must be a finite time >= 0")

    def ratio(self, nbytes: int = 0) -> float:
        """alpha_p over the per-message cost that does not overlap (alpha_r + n beta + n gamma)."""
        per_msg = self.alpha_r + nbytes * (self.beta + self.gamma)
        if per_msg <= 0:
            raise InvalidArgumentError("alpha_r + n (beta + gamma) must be > 0 for a ratio")
        return self.alpha_p / per_msg


# Seed 002 Table 1 (ARCHER, non-blocking sends) and the simulator settings of its §6.2.
ARCHER_MIN = PipelinedPostal(alpha_p=1.34e-6, alpha_r=0.34e-6)
ARCHER_MEDIAN = PipelinedPostal(alpha_p=1.51e-6, alpha_r=0.38e-6)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def stage_cost(stage: Stage, model: PipelinedPostal, nbytes: int = 0) -> float:
    """Seconds one stage takes in the pipelining postal model (see the module docstring)."""
    c = model.alpha_r + nbytes * model.beta
    g = nbytes * model.gamma
    b = stage.base - 1
    if stage.kind == "factor":
        return model.alpha_p + b * (c + g)
    if stage.kind == "collapse":
        return model.alpha_p + c + b * g
    if stage.kind == "expand":
        return model.alpha_p + b * c
    k = _ceil_div(stage.remainder, stage.groups)
    if stage.kind == "merge":
        return model.alpha_p + stage.base * c + (b + k) * g
    return model.alpha_p + (b + k) * c + b * g  # invmerge


def schedule_cost(
    schedule: str | Plan, model: PipelinedPostal, nbytes: int = 0, N: int | None = None
) -> float:
    """Seconds a schedule takes in the pipelining postal model (the sum of its stages)."""
    if not isinstance(schedule, Plan):
        if N is None:
            raise InvalidArgumentError("schedule_cost of a stage list needs N")
        schedule = plan(schedule, N)
    return float(sum(stage_cost(s, model, nbytes) for s in schedule.stages))


def eq4_cost(
    b: float | np.ndarray, N: float | np.ndarray, model: PipelinedPostal, nbytes: int = 0
) -> float | np.ndarray:
    """Eq. 4 with the n terms: (alpha_p + b (alpha_r + n beta + n gamma)) log_{b+1} N."""
    per = model.alpha_p + np.asarray(b) * (model.alpha_r + nbytes * (model.beta + model.gamma))
    out = per * np.log(N) / np.log1p(b)
    return float(out) if np.ndim(out) == 0 else out


def lambert_w0(x: float) -> float:
    """The principal branch W0 of the Lambert W function (w e^w = x) for x >= -1/e."""
    if not math.isfinite(x) or x < -1 / math.e:
        raise InvalidArgumentError(f"W0({x}) is undefined: x must be finite and >= -1/e")
    if x == 0:
        return 0.0
    w = math.log1p(x) if x < math.e else math.log(x) - math.log(math.log(x))
    for _ in range(100):  # Halley's iteration
        ew = math.exp(w)
        f = w * ew - x
        if w == -1.0:
            break
        step = f / (ew * (w + 1) - (w + 2) * f / (2 * w + 2))
        w -= step
        if abs(step) <= 1e-15 * (1 + abs(w)):
            break
    return w


def _check_ratio(ratio: float) -> None:
    if not math.isfinite(ratio) or ratio <= 0:
        raise InvalidArgumentError(f"ratio alpha_p/alpha_r = {ratio} must be finite and > 0")


def b_opt(ratio: float) -> float:
    """The fan-out b minimising Eq. 4 for rho = alpha_p / alpha_r: e^(W((rho-1)/e) + 1) - 1."""
    _check_ratio(ratio)
    return math.exp(lambert_w0((ratio - 1) / math.e) + 1) - 1


def b_opt_eq5(ratio: float) -> float:
    """The seed's Eq. 5 as printed: e^(W(rho - 1) + 1) - 1 (wrong except at rho = 1)."""
    _check_ratio(ratio)
    return math.exp(lambert_w0(ratio - 1) + 1) - 1


def b_opt_brute(ratio: float) -> float:
    """The b > 0 minimising (rho + b) / ln(b + 1), by evaluating it on a fine grid and then a
    finer one around the best point: no calculus, to check the closed forms against."""
    _check_ratio(ratio)
    grid = np.geomspace(1e-3, 1e6, 200_001)
    for _ in range(3):
        f = (ratio + grid) / np.log1p(grid)
        i = int(np.argmin(f))
        lo, hi = grid[max(i - 2, 0)], grid[min(i + 2, len(grid) - 1)]
        grid = np.linspace(lo, hi, 20_001)
    f = (ratio + grid) / np.log1p(grid)
    return float(grid[int(np.argmin(f))])
