"""The one row schema: JSON lines and CSV round trips, append-and-resume, hostile input."""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collkit.errors import CollkitError, InvalidArgumentError
from collkit.results import (
    CSV_FIELDS,
    FIELDS,
    ResultStore,
    Row,
    read_csv,
    read_jsonl,
    row_from_dict,
    row_to_json,
    write_csv,
)


def make_row(**kw: object) -> Row:
    base: dict[str, object] = dict(
        collective="allreduce",
        algorithm="allreduce:rd",
        P=4,
        bytes=8,
        count=1,
        mpi="MPICH 5.0.2",
        machine="m",
        min_us=1.0,
        q1_us=1.5,
        median_us=2.0,
        q3_us=2.5,
        mean_us=2.2,
        p99_us=9.0,
        max_us=10.0,
        iterations=100,
    )
    base.update(kw)
    return Row(**base)  # type: ignore[arg-type]


def test_schema_has_the_design_fields() -> None:
    for name in (
        "collective",
        "algorithm",
        "P",
        "bytes",
        "datatype",
        "allocation",
        "mpi",
        "machine",
        "date",
        "min_us",
        "q1_us",
        "median_us",
        "q3_us",
        "mean_us",
        "p99_us",
        "max_us",
        "iterations",
        "source",
    ):
        assert name in FIELDS
    assert "samples" not in CSV_FIELDS


def test_jsonl_and_csv_round_trip(tmp_path: Path) -> None:
    rows = [
        make_row(samples=[1.0, 2.5]),
        make_row(P=8, valid=True),
        make_row(algorithm="native", error="boom", min_us=math.nan, valid=False),
    ]
    store = ResultStore(tmp_path / "r.jsonl")
    for r in rows:
        assert store.append(r)
    store.write_csv()
    back = read_jsonl(tmp_path / "r.jsonl")
    assert [row_to_json(r) for r in back] == [row_to_json(r) for r in rows]
    csv_rows = read_csv(tmp_path / "r.csv")
    assert [r.key() for r in csv_rows] == [r.key() for r in rows]
    assert csv_rows[1].valid is True and csv_rows[2].valid is False and csv_rows[0].valid is None
    assert math.isnan(csv_rows[2].min_us) and csv_rows[0].median_us == 2.0


def test_drift_fields_round_trip_and_old_files_still_read(tmp_path: Path) -> None:
    row = make_row(
        interleaved=True,
        load_avg_1m=11.5,
        probe_rtt_ns_before=115.0,
        probe_rtt_ns_after=510.0,
        suspect="native moved",
        attempt=1,
        round_median_us=[1.0, 2.0],
        round_native_before_us=[1.5, math.nan],
        round_native_after_us=[1.5, 2.5],
        round_probe_rtt_ns_min=[110.0, math.nan],
        round_probe_rtt_ns_max=[120.0, math.nan],
    )
    store = ResultStore(tmp_path / "r.jsonl")
    store.append(row)
    store.write_csv()
    (back,) = read_jsonl(tmp_path / "r.jsonl")
    assert row_to_json(back) == row_to_json(row) and back.attempt == 1 and back.interleaved
    assert math.isnan(back.round_native_before_us[1])
    (csv_row,) = read_csv(tmp_path / "r.csv")
    assert csv_row.load_avg_1m == 11.5 and csv_row.suspect == "native moved"
    assert csv_row.interleaved is True and csv_row.key() == row.key()
    assert "round_median_us" not in CSV_FIELDS and "load_avg_1m" in CSV_FIELDS
    # A row file written before these fields existed reads, with the fields empty; its rows
    # were not interleaved, so a new (interleaved) measurement is not taken for it.
    old = {k: v for k, v in json.loads(row_to_json(make_row())).items() if k in OLD_FIELDS}
    (tmp_path / "old.jsonl").write_text(json.dumps(old) + "\n")
    (o,) = read_jsonl(tmp_path / "old.jsonl")
    assert not o.interleaved and o.suspect == "" and math.isnan(o.load_avg_1m)
    assert o.round_median_us == [] and o.attempt == 0
    assert o not in ResultStore(tmp_path / "r.jsonl")
    assert make_row(interleaved=True).key() != o.key()


# The row fields of a file written before rows had the drift fields (those come after `samples`).
OLD_FIELDS = FIELDS[: FIELDS.index("samples") + 1]


