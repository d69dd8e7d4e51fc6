"""Units: the one place that reads times, per-byte costs, bandwidths, sizes and integers.

A bare number means the same unit everywhere, in every command and function:

    time            nanoseconds        '500' = '500ns' = '0.5us'; units ps ns us µs ms s
    per-byte cost   ns per byte        '0.4' = '0.4ns' = '0.4ns/B' = '2.5GB/s' (a bandwidth)
    bandwidth       bytes per second   '2.5GB/s', '1GiB/s'; units B/s KB/s ... TiB/s
    size            bytes              '8' = '8B'; '4KiB', '1MiB', '1.5MB' (the name grammar's)
    integer         (no unit)          '8', '-3' (parse_int: every integer option's grammar)

Numbers are ASCII: digits 0-9, an optional sign, no underscores, no other scripts' digits (Python's
int() and float() take '٣', '８' and '1_0'; these parsers refuse them).

Parsers return floats in those units (sizes and integers: ints) and raise InvalidArgumentError with
the text they were given and an example, never anything else.

>>> parse_time("1.34us"), parse_time(500), parse_per_byte("2.5GB/s"), parse_size("4KiB")
(1340.0, 500.0, 0.4, 4096)
"""

from __future__ import annotations

import math
import re

from collkit import _core
from collkit.errors import CollkitError, InvalidArgumentError

__all__ = [
    "HELP",
    "NS_PER_S",
    "Quantity",
    "parse_bandwidth",
    "parse_float",
    "parse_int",
    "parse_per_byte",
    "parse_size",
    "parse_time",
    "seconds",
]

Quantity = float | int | str

NS_PER_S = 1e9

# One line for --help texts and docs: what a bare number means.
HELP = (
    "times take a unit (ps, ns, us, ms, s) and a bare number is ns; per-byte costs are ns/B "
    "or a bandwidth (2.5GB/s); sizes are bytes or 4KiB, 1MiB"
)

