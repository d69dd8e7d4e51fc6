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
        ["allreduce", "-P", "8", "--model", "hockney"],
        ["allreduce", "-P", "8", "--bytes", "-3"],
        ["allreduce", "-P", "8", "--simulate", "-1"],
        ["allreduce", "-P", "8", "--simulate", "1_0"],
        ["allreduce", "-P", "8", "--top", "٣"],
        ["allreduce", "-P", "8", "--max-fanout", "８"],
        ["allreduce", "-P", "8", "--top", "0"],
    ],
)
def test_bad_arguments_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as e:
        run(argv)
    assert e.value.code == 2


def test_rm_options_of_other_collectives_are_a_collkit_error() -> None:
    # main() prints CollkitError and exits 2
    with pytest.raises(collkit.CollkitError, match="allreduce only"):
        run(["bcast", "-P", "8", "--search"])


def test_a_fanout_past_what_p_allows_is_p_minus_1(capsys: pytest.CaptureFixture[str]) -> None:
    # No schedule of 8 ranks sends more than 7 messages a stage (a8, e8m8): 2^31 is 7, said
    # so, with the same rows, not a loop over 2^31 bases.
    assert run(["allreduce", "-P", "8", "--simulate", "0", "--max-fanout", "2147483648"]) == 0
    big = capsys.readouterr().out
    assert "fan-out <= 7" in big.splitlines()[0]
    assert run(["allreduce", "-P", "8", "--simulate", "0", "--max-fanout", "7"]) == 0
    seven = capsys.readouterr().out
    assert big.splitlines()[1:] == seven.splitlines()[1:]


def test_library_clamps_the_fanout_to_the_same_schedules() -> None:
    M = recmult.PipelinedPostal(1.34e-6, 0.34e-6, 1e-9, 1e-10)
    for N in (1, 2, 5, 8, 12, 30):
        assert recmult.count_schedules(N, 2**31) == recmult.count_schedules(N, max(N - 1, 1))
        exact = recmult.rank_schedules(N, M, 8, max(N - 1, 1))
        assert recmult.rank_schedules(N, M, 8, 2**31) == exact
        assert recmult.rank_schedules(N, M, 8, 2**31, top=5) == exact[:5]
        found = recmult.search(N, M, 8, 2**31)
        assert (found.schedule, found.cost) == (exact[0].schedule, exact[0].cost)


def test_a_search_too_large_for_its_fanout_is_refused_before_it_starts() -> None:
    with pytest.raises(collkit.CollkitError, match="fan-out 99999 at N = 100000"):
        run(["allreduce", "-P", "100000", "--search", "--max-fanout", "99999"])


def test_totals_too_large_for_the_fanout_are_refused() -> None:
    with pytest.raises(collkit.CollkitError, match="P x fan-out <= 2"):
        run(["allreduce", "-P", "16384", "--totals", "--max-fanout", "100000"])


def test_the_header_counts_every_schedule_though_only_the_top_are_ranked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(["allreduce", "-P", "64", "--simulate", "3", "--top", "2"]) == 0
    out = capsys.readouterr().out
    total = sum(recmult.count_schedules(64).values())
    assert f"P = 64: {total} schedules, best 2 by model" in out
    assert f"(simulated: the model's best 3 of {total})" in out or "not built in" in out
