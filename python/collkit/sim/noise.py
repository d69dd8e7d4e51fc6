"""Noise and skew: seeded distributions of non-negative delays (ns), and their specs."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from collkit import units
from collkit.errors import ArgumentTypeError, InvalidArgumentError
from collkit.sim.options import parse_time
from collkit.sim.spec import parse_spec

# A bare number: how a LogGOPSim noise trace writes its columns.
_BARE = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")  # ASCII digits

# Each kind of spec and how many arguments it takes (exp is exponential).
_ARITY = {"none": 0, "constant": 1, "uniform": 2, "exponential": 1, "lognormal": 2, "file": 1}


@dataclass(frozen=True)
class Distribution:
    """A seeded distribution of non-negative delays (ns)."""

    # none, constant, uniform, exponential, lognormal, samples, trace (LogGOPSim's noise trace:
    # samples = start, duration, start, duration, ...; b = 1: one offset for all ranks)
    kind: str = "none"
    a: float = 0.0
    b: float = 0.0
    samples: tuple[float, ...] = ()

    def mean(self) -> float:
        """The distribution's mean (ns), for checks and reports."""
        if self.kind == "none":
            return 0.0
        if self.kind == "constant":
            return self.a
        if self.kind == "uniform":
            return (self.a + self.b) / 2
        if self.kind == "exponential":
            return self.a
        if self.kind == "lognormal":
            return self.a * math.exp(self.b**2 / 2)
        if self.kind == "trace":  # detour time per ns of the trace's period, times 1 ns
            return float(np.sum(self.samples[1::2]) / self.samples[-2])
        return float(np.mean(self.samples))

    def describe(self) -> str:
        """The distribution as a spec (files: what they held)."""
        d = self
        if d.kind == "samples":
            return f"samples({len(d.samples)})"
        if d.kind == "trace":
            how = ",cosched" if d.b else ""
            return f"trace({len(d.samples) // 2} lines,period {d.samples[-2]:g}ns{how})"
        if d.kind in ("constant", "exponential"):
            return f"{d.kind}({d.a:g}ns)"
        if d.kind == "uniform":
            return f"uniform({d.a:g}ns,{d.b:g}ns)"
        if d.kind == "lognormal":
            return f"lognormal({d.a:g}ns,{d.b:g})"
        return d.kind


def parse_distribution(spec: str | Distribution | None, what: str = "noise") -> Distribution:
    """A distribution from its spec (all values are times, default unit ns):

    ``none``, ``constant(50ns)``, ``uniform(0,100ns)``, ``exponential(50ns)`` (mean),
    ``lognormal(100ns,0.5)`` (median, sigma), ``file(PATH)`` (one time per line or whitespace
    separated, default unit ns; each op draws one of them). A LogGOPSim noise trace in
    ``file(PATH)`` (``#`` comment lines, ``<start><TAB><duration>`` in ns per line) is replayed in
    time instead: each rank reads it from its own offset, drawn from the seed;
    ``file(PATH,cosched)`` gives all ranks one offset (LogGOPSim's ``--noise-cosched``).
    """
    if spec is None:
        return Distribution()
    if isinstance(spec, Distribution):
        return spec
    if not isinstance(spec, str):
        raise ArgumentTypeError(
            f"{what}: expected a distribution spec string, got {type(spec).__name__}"
        )
    kind, parsed = parse_spec(spec, what)
    if any(key for key, _ in parsed):
        raise InvalidArgumentError(f"{what}: a distribution takes positional arguments: '{spec}'")
    args = [v for _, v in parsed]
    if kind == "exp":
        kind = "exponential"
    if kind not in _ARITY:
        raise InvalidArgumentError(
            f"{what}: unknown distribution '{kind}' (known: {', '.join(_ARITY)})"
        )
    if kind == "file" and len(args) == 2 and args[1] == "cosched":
        d = _read_file(args[0], what)
        if d.kind != "trace":
            raise InvalidArgumentError(
                f"{what}: 'cosched' is for a LogGOPSim noise trace; '{args[0]}' is not one"
            )
        return Distribution("trace", 0.0, 1.0, d.samples)
    if len(args) != _ARITY[kind]:
        raise InvalidArgumentError(f"{what}: {kind} takes {_ARITY[kind]} argument(s), got '{spec}'")
    if kind == "none":
        return Distribution()
    if kind == "file":
        return _read_file(args[0], what)
    if kind == "lognormal":
        median = parse_time(args[0], f"{what} median")
        sigma = units.parse_float(args[1], f"{what}: lognormal sigma")
        if median <= 0 or not math.isfinite(sigma) or not 0 <= sigma <= 10:
            raise InvalidArgumentError(f"{what}: lognormal needs median > 0 and sigma in [0, 10]")
        return Distribution("lognormal", median, sigma)
    vals = [parse_time(a, what) for a in args]
    if kind == "uniform" and vals[1] < vals[0]:
        raise InvalidArgumentError(f"{what}: uniform(lo, hi) needs lo <= hi")
    return Distribution(kind, vals[0], vals[1] if len(vals) > 1 else 0.0)


def _pair(line: str) -> bool:
    """A trace line: "<start>\\t<duration>", bare numbers."""
    cols = line.split()
    return len(cols) == 2 and all(_BARE.match(c) for c in cols)


def _read_file(path: str, what: str) -> Distribution:
    """Detour durations drawn per op, or a LogGOPSim noise trace to replay in time."""
    from collkit import files

    text = files.read_text(path, f"{what} file", limit=1 << 30)  # a regular file, <= 1 GiB
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if any(ln.startswith("#") for ln in lines) or (len(lines) >= 2 and all(map(_pair, lines))):
        # LogGOPSim's --noise-trace format: '#' comment lines and "<start>\t<duration>" in ns.
        return Distribution("trace", samples=tuple(_read_trace(path, lines, _pair, what)))
    vals = [parse_time(tok, f"{what} sample in {path}") for tok in text.split()]
    if not vals:
        raise InvalidArgumentError(f"{what}: no samples in '{path}'")
    return Distribution("samples", samples=tuple(vals))


def _read_trace(path: str, lines: list[str], pair: Callable[[str], bool], what: str) -> list[float]:
    out: list[float] = []
    for n, line in enumerate(lines, 1):
        if line.startswith("#"):
            continue
        if not pair(line):
            raise InvalidArgumentError(
                f"{what}: '{path}' reads as a LogGOPSim noise trace ('#' comment lines, then "
                f"'<start><TAB><duration>' in ns), but line {n} of its non-blank lines is "
                f"'{line[:60]}'"
            )
        start, duration = (float(c) for c in line.split())
        if not (math.isfinite(start) and math.isfinite(duration) and start >= 0 <= duration):
            raise InvalidArgumentError(f"{what}: '{path}' line {n}: times must be finite and >= 0")
        if out and start < out[-2]:
            raise InvalidArgumentError(
                f"{what}: '{path}' line {n}: the trace's starts must not decrease"
            )
        out += [start, duration]
    if len(out) < 4 or out[-2] <= 0:
        raise InvalidArgumentError(
            f"{what}: the noise trace '{path}' needs at least two detours and a last start > 0 "
            "(the last start is the period it repeats with)"
        )
    return out
