"""Call patterns (docs/tuning.md, "Patterns"): the rows say theirs, bench and tune take them,
and a tuning rule is written only where its candidate wins in every pattern measured."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collkit.bench import BenchOptions, Campaign, check_bench
from collkit.errors import InvalidArgumentError
from collkit.results import (
    PATTERNS,
    ResultStore,
    Row,
    read_csv,
    read_jsonl,
    row_from_dict,
    row_to_json,
    write_csv,
)

# ---- rows ---------------------------------------------------------------------------------------


def test_a_row_says_its_pattern_and_round_trips_in_jsonl_and_csv(tmp_path: Path) -> None:
    rows = [
        Row("bcast", "bcast:binomial", 2, 8, pattern=p, median_us=1.0, samples=[1.0])
        for p in PATTERNS
    ]
    assert Row("bcast", "native", 2, 8).pattern == "back_to_back"
    store = ResultStore(tmp_path / "r.jsonl")
    for r in rows:
        assert store.append(r)
    write_csv(tmp_path / "r.csv", rows)
    assert [r.pattern for r in read_jsonl(tmp_path / "r.jsonl")] == list(PATTERNS)
    assert [r.pattern for r in read_csv(tmp_path / "r.csv")] == list(PATTERNS)
    # The pattern is part of a row's identity: the same call made otherwise is another row.
    assert len({r.key() for r in rows}) == len(PATTERNS)
    again = ResultStore(tmp_path / "r.jsonl")
    assert all(r in again for r in rows)
    assert Row("bcast", "bcast:binomial", 2, 8, pattern="evict", attempt=1) not in again


def test_rows_written_before_patterns_load_as_back_to_back(tmp_path: Path) -> None:
    d = json.loads(row_to_json(Row("allreduce", "native", 2, 8, median_us=1.0)))
    del d["pattern"]
    (tmp_path / "old.jsonl").write_text(json.dumps(d) + "\n")
    (old,) = read_jsonl(tmp_path / "old.jsonl")
    assert old.pattern == "back_to_back"
    # A resumed campaign finds it: the row it would measure back to back is already there.
    assert Row("allreduce", "native", 2, 8) in ResultStore(tmp_path / "old.jsonl")
    # An old CSV without the column, and an empty cell, alike.
    header = [k for k in d if k not in ("samples",) and not k.startswith("round_")]
    lines = [",".join(header), ",".join("" if d[k] is None else str(d[k]) for k in header)]
    (tmp_path / "old.csv").write_text("\n".join(lines) + "\n")
    assert read_csv(tmp_path / "old.csv")[0].pattern == "back_to_back"
    assert row_from_dict({**d, "pattern": ""}).pattern == "back_to_back"


@pytest.mark.parametrize("bad", ["sync0", "BARRIER", " barrier", "back-to-back", 3, ["evict"]])
def test_a_row_with_an_unknown_pattern_is_a_clear_error(bad: object) -> None:
    d = {"collective": "allreduce", "algorithm": "native", "P": 2, "bytes": 8, "pattern": bad}
    with pytest.raises(InvalidArgumentError, match="pattern"):
        row_from_dict(d)


# ---- bench --------------------------------------------------------------------------------------


def test_bench_checks_the_pattern_before_it_runs_anything() -> None:
    c = Campaign("bcast", ["native", "binomial"], [2], [8], pattern="rotate_root")
    assert c.pattern == "rotate_root"
    with pytest.raises(InvalidArgumentError, match="rotate_root moves the root: allreduce"):
        Campaign("allreduce", ["native"], [2], [8], pattern="rotate_root")
    with pytest.raises(InvalidArgumentError, match="not with --sync window"):
        Campaign("allreduce", ["native"], [2], [8], pattern="barrier", sync="window")
    with pytest.raises(InvalidArgumentError, match="must be one of back_to_back"):
        check_bench(BenchOptions("allreduce", P=[2], pattern="sync0"))
    with pytest.raises(InvalidArgumentError, match="rotate_root"):
        check_bench(BenchOptions("barrier", P=[2], pattern="rotate_root"))


def test_bench_cli_refuses_a_bad_pattern_with_exit_2() -> None:
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "collkit", "bench", "allreduce", "-np", "2", "--pattern", "x"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 2
    assert "collkit bench: error: pattern 'x' must be one of" in r.stderr
    assert "Traceback" not in r.stderr
