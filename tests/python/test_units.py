"""collkit.units: one reading of times, per-byte costs, bandwidths and sizes for every command
and function (a bare number is ns, ns/B, B/s, bytes), and nothing but InvalidArgumentError for
hostile input."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collkit import units
from collkit.errors import InvalidArgumentError


@pytest.mark.parametrize(
    ("text", "ns"),
    [("1.34us", 1340.0), ("500ns", 500.0), ("500", 500.0), (500, 500.0), ("2ms", 2e6),
     ("1s", 1e9), ("750ps", 0.75), ("1 µs", 1e3), (" 0 ", 0.0), ("1e3ns", 1e3)],
)  # fmt: skip
def test_times_are_ns(text: str | int, ns: float) -> None:
    assert units.parse_time(text) == pytest.approx(ns)


@pytest.mark.parametrize(
    ("text", "ns_per_byte"),
    [("0.4", 0.4), ("0.4ns", 0.4), ("0.4ns/B", 0.4), ("2.5GB/s", 0.4), ("1GiB/s", 1e9 / 2**30)],
)
def test_per_byte_costs_are_ns_per_byte_or_a_bandwidth(text: str, ns_per_byte: float) -> None:
    assert units.parse_per_byte(text) == pytest.approx(ns_per_byte)


def test_bandwidths_and_sizes() -> None:
    assert units.parse_bandwidth("2.5GB/s") == 2.5e9 and units.parse_bandwidth(100) == 100.0
    assert units.parse_size("4KiB") == 4096 and units.parse_size("8") == 8
    assert units.parse_size(16) == 16 and units.seconds(1340.0) == pytest.approx(1.34e-6)


@pytest.mark.parametrize(
    ("parse", "value"),
    [(units.parse_time, "-1ns"), (units.parse_time, "1e999"), (units.parse_time, "2 parsecs"),
     (units.parse_time, True), (units.parse_time, float("nan")), (units.parse_time, "1" * 200),
     (units.parse_per_byte, "0GB/s"), (units.parse_per_byte, "1e999B/s"),
     (units.parse_bandwidth, "0"), (units.parse_size, -1), (units.parse_size, "1e99"),
     (units.parse_size, 1.5), (units.parse_size, "x" * 10_000)],
)  # fmt: skip
def test_bad_values_say_what_they_are(parse: object, value: object) -> None:
    with pytest.raises(InvalidArgumentError):
        parse(value, "--thing")  # type: ignore[operator]


PARSERS = [units.parse_time, units.parse_per_byte, units.parse_bandwidth, units.parse_size]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(PARSERS),
    st.one_of(
        st.text(max_size=40),
        st.from_regex(r"\s*[+-]?[0-9.eE+-]{1,12}\s*(ps|ns|us|µs|ms|s|B/s|GB/s|KiB|MiB|B)?\s*"),
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(),
    ),
)
def test_hostile_values_parse_or_raise_invalid_argument(parse: object, value: object) -> None:
    try:
        v = parse(value)  # type: ignore[operator]
    except InvalidArgumentError:
        return
    assert isinstance(v, (int, float)) and math.isfinite(v) and v >= 0
