"""Property tests of the Python API's argument types: each public function of the simulator,
the memory estimate, the profile reader and Schedule.from_arrays, given values of any type in
any argument (None, bools, floats such as inf and NaN, strings, bytes, containers, objects,
numpy scalars, paths to devices), returns or raises one of collkit's own errors: never another
library's OverflowError, AttributeError or TypeError, never a hang.

COLLKIT_PROPERTY_EXAMPLES=2000 for a longer hunt than the suite's default.
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import collkit
from collkit import io
from collkit.errors import ArgumentTypeError, CollkitError
from collkit.placement import Placement
from collkit.profile import load_profile
from collkit.schedule import Schedule
from collkit.simulate import (
    Model,
    memory_estimate,
    parse_distribution,
    parse_topology,
    simulate,
    simulate_file,
)

SETTINGS = settings(
    max_examples=int(os.environ.get("COLLKIT_PROPERTY_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
WORK = Path(tempfile.mkdtemp(prefix="collkit-api-types-"))
RD = collkit.generate("allreduce:rd", P=4, count=2)
RD_FILE = WORK / "rd.json"
RD_FILE.write_text(io.to_json(RD))


class _Odd:
    """An object of no type collkit knows, whose str and repr work."""

    def __repr__(self) -> str:
        return "<odd>"


# Values of every kind; integers stay small or out of range, so that an accepted one is a quick
# simulation (a valid P of 2^30 would be minutes, not a type error).
HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 40),
    st.sampled_from([2**31 + 1, 2**63, 2**64, -(2**63), 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.inf, -math.inf, math.nan, 1.5, 4.0, -0.0, 1e300]),
    st.text(max_size=12),
    st.sampled_from(
        [
            "",
            "inf",
            "nan",
            "-1",
            "1e400",
            "64KiB",
            "2^40",
            "postal",
            "loggops",
            "none",
            "yes",
            "allreduce:rd",
            "file(/dev/zero)",
            "fattree(k=0,hop=1ns)",
            "\x00",
            "\ud800",
            "/dev/zero",
            str(RD_FILE),
        ]
    ),
    st.binary(max_size=8),
    st.lists(st.integers(-2, 2), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from(
        [
            _Odd(),
            object,
            np.int64(4),
            np.float64(4.0),
            np.array([1, 2]),
            Path("/dev/zero"),
            RD_FILE,
            WORK,
            Placement(2),
            Model.make("postal"),
        ]
    ),
    # made per example: a core object held by a cached strategy outlives the core module
    st.builds(lambda: collkit.generate("allreduce:rd", P=4, count=2)),
)


def _collkit_errors_only(call: Callable[[], object]) -> object:
    """The call's result, or None for a collkit error; anything else fails the test."""
    with contextlib.suppress(CollkitError):
        return call()
    return None


SIMULATE_ARGS: dict[str, Any] = {
    "algorithm": "allreduce:rd",
    "P": 4,
    "count": None,
    "bytes": None,
    "elem_size": None,
    "root": None,
    "model": "postal",
    "noise": None,
    "skew": None,
    "topology": None,
    "placement": None,
    "trials": 1,
    "seed": 0,
    "timeline": False,
}


@st.composite
def _changed(draw: st.DrawFn, base: dict[str, Any], extra: list[str]) -> dict[str, Any]:
    """`base` with one to three arguments (or extra keywords) replaced by hostile values."""
    kw = dict(base)
    for key in draw(st.lists(st.sampled_from([*base, *extra]), min_size=1, max_size=3)):
        kw[key] = draw(HOSTILE)
    return kw


@SETTINGS
@given(kw=_changed(SIMULATE_ARGS, ["alpha", "beta", "L", "S", "gamma", "nonsense"]))
def test_simulate_takes_any_arguments_or_says_why(kw: dict[str, Any]) -> None:
    algorithm = kw.pop("algorithm")
    P = kw.pop("P")
    res = _collkit_errors_only(lambda: simulate(algorithm, P, **kw))
    if res is not None:
        assert isinstance(res, collkit.SimResult)
        assert math.isnan(res.makespan) or res.makespan >= 0


@SETTINGS
@given(
    kw=_changed(
        {"path": RD_FILE, "model": "postal", "trials": 1, "seed": 0, "timeline": False},
        ["noise", "skew", "topology", "alpha"],
    )
)
def test_simulate_file_takes_any_arguments_or_says_why(kw: dict[str, Any]) -> None:
    path = kw.pop("path")
    res = _collkit_errors_only(lambda: simulate_file(path, **kw))
    if res is not None:
        assert isinstance(res, collkit.SimResult)


@SETTINGS
@given(
    kw=_changed(
        {
            "algorithm": "allreduce:rd",
            "P": 4,
            "count": 2,
            "elem_size": 8,
            "root": 0,
            "timeline": False,
            "placement": None,
            "model": None,
        },
        [],
    )
)
def test_memory_estimate_takes_any_arguments_or_says_why(kw: dict[str, Any]) -> None:
    res = _collkit_errors_only(lambda: memory_estimate(**kw))
    if res is not None:
        need, ops = res  # type: ignore[misc]
        assert need > 0 and ops >= 0


