"""Property tests of every reader of a user's file and of Schedule.from_arrays:
whatever they are given (random bytes, random rows, huge or deeply nested input, columns of any
dtype, a device or a FIFO instead of a file) they return or raise one of collkit's own errors,
in bounded time and memory; a row file's bad lines are set aside, never lost and never kept.

The tuning table's reader is covered here only for the Python face (collkit.tune.table.load);
its rules are being unified with the library's validator elsewhere.

COLLKIT_PROPERTY_EXAMPLES=2000 for a longer hunt than the suite's default.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import collkit
from collkit import results
from collkit.errors import CollkitError, InvalidArgumentError
from collkit.results import FIELDS, ResultStore, Row, row_to_json
from collkit.schedule import ARRAY_DTYPES, OP_KINDS
from collkit.simulate import parse_distribution, simulate_file
from collkit.tune.table import load as load_table

SETTINGS = settings(
    max_examples=int(os.environ.get("COLLKIT_PROPERTY_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
WORK = Path(tempfile.mkdtemp(prefix="collkit-readers-property-"))

# Every reader of a file a user names, as one call each.
READERS: dict[str, Callable[[Path], object]] = {
    "schedule": lambda p: collkit.load(p),
    "rows.jsonl": lambda p: results.read_jsonl(p, []),
    "rows.csv": lambda p: results.read_csv(p, []),
    "tuning table": lambda p: load_table(p),
    "noise samples": lambda p: parse_distribution(f"file({p})"),
    "simulate --file": lambda p: simulate_file(p),
}


def _only_collkit_errors(fn: Callable[[], object]) -> None:
    with contextlib.suppress(CollkitError):
        fn()


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "folder", "missing"])
def test_a_reader_refuses_what_is_not_a_regular_file(reader: str, kind: str) -> None:
    # unchecked: /dev/zero was read until killed; a FIFO with no writer blocked forever
    path = {"/dev/zero": Path("/dev/zero"), "folder": WORK, "missing": WORK / "missing"}.get(kind)
    if kind == "fifo":
        path = WORK / f"fifo-{reader.replace(' ', '-')}"
        if not path.exists():
            os.mkfifo(path)
    assert path is not None
    if kind == "missing" and reader == "rows.jsonl":
        assert results.read_jsonl(path) == []  # a campaign's results file, not there yet
        return
    with pytest.raises(CollkitError):
        READERS[reader](path)


@SETTINGS
@given(
    reader=st.sampled_from(sorted(READERS)),
    data=st.one_of(
        st.binary(max_size=2000),
        st.text(max_size=2000).map(str.encode),
        st.integers(1, 200_000).map(lambda n: b"[" * n),  # deep nesting
        st.integers(1, 200_000).map(lambda n: b'{"a":' * n),
        st.integers(1, 1 << 20).map(lambda n: b"9" * n),  # one huge line, no line end
    ),
)
def test_a_reader_given_any_bytes_answers_with_a_collkit_error_at_most(
    reader: str, data: bytes
) -> None:
    f = WORK / f"any-{reader.replace(' ', '-')}"
    f.write_bytes(data)
    _only_collkit_errors(lambda: READERS[reader](f))


# ---- row files -------------------------------------------------------------------------------

_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.integers(-5, 5), max_size=3),
)
_ROW_DICT = st.fixed_dictionaries(
    {"collective": st.just("bcast"), "algorithm": st.just("bcast:binomial")},
    optional={k: _VALUE for k in FIELDS if k not in ("collective", "algorithm")},
)
_LINE = st.one_of(
    _ROW_DICT.map(lambda d: json.dumps(d)),
    st.text(
        alphabet=st.characters(
            blacklist_categories=["Cs"],
            blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
        ),
        max_size=60,
    ),
    st.builds(
        lambda P: row_to_json(Row("bcast", "bcast:binomial", P, 8, median_us=1.0)),
        st.integers(1, 64),
    ),
)


@SETTINGS
@given(lines=st.lists(_LINE, max_size=12))
def test_a_row_file_keeps_its_rows_and_sets_aside_the_rest(lines: list[str]) -> None:
    d = Path(tempfile.mkdtemp(dir=WORK))
    f = d / "r.jsonl"
    f.write_text("".join(line + "\n" for line in lines))
    rejected: list[results.Rejected] = []
    rows = results.read_jsonl(f, rejected)
    nonblank = [ln for ln in lines if ln.strip()]
    assert len(rows) + len(rejected) == len(nonblank)
    for r in rows:  # what is kept is what the schema says
        assert isinstance(r.P, int) and not isinstance(r.P, bool) and r.P >= 1
        for k in results.STAT_FIELDS:
            v = getattr(r, k)
            assert math.isnan(v) or math.isfinite(v)
    store = ResultStore(f)  # sets the bad lines aside and rewrites the file with the rows
    assert len(store) == len(rows)
    assert results.read_jsonl(f) == rows  # the strict reader reads it now
    aside = d / "r.jsonl.rejected"
    assert (aside.read_text().splitlines() if aside.exists() else []) == [b.text for b in rejected]


# ---- Schedule.from_arrays --------------------------------------------------------------------

RD = collkit.generate("allreduce:rd", P=4, count=2)
_DTYPES = [np.int8, np.int32, np.int64, np.uint8, np.uint32, np.float32, np.float64, np.bool_]


@st.composite
def _mutated(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    arrays = {k: np.asarray(v).copy() for k, v in RD.arrays().items()}
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from(sorted(ARRAY_DTYPES)))
        a = np.asarray(arrays.get(key, np.zeros(0, dtype=np.int64))).ravel()
        how = draw(st.sampled_from(["dtype", "value", "huge", "nan", "drop", "shape"]))
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")  # casts of NaN: the point is what from_arrays does
            if how == "dtype":
                arrays[key] = a.astype(draw(st.sampled_from(_DTYPES)))
            elif how == "value" and a.size:
                a = a.astype(np.int64)
                a[draw(st.integers(0, a.size - 1))] = draw(st.integers(-(2**63), 2**63 - 1))
                arrays[key] = a
            elif how == "huge" and a.size:  # about the one buffer limit (2^48, 2^63 bytes)
                a = a.astype(np.int64)
                a[draw(st.integers(0, a.size - 1))] = draw(
                    st.sampled_from([2**48, 2**48 + 1, 2**60, 2**63 - 1, 2**43, 2**44])
                )
                arrays[key] = a
            elif how == "nan" and a.size:
                a = a.astype(np.float64)
                a[draw(st.integers(0, a.size - 1))] = math.nan
                arrays[key] = a
            elif how == "drop":
                arrays.pop(key, None)
            elif how == "shape":
                arrays[key] = a.reshape(1, -1)
    header: dict[str, Any] = {"collective": "allreduce", "P": 4, "count": 2}
    for k in draw(st.sets(st.sampled_from(["P", "count", "elem_size", "root", "rpn"]))):
        header[k] = draw(
            st.one_of(
                st.integers(-(2**64), 2**64),
                st.sampled_from([2**20, 2**48, 2**48 + 1]),
                st.floats(),
                st.booleans(),
                st.none(),
            )
        )
    return arrays, header


@SETTINGS
@given(case=_mutated())
def test_from_arrays_makes_a_valid_schedule_or_says_why(
    case: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    arrays, header = case
    try:
        s = collkit.Schedule.from_arrays(arrays, **header)
    except CollkitError:
        return
    # accepted: every field is what the header and the arrays said, nothing truncated
    assert s.P >= 1 and 0 <= s.root < s.P and s.count >= 0 and s.elem_size >= 1
    # and within the readers' one buffer limit (buffer_fits): count, scratch buffers, regions
    a = s.arrays()
    with_buffer = a["kind"] < OP_KINDS.index("compute")
    for elems in (s.count, *a["scratch"].tolist(), *a["len"][with_buffer].tolist()):
        assert elems < 0 or (elems <= 2**48 and elems * s.elem_size < 2**63)
    for k, v in arrays.items():
        if k in ARRAY_DTYPES and np.asarray(v).size:
            assert np.asarray(v).dtype.kind in "iu"
    try:
        r = collkit.verify(s)  # and the verifier answers (true or false), never crashes,
    except InvalidArgumentError as e:  # or says up front that it cannot fit in this machine
        assert "GiB" in str(e) and "more than this machine's" in str(e), e
        return
    assert isinstance(r.ok, bool)


def test_from_arrays_scratch_within_the_limit_each_but_not_in_all_is_refused_by_verify() -> None:
    """Scratch buffers of 2^48 elements each pass from_arrays (one buffer's limit); verifying them
    would need ~2 PiB: the verifier refuses with its estimate (hypothesis found this case)."""
    arrays = {k: np.array(v) for k, v in RD.arrays().items()}
    arrays["scratch"] = np.array([2**48, 2**48, 2, 2], dtype=np.int64)
    s = collkit.Schedule.from_arrays(arrays, collective="allreduce", P=4, count=2)
    with pytest.raises(InvalidArgumentError, match="GiB for its buffers"):
        collkit.verify(s)


def test_from_arrays_with_a_huge_schedule_header_is_refused_fast() -> None:
    with pytest.raises(InvalidArgumentError):
        collkit.Schedule.from_arrays(RD.arrays(), collective="allreduce", P=2**40, count=2)
