"""collkit.tune from Python, without the command line: TuneOptions in, TuneResult out, the same
files as `collkit tune` (simulated: no MPI)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import collkit.tune as ct
from collkit.cli import main
from collkit.cli._common import print_json_lines
from collkit.cli.tune import choice_json
from collkit.errors import CollkitError, InvalidArgumentError
from collkit.tune import TuneOptions, TuneResult
from collkit.tune.run import check_options
from collkit.tune.table import load

SIZES = [8 << i for i in range(8)]  # 8 B..1 KiB


def _sim(out: Path, **kw: Any) -> TuneOptions:
    return TuneOptions(
        ["allreduce"], [4], list(SIZES), simulate="postal", out=str(out), plot=False, **kw
    )


def _rules(path: Path) -> list[tuple[object, ...]]:
    t = load(path)
    return [
        (r.collective, r.P, r.bytes, r.algorithm, r.source, r.median_us, r.speedup) for r in t.rules
    ]


def test_a_simulated_tune_returns_choices_and_writes_what_the_command_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said: list[str] = []
    res = ct.tune(_sim(tmp_path / "api"), say=said.append)
    assert isinstance(res, TuneResult)
    assert {(c.collective, c.P, c.bytes) for c in res.choices} == {
        ("allreduce", 4, s) for s in SIZES
    }
    assert res.rows and all(r.source == "simulated" for r in res.rows)
    table = tmp_path / "api" / "collkit-tuning.json"
    assert table in res.written and table.is_file()
    assert res.table is not None and res.table.rules and res.label == "simulated, postal"
    assert res.table.lookup("allreduce", 4, 8) == load(table).lookup("allreduce", 4, 8)
    # the notes (what tune says of the result) were said, and so was its progress
    assert res.notes and all(n in said for n in res.notes)
    assert any(m.startswith("simulating allreduce P=4") for m in said)

    args = ["allreduce", "-P", "4", "--sizes", "8B..1KiB", "--simulate", "postal"]
    code = main(["tune", *args, "-o", str(tmp_path / "cli"), "--no-plot", "--json"])
    assert code == 0
    printed = capsys.readouterr().out
    assert _rules(tmp_path / "cli" / "collkit-tuning.json") == _rules(table)
    cli_t, api_t = load(tmp_path / "cli" / "collkit-tuning.json"), load(table)
    assert (cli_t.mpi, cli_t.machine, cli_t.block) == (api_t.mpi, api_t.machine, api_t.block)
    print_json_lines(choice_json(c) for c in res.choices)  # as the command prints them
    assert printed and capsys.readouterr().out == printed
    names = {p.name for p in res.written}
    assert names == {p.name for p in (tmp_path / "cli").iterdir()}


def test_a_rerun_measures_nothing_and_decides_the_same(tmp_path: Path) -> None:
    first = ct.tune(_sim(tmp_path))
    lines = (tmp_path / "tune.jsonl").read_text().count("\n")
    again = ct.tune(_sim(tmp_path))
    assert (tmp_path / "tune.jsonl").read_text().count("\n") == lines
    assert [choice_json(c) for c in again.choices] == [choice_json(c) for c in first.choices]


def test_check_makes_the_checks_and_the_plan_without_running(tmp_path: Path) -> None:
    plan = ct.check(_sim(tmp_path / "d", only=["rd", "ring"]))
    assert plan.model is not None and plan.mpi is None
    assert plan.keys == {("allreduce", 4)} and plan.old is None
    assert list((tmp_path / "d").iterdir()) == []  # the folder, nothing in it yet


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"block": 4}, "--block is for measuring"),
        ({"routing_us": 1.0}, "--routing-us is for measuring"),
        ({"rounds": 0}, "--rounds 0 must be in 1..100"),
        ({"alpha": math.nan}, "--alpha must be in (0, 1)"),
        ({"only": ["nope"]}, "nope"),
        ({"simulate": "nope"}, "unknown model 'nope'"),
        ({"params": {"": "1"}}, "must be KEY=VALUE"),
        ({"profile": "/no/such/profile.json"}, "does not exist"),
        ({"out": ""}, "-o '': give the folder"),
    ],
)
def test_bad_options_are_a_clear_error_and_nothing_is_written(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    opts = _sim(tmp_path / "d")
    for k, v in change.items():
        setattr(opts, k, v)
    with pytest.raises(CollkitError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ct.tune(opts)
    assert not (tmp_path / "d").exists()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    top_k=st.integers(-5, 5),
    iterations=st.integers(-10, 10),
    warmup=st.integers(-3, 3),
    max_ms=st.integers(-3, 3),
    rounds=st.integers(-3, 200),
    alpha=st.floats(allow_nan=True, allow_infinity=True),
    min_gain=st.floats(allow_nan=True, allow_infinity=True),
)
def test_options_out_of_range_are_refused_before_any_folder(
    tmp_path: Path,
    top_k: int,
    iterations: int,
    warmup: int,
    max_ms: int,
    rounds: int,
    alpha: float,
    min_gain: float,
) -> None:
    out = tmp_path / "never"
    opts = _sim(
        out,
        top_k=top_k,
        iterations=iterations,
        warmup=warmup,
        max_ms=max_ms,
        rounds=rounds,
        alpha=alpha,
        min_gain=min_gain,
    )
    good = (
        top_k >= 1
        and iterations >= 5
        and warmup >= 0
        and max_ms >= 1
        and 1 <= rounds <= 100
        and 0 < alpha < 1
        and 0 <= min_gain < math.inf
    )
    if good:
        check_options(opts)
    else:
        with pytest.raises(InvalidArgumentError):
            ct.check(opts)
    assert not out.exists()


def test_no_argparse_below_the_command_line() -> None:
    tune_pkg = Path(ct.__file__).parent
    for f in tune_pkg.glob("*.py"):
        assert "argparse" not in f.read_text(encoding="utf-8"), f


def test_another_block_measures_again_what_it_decides_and_keeps_nothing_of_another_block(
    tmp_path: Path,
) -> None:
    """Measuring with another --block on the same MPI and machine replaces the rules of the
    (collective, P) it measures again (a re-tune), but refuses to keep another collective's
    measured rules beside them (a table has one block); another MPI is always refused."""
    from collkit.errors import InvalidArgumentError
    from collkit.tune.run import check_merge
    from collkit.tune.table import Rule, Table

    ar = Rule("allreduce", (2, 2), (0, 7), "allreduce:rd")
    bc = Rule("bcast", (2, 2), (0, 7), "bcast:binomial")
    mpi, machine = "MPICH 5.0.2", "vm"
    only_ar = Table(rules=[ar], mpi=mpi, machine=machine, block=1)
    check_merge(only_ar, tmp_path, mpi, 8, machine, {("allreduce", 2)})  # measured again: fine
    both = Table(rules=[ar, bc], mpi=mpi, machine=machine, block=1)
    with pytest.raises(InvalidArgumentError, match=r"bcast at P = 2\) measured with --block 1"):
        check_merge(both, tmp_path, mpi, 8, machine, {("allreduce", 2)})
    check_merge(both, tmp_path, mpi, 1, machine, {("allreduce", 2)})  # same block: merged
    with pytest.raises(InvalidArgumentError, match=r"measured with MPICH 5\.0\.2"):
        check_merge(only_ar, tmp_path, "Open MPI 4.1.4", 1, machine, {("allreduce", 2)})


def test_an_algorithm_name_is_printed_as_it_is_never_as_an_emoji(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """rich reads ":ring:" as an emoji code: tune's notes printed "allreduce:ring: back_to_back"
    as "allreduce💍 back_to_back"."""
    from collkit.cli._common import console

    console().print("1 did not win in every pattern: allreduce:ring: back_to_back 1.17")
    assert "allreduce:ring: back_to_back" in capsys.readouterr().out
