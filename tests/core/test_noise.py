"""Noise and skew (core/src/sim/noise.cpp, collkit/sim/noise.py): the distributions' draws and
their statistics, noise files, the specs read by the core's grammar, and determinism per seed
(LogGOPSim's noise traces: test_simulate_loggopsim.py)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_simulate import ping

from collkit.errors import InvalidArgumentError
from collkit.sim import parse_distribution, simulate


def test_constant_noise_lengthens_every_op() -> None:
    r = simulate(ping(80), model="postal", alpha=100, beta=1.0, noise="constant(5ns)")
    assert list(r.finish) == [185.0, 190.0]  # the send's 5 ns delays arrival; the recv adds 5


def test_constant_skew_shifts_everything() -> None:
    base = simulate("allreduce:rd", 8, bytes=8, model="postal")
    r = simulate("allreduce:rd", 8, bytes=8, model="postal", skew="constant(1us)")
    assert np.allclose(r.finish, base.finish + 1000)


def test_noise_is_deterministic_for_a_seed() -> None:
    kw = {"bytes": 8, "noise": "lognormal(50ns,1)", "skew": "uniform(0,1us)", "trials": 20}
    a = simulate("allreduce:rd", 16, seed=7, **kw)
    b = simulate("allreduce:rd", 16, seed=7, **kw)
    c = simulate("allreduce:rd", 16, seed=8, **kw)
    assert np.array_equal(a.makespans, b.makespans) and np.array_equal(a.finish, b.finish)
    assert not np.array_equal(a.makespans, c.makespans)
    assert len(np.unique(a.makespans)) > 1  # trials draw afresh


def test_noise_statistics() -> None:
    # makespan of a ping = alpha + (send's draw) + (recv's draw): mean alpha + 2 * mean
    trials = 4000
    r = simulate(
        ping(1), model="postal", alpha=100, noise="exponential(50ns)", trials=trials, seed=3
    )
    assert r.makespans.mean() == pytest.approx(200.0, rel=0.05)
    assert r.makespans.min() >= 100.0
    u = simulate(ping(1), model="postal", alpha=100, noise="uniform(10ns,30ns)", trials=500)
    assert u.makespans.min() >= 120.0 and u.makespans.max() <= 160.0
    assert u.makespans.mean() == pytest.approx(140.0, rel=0.02)
    st = r.stats()
    assert st["min"] <= st["q1"] <= st["median"] <= st["q3"] <= st["max"]
    assert st["max"] > 2 * st["median"]  # the exponential's long tail


def test_noise_from_a_file_of_samples(tmp_path: Path) -> None:
    f = tmp_path / "detours.txt"
    f.write_text("10ns 20ns\n1us\n")
    r = simulate(ping(1), model="postal", alpha=100, noise=f"file({f})", trials=300)
    assert set(np.unique(r.makespans)) <= {
        100 + a + b for a in (10, 20, 1000) for b in (10, 20, 1000)
    }
    assert len(np.unique(r.makespans)) > 3


def test_skew_draws_one_start_per_rank() -> None:
    # uniform skew over many ranks: the ranks start apart, within the distribution's range, and
    # the first rank to finish cannot beat the noise-free time.
    base = simulate("allreduce:rd", 64, bytes=8, model="postal", alpha=100)
    r = simulate("allreduce:rd", 64, bytes=8, model="postal", alpha=100, skew="uniform(0,1us)")
    extra = r.finish - base.finish
    assert extra.min() >= 0 and extra.max() <= 1000
    assert r.makespan > base.makespan


@pytest.mark.parametrize(
    ("spec", "mean"),
    [
        ("none", 0.0),
        ("constant(50ns)", 50.0),
        ("uniform(10ns, 30ns)", 20.0),
        ("exponential(2us)", 2000.0),
        ("exp(7)", 7.0),
        ("lognormal(100ns,0.5)", 100.0 * math.exp(0.125)),
    ],
)
def test_spec_reads_back_and_gives_its_mean(spec: str, mean: float) -> None:
    d = parse_distribution(spec)
    assert d.mean() == pytest.approx(mean)
    assert parse_distribution(d.describe()) == d  # describe() writes a spec that reads back


@pytest.mark.parametrize("spec", ["exponential(1us)", "uniform(0,2us)", "lognormal(300ns,0.8)"])
def test_drawn_noise_has_the_distribution_mean(spec: str) -> None:
    # A ping under noise: two draws (send, recv) per trial on top of alpha.
    trials = 3000
    r = simulate(ping(1), model="postal", alpha=100, noise=spec, trials=trials, seed=11)
    want = 100 + 2 * parse_distribution(spec).mean()
    assert r.makespans.mean() == pytest.approx(want, rel=0.06)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("uniform(30ns,10ns)", "lo <= hi"),
        ("uniform(1ns)", "takes 2 argument"),
        ("gauss(1ns)", "unknown distribution 'gauss'"),
        ("lognormal(100ns,x)", "not a number"),
        ("lognormal(0,0.5)", "median > 0"),
        ("constant(a=1ns)", "positional"),
        ("uniform(0,100ns", r"expected ',' or '\)'"),
        ("uniform(0,,1)", "expected an argument"),
        ("constant(-5ns)", "noise"),
        ("", "empty spec"),
    ],
)
def test_bad_specs_are_clear_errors(spec: str, match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        parse_distribution(spec)


def test_a_spec_error_points_at_its_character() -> None:
    with pytest.raises(InvalidArgumentError) as e:
        parse_distribution("uniform(0;1)", "skew")
    assert str(e.value).startswith("skew: ")
    assert "uniform(0;1)\n           ^" in str(e.value)  # the caret under ';'


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["constant", "exponential"]),
    st.floats(min_value=0, max_value=1e9, allow_nan=False),
    st.sampled_from(["", " ", "\t"]),
)
def test_generated_specs_parse(kind: str, value: float, ws: str) -> None:
    d = parse_distribution(f"{kind}({ws}{value!r}ns{ws})")
    assert d.kind == kind and d.a == pytest.approx(value)


def test_noise_file_path_with_slashes_and_dots(tmp_path: Path) -> None:
    f = tmp_path / "sub.dir" / "my-detours_1.txt"
    f.parent.mkdir()
    f.write_text("5ns\n")
    d = parse_distribution(f"file({f})")
    assert d.kind == "samples" and d.samples == (5.0,)
