"""Campaign progress (collkit/progress.py): rows done of rows planned with an ETA, a plain line
at most every `interval` seconds off a terminal, a rich bar on one; bench and tune use it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from collkit.cli import main
from collkit.progress import CampaignProgress, format_duration


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_plain_lines_every_interval_with_an_eta() -> None:
    clock, out = Clock(), io.StringIO()
    with CampaignProgress("tune", 100, stream=out, live=False, interval=10, clock=clock) as p:
        for _ in range(10):
            clock.t += 2  # 2 s a row: 5 rows between lines
            p.advance()
        assert p.eta() == pytest.approx(90 * 2.0)
        p.grow(50)  # suspects found: more rows planned
        assert p.eta() == pytest.approx(140 * 2.0)
        clock.t += 2
        p.advance()
    lines = out.getvalue().splitlines()
    assert lines[0] == "tune: 5/100 rows (5%), 10 s elapsed, ETA 3 min 10 s"
    assert lines[1] == "tune: 10/100 rows (10%), 20 s elapsed, ETA 3 min 00 s"
    assert lines[-1] == "tune: 11/150 rows (7%), 22 s elapsed, ETA 4 min 38 s"
    assert len(lines) == 3


def test_rows_found_in_the_file_count_as_done_not_into_the_rate() -> None:
    clock, out = Clock(), io.StringIO()
    p = CampaignProgress("bench", 10, stream=out, live=False, interval=1e9, clock=clock)
    p.advance(6, measured=False)  # a resumed campaign: 6 rows already there, found at once
    assert p.eta() is None and "ETA unknown" in p.line()
    clock.t += 3
    p.advance()
    assert p.eta() == pytest.approx(3 * 3.0)  # 3 s a row, 3 rows left
    p.advance(3)
    assert p.line().endswith("done")


def test_format_duration() -> None:
    assert format_duration(0.4) == "0 s"
    assert format_duration(125) == "2 min 05 s"
    assert format_duration(3 * 3600 + 20 * 60 + 5) == "3 h 20 min"


def test_a_bar_on_a_terminal() -> None:
    out = io.StringIO()
    with CampaignProgress("tune", 3, stream=out, live=True) as p:
        p.message("simulating allreduce P=4")
        p.advance(3)
    text = out.getvalue()
    assert "simulating allreduce P=4" in text and "3/3" in text and "ETA" in text


def test_a_simulated_tune_says_its_rows_and_eta(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["tune", "allreduce", "bcast", "-np", "4,8", "--sizes", "8,1KiB", "--simulate", "postal",
            "--no-plot", "-o", str(tmp_path / "t")]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    final = [ln for ln in err.splitlines() if ln.startswith("tune (simulated): ")]
    assert final, err
    total = int(final[-1].split("/")[1].split()[0])
    assert total > 8 and final[-1].startswith(f"tune (simulated): {total}/{total} rows (100%)")
    rows = (tmp_path / "t" / "tune.jsonl").read_text().splitlines()
    assert len(rows) == total  # the plan counted every row the campaign made
    assert main(argv) == 0  # resumed: every row found in the file, none simulated again
    err = capsys.readouterr().err
    assert f"{total}/{total} rows (100%)" in err
