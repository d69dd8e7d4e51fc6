"""recursive multiplying in the simulator (skipped where the simulator is not built in): the
seed's timelines (§6.2-6.3) and the simulated column of `collkit schedules`."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from collkit.analysis import recmult
from collkit.analysis.recmult import timelines
from collkit.cli import schedules

pytest.importorskip("collkit.simulate")


def test_seed_timelines_show_what_the_seed_saw(tmp_path: Path) -> None:
    rows = {t.schedule: t for t in timelines.seed_timelines(tmp_path)}
    for t in rows.values():
        assert t.picture is not None and t.picture.stat().st_size > 0
        assert t.makespan_ns == pytest.approx(max(t.finish_ns))
        assert t.skew_ns == pytest.approx(max(t.finish_ns) - min(t.finish_ns))
        assert len(t.finish_ns) == t.N
    # Fig. 19 vs 18: the 8-way multicast is faster than three pairwise stages
    assert rows["a8"].makespan_ns < rows["a2,a2,a2"].makespan_ns
    # §6.3: merging is faster than splitting at N = 7, and splitting leaves the larger skew
    split = rows["c6m2,a2,a2,e6m2"]
    for merged in ("m1g2a3,n1g3a2", "m3g2a2,n3g2a2"):
        assert rows[merged].makespan_ns < split.makespan_ns
        assert rows[merged].skew_ns < split.skew_ns


def test_simulated_column_equals_the_model_for_factored_schedules(
    capsys: pytest.CaptureFixture[str],
) -> None:
    p = argparse.ArgumentParser()
    schedules.add_arguments(p)
    assert schedules.run(p.parse_args(["allreduce", "-P", "24", "--top", "50"])) == 0
    out = capsys.readouterr().out
    assert "sim (us)" in out
    seen = 0
    for line in out.splitlines():
        cols = line.split()
        if len(cols) == 6 and cols[2] == "factored":
            assert float(cols[3]) == pytest.approx(float(cols[4]))  # no skew in a factored one
            seen += 1
    assert seen >= len(list(recmult.enumerate_schedules(24, families=["factored"])))