_TIME_UNITS = {"ps": 1e-3, "ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
_BW_UNITS = {
    "B/s": 1.0,
    "KB/s": 1e3,
    "MB/s": 1e6,
    "GB/s": 1e9,
    "TB/s": 1e12,
    "KiB/s": 2.0**10,
    "MiB/s": 2.0**20,
    "GiB/s": 2.0**30,
    "TiB/s": 2.0**40,
}
# ASCII only ([0-9], re.ASCII for \s): \d would take any script's digits, which float() reads.
_NUMBER = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_TIME_RE = re.compile(rf"\s*({_NUMBER})\s*(ps|ns|us|µs|ms|s)?\s*", re.ASCII)
_BW_RE = re.compile(rf"\s*({_NUMBER})\s*([KMGT]i?B/s|B/s)?\s*", re.ASCII)
_INT_RE = re.compile(r"\s*([+-]?[0-9]+)\s*", re.ASCII)
_FLOAT_RE = re.compile(rf"\s*({_NUMBER})\s*", re.ASCII)
_MAX_TEXT = 100
_MAX_SIZE = (1 << 63) - 1  # int64: the largest size or integer


def parse_int(
    value: int | str, what: str = "integer", lo: int | None = None, hi: int | None = None
) -> int:
    """An integer from an int or an ASCII text ('8', '-3', ' 8 '), in [lo, hi] where given and
    always within int64 (what the core and the MPI layer hold)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InvalidArgumentError(f"{what}: expected an integer, got {type(value).__name__}")
    if isinstance(value, str):
        if len(value) > _MAX_TEXT:
            raise InvalidArgumentError(f"{what}: a {len(value)}-character text is not an integer")
        m = _INT_RE.fullmatch(value)
        if not m:
            raise InvalidArgumentError(
                f"{what}: '{value}' is not an integer (ASCII digits 0-9, e.g. 8 or -3)"
            )
        v = int(m.group(1))
    else:
        v = value
    if not -_MAX_SIZE <= v <= _MAX_SIZE:
        raise InvalidArgumentError(f"{what}: {str(v)[:20]}... is past 2^63")
    if lo is not None and v < lo:
        raise InvalidArgumentError(f"{what}: {v} must be at least {lo}")
    if hi is not None and v > hi:
        raise InvalidArgumentError(f"{what}: {v} must be at most {hi}")
    return v


def parse_float(value: float | int | str, what: str = "number") -> float:
    """A finite number from a number or an ASCII decimal text ('0.01', '1e-3'); no nan, inf."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InvalidArgumentError(f"{what}: expected a number, got {type(value).__name__}")
    if isinstance(value, str):
        if len(value) > _MAX_TEXT:
            raise InvalidArgumentError(f"{what}: a {len(value)}-character text is not a number")
        m = _FLOAT_RE.fullmatch(value)
        if not m:
            raise InvalidArgumentError(
                f"{what}: '{value}' is not a number (ASCII decimal, e.g. 0.01, 2.5, 1e-3)"
            )
        v = float(m.group(1))
    else:
        try:
            v = float(value)
        except OverflowError:
            raise InvalidArgumentError(f"{what}: {str(value)[:20]}... is too large") from None
    if not math.isfinite(v):
        raise InvalidArgumentError(f"{what}: must be a finite number, got {value!r}")
    return v + 0.0


def _number(
    value: Quantity,
    what: str,
    kind: str,
    pattern: re.Pattern[str],
    scale: dict[str, float],
    bare: str,
    examples: str,
) -> float:
    """A number times its unit's scale (a bare number: `bare`); finite and >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InvalidArgumentError(f"{what}: expected {kind}, got {type(value).__name__}")
    if isinstance(value, str):
        if len(value) > _MAX_TEXT:  # not a quantity; said before any regex runs
            raise InvalidArgumentError(f"{what}: a {len(value)}-character text is not {kind}")
        m = pattern.fullmatch(value)
        if not m:
            raise InvalidArgumentError(
                f"{what}: '{value}' is not {kind} (examples: {examples}; bare numbers are {bare})"
            )
        v = float(m.group(1)) * scale[m.group(2) or bare]
    else:
        try:
            v = float(value)
        except OverflowError:  # an int past the largest float (10**400)
            raise InvalidArgumentError(f"{what}: {str(value)[:20]}... is too large") from None
    if not math.isfinite(v) or v < 0:
        raise InvalidArgumentError(f"{what}: must be a finite {kind[2:]} >= 0, got {value!r}")
    return v + 0.0  # no -0.0


def parse_time(value: Quantity, what: str = "time") -> float:
    """Nanoseconds from a number (ns) or a text with a unit: '1.34us', '500ns', '2ms', '0'."""
    return _number(value, what, "a time", _TIME_RE, _TIME_UNITS, "ns", "500ns, 1.34us, 2ms")


def parse_bandwidth(value: Quantity, what: str = "bandwidth") -> float:
    """Bytes per second from a number (B/s) or a text with a unit: '2.5GB/s', '1GiB/s'."""
    b = _number(value, what, "a bandwidth", _BW_RE, _BW_UNITS, "B/s", "2.5GB/s, 1GiB/s")
    if b <= 0:
        raise InvalidArgumentError(f"{what}: must be a bandwidth > 0, got {value!r}")
    return b


def parse_per_byte(value: Quantity, what: str = "per-byte cost") -> float:
    """Nanoseconds per byte from a number (ns/B), '0.4ns', '0.4ns/B' or a bandwidth '2.5GB/s'."""
    if isinstance(value, str) and value.strip().endswith("B/s"):
        return NS_PER_S / parse_bandwidth(value, what)
    if isinstance(value, str) and value.strip().endswith("/B"):
        value = value.strip()[:-2]
    try:
        return parse_time(value, what)
    except InvalidArgumentError:
        raise InvalidArgumentError(
            f"{what}: {value!r} is not a per-byte cost (examples: 0.4ns, 0.4ns/B, 2.5GB/s; "
            "bare numbers are ns per byte)"
        ) from None


def parse_size(value: Quantity, what: str = "size") -> int:
    """Bytes from a number or a text such as '8', '8B', '4KiB', '1MiB', '1.5MB' (the grammar of
    sizes in algorithm names, e.g. allreduce:ring(seg=64KiB))."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InvalidArgumentError(f"{what}: expected a size, got {type(value).__name__}")
    if isinstance(value, int):
        if value < 0:
            raise InvalidArgumentError(f"{what}: {value} is negative")
        if value > _MAX_SIZE:  # as the text form: past int64, no buffer or count holds it
            raise InvalidArgumentError(f"{what}: {str(value)[:20]}... bytes is too large")
        return value
    if len(value) > _MAX_TEXT:
        raise InvalidArgumentError(f"{what}: a {len(value)}-character text is not a size")
    try:
        return int(_core.parse_size(value))
    except CollkitError as e:
        raise InvalidArgumentError(f"{what}: {e}") from None


def seconds(ns: float) -> float:
    """Seconds in a time given in ns (for closed forms that work in seconds)."""
    return ns / NS_PER_S
