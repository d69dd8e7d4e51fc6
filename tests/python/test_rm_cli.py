"""collkit schedules: ranking, counting, search, and bad input with exit status 2."""

from __future__ import annotations

import argparse

import pytest

import collkit
from collkit.analysis import recmult
from collkit.cli import schedules


def run(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    schedules.add_arguments(p)
    return schedules.run(p.parse_args(argv))


def test_ranks_p96_like_the_model(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "allreduce",
        "-P",
        "96",
        "--model",
        "pipelined-postal",
        "--alpha-p",
        "1.34us",
        "--alpha-r",
        "0.34us",
        "--bytes",
        "8",
        "--top",
        "10",
        "--verify",
    ]
    assert run(argv) == 0
    out = capsys.readouterr().out
    best = recmult.rank_schedules(96, recmult.PipelinedPostal(1.34e-6, 0.34e-6), 8, top=10)
    lines = [ln for ln in out.splitlines() if ln[:3].strip().isdigit()][:10]
    for line, r in zip(lines, best, strict=True):
        assert r.schedule in line and f"{r.cost * 1e6:.3f}" in line and "ok" in line
    assert f"{sum(recmult.count_schedules(96).values())} schedules" in out


def test_count_and_search(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["allreduce", "-P", "7,8", "--totals"]) == 0
    out = capsys.readouterr().out
    assert f"P = 7: {sum(recmult.count_schedules(7).values())} schedules" in out
    assert run(["allreduce", "-P", "2^20", "--search"]) == 0
    out = capsys.readouterr().out
    found = recmult.search(2**20, recmult.PipelinedPostal(1.34e-6, 0.34e-6), 8)
    assert found.schedule in out


@pytest.mark.parametrize(
    "argv",
    [
        ["allreduce", "-P", "8", "--alpha-p", "fast"],
        ["allreduce", "-P", "0"],
        ["allreduce", "-P", "8", "--max-fanout", "0"],
        ["allreduce", "-P", "8", "--model", "logp"],
        ["allreduce", "-P", "8", "--bytes", "-3"],
    ],
)
def test_bad_arguments_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as e:
        run(argv)
    assert e.value.code == 2


def test_other_collectives_are_a_collkit_error() -> None:
    # main() prints CollkitError and exits 2
    with pytest.raises(collkit.CollkitError, match="allreduce only"):
        run(["bcast", "-P", "8"])
