"""collkit validate: per-case errors, the pair-order figure, rows in the results schema, the
Fig. 12 picture as a Figure; and (over the mpich wheel) calibrate and validate end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib
import pytest
from matplotlib.figure import Figure
from test_profile import make

from collkit import cli
from collkit.calibrate_executor import SHM_DEFAULT_MAX
from collkit.errors import InvalidArgumentError
from collkit.results import ResultStore, read_jsonl
from collkit.validate import (
    Case,
    Validation,
    plot_validation,
    registry_algorithms,
    schedule_digest,
)


def _validation(cases: list[Case]) -> Validation:
    return Validation(
        cases=cases, model="loggops", profile=make(), mpi="MPICH x", machine="m", date="d", load=""
    )


def _case(algo: str, nbytes: int, pred: float, meas: float) -> Case:
    return Case("allreduce", f"allreduce:{algo}", 2, nbytes, pred, 2 * pred, meas, 2 * meas, 10)


def test_errors_and_pair_order() -> None:
    v = _validation(
        [
            _case("rd", 8, 1.0, 1.1),  # +10 %
            _case("ring", 8, 2.0, 1.5),  # -25 %
            _case("rabenseifner", 8, 3.0, 1.12),  # within 5 % of rd: a tie, not counted
            _case("rd", 64, 1.0, 3.0),
            _case("ring", 64, 2.0, 2.0),  # the prediction orders rd, ring the other way
        ]
    )
    assert v.cases[0].error_min == pytest.approx(0.1)
    assert v.cases[1].error_min == pytest.approx(-0.25)
    good, total, ties, same = v.pairs("min")
    # 8 B: (rd, ring) right, (rd, rabenseifner) tie, (ring, rabenseifner) wrong; 64 B: (rd,
    # ring) wrong.
    assert (good, total, ties, same) == (1, 3, 1, 0)
    assert v.median_abs_error("min") == pytest.approx(
        sorted([0.1, 0.25, abs(1.12 / 3 - 1), 2.0, 0.0])[2]
    )
    summary = v.summary()
    assert "1/3 (33%; 1 ties)" in summary


def test_two_names_of_one_schedule_are_not_a_pair_to_order() -> None:
    # At P = 2 recursive doubling and recursive multiplying generate the same exchange, and
    # binomial and linear reduce the same message: whatever the measurement says of them is its
    # noise, so the prediction (equal, as it must be) is neither right nor wrong about them.
    v = _validation(
        [
            _case("rd", 8, 1.0, 1.0),
            _case("rm", 8, 1.0, 1.3),  # 30 % apart, one schedule
            _case("ring", 8, 2.0, 2.0),
        ]
    )
    assert v.pairs("min") == (2, 2, 0, 1)
    assert v.same_schedule_spread("min") == pytest.approx(0.3)
    assert "2/2 (100%; 0 ties, 1 same schedule)" in v.summary()
    # Rabenseifner's halves and rd's whole exchange are two schedules: a pair to order.
    w = _validation([_case("rd", 8, 1.0, 1.0), _case("rabenseifner", 8, 2.0, 1.3)])
    assert w.pairs("min") == (1, 1, 0, 0)
    assert math.isnan(w.same_schedule_spread("min"))


def test_schedule_digest_tells_one_schedule_from_another() -> None:
    d = schedule_digest
    assert d("reduce:binomial", 2, 1024, "reduce") == d("reduce:linear", 2, 1024, "reduce")
    assert d("reduce:binomial", 4, 1024, "reduce") != d("reduce:linear", 4, 1024, "reduce")
    assert d("reduce:binomial", 2, 1024, "reduce") != d("reduce:binomial", 2, 2048, "reduce")
    assert d("reduce:no_such_algorithm", 2, 1024, "reduce") == ""


def test_a_tied_prediction_of_a_distinguishable_pair_is_wrong() -> None:
    v = _validation([_case("rd", 8, 1.0, 1.0), _case("ring", 8, 1.0, 2.0)])
    assert v.pairs("min") == (0, 1, 0, 0)


def test_rows_put_measured_and_simulated_side_by_side(tmp_path: Path) -> None:
    v = _validation([_case("rd", 8, 1.0, 1.1), _case("ring", 8, 2.0, 1.5)])
    rows = v.rows()
    assert [r.source for r in rows] == ["measured", "simulated"] * 2
    assert rows[0].key()[1:5] == rows[1].key()[1:5]
    assert rows[0].min_us == 1.1 and rows[1].min_us == 1.0
    assert "profile test" in rows[1].mpi
    from collkit.fit import compare

    c = compare(
        [r for r in rows if r.source == "measured"], [r for r in rows if r.source == "simulated"]
    )
    assert list(c.rel_min) == pytest.approx([v.cases[0].error_min, v.cases[1].error_min])


def test_breakdown_names_the_worst_cases_and_the_sign_per_size() -> None:
    v = _validation(
        [_case("rd", 8, 1.0, 1.05), _case("ring", 8, 2.0, 2.1), _case("rd", 64, 1.0, 3.0)]
    )
    b = v.breakdown("min")
    # rd: +5 % at 8 B, +200 % at 64 B (its worst); the worst case first in the last table.
    assert "| allreduce:rd | 2 | 102% | 64 B | +200% |" in b
    assert "| eager | 8 B | 2 | +5% | 2/2 |" in b
    assert b.split("| worst cases")[1].splitlines()[2].startswith("| allreduce:rd | 2 | 64 B")


def test_a_run_held_against_another(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--baseline: one measurement's rows against another's of the same cases (how well the
    measurement reproduces itself), no profile needed."""
    a = _validation([_case("rd", 8, 1.0, 1.0), _case("ring", 8, 2.0, 2.0)])
    b = _validation([_case("rd", 8, 1.0, 1.2), _case("ring", 8, 2.0, 1.5)])
    store_a, store_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for v, f in ((a, store_a), (b, store_b)):
        store = ResultStore(f)
        for r in v.rows():
            store.append(r)
    out = tmp_path / "rep"
    argv = ["validate", "--measured", str(store_b), "--baseline", str(store_a), "-o", str(out)]
    assert cli.main(argv) == 0
    md = (tmp_path / "rep.md").read_text()
    # rd +20 %, ring -25 %: median |difference| 22 %, and the one pair ordered alike.
    assert "| **all** | 2 | 22% |" in md and "1/1 (100%" in md
    assert cli.main(["validate", "--baseline", str(store_a), "-o", str(out)]) == 2
    assert "--baseline needs --measured" in capsys.readouterr().err


