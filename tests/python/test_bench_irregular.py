"""bench rows of the irregular collectives without an MPI: the --counts forms a campaign measures,
what a row says of them (its `counts`, its `bytes` the whole vector's), rows of different forms
kept apart on resume, old rows without the field, and the errors. The driver is a stand-in that
prints what collkit_bench prints for the vectors it is given (tests/mpi/test_irregular_bench.py
runs the real one on both MPIs)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

import collkit.bench as cb
from collkit.bench import Campaign
from collkit.counts import parse_counts
from collkit.errors import InvalidArgumentError
from collkit.results import ResultStore, Row

# What collkit_bench prints for --vectors: a row per (algorithm, point), its bytes the sum of
# the point's entries times the element size, and every call it was given in calls.txt.
_DRIVER = r"""
import json, sys
a = sys.argv[1:]
get = lambda k: a[a.index("--" + k) + 1]
open(sys.argv[0] + ".calls", "a").write(" ".join(a) + "\n")
elem = {"double": 8, "float": 4, "int": 4, "char": 1}[get("datatype")]
for name in get("algos").split(","):
    for k, v in enumerate(get("vectors").split(";")):
        total = sum(int(x) for x in v.split(","))
        samples = [1.0 + k + 0.01 * i for i in range(10)]
        row = {"kind": "row", "collective": get("collective"), "algorithm": name,
               "bytes": total * elem, "count": total, "point": k, "iterations": 10,
               "warmup": 1, "valid": True, "probe_rtt_ns_before": None,
               "probe_rtt_ns_after": None}
        for s in ("min_us", "q1_us", "median_us", "q3_us", "mean_us", "p99_us", "max_us"):
            row[s] = samples[5]
        print(json.dumps(row), flush=True)
