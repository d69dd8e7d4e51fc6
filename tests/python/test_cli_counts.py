"""--counts on the commands that generate a schedule (verify, simulate, export, show): each
form drawn for every P of a sweep, and every wrong use a clear error (exit 2, a message)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import collkit
from collkit.cli import main
from collkit.counts import parse_counts


def run(argv: list[str]) -> int:
    """main's exit status, an argparse refusal (SystemExit 2) included."""
    try:
        return main(argv)
    except SystemExit as e:
        return int(e.code or 0)


def test_verify_sweeps_a_form_over_P(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["verify", "allgatherv:ring", "-P", "1..6", "--counts", "random(3,4)", "--json"]) == 0
    )
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["P"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert all(r["result"] == "verified" for r in rows)


@pytest.mark.parametrize(
    "form",
    ["1,0,5,2", "equal(3)", "random(1,9)", "skewed(16)", "skewed(16,2)", "zeros-but-one(4,1)"],
)
def test_every_form_verifies_and_simulates(form: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "gatherv:binomial", "-P", "4", "--counts", form, "--root", "1"]) == 0
    assert main(["simulate", "allgatherv:bruck", "-P", "4", "--counts", form, "--json"]) == 0
    row = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert row["P"] == 4


def test_a_simulated_row_says_its_form_and_the_whole_vectors_bytes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """As bench's rows: `counts` the form, `count` and `bytes` the whole vector's (alltoallv: the
    whole matrix's), in a single run and in a sweep."""
    assert main(["simulate", "allgatherv:ring", "-P", "4", "--counts", "1, 0,5,2", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert (row["counts"], row["count"], row["bytes"]) == ("1,0,5,2", 8, 64)
    argv = ["simulate", "alltoallv:linear", "-P", "3,4", "--counts", "equal(2)", "--json"]
    assert main([*argv, "--elem-size", "4"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(r["P"], r["counts"], r["count"], r["bytes"]) for r in rows] == [
        (3, "equal(2)", 18, 72),
        (4, "equal(2)", 32, 128),
    ]


def test_export_and_show_carry_the_vector(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "alltoallv:pairwise", "-P", "3", "--counts", "random(5,3)"]) == 0
    s = collkit.io.from_text(capsys.readouterr().out)
    want = parse_counts("random(5,3)").vector(3, per_pair=True)
    assert s.counts == want and collkit.verify(s).ok
    assert main(["show", "scatterv:linear", "-P", "3", "--counts", "2,0,1"]) == 0
    shown = collkit.io.from_text(capsys.readouterr().out)
    assert shown.counts == [2, 0, 1] and collkit.verify(shown).ok


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["verify", "allgatherv:ring", "-P", "4", "--counts", "1,2"], "2 entries, but P = 4"),
        (["verify", "scan:linear", "-P", "4", "--counts", "equal(2)"], "one count for every"),
        (["verify", "allreduce:rd", "-P", "4", "--counts", "equal(2)"], "one count for every"),
        (["verify", "allgatherv:ring", "-P", "4", "--counts", "nope(1)"], "unknown form"),
        (["verify", "allgatherv:ring", "-P", "4", "--counts", "random(1)"], "takes 2 argument"),
        (
            ["verify", "allgatherv:ring", "-P", "4", "--counts", "equal(2)", "--count", "3"],
            "not both",
        ),
        (["show", "allgatherv:ring", "-P", "4", "--counts", "random(1,-2)"], "non-negative"),
        (["export", "alltoallv:linear", "-P", "5000", "--counts", "equal(1)"], "at most P = 4096"),
        (["verify", "--file", "x.txt", "--counts", "equal(1)"], "--counts"),
    ],
)
def test_bad_uses_are_clear_errors(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and "collkit " in err


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=30))
def test_any_counts_text_exits_0_or_2(text: str) -> None:
    assert run(["show", "allgatherv:ring", "-P", "3", "--counts", text, "--stats"]) in (0, 2)
