"""The count limit of [Rabenseifner] by the alpha-beta-gamma closed forms, checked against the
schedules
themselves and against the forms' own algebra; its table and CLI; hostile input."""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import collkit
from collkit.algorithms import Algorithm
from collkit.analysis import bruck
from collkit.analysis.limits import (
    SEED_001_P,
    AlphaBetaGamma,
    format_limit_table,
    limit_from_times,
    limit_rows,
    model_limit,
    model_time,
    modeled,
)
from collkit.cli import limit as limit_cli
from collkit.cli import main
from collkit.errors import InvalidArgumentError

SEND = 0


def _busiest_rank_bytes(name: str, P: int, count: int) -> int:
    a = collkit.generate(name, P, count).arrays()
    per = np.zeros(P, dtype=np.int64)
    sends = a["kind"] == SEND
    np.add.at(per, a["rank"][sends], a["len"][sends])
    return int(per.max()) * 8


@pytest.mark.parametrize(
    "name", ["allreduce:rd", "allreduce:rabenseifner", "allreduce:ring(seg=0)"]
)
def test_beta_term_matches_the_bytes_the_schedule_sends(name: str) -> None:
    # With alpha = gamma = 0 the closed form is the bytes the busiest rank sends, times beta,
    # for P = 2^k (no fold) and counts divisible by P.
    m = AlphaBetaGamma(alpha=0, beta=1.0, gamma=0)
    for P in (2, 4, 8, 32):
        count = P * 5
        assert model_time(name, P, count * 8, m) == pytest.approx(
            _busiest_rank_bytes(name, P, count)
        )


def test_alpha_term_counts_the_rounds() -> None:
    m = AlphaBetaGamma(alpha=1.0, beta=0, gamma=0)
    assert model_time("allreduce:rd", 16, 8, m) == 4
    assert model_time("allreduce:rd", 13, 8, m) == 3 + 2
    assert model_time("allreduce:rabenseifner", 16, 8, m) == 8
    assert model_time("allreduce:ring(seg=0)", 16, 8, m) == 30
    assert model_time("reduce:folded_binomial", 13, 8, m) == 4


def test_limit_is_where_the_closed_forms_cross() -> None:
    m = AlphaBetaGamma()
    for old, new in [
        ("allreduce:rd", "allreduce:rabenseifner"),
        ("reduce:folded_binomial", "reduce:rabenseifner"),
        ("allreduce:rd", "allreduce:ring"),
    ]:
        for P in (2, 3, 8, 13, 64):
            c = model_limit(old, new, P, m)
            assert c is not None and c > 1
            assert model_time(new, P, c * 8, m) < model_time(old, P, c * 8, m)
            assert model_time(new, P, (c - 1) * 8, m) >= model_time(old, P, (c - 1) * 8, m)


def test_limit_for_two_ranks_is_two_alpha_over_gamma() -> None:
    # P = 2: rd costs alpha + n (beta + gamma), Rabenseifner 2 alpha + n beta + n gamma / 2.
    m = AlphaBetaGamma(alpha=1e-6, beta=1e-9, gamma=1e-9)
    # They cross at 2 alpha / gamma = 2000 bytes = 250 doubles; the first count that wins is 251.
    assert model_limit("allreduce:rd", "allreduce:rabenseifner", 2, m) == 251


def test_no_limit_when_reduction_and_bandwidth_are_free() -> None:
    m = AlphaBetaGamma(alpha=1e-6, beta=0, gamma=0)
    assert model_limit("allreduce:rd", "allreduce:rabenseifner", 8, m) is None


def test_limit_from_sampled_times() -> None:
    counts = [1, 2, 4, 8, 16]
    assert limit_from_times(counts, [1, 2, 3, 4, 5], [2, 3, 2.9, 3, 4]) == 4
    assert limit_from_times(counts, [1, 2, 3, 4, 5], [2, 1, 4, 3, 6]) is None
    with pytest.raises(collkit.InvalidArgumentError):
        limit_from_times([2, 1], [1, 1], [1, 1])