@SETTINGS
@given(name=HOSTILE, value=HOSTILE, key=st.sampled_from(["alpha", "beta", "S", "o", "x"]))
def test_model_make_takes_any_arguments_or_says_why(name: Any, value: Any, key: str) -> None:
    _collkit_errors_only(lambda: Model.make(name, **{key: value}))
    _collkit_errors_only(lambda: Model.make("loggops", **{key: value}))


@SETTINGS
@given(spec=HOSTILE, rpn=HOSTILE, intra=HOSTILE)
def test_spec_parsers_take_any_value_or_say_why(spec: Any, rpn: Any, intra: Any) -> None:
    _collkit_errors_only(lambda: parse_distribution(spec, "noise"))
    _collkit_errors_only(lambda: parse_topology(spec))
    _collkit_errors_only(lambda: parse_topology("fattree(k=4,hop=1ns)", rpn, intra))


@SETTINGS
@given(path=HOSTILE)
def test_load_profile_takes_any_path_or_says_why(path: Any) -> None:
    _collkit_errors_only(lambda: load_profile(path))


@SETTINGS
@given(
    kw=_changed(
        {
            "collective": "allreduce",
            "P": 4,
            "count": 2,
            "elem_size": 8,
            "root": 0,
            "algorithm": "",
            "rpn": 0,
            "order": "contiguous",
            "check_ops": True,
        },
        [],
    ),
    arrays=st.one_of(st.just(None), HOSTILE),
)
def test_from_arrays_takes_any_header_or_says_why(kw: dict[str, Any], arrays: Any) -> None:
    columns = RD.arrays() if arrays is None else arrays
    s = _collkit_errors_only(lambda: Schedule.from_arrays(columns, **kw))
    if s is not None:
        assert isinstance(s, Schedule) and collkit.verify(s).ok


# The cases as they were found: each raised another library's error, or was accepted.
@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: simulate("allreduce:rd", 4, bytes=math.inf), "bytes must be an integer"),
        (lambda: simulate("allreduce:rd", 4, bytes=math.nan), "bytes must be an integer"),
        (lambda: simulate("allreduce:rd", 4, bytes=1.5), "bytes must be an integer"),
        (lambda: simulate("allreduce:rd", 4, model=None), "model must be a name"),
        (lambda: simulate("allreduce:rd", 4, model=5), "model must be a name"),
        (lambda: simulate("allreduce:rd", 4, timeline="yes"), "timeline must be True or False"),
        (lambda: simulate("allreduce:rd", 4, placement="4"), "placement must be"),
        (lambda: simulate("allreduce:rd", 4, topology=0), "topology: expected a spec"),
        (lambda: simulate_file(None), "path must be"),
        (lambda: load_profile(None), "path must be"),
        (lambda: load_profile(5), "path must be"),
        (lambda: memory_estimate("allreduce:rd", 4, 2, timeline="no"), "timeline must be"),
    ],
)
def test_wrong_types_are_argument_type_errors(call: Callable[[], object], needle: str) -> None:
    with pytest.raises(ArgumentTypeError, match=needle):
        call()


def test_load_profile_of_a_device_is_refused_not_read() -> None:
    with pytest.raises(CollkitError, match="not a regular file"):
        load_profile("/dev/zero")  # was read until MemoryError


def _rd_with(column: str, edit: Callable[[np.ndarray[Any, Any]], np.ndarray[Any, Any]]) -> Any:
    a = {k: np.asarray(v).copy() for k, v in RD.arrays().items()}
    a[column] = edit(a[column])
    return a


def _set_first(kind: int, value: int) -> Callable[[np.ndarray[Any, Any]], np.ndarray[Any, Any]]:
    """An edit setting the first op of this kind (in column order) to `value`."""

    def edit(col: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        i = int(np.flatnonzero(RD.arrays()["kind"] == kind)[0])
        col[i] = value
        return col

    return edit


@pytest.mark.parametrize(
    ("arrays", "needle"),
    [
        (_rd_with("peer", _set_first(0, 99)), "peer 99 is not a rank of P = 4"),
        (_rd_with("len", _set_first(0, -1)), "negative length -1"),
        (_rd_with("len", _set_first(0, 2**40)), r"source region out\[0:1099511627776\]"),
        (_rd_with("off", _set_first(1, 1)), r"destination region s0\[1:3\] is outside s0"),
        (_rd_with("src_off", _set_first(2, -1)), "source region"),
        ({**RD.arrays(), "pear": np.zeros(3, dtype=np.int32)}, "unknown array 'pear'"),
        (_rd_with("peer", lambda c: c.astype(np.int8)), "int8, narrower than its int32"),
    ],
)
def test_from_arrays_refuses_bad_ops_up_front(arrays: Any, needle: str) -> None:
    with pytest.raises(CollkitError, match=needle):
        Schedule.from_arrays(arrays, collective="allreduce", P=4, count=2)