def test_plot_is_a_figure_and_leaves_the_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    monkeypatch.setattr(matplotlib, "use", lambda *a, **k: calls.append(a))
    v = _validation([_case("rd", 8, 1.0, 1.1), _case("rd", 64, 1.0, 0.9)])
    fig = plot_validation(v)
    assert isinstance(fig, Figure) and calls == []
    ys = fig.axes[0].lines[0].get_ydata()
    assert list(ys) == pytest.approx([10.0, -10.0])


def test_predicted_vs_measured_puts_each_case_at_its_two_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from collkit.validate import plot_predicted_vs_measured

    calls: list[object] = []
    monkeypatch.setattr(matplotlib, "use", lambda *a, **k: calls.append(a))
    before = _validation([_case("rd", 8, 1.0, 2.0), _case("ring", 8, 3.0, 1.5)])
    after = _validation([_case("rd", 8, 1.9, 2.0), _case("ring", 8, 1.6, 1.5)])
    fig = plot_predicted_vs_measured(before, after, labels=["kernel", "executor"])
    assert isinstance(fig, Figure) and calls == [] and len(fig.axes) == 2
    ax = fig.axes[1]
    # After the band and the diagonal, one marker per case at (measured, predicted).
    pts = [(ln.get_xdata()[0], ln.get_ydata()[0]) for ln in ax.lines[1:]]
    assert pts == [(2.0, 1.9), (1.5, 1.6)]
    assert "pairs ordered 1/1" in ax.get_title() and "executor" in ax.get_title()
    assert "pairs ordered 0/1" in fig.axes[0].get_title()
    with pytest.raises(InvalidArgumentError, match="one label per validation"):
        plot_predicted_vs_measured(before, labels=["a", "b"])


def test_registry_algorithms_run_on_P() -> None:
    two = registry_algorithms("allreduce", 2)
    assert "allreduce:rd" in two and "allreduce:ring" in two
    assert all(not n.startswith("allreduce:hier") for n in two)
    three = registry_algorithms("allreduce", 3)
    assert set(three) <= set(registry_algorithms("allreduce", 4)) | set(three)


