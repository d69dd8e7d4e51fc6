"""`collkit tune` (measured or --simulate) takes allreduce:swing and allreduce:bucket as it takes
every registered algorithm: at their defaults (one ring of P, folded onto a power of two where P
is not one; Swing there also on P itself, nonpof2=direct), simulated like the others; Swing's
latency-optimal form, which needs an op exact under any grouping, is no candidate (tune times
doubles)."""

from __future__ import annotations

from pathlib import Path

from collkit.results import ResultStore
from collkit.tune.campaign import TuneOptions, candidates, simulate_rows


def test_swing_and_bucket_are_candidates_where_they_run() -> None:
    at64 = candidates("allreduce", 64)
    assert {"allreduce:swing", "allreduce:bucket", "allreduce:ring"} <= set(at64)
    at12 = candidates("allreduce", 12)
    assert {"allreduce:bucket", "allreduce:swing", "allreduce:swing(nonpof2=direct)"} <= set(at12)
    assert "allreduce:swing(nonpof2=direct)" not in at64  # the same schedule as the fold there
    assert "allreduce:swing_lat" not in set(at64) | set(at12)


def test_tune_simulate_rows_them_like_the_others(tmp_path: Path) -> None:
    opts = TuneOptions(["allreduce"], [16], [8, 64 * 1024], only=["swing", "bucket", "rd"])
    rows = simulate_rows(opts, "postal", {}, ResultStore(tmp_path / "r.jsonl"), lambda _: None)
    got = {(r.algorithm, r.bytes): r for r in rows}
    for algo in ("allreduce:swing", "allreduce:bucket", "allreduce:rd"):
        for nbytes in (8, 64 * 1024):
            row = got[(algo, nbytes)]
            assert row.error == "" and row.source == "simulated" and row.median_us > 0, row
    # Postal with its defaults (alpha 500 ns, beta 0): Swing's 2 lg P steps cost twice rd's lg P.
    swing, rd = got[("allreduce:swing", 8)].median_us, got[("allreduce:rd", 8)].median_us
    assert swing == 2 * rd