"""


class _FakeMPI:
    version = "Fake MPI 1.0"

    def describe(self) -> str:
        return self.version

    def native_algorithms(self, collective: str) -> list[str]:
        return []

    def force_env(self, collective: str, name: str) -> dict[str, str]:
        return {"FORCED": name}


@pytest.fixture
def driver(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    exe = tmp_path / "bin" / "collkit_bench"
    exe.parent.mkdir()
    exe.write_text(_DRIVER)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(cb, "build", lambda *_: exe.parent)
    monkeypatch.setattr(cb, "launch_env", lambda *_a, **_k: (dict(os.environ), ""))
    monkeypatch.setattr(
        cb, "launch_command", lambda _m, _P, args, **_k: [sys.executable, *map(str, args)]
    )
    return exe


def _calls(exe: Path) -> list[str]:
    p = Path(str(exe) + ".calls")
    return p.read_text().splitlines() if p.exists() else []


def test_each_counts_form_is_a_point_and_its_row_says_the_form(
    driver: Path, tmp_path: Path
) -> None:
    forms = ["random(1,64)", "skewed(32)", "zeros-but-one(5,2)"]
    c = Campaign("alltoallv", ["native", "scattered"], [3], [8], counts=forms, rounds=1)
    store = ResultStore(tmp_path / "r.jsonl")
    added = cb.run_campaign(c, _FakeMPI(), store)  # type: ignore[arg-type]
    assert len(added) == 2 * len(forms)
    for r in added:
        vec = parse_counts(r.counts).vector(3, per_pair=True)  # the P x P matrix
        assert r.counts in forms
        assert (r.bytes, r.count) == (sum(vec), sum(vec))  # char: one byte each
    # The driver got each form's matrix, in the order of the points.
    (call,) = _calls(driver)
    vectors = call.split("--vectors ")[1].split()[0].split(";")
    assert vectors == [",".join(map(str, parse_counts(f).vector(3, per_pair=True))) for f in forms]
    # A rerun measures nothing; a new form only that one.
    assert cb.run_campaign(c, _FakeMPI(), store) == []  # type: ignore[arg-type]
    c2 = Campaign("alltoallv", ["native", "scattered"], [3], [8], counts=[*forms, "equal(4)"])
    new = cb.run_campaign(c2, _FakeMPI(), store)  # type: ignore[arg-type]
    assert {r.counts for r in new} == {"equal(4)"} and len(new) == 2
    assert len(_calls(driver)) == 2


def test_two_forms_of_one_total_stay_two_rows(driver: Path, tmp_path: Path) -> None:
    """equal(2) and 1,3 at P = 2 both move 4 elements: the form keeps them apart."""
    c = Campaign("allgatherv", ["native"], [2], [8], counts=["equal(2)", "1,3"], datatype="int")
    rows = cb.run_campaign(c, _FakeMPI(), ResultStore(tmp_path / "r.jsonl"))  # type: ignore[arg-type]
    assert sorted((r.counts, r.bytes) for r in rows) == [("1,3", 16), ("equal(2)", 16)]
    assert rows[0].key() != rows[1].key()
    assert len(ResultStore(tmp_path / "r.jsonl").rows) == 2  # both kept in the file


def test_without_counts_each_size_is_equal_counts(driver: Path, tmp_path: Path) -> None:
    c = Campaign("reduce_scatter", ["native"], [2], [8, 64])
    assert c.forms() == ["equal(1)", "equal(8)"]  # double: 8 B per block is one element
    rows = cb.run_campaign(c, _FakeMPI(), ResultStore(tmp_path / "r.jsonl"))  # type: ignore[arg-type]
    assert sorted((r.counts, r.bytes) for r in rows) == [("equal(1)", 16), ("equal(8)", 128)]


def test_regular_collectives_keep_their_sizes() -> None:
    c = Campaign("allreduce", ["native"], [2], [8, 64])
    assert not c.irregular and c.keys() == [8, 64]
    row = Row("allreduce", "native", 2, 8)
    assert row.counts == ""


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"collective": "allreduce", "counts": ["equal(2)"]}, "allreduce takes one count"),
        ({"collective": "alltoallv", "counts": ["1,2,3"], "P": [3]}, "P = 3 needs P\\^2 = 9"),
        ({"collective": "allgatherv", "counts": ["1,2", "1, 2"], "P": [2]}, "given twice"),
        ({"collective": "gatherv", "counts": ["nope(1)"], "P": [2]}, "unknown form"),
    ],
)
def test_bad_counts_are_refused_before_anything_runs(kwargs: dict[str, Any], message: str) -> None:
    kw: dict[str, Any] = {"algorithms": ["native"], "P": [2], "sizes": [8], **kwargs}
    with pytest.raises(InvalidArgumentError, match=message):
        Campaign(**kw)


def test_a_row_without_counts_loads_and_one_with_them_round_trips(tmp_path: Path) -> None:
    old = {"collective": "alltoall", "algorithm": "native", "P": 2, "bytes": 8}
    new = {"collective": "alltoallv", "algorithm": "native", "P": 2, "bytes": 8}
    new["counts"] = "random(1,64)"
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(old) + "\n" + json.dumps(new) + "\n")
    rows = ResultStore(path).rows
    assert [r.counts for r in rows] == ["", "random(1,64)"]
    store = ResultStore(tmp_path / "s.jsonl")
    store.append(rows[1])
    store.write_csv()
    assert [r.counts for r in ResultStore(tmp_path / "s.jsonl").rows] == ["random(1,64)"]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["alltoallv", "--counts", "random(1,64)", "--sizes", "8"], "--sizes or --counts"),
        (["allreduce", "--counts", "equal(2)"], "allreduce takes one count for every rank"),
        (["alltoallv", "--counts", "random(1)"], "random takes 2 argument(s)"),
        (["gatherv", "--counts", "1,2,3"], "3 entries, but P = 2 needs 2"),
    ],
)
def test_the_command_refuses_bad_counts_before_the_mpi_starts(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    argv: list[str],
    needle: str,
) -> None:
    from collkit.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cb, "find_mpi", lambda *_: _FakeMPI())
    try:
        code = main(["bench", *argv, "-np", "2", "--no-plot"])
    except SystemExit as e:  # argparse's usage errors
        code = e.code if isinstance(e.code, int) else 2
    out = capsys.readouterr()
    assert code == 2 and needle in out.out + out.err, out
    assert not any(tmp_path.rglob("*.jsonl"))


def test_vectors_past_the_command_lines_limit_are_a_clear_error() -> None:
    from collkit.bench import vectors_argument
    from collkit.counts import DRIVER_ARG_BYTES, parse_counts
    from collkit.errors import InvalidArgumentError

    assert vectors_argument([[1, 0, 5], [2, 2, 2]], "allgatherv", 3) == "1,0,5;2,2,2"
    # alltoallv at P = 250: 62,500 entries of equal(1), 125,000 characters with the commas.
    matrix = parse_counts("equal(1)").vector(250, per_pair=True)
    with pytest.raises(InvalidArgumentError, match=r"alltoallv at P = 250: .* lower -np"):
        vectors_argument([matrix], "alltoallv", 250)
    fits = [1] * (DRIVER_ARG_BYTES // 2)
    assert len(vectors_argument([fits], "alltoallv", 200)) < DRIVER_ARG_BYTES