def test_bad_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prof = make().save(tmp_path / "p.json")
    for argv, msg in (
        (["validate", "--profile", str(tmp_path / "no.json")], "does not exist"),
        (["validate", "--profile", str(prof), "--collectives", "allsum"], "unknown 'allsum'"),
        (["validate", "--profile", str(prof), "-P", "1"], "at least 2 ranks"),
        (
            [
                "validate",
                "--profile",
                str(prof),
                "--algos",
                "bcast:binomial",
                "--collectives",
                "allreduce",
            ],
            "is not of allreduce",
        ),
        (["validate", "--profile", str(prof), "--rounds", "0"], "--rounds"),
        (["validate", "--profile", str(prof), "--algos", "rd"], "needs its collective"),
        (["validate"], "--profile is required"),
        (
            ["validate", "--measured", str(prof), "--baseline", str(tmp_path / "a.jsonl")],
            "does not exist",
        ),
        (["calibrate", "--iters", "0"], "--iters"),
        (["calibrate", "--sizes", "8", "-o", str(tmp_path / "x.json")], "two distinct sizes"),
    ):
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert msg in err and "Traceback" not in err


@pytest.fixture(scope="module")
def mpich() -> object:
    from mpi_support import built, mpich_or_skip

    mpi = mpich_or_skip()
    built(mpi)
    return mpi


@pytest.mark.mpi
def test_calibrate_and_validate_on_mpich(
    mpich: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prof = tmp_path / "here.json"
    code = cli.main(
        [
            "calibrate",
            "-o",
            str(prof),
            "--sizes",
            "8,65536",
            "--executor-sizes",
            "64,98304",
            "--iters",
            "3",
            "--rounds",
            "1",
        ]
    )
    assert code == 0
    d = json.loads(prof.read_text())
    assert d["format"] == "collkit-profile" and d["mpi"].startswith("MPICH")
    lg = d["models"]["min"]["eager"]["loggops"]
    assert lg["o"] > 0 and lg["L"] >= 0
    assert d["local"]["min"]["gamma"]["double"]["sum"]["gamma"] > 0
    assert {m["kind"] for m in d["measurements"]} >= {
        "prtt1",
        "prttn",
        "o_s",
        "o_r",
        "late",
        "executor",
        "shm_prtt1",
        "shm_prttn",
        "shm_o_s",
        "shm_o_r",
    }
    # collkit's shared-memory transport measured by the kernel (8 B fits its slots, 64 KiB not),
    # and the executor's calibration run through it.
    assert d["shm_bytes"] == SHM_DEFAULT_MAX
    assert d["models"]["min"]["shm"]["loggops"]["o"] > 0
    assert d["executor"]["min"]["measured_transport"] == "shm"
    ex = d["executor"]["min"]
    assert ex["regimes"]["eager"]["loggops"]["call"] >= 0
    assert ex["sizes"] == [64, 98304]
    out = tmp_path / "v"
    code = cli.main(
        [
            "validate",
            "--profile",
            str(prof),
            "--collectives",
            "allreduce",
            "--algos",
            "rd,ring",
            "-P",
            "2",
            "--sizes",
            "8,1KiB",
            "--rounds",
            "2",
            "--iters",
            "3",
            "-o",
            str(out),
        ]
    )
    assert code == 0
    rows = read_jsonl(tmp_path / "v.jsonl")
    assert len(rows) == 2 * 2 * 2
    assert {r.source for r in rows} == {"measured", "simulated"}
    # A median is never below its minimum: measured, nor predicted (the medians' fits are kept
    # at or above the minima's, profile._order_fits and calibrate_executor.fit_regime's floor,
    # and a schedule's timing anomaly is predicted as the minimum, validate.predict).
    bad = [r for r in rows if not r.min_us > 0 or r.median_us < r.min_us]
    assert not bad, [(r.source, r.algorithm, r.bytes, r.min_us, r.median_us) for r in bad]
    # The rows say how collkit moved the messages; on one node that is its shared memory.
    assert {r.transport for r in rows} == {"shm"}
    # Two rounds pooled (a round may stop early at its time budget).
    assert all(r.iterations >= 2 for r in rows if r.source == "measured")
    md = (tmp_path / "v.md").read_text()
    assert "load" in md and "collkit validate" in md and "allreduce:ring" in md
    assert (tmp_path / "v.png").read_bytes()[:4] == b"\x89PNG"
