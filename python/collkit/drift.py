"""Measuring on a drifting machine: the rounds of an interleaved measurement, when two blocks may
be compared, and when a comparison with the native call is not to be trusted (docs/tuning.md).

The bench driver measures each size in rounds; in each round the native call is re-measured around
every candidate (native, c1, native, c2, ..., native) and every block sits between two
core-to-core probes (a cache-line round trip between two ranks, ns). From the driver's block lines
this module fills each row's per-round fields, and decides:

- a round is *compared* only when the probes around its three blocks (native before, the
  candidate, native after) agree: largest / smallest <= 1 + PROBE_TOLERANCE;
- a row is *suspect* (re-measured, never a winner) when fewer than MIN_ROUNDS rounds are compared,
  when its speedup over native exceeds MAX_SPEEDUP (no cost model lets an algorithm beat the MPI's
  own call by 10x at the same P and size on one machine), or when the native call moved by more
  than NATIVE_DRIFT_TOLERANCE between its blocks around the candidate;
- a round is *won* when the candidate's block median is below both native blocks around it.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from collkit.results import Row

# Probes agree when the largest is at most 1.5x the smallest. The two placements seen on a
# 2-core VM give ~115 ns and ~510 ns (4.4x apart, docs/tuning.md); one placement's probes differ by
# a few percent on a quiet machine and by up to ~30% under load.
PROBE_TOLERANCE = 0.5
# A speedup over native beyond this is not believed (drift gave 5,338x "wins", docs/tuning.md).
MAX_SPEEDUP = 10.0
# Native may move this much (largest / smallest block median - 1) between the blocks around a
# candidate before the comparison is not trusted.
NATIVE_DRIFT_TOLERANCE = 0.5
# Rounds whose probes must agree (fewer when the campaign measured fewer rounds).
MIN_ROUNDS = 2
# Re-measurements of a suspect row before the campaign gives up on it (it never wins).
MAX_RETRIES = 2


@dataclass
class Block:
    """One block as the driver prints it: an algorithm's iterations in one round."""

    algorithm: str
    bytes: int
    round: int
    median_us: float
    probe_rtt_ns_before: float
    probe_rtt_ns_after: float

    @staticmethod
    def from_json(d: dict[str, object]) -> Block:
        def num(x: object) -> float:
            return math.nan if x is None else float(x)  # type: ignore[arg-type]

        return Block(
            str(d["algorithm"]),
            int(d["bytes"]),  # type: ignore[call-overload]
            int(d["round"]),  # type: ignore[call-overload]
            num(d["median_us"]),
            num(d.get("probe_rtt_ns_before")),
            num(d.get("probe_rtt_ns_after")),
        )


def load_avg_1m() -> float:
    """The machine's 1-minute load average (NaN where the OS does not say)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return math.nan


def _finite(xs: Sequence[float]) -> list[float]:
    return [x for x in xs if not math.isnan(x)]


def attach_rounds(row: Row, blocks: Sequence[Block], native: str = "native") -> None:
    """Fills `row`'s per-round fields from the blocks of its size, in the order they ran: for a
    candidate, the native blocks just before and after each of its blocks; for the native row,
    its own blocks."""
    seq = [b for b in blocks if b.bytes == row.bytes]
    for i, b in enumerate(seq):
        if b.algorithm != row.algorithm:
            continue
        around = [b]
        nb = na = math.nan
        if row.algorithm != native:
            if i > 0 and seq[i - 1].algorithm == native:
                nb = seq[i - 1].median_us
                around.append(seq[i - 1])
            if i + 1 < len(seq) and seq[i + 1].algorithm == native:
                na = seq[i + 1].median_us
                around.append(seq[i + 1])
        probes = _finite([p for x in around for p in (x.probe_rtt_ns_before, x.probe_rtt_ns_after)])
        row.round_median_us.append(b.median_us)
        row.round_native_before_us.append(nb)
        row.round_native_after_us.append(na)
        row.round_probe_rtt_ns_min.append(min(probes) if probes else math.nan)
        row.round_probe_rtt_ns_max.append(max(probes) if probes else math.nan)


def probes_agree(lo: float, hi: float, tolerance: float = PROBE_TOLERANCE) -> bool:
    """Whether a round's probes agree. No probe (one rank per node) cannot disagree."""
    if math.isnan(lo) or math.isnan(hi) or lo <= 0:
        return True
    return hi <= lo * (1.0 + tolerance)


def compared_rounds(row: Row) -> list[int]:
    """The rounds of `row` whose probes agree and that have native on both sides."""
    out = []
    for i, (lo, hi) in enumerate(
        zip(row.round_probe_rtt_ns_min, row.round_probe_rtt_ns_max, strict=True)
    ):
        nb, na = row.round_native_before_us[i], row.round_native_after_us[i]
        if probes_agree(lo, hi) and not math.isnan(nb) and not math.isnan(na):
            out.append(i)
    return out


def rounds_won(row: Row, min_gain: float = 0.0) -> list[bool]:
    """Per compared round: the candidate's median below both native medians around it."""
    return [
        row.round_median_us[i] * (1.0 + min_gain)
        < min(row.round_native_before_us[i], row.round_native_after_us[i])
        for i in compared_rounds(row)
    ]


def suspect_reason(row: Row) -> str:
    """Why `row`'s comparison with the native call is not trusted ("" when it is). Only for an
    interleaved candidate row with rounds; other rows are never winners and get ""."""
    if not row.interleaved or not row.round_median_us or row.error:
        return ""
    n = len(row.round_median_us)
    compared = compared_rounds(row)
    need = min(MIN_ROUNDS, n)
    if len(compared) < need:
        lo = _finite(row.round_probe_rtt_ns_min)
        hi = _finite(row.round_probe_rtt_ns_max)
        return (
            f"probes agree in {len(compared)} of {n} rounds, {need} needed (core-to-core round "
            f"trip {min(lo) if lo else math.nan:.0f}..{max(hi) if hi else math.nan:.0f} ns; "
            f"agreement: within {1 + PROBE_TOLERANCE:g}x)"
        )
    natives = [row.round_native_before_us[i] for i in compared]
    natives += [row.round_native_after_us[i] for i in compared]
    lo_n, hi_n = min(natives), max(natives)
    if lo_n > 0 and hi_n > lo_n * (1.0 + NATIVE_DRIFT_TOLERANCE):
        return (
            f"native moved from {lo_n:.3g} to {hi_n:.3g} µs between its blocks around this "
            f"candidate (more than {NATIVE_DRIFT_TOLERANCE:.0%})"
        )
    med_c = statistics.median(row.round_median_us[i] for i in compared)
    med_n = statistics.median(natives)
    if med_c > 0 and med_n / med_c > MAX_SPEEDUP:
        return (
            f"speedup {med_n / med_c:.1f}x over native is beyond what the models allow "
            f"(> {MAX_SPEEDUP:g}x at the same P and size)"
        )
    return ""


__all__ = [
    "MAX_RETRIES",
    "MAX_SPEEDUP",
    "MIN_ROUNDS",
    "NATIVE_DRIFT_TOLERANCE",
    "PROBE_TOLERANCE",
    "Block",
    "attach_rounds",
    "compared_rounds",
    "load_avg_1m",
    "probes_agree",
    "rounds_won",
    "suspect_reason",
]