def test_table_has_seed_001_shape() -> None:
    rows = limit_rows("allreduce:rd", "allreduce:rabenseifner", SEED_001_P, AlphaBetaGamma())
    text = format_limit_table("Allreduce", rows)
    for label in ("limit [count value]", "new prot.", "old prot.", "ratio new/old", "2**n"):
        assert label in text
    assert all(r.ratio > 1 for r in rows if r.P > 2)


def test_model_rejects_bad_parameters_and_unmodeled_algorithms() -> None:
    with pytest.raises(collkit.InvalidArgumentError):
        AlphaBetaGamma(alpha=-1)
    with pytest.raises(collkit.InvalidArgumentError):
        AlphaBetaGamma(beta=math.nan)
    with pytest.raises(collkit.InvalidArgumentError, match="P = 0"):
        model_time("allreduce:rd", 0, 8, AlphaBetaGamma())
    with pytest.raises(collkit.InvalidArgumentError, match="bytes"):
        model_time("allreduce:rd", 4, -8, AlphaBetaGamma())


def _run_limit(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    limit_cli.add_arguments(p)
    return limit_cli.run(p.parse_args(argv))


def test_cli_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run_limit(["reduce", "-P", "2..5", "--per-p"]) == 0
    out = capsys.readouterr().out
    assert "reduce:rabenseifner vs reduce:folded_binomial" in out and "limit" in out


def test_cli_rejects_an_algorithm_of_another_collective() -> None:
    with pytest.raises(collkit.InvalidArgumentError):
        _run_limit(["reduce", "--new", "allreduce:ring"])


def test_cli_times_take_units_and_bare_numbers_are_ns(capsys: pytest.CaptureFixture[str]) -> None:
    # `limit` takes a unit too ('2us'); a bare number is ns everywhere.
    outs = []
    for alpha in ("2us", "2000", "0.002ms"):
        assert _run_limit(["reduce", "-P", "2..5", "--alpha", alpha, "--beta", "10GB/s"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] == outs[2]
    assert "alpha = 2e-06 s, beta = 1e-10 s/B" in outs[0]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20))
def test_nonpof2_value_hostile_text(text: str) -> None:
    try:
        collkit.generate(f"allreduce:rabenseifner(nonpof2={text})", 5, 3)
    except collkit.CollkitError:
        return
    assert text in ("fold", "elim", "elim21")


def test_limit_command_is_registered() -> None:
    from collkit.cli import COMMANDS

    assert "limit" in COMMANDS
    assert callable(main)


def test_cli_bad_input_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["limit", "reduce", "--new", "allreduce:ring"]) == 2
    assert "not a reduce algorithm" in capsys.readouterr().err
    for argv in (["limit", "reduce", "-P", "0"], ["limit", "reduce", "--alpha", "-1"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2


def test_cli_through_main(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["limit", "allreduce", "-P", "2,3,8,12"]) == 0
    out = capsys.readouterr().out
    assert out.count("limit [count value]") == 2  # rabenseifner and ring against rd


def test_registered_bruck_cost_is_the_step_counts() -> None:
    """alltoall:bruck registers numC alpha + numD N beta: the same counts as the analysis."""
    for P in (1, 2, 5, 16, 33):
        for r in (2, 3, 4):
            c = Algorithm(f"alltoall:bruck(r={r})").cost(P, 100.0)
            assert c["alpha"] == bruck.model_seconds(P, r, 100, alpha=1.0, beta=0.0)
            assert c["beta"] == bruck.model_seconds(P, r, 100, alpha=0.0, beta=1.0)
            assert c["gamma"] == 0


def test_modeled_algorithms_come_from_the_registry() -> None:
    names = modeled()
    assert {"allreduce:rd", "allreduce:ring", "reduce:rabenseifner", "alltoall:bruck"} <= set(names)
    assert names == [s["name"] for s in collkit.algorithms() if s["has_model"]]
    with pytest.raises(InvalidArgumentError, match="no closed form"):
        model_time("bcast:linear", 4, 8, AlphaBetaGamma())
