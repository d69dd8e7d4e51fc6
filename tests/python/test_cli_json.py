"""`--json` on every command that prints a table or a result: JSON lines on stdout (messages on
stderr), result rows with exactly the row files' keys (collkit.results.FIELDS), other tables one
object per table row."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from collkit.cli import main
from collkit.results import FIELDS, ResultStore, row_from_dict


def _lines(out: str) -> list[dict[str, Any]]:
    """Every stdout line is one JSON object (nothing else on stdout)."""
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert lines, "no output"
    objs = [json.loads(ln) for ln in lines]
    assert all(isinstance(o, dict) for o in objs), objs
    return objs


def test_verify_json_is_one_case_a_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "allreduce:rd", "-P", "1..6", "--count", "0,5", "--json"]) == 0
    objs = _lines(capsys.readouterr().out)
    assert [(o["P"], o["count"]) for o in objs] == [(P, c) for P in range(1, 7) for c in (0, 5)]
    assert all(o["result"] == "verified" and o["algorithm"] == "allreduce:rd" for o in objs)
    assert all(o["ops"] >= 0 and o["seconds"] >= 0 and o["problems"] == 0 for o in objs)


def test_verify_json_says_a_skipped_p(capsys: pytest.CaptureFixture[str]) -> None:
    # a power-of-two algorithm: P = 5 refused by the generator, P = 8 verified
    assert main(["verify", "reduce_scatter_block:noncommutative", "-P", "8,5", "--json"]) == 0
    objs = _lines(capsys.readouterr().out)
    assert [o["result"] for o in objs] == ["verified", "skipped"]
    assert objs[1]["reason"]


def test_verify_file_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.json"
    assert main(["export", "allreduce:rd", "-P", "4", "--format", "json", "-o", str(f)]) == 0
    capsys.readouterr()
    assert main(["verify", "--file", str(f), "--json"]) == 0
    [o] = _lines(capsys.readouterr().out)
    assert o["result"] == "verified" and o["P"] == 4


def test_limit_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["limit", "reduce", "-P", "2..5", "--json"]) == 0
    objs = _lines(capsys.readouterr().out)
    assert sorted({o["P"] for o in objs}) == [2, 3, 4, 5]
    for o in objs:
        assert o["collective"] == "reduce" and o["bw_new_Bps"] > 0
        assert o["ratio"] == pytest.approx(o["bw_new_Bps"] / o["bw_old_Bps"])


def test_schedules_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schedules", "allreduce", "-P", "8", "--top", "3", "--json"]) == 0
    lines = _lines(capsys.readouterr().out)
    objs = [o for o in lines if o["ranked_by"] == "model"]  # the rm schedules by the model
    assert len(objs) == 3 and all(o["P"] == 8 for o in objs)
    costs = [o["model_us"] for o in objs]
    assert costs == sorted(costs) and objs[0]["model_rank"] == 1
    every = [o for o in lines if o["ranked_by"] == "simulation"]  # every algorithm, simulated
    assert len(every) == 3 and len(lines) == 6
    assert every[0]["rank"] == 1 and all(":" in str(o["algorithm"]) for o in every)
    assert main(["schedules", "allreduce", "-P", "6,8", "--totals", "--json"]) == 0
    tot = _lines(capsys.readouterr().out)
    assert [o["P"] for o in tot] == [6, 8]
    assert all(o["schedules"] == sum(o["by_family"].values()) for o in tot)


def _rows(tmp_path: Path, name: str, source: str = "measured", scale: float = 1.0) -> Path:
    store = ResultStore(tmp_path / name)
    for P in (2, 4, 8, 16, 32):
        for nbytes in (8, 1024, 65536):
            t = scale * (1.0 + 0.5 * math.log2(P) + nbytes / 1e4)
            store.append(
                row_from_dict(
                    {
                        "collective": "allreduce",
                        "algorithm": "allreduce:rd",
                        "P": P,
                        "bytes": nbytes,
                        "count": nbytes // 8,
                        "source": source,
                        "min": t * 0.9,
                        "median": t,
                        "iterations": 10,
                    }
                )
            )
    return store.jsonl


def test_fit_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _rows(tmp_path, "m.jsonl")
    assert main(["fit", str(rows), "--predict", "P=64,bytes=8", "--json"]) == 0
    [o] = _lines(capsys.readouterr().out)
    assert o["n"] == 15 and 0 <= o["r_squared"] <= 1
    assert {c["term"] for c in o["coefficients"]} and o["predictions"][0]["mean_us"] > 0
    pred = _rows(tmp_path, "p.jsonl", "simulated", 2.0)
    assert main(["fit", str(rows), "--against", str(pred), "--json"]) == 0
    objs = _lines(capsys.readouterr().out)
    assert len(objs) == 15
    assert all(o["rel_diff_median"] == pytest.approx(-0.5) for o in objs)


def test_tune_simulated_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["tune", "allreduce", "-np", "8", "--sizes", "8,64KiB", "--simulate", "postal",
         "--no-plot", "-o", str(tmp_path / "t"), "--json"]
    )  # fmt: skip
    assert code == 0
    objs = _lines(capsys.readouterr().out)
    assert [(o["P"], o["bytes"]) for o in objs] == [(8, 8), (8, 65536)]
    from collkit.tune.table import Rule

    rule_keys = {"collective", "bytes", "P", "algorithm", "source", "median_us", "speedup"}
    assert rule_keys <= set(Rule.__dataclass_fields__) and all(rule_keys <= set(o) for o in objs)
    assert all(o["source"] == "simulated" and o["algorithm"] for o in objs)


def test_simulate_json_rows_have_the_row_files_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "allreduce:rd,allreduce:ring", "-P", "4", "--json"]) == 0
    objs = _lines(capsys.readouterr().out)
    assert len(objs) == 2 and all(set(o) == set(FIELDS) for o in objs)


def test_validate_measured_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from test_profile import make

    prof = tmp_path / "prof.json"
    make().save(prof)
    rows = _rows(tmp_path, "m.jsonl")
    code = main(
        ["validate", "--profile", str(prof), "--measured", str(rows), "--no-plot",
         "-o", str(tmp_path / "v"), "--json"]
    )  # fmt: skip
    cap = capsys.readouterr()
    assert code == 0, cap.err
    objs = _lines(cap.out)
    assert all(set(o) == set(FIELDS) for o in objs)
    assert {o["source"] for o in objs} == {"measured", "simulated"}
    assert len(objs) == 2 * 15
