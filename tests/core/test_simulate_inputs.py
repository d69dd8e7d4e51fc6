"""The simulator's face: parameters declared once, one options object, a schedule's
problem not silently overridden, and every bad input answered with exit 2 and a message."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

import collkit
from collkit import _core, cli, io
from collkit.errors import InvalidArgumentError
from collkit.simulate import (
    LOCAL_PARAMS,
    MODELS,
    PARAM_UNITS,
    memory_estimate,
    simulate_file,
)


def run_cli(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(cli, "COMMANDS", ["simulate"])
    return cli.main(argv)


def test_model_parameters_come_from_the_core_table() -> None:
    table = {p["name"]: p for p in _core.model_params()}
    python_side = set(LOCAL_PARAMS).union(*(set(ps) for ps in MODELS.values()))
    assert python_side == set(table)
    for name, p in table.items():
        assert p["unit"] in ("ns", "ns/B", "B") and p["doc"]
        assert PARAM_UNITS[name] == p["unit"]
    assert MODELS["loggops"]["S"] == math.inf and table["S"]["unit"] == "B"
    assert set(MODELS["postal"]) == {"alpha", "beta"}


def test_options_object_replaces_positional_arguments() -> None:
    opts = _core.SimOptions()
    opts.set_model("postal", {"alpha": 700.0})
    opts.trials = 2
    d = _core.simulate(_core.Algorithm("allreduce:rd"), 8, 1, 8, 0, opts)
    assert list(d.makespans) == [2100.0, 2100.0]
    with pytest.raises(collkit.CollkitError, match="unknown model parameter 'alpha_x'"):
        opts.set_model("postal", {"alpha_x": 1.0})


def test_a_schedule_brings_its_own_problem() -> None:
    s = collkit.generate("allreduce:rd", 8, 4)
    assert collkit.simulate(s, 8, count=4).makespan == collkit.simulate(s).makespan
    with pytest.raises(InvalidArgumentError, match="P=1024 conflicts"):
        collkit.simulate(s, P=1024)
    with pytest.raises(InvalidArgumentError, match="bytes="):
        collkit.simulate(s, bytes=64)
    with pytest.raises(InvalidArgumentError, match="count=2 conflicts"):
        collkit.simulate(s, count=2)


def test_a_message_to_itself_verifies_and_simulates() -> None:
    text = (
        "# collkit schedule v1\ncollective allreduce\nP 1\ncount 1\nelem_size 8\nroot 0\n"
        "rank 0 scratch 1\n  0: send in[0:1] to 0\n  1: recv s0[0:1] from 0\n"
        "  2: copy out[0:1] = s0[0:1]  after 1\n"
    )
    s = io.from_text(text)
    assert collkit.verify(s).ok
    r = collkit.simulate(s, model="postal", alpha=500)
    assert r.makespan == 500.0 and r.messages == 1


def test_overflowing_parameters_are_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_cli(["simulate", "allreduce:rd", "-P", "8", "--gamma", "1e308"], monkeypatch)
    assert code == 2
    assert "overflowed to infinity" in capsys.readouterr().err


def test_plot_path_printed_is_the_file_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert run_cli(["simulate", "allreduce:rd", "-P", "4", "--plot", str(out)], monkeypatch) == 0
    assert f"plot: {out}.png" in capsys.readouterr().out
    assert (tmp_path / "out.png").exists()


@pytest.mark.parametrize("flag", ["--timeline", "--plot"])
def test_unwritable_output_paths_fail_before_running(
    flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for bad in (tmp_path / "missing" / "x.json", tmp_path):
        code = run_cli(["simulate", "allreduce:rd", "-P", "4", flag, str(bad)], monkeypatch)
        assert code == 2
        err = capsys.readouterr().err
        assert flag in err and "Traceback" not in err


def test_timeline_of_a_huge_run_is_refused_at_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_cli(
        ["simulate", "allreduce:rd", "-P", "2^20", "--timeline", os.devnull], monkeypatch
    )
    assert code == 2
    assert "record every op" in capsys.readouterr().err


def test_a_run_that_cannot_fit_exits_2_with_the_estimate(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_cli(["simulate", "allreduce:rd", "-P", "2^31"], monkeypatch)
    assert code == 2
    err = capsys.readouterr().err
    assert "needs about" in err and "GiB" in err and "available" in err


def test_file_runs_a_saved_schedule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    s = collkit.generate("allreduce:rd", 8, 4)
    want = collkit.simulate(s, model="loggops").makespan
    for ext in ("txt", "json", "goal"):
        path = tmp_path / f"rd.{ext}"
        io.save(s, path)
        code = run_cli(
            ["simulate", "--file", str(path), "--model", "loggops", "--json"], monkeypatch
        )
        assert code == 0
        row = json.loads(capsys.readouterr().out)
        assert row["median_us"] == pytest.approx(want * 1e-3)
    # A LogGOPSim user's plain GOAL file, as LogGOPSim reads it.
    plain = tmp_path / "plain.goal"
    plain.write_text(
        "num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 0\n}\nrank 1 {\nl1: recv 8b from 0 tag 0\n}\n"
    )
    assert run_cli(["simulate", "--file", str(plain), "--model", "loggops"], monkeypatch) == 0
    assert "makespan" in capsys.readouterr().out


def test_file_refuses_conflicts_and_missing_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "rd.txt"
    io.save(collkit.generate("allreduce:rd", 4, 1), path)
    assert run_cli(["simulate", "--file", str(path), "-P", "8"], monkeypatch) == 2
    assert "leave out -P" in capsys.readouterr().err
    for bad in (tmp_path / "nope.goal", tmp_path):
        assert run_cli(["simulate", "--file", str(bad)], monkeypatch) == 2
        assert "cannot read" in capsys.readouterr().err
    assert run_cli(["simulate"], monkeypatch) == 2
    assert "--file" in capsys.readouterr().err


def test_a_text_file_streams_into_the_simulator(tmp_path: Path) -> None:
    # Parsed as it is read and interned rank by rank: one shared program for all of rd's ranks,
    # the same results as the schedule held whole.
    s = collkit.generate("allreduce:rd", 64, 4)
    path = tmp_path / "rd.txt"
    io.save(s, path)
    streamed = simulate_file(path, model="loggops", noise="exponential(20ns)", trials=3)
    whole = collkit.simulate(s, model="loggops", noise="exponential(20ns)", trials=3)
    assert list(streamed.makespans) == list(whole.makespans)
    assert streamed.programs == 1 and streamed.P == 64 and streamed.bytes_per_rank == 32
    assert streamed.to_row().collective == "allreduce"
    bad = tmp_path / "bad.txt"
    bad.write_text(path.read_text().replace("rank 5 ", "rank 6 "))
    with pytest.raises(collkit.CollkitError, match="line"):
        simulate_file(bad)


def test_memory_estimate_counts_a_root_once() -> None:
    # bcast:linear: the root sends P-1 messages, every other rank receives one.
    nbytes, ops = memory_estimate("bcast:linear", 1 << 20, 1)
    assert ops < 3 << 20 and nbytes < 1 << 30
    assert memory_estimate("allreduce:rd", 1024, 1)[1] == collkit.Algorithm(
        "allreduce:rd"
    ).count_ops(1024, 1)
