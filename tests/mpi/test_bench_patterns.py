"""collkit_bench's call patterns on both MPIs (P = 2): each runs, validates collkit's result
against the MPI's call, and gives rows that say their pattern."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from collkit.bench import Campaign, run_campaign
from collkit.mpi import MPI, build
from collkit.results import PATTERNS, ResultStore
from mpi_support import mpich_or_skip, openmpi_or_skip

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module", params=["mpich", "openmpi"])
def mpi(request: pytest.FixtureRequest) -> MPI:
    m = mpich_or_skip() if request.param == "mpich" else openmpi_or_skip()
    build(m, ["collkit_bench"])
    return m


@pytest.mark.parametrize("pattern", PATTERNS)
def test_each_pattern_runs_validates_and_says_itself(
    mpi: MPI, pattern: str, tmp_path: Path
) -> None:
    coll, algo = ("bcast", "bcast:binomial") if pattern == "rotate_root" else ("allreduce", "rd")
    c = Campaign(
        coll,
        ["native", algo],
        [2],
        [8, 1024, 16384],
        iterations=10,
        warmup=2,
        block=2,
        max_ms=100,
        rounds=1,
        pattern=pattern,
    )
    store = ResultStore(tmp_path / "r.jsonl")
    rows = run_campaign(c, mpi, store)
    assert sorted((r.algorithm, r.bytes) for r in rows) == sorted(
        (a, b) for a in ("native", c.algorithms[1]) for b in (8, 1024, 16384)
    )
    for r in rows:
        assert r.pattern == pattern and not r.error, r.error
        assert r.iterations >= 10 and 0 < r.min_us <= r.median_us <= r.max_us
        assert r.valid is (True if r.algorithm != "native" else None)
    # The same campaign again measures nothing: the pattern is part of a row's identity.
    assert run_campaign(c, mpi, ResultStore(tmp_path / "r.jsonl")) == []


def test_the_tours_check_runs_in_each_pattern_and_says_which_held(mpi: MPI, tmp_path: Path) -> None:
    """A rule tune wrote for two patterns is checked in both, a line each; a rule that loses
    (4 KiB in 8-byte segments) does not hold in either and is not used."""
    from rich.console import Console

    from collkit.cli.tour import check_rules
    from collkit.tune.table import Rule, Table, load, save

    loser = Rule("allreduce", (2, 2), (4096, 4096), "allreduce:ring(seg=8)", speedup=5.0)
    loser.speedups = {"back_to_back": 6.0, "barrier": 5.0}
    save(Table(rules=[loser], mpi=mpi.version, block=2), tmp_path / "collkit-tuning.json")
    console = Console(record=True, width=200)
    checked = check_rules(console, mpi, tmp_path, [4096])
    text = console.export_text()
    for p in ("back_to_back", "barrier"):
        assert f"pattern {p}: speedup " in text and "did not hold (at 4096 B)" in text, text
    (rule,) = load(checked).rules
    assert rule.algorithm == "native" and rule.speedups == {}
    rows = ResultStore(tmp_path / "check.jsonl").rows
    assert {(r.pattern, r.algorithm) for r in rows} == {
        (p, a) for p in ("back_to_back", "barrier") for a in ("native", "allreduce:ring(seg=8B)")
    }
    assert all(r.valid is not False for r in rows)


def test_tune_measures_each_pattern_and_a_rule_wins_in_all(mpi: MPI, tmp_path: Path) -> None:
    """tune of bcast at --block 2: native and the candidate in back_to_back, barrier and
    rotate_root (the default for a rooted collective), every comparison carrying each pattern's
    speedup; a rule it writes won in every one, its speedup the smallest; a rerun measures
    nothing."""
    from collkit.tune import TuneOptions, tune

    opts = TuneOptions(
        ["bcast"],
        [2],
        [8, 1024],
        only=["binomial"],
        mpi_algorithms=False,
        iterations=20,
        max_ms=40,
        block=2,
        routing_us=0.0,
        mpiexec=mpi.mpiexec,
        out=str(tmp_path / "t"),
        plot=False,
    )
    result = tune(opts)
    want = {"back_to_back", "barrier", "rotate_root"}
    got = {(r.pattern, r.algorithm, r.bytes) for r in result.rows}
    assert {p for p, _, _ in got} >= want
    for p in want:
        for a in ("native", "bcast:binomial"):
            assert {(p, a, 8), (p, a, 1024)} <= got, (p, a)
    assert all(r.valid for r in result.rows if r.algorithm != "native")
    assert any("patterns: bcast back_to_back, barrier, rotate_root" in n for n in result.notes)
    for c in result.choices:
        (cand,) = c.candidates
        assert set(cand.speedups) >= want
        assert cand.speedup == min(cand.speedups[p] for p in cand.speedups)
    assert result.table is not None
    for rule in result.table.rules:
        if rule.algorithm != "native":
            assert set(rule.speedups) >= want and rule.speedup == min(rule.speedups.values())
    before = (tmp_path / "t" / "tune.jsonl").read_text()
    tune(opts)
    assert (tmp_path / "t" / "tune.jsonl").read_text() == before


def test_collkits_calls_run_after_the_barrier_a_table_routes_to(mpi: MPI, tmp_path: Path) -> None:
    """--pattern barrier with a collkit barrier: the candidate's rows say it, native's keep the
    MPI's barrier (the program without collkit); rows after another barrier are other rows."""
    c = Campaign(
        "bcast",
        ["native", "bcast:binomial"],
        [2],
        [8, 1024],
        iterations=10,
        warmup=2,
        max_ms=100,
        rounds=1,
        pattern="barrier",
        barrier="barrier:dissemination",
    )
    store = ResultStore(tmp_path / "r.jsonl")
    rows = run_campaign(c, mpi, store)
    assert sorted((r.algorithm, r.bytes, r.barrier) for r in rows) == [
        ("bcast:binomial", 8, "barrier:dissemination"),
        ("bcast:binomial", 1024, "barrier:dissemination"),
        ("native", 8, ""),
        ("native", 1024, ""),
    ]
    assert all(not r.error and r.valid is not False for r in rows)
    # After the MPI's barrier the candidate is measured again; native is not.
    again = run_campaign(replace(c, barrier=""), mpi, ResultStore(tmp_path / "r.jsonl"))
    assert sorted((r.algorithm, r.barrier) for r in again) == [("bcast:binomial", "")] * 2
    # What the barrier costs the MPI's own calls after it: native after it too, other rows.
    check = replace(c, algorithms=["native"], native_after_barrier=True)
    behind = run_campaign(check, mpi, ResultStore(tmp_path / "r.jsonl"))
    assert (
        sorted((r.algorithm, r.barrier) for r in behind)
        == [("native", "barrier:dissemination")] * 2
    )


def test_the_driver_refuses_a_barrier_it_cannot_run(mpi: MPI) -> None:
    from collkit.mpi import launch_command, launch_env

    exe = str(build(mpi, ["collkit_bench"]) / "collkit_bench")
    env, _ = launch_env(mpi, 2, {})
    for extra, said in (
        (["--pattern", "barrier", "--barrier", "barrier:nonsense"], "cannot run that barrier"),
        (["--barrier", "barrier:tree"], "--barrier names the barrier"),
    ):
        args = [exe, "--collective", "bcast", "--algos", "native", "--sizes", "8", *extra]
        p = subprocess.run(
            launch_command(mpi, 2, args), env=env, capture_output=True, text=True, timeout=120
        )
        assert p.returncode != 0 and said in p.stderr, (p.returncode, p.stderr[-500:])
