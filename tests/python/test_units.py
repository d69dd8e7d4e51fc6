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


# Digits of other scripts that Python's int() and float() read: Arabic-Indic, fullwidth,
# Devanagari, Bengali, mathematical bold (U+1D7CE).
FOREIGN_DIGITS = "٣٠８０३৩𝟑"


@pytest.mark.parametrize(
    ("parse", "text"),
    [(units.parse_time, "٣ns"), (units.parse_time, "٣"), (units.parse_time, "1_0"),
     (units.parse_time, "１ns"), (units.parse_per_byte, "٣ns/B"), (units.parse_per_byte, "٣GB/s"),
     (units.parse_bandwidth, "1_0GB/s"), (units.parse_size, "٣KiB"), (units.parse_size, "1_0"),
     (units.parse_int, "٣"), (units.parse_int, "８"), (units.parse_int, "1_0"),
     (units.parse_int, "1.5"), (units.parse_int, ""), (units.parse_float, "٣"),
     (units.parse_float, "1_0.5"), (units.parse_float, "nan"), (units.parse_float, "inf"),
     (units.parse_float, "")],
)  # fmt: skip
def test_only_ascii_digits_are_numbers(parse: object, text: str) -> None:
    with pytest.raises(InvalidArgumentError, match="--thing"):
        parse(text, "--thing")  # type: ignore[operator]


def test_integers_and_numbers() -> None:
    assert units.parse_int("8") == 8 and units.parse_int(" -3 ") == -3 and units.parse_int(5) == 5
    assert units.parse_int("+7", lo=0, hi=7) == 7
    with pytest.raises(InvalidArgumentError, match="at least 1"):
        units.parse_int("0", "--top", lo=1)
    with pytest.raises(InvalidArgumentError, match="at most 7"):
        units.parse_int("8", "--x", hi=7)
    with pytest.raises(InvalidArgumentError, match="expected an integer"):
        units.parse_int(True)  # type: ignore[arg-type]
    assert units.parse_float("0.01") == 0.01 and units.parse_float("1e-3") == 1e-3
    assert units.parse_float(" -2 ") == -2.0 and units.parse_float(3) == 3.0
    with pytest.raises(InvalidArgumentError, match="too large"):
        units.parse_float(10**400)


NUMBER_PARSERS = [*PARSERS, units.parse_int, units.parse_float]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(NUMBER_PARSERS),
    st.lists(st.sampled_from([*"0123456789", *FOREIGN_DIGITS, "_", "+", "-", ".", "e"]),
             min_size=1, max_size=12).map("".join),
    st.sampled_from(["", "ns", "us", "B", "KiB", "GB/s", " "]),
)  # fmt: skip
def test_foreign_digits_and_underscores_are_refused_everywhere(
    parse: object, number: str, unit: str
) -> None:
    text = number + unit
    try:
        v = parse(text)  # type: ignore[operator]
    except InvalidArgumentError:
        return
    # What parses is plain ASCII: no other script's digit and no underscore got through.
    assert text.isascii() and "_" not in text, (text, v)
    assert isinstance(v, (int, float)) and math.isfinite(v)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(NUMBER_PARSERS), st.integers(min_value=-(10**30), max_value=10**400))
def test_huge_and_signed_integers_parse_or_say_why(parse: object, n: int) -> None:
    for value in (n, str(n), f"+{n}" if n >= 0 else str(n)):
        try:
            v = parse(value)  # type: ignore[operator]
        except InvalidArgumentError:
            continue
        assert isinstance(v, (int, float)) and math.isfinite(v)
        if parse is units.parse_int:
            assert v == n
        elif parse is not units.parse_float:
            assert v >= 0  # times, costs, bandwidths and sizes are never negative


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(NUMBER_PARSERS), st.text(max_size=40))
def test_any_text_parses_or_raises_invalid_argument(parse: object, text: str) -> None:
    try:
        v = parse(text)  # type: ignore[operator]
    except InvalidArgumentError:
        return
    assert isinstance(v, (int, float)) and math.isfinite(v)
    assert all(not c.isdigit() or c in "0123456789" for c in text), text
