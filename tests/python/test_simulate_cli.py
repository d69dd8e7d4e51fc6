"""The simulate command, timelines (Perfetto JSON, picture) and the unit / spec parsers."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import collkit
from collkit import cli
from collkit.results import row_from_dict
from collkit.simulate import parse_distribution, parse_per_byte, parse_time, parse_topology
from collkit.timeline import plot_timeline, trace_events, write_perfetto


def run_cli(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    # Only this command: the others are not this test's business.
    monkeypatch.setattr(cli, "COMMANDS", ["simulate"])
    return cli.main(argv)


# --- CLI ---------------------------------------------------------------------------------------


def test_cli_simulates_with_units(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_cli(
        [
            "simulate",
            "allreduce:rd",
            "-P",
            "16",
            "--bytes",
            "8",
            "--model",
            "pipelined-postal",
            "--alpha-p",
            "1.34us",
            "--alpha-r",
            "0.34us",
            "--json",
        ],
        monkeypatch,
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    # One row of THE results schema (collkit.results): times in microseconds, like measured rows.
    row = row_from_dict(out)
    assert row.source == "simulated" and row.P == 16 and row.bytes == 8
    assert row.median_us == pytest.approx(4 * (1.340 + 0.340))
    assert "alpha_p=1340ns" in row.mpi and row.mpi.startswith("pipelined-postal(")


def test_cli_trials_print_quartiles(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_cli(
        [
            "simulate",
            "allreduce:rd",
            "-P",
            "32",
            "--bytes",
            "1KiB",
            "--model",
            "loggp",
            "--G",
            "0.1ns",
            "--noise",
            "exponential(100ns)",
            "--trials",
            "30",
            "--per-rank",
        ],
        monkeypatch,
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "30 trials: min" in out and "median" in out and "q3" in out
    assert out.count("rank ") >= 32


def test_cli_writes_timeline_and_plot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    js, png = tmp_path / "t.json", tmp_path / "t.png"
    code = run_cli(
        [
            "simulate",
            "allreduce:rd",
            "-P",
            "8",
            "--bytes",
            "8",
            "--model",
            "pipelined-postal",
            "--alpha-p",
            "500ns",
            "--alpha-r",
            "100ns",
            "--beta",
            "0.4ns",
            "--reduce-base",
            "10ns",
            "--timeline",
            str(js),
            "--plot",
            str(png),
        ],
        monkeypatch,
    )
    assert code == 0
    assert json.loads(js.read_text())["traceEvents"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "extra",
    [
        ["--alpha", "-1us"],
        ["--alpha", "fast"],
        ["--model", "no-such-model"],
        ["--L", "5us"],  # not a postal parameter
        ["--noise", "gaussian(1us)"],
        ["--skew", "uniform(2us,1us)"],
        ["--topology", "torus(dims=2,hop=1ns)"],
        ["--trials", "0"],
        ["--bytes", "-8"],
        ["--bytes", "8", "--count", "1"],
    ],
)
def test_cli_bad_input_exits_2(
    extra: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = run_cli(["simulate", "allreduce:rd", "-P", "8", *extra], monkeypatch)
    except SystemExit as e:  # argparse's own usage errors
        code = int(e.code or 0)
    assert code == 2
    assert "error" in capsys.readouterr().err


def test_cli_help_documents_every_parameter(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        run_cli(["simulate", "--help"], monkeypatch)
    text = capsys.readouterr().out
    for flag in (
        "--alpha",
        "--beta",
        "--alpha-p",
        "--alpha-r",
        "--L",
        "--o",
        "--g",
        "--G",
        "--O",
        "--S",
        "--gamma",
        "--reduce-base",
        "--copy-beta",
        "--noise",
        "--skew",
        "--topology",
        "--trials",
        "--timeline",
        "--plot",
    ):
        assert flag in text
    for model in ("postal", "pipelined-postal", "logp", "loggp", "loggops"):
        assert model in text


# --- timelines ---------------------------------------------------------------------------------


def test_perfetto_trace_structure(tmp_path: Path) -> None:
    r = collkit.simulate(
        "allreduce:rd", 6, bytes=8, model="pipelined-postal", reduce_base=10, timeline=True
    )
    trace = trace_events(r)
    ev = trace["traceEvents"]
    names = [e for e in ev if e["ph"] == "M" and e["name"] == "process_name"]
    assert sorted(e["pid"] for e in names) == list(range(6))
    slices = [e for e in ev if e["ph"] == "X"]
    assert len(slices) == r.ops
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in slices)
    assert max(e["ts"] + e["dur"] for e in slices) == pytest.approx(r.makespan / 1e3)
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    assert len(starts) == len(ends) == r.messages
    for i, s in starts.items():
        assert ends[i]["ts"] >= s["ts"] and ends[i]["pid"] != s["pid"]
    path = write_perfetto(r, tmp_path / "rd.json")
    assert json.loads(path.read_text()) == json.loads(json.dumps(trace))


def test_picture_is_written(tmp_path: Path) -> None:
    r = collkit.simulate("allreduce:rd", 8, bytes=8, model="pipelined-postal", timeline=True)
    plot_timeline(r, tmp_path / "rd8.png")
    p = tmp_path / "rd8.png"
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000


def test_timeline_needs_a_recorded_run(tmp_path: Path) -> None:
    r = collkit.simulate("allreduce:rd", 8)
    with pytest.raises(collkit.CollkitError, match="timeline=True"):
        write_perfetto(r, tmp_path / "x.json")


# --- parsers -----------------------------------------------------------------------------------


def test_parse_time_units() -> None:
    assert parse_time("1.34us") == pytest.approx(1340.0)
    assert parse_time("500ns") == 500.0 and parse_time("2ms") == 2e6 and parse_time("1s") == 1e9
    assert parse_time("750ps") == 0.75 and parse_time(3) == 3.0 and parse_time("7") == 7.0
    assert parse_per_byte("0.4ns/B") == pytest.approx(0.4)
    assert parse_per_byte("1GB/s") == pytest.approx(1.0)
    assert parse_per_byte("2.5GB/s") == pytest.approx(0.4)


def test_parse_specs() -> None:
    assert parse_distribution("uniform(0,1us)").b == 1000.0
    assert parse_distribution("exp(50ns)").kind == "exponential"
    assert parse_distribution("lognormal(100ns,0.5)").mean() > 100.0
    t = parse_topology("dragonfly(p=4,a=8,hop=100ns,global=1us,rpn=16)")
    assert (t.kind, t.p, t.a, t.hop, t.global_, t.ranks_per_node) == (
        "dragonfly",
        4,
        8,
        100.0,
        1000.0,
        16,
    )
    assert parse_topology("torus(dims=8x4x2,hop=5ns)").dims == (8, 4, 2)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_time_hostile_text_gives_a_clear_error(text: str) -> None:
    try:
        v = parse_time(text)
    except collkit.CollkitError:
        return
    assert v >= 0 and v == v and v != float("inf")


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.from_regex(r"[a-z]{1,10}\([0-9a-z.,=x-]{0,20}\)", fullmatch=True)))
def test_parse_specs_hostile_text_gives_a_clear_error(text: str) -> None:
    # Anything but a CollkitError (or a crash) fails the test.
    for parse in (parse_distribution, parse_topology, parse_per_byte):
        with contextlib.suppress(collkit.CollkitError):
            parse(text)  # type: ignore[operator]


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["postal", "pipelined-postal", "logp", "loggp", "loggops"]),
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**6), st.text(max_size=8)
    ),
    st.integers(1, 40),
)
def test_simulate_hostile_parameters_never_crash(model: str, value: object, P: int) -> None:
    first = {"postal": "alpha", "pipelined-postal": "alpha_p"}.get(model, "L")
    try:
        r = collkit.simulate("allreduce:rd", P, bytes=8, model=model, **{first: value})  # type: ignore[arg-type]
    except collkit.CollkitError:
        return
    assert r.makespan >= 0


# --- sweeps ------------------------------------------------------------------------------------


def test_cli_sweep_prints_one_row_per_combination(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["simulate", "allreduce:rd,bcast:binomial", "-P", "4,7", "--bytes", "8,1KiB"]
    argv += ["--model", "loggops", "--L", "500,2.5us", "--o", "100"]
    assert run_cli(argv, monkeypatch) == 0
    rows = [row_from_dict(json.loads(line)) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 2 * 2 * 2 * 2
    seen = {(r.algorithm, r.P, r.bytes, "L=2500ns" in r.mpi) for r in rows}
    assert len(seen) == 16
    # Each row is the single run with the same settings.
    for r in rows:
        L = "2.5us" if "L=2500ns" in r.mpi else "500"
        one = collkit.simulate(r.algorithm, r.P, bytes=r.bytes, model="loggops", L=L, o=100)
        assert r.median_us == pytest.approx(one.makespan / 1000)


def test_cli_sweep_skips_what_an_algorithm_refuses_and_refuses_a_timeline(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["simulate", "reduce_scatter_block:noncommutative", "-P", "3,4", "--count", "4"]
    assert run_cli(argv, monkeypatch) == 0
    out = capsys.readouterr()
    assert [row_from_dict(json.loads(x)).P for x in out.out.splitlines()] == [4]
    assert "skipped reduce_scatter_block:noncommutative P=3" in out.err
    argv = ["simulate", "allreduce:rd", "-P", "4,8", "--timeline", "t.json"]
    assert run_cli(argv, monkeypatch) == 2
    assert "a sweep prints one row per run" in capsys.readouterr().err
    argv = ["simulate", "reduce_scatter_block:noncommutative", "-P", "3,5"]
    assert run_cli(argv, monkeypatch) == 2
    assert "nothing simulated" in capsys.readouterr().err