def test_resume_skips_known_rows_and_survives_a_cut_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    store = ResultStore(path)
    assert store.append(make_row(bytes=8))
    assert not store.append(make_row(bytes=8, median_us=99.0))  # same key: skipped
    # An interrupted write leaves half a line; reopening drops it and appends cleanly.
    with open(path, "a") as f:
        f.write('{"collective": "allre')
    again = ResultStore(path)
    assert len(again) == 1 and make_row(bytes=8) in again and make_row(bytes=16) not in again
    assert again.append(make_row(bytes=16))
    assert [r.bytes for r in read_jsonl(path)] == [8, 16]


def test_key_separates_settings_and_sources() -> None:
    a = make_row()
    assert a.key() != make_row(settings="MPIR_CVAR_X=1").key()
    assert a.key() != make_row(source="simulated").key()
    assert a.key() == make_row(median_us=5.0, date="later").key()


@pytest.mark.parametrize(
    "bad",
    [
        {"collective": "allreduce", "algorithm": "x", "P": 0, "bytes": 8},
        {"collective": "allreduce", "algorithm": "x", "P": 2, "bytes": -1},
        {"collective": "allreduce", "algorithm": "x", "P": 2, "bytes": 8, "source": "guessed"},
        {"collective": "allreduce", "algorithm": "x", "P": "two", "bytes": 8},
        {"collective": "allreduce", "algorithm": "x", "bytes": 8},
        {"collective": "allreduce", "algorithm": "x", "P": 2, "bytes": 8, "colour": "red"},
    ],
)
def test_bad_rows_are_clear_errors(bad: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError):
        row_from_dict(bad)


def test_a_corrupt_line_in_the_middle_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(row_to_json(make_row()) + "\nnot json\n" + row_to_json(make_row(P=2)) + "\n")
    with pytest.raises(InvalidArgumentError, match=":2:"):
        read_jsonl(path)


def test_store_needs_jsonl_name(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError):
        ResultStore(tmp_path / "r.csv")


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([*FIELDS, "junk"]),
        st.one_of(
            st.none(),
            st.text(max_size=8),
            st.integers(),
            st.floats(),
            st.booleans(),
            st.lists(st.floats(), max_size=3),
        ),
    )
)
def test_hostile_dicts_give_a_row_or_a_clear_error(d: dict[str, object]) -> None:
    try:
        row = row_from_dict(d)
    except CollkitError:
        return
    assert row.P >= 1 and row.bytes >= 0
    json.loads(row_to_json(row))  # and it serialises


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_hostile_jsonl_files_give_rows_or_a_clear_error(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    path = tmp_path_factory.mktemp("h") / "r.jsonl"
    path.write_text(text)
    with contextlib.suppress(CollkitError):
        read_jsonl(path)


def test_write_csv_of_nothing_has_a_header(tmp_path: Path) -> None:
    write_csv(tmp_path / "e.csv", [])
    assert (tmp_path / "e.csv").read_text().startswith("collective,algorithm,P,bytes")


def test_old_names_of_the_statistics_are_read_as_the_new(tmp_path: Path) -> None:
    """Row files written before the statistics carried their unit (median, not median_us) are
    read alike, JSON lines and CSV; a row giving both names of one statistic is refused."""
    from collkit.results import OLD_NAMES, STAT_FIELDS

    assert set(OLD_NAMES.values()) == set(STAT_FIELDS) and all(
        f.endswith("_us") for f in STAT_FIELDS
    )
    old = {"collective": "bcast", "algorithm": "native", "P": 2, "bytes": 8}
    old |= {"min": 1.0, "q1": 1.5, "median": 2.0, "q3": 2.5, "mean": 2.2, "p99": 9.0, "max": 10.0}
    (tmp_path / "old.jsonl").write_text(json.dumps(old) + "\n")
    [r] = read_jsonl(tmp_path / "old.jsonl")
    assert (r.min_us, r.median_us, r.max_us) == (1.0, 2.0, 10.0)
    (tmp_path / "old.csv").write_text(
        ",".join(old) + "\n" + ",".join(str(v) for v in old.values()) + "\n"
    )
    [c] = read_csv(tmp_path / "old.csv")
    assert row_to_json(c) == row_to_json(r)
    # written back, the new names only
    assert '"median_us": 2.0' in row_to_json(r) and '"median"' not in row_to_json(r)
    with pytest.raises(InvalidArgumentError, match="'median_us' is given twice"):
        row_from_dict({**old, "median_us": 3.0})
    (tmp_path / "null.jsonl").write_text(json.dumps({**old, "median": None}) + "\n")
    assert math.isnan(read_jsonl(tmp_path / "null.jsonl")[0].median_us)
