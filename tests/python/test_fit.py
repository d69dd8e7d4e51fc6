"""collkit.fit: [Latency models]'s linear models, any formula, predictions with intervals,
pictures, and
measured-versus-predicted comparisons, on rows whose true coefficients are known."""

from __future__ import annotations

import contextlib
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import collkit
from collkit import fit as F

TRUE = {  # (slope per process, jump above 128, slope change above 128) per algorithm, socket
    "pipeline": (1.4, 110.0, -0.1),
    "linear": (0.2, 4.0, 0.08),
    "binary": (0.008, 2.0, 0.0),
}


def _rows(noise: float = 0.05, seed: int = 1) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    for algo, (a, b, c) in TRUE.items():
        for alloc in ("by socket", "by node"):
            for P in range(2, 257, 6):
                big = P > 128 and alloc == "by socket"
                truth = a * P + (b + c * P if big else 0.0)
                lat = truth + rng.normal(0, noise)
                while lat <= 0:  # a latency is positive, measured or not (fit refuses less)
                    lat = truth + rng.normal(0, noise)
                rows.append(
                    {
                        "collective": "bcast",
                        "algorithm": f"bcast:{algo}",
                        "P": P,
                        "bytes": 1,
                        "allocation": alloc,
                        "median": lat,
                        "min": 0.9 * lat,
                    }
                )
    return rows


def test_seed_p_recovers_the_coefficients() -> None:
    fits = {f.group: f for f in F.fit(_rows(), "seed-p")}
    assert set(fits) == {f"{a}-{s}" for a in TRUE for s in ("socket", "node")}
    for algo, (a, b, c) in TRUE.items():
        f = fits[f"{algo}-socket"]
        assert [x.term for x in f.coefficients] == ["P", "[P > 128]", "P : [P > 128]"]
        for coef, true in zip(f.coefficients, (a, b, c), strict=False):
            assert abs(coef.estimate - true) < 5 * coef.std_error + 1e-9, (algo, coef)
            assert coef.t_value == pytest.approx(coef.estimate / coef.std_error)
        # no P above the threshold changes anything by node: the big terms are not identifiable
        node = fits[f"{algo}-node"]
        assert node.coefficient("P").estimate == pytest.approx(a, rel=0.05, abs=1e-3)
        assert 0.9 < f.r_squared <= 1.0


def test_seed_p_drops_the_big_terms_without_rows_above_the_threshold() -> None:
    rows = [r for r in _rows() if int(r["P"]) <= 128]  # type: ignore[call-overload]
    for f in F.fit(rows, "seed-p"):
        assert [c.term for c in f.coefficients] == ["P"]
        assert f.formula == "latency ~ 0 + P"


def test_seed_log_names_terms_by_group_and_orders_slopes() -> None:
    rows = []
    rng = np.random.default_rng(3)
    slopes = {"pipeline": 1.2, "linear": 0.8, "binary": 0.6}
    for algo, s in slopes.items():
        for P in (2, 4, 8, 16, 32, 64, 128, 256):
            for size in (1, 1024, 65536, 1 << 20):
                rows.append(
                    {
                        "collective": "reduce",
                        "algorithm": f"reduce:{algo}",
                        "P": P,
                        "bytes": size,
                        "allocation": "node",
                        "median": s * math.log2(P) + 8e-6 * size + rng.normal(0, 0.01),
                    }
                )
    (f,) = F.fit(rows, "seed-log")
    est = {c.term: c.estimate for c in f.coefficients}
    assert set(est) == {f"log2(P) : {a}-node" for a in slopes} | {
        f"size : {a}-node" for a in slopes
    }
    order = sorted(slopes, key=lambda a: est[f"log2(P) : {a}-node"])
    assert order == sorted(slopes, key=slopes.__getitem__)
    for a in slopes:
        assert est[f"size : {a}-node"] == pytest.approx(8e-6, rel=0.05)


def test_any_formula_and_selection() -> None:
    (f,) = F.fit(_rows(), "latency ~ P", where={"algorithm": "linear", "allocation": "node"})
    assert [c.term for c in f.coefficients] == ["Intercept", "P"]
    assert f.coefficient("P").estimate == pytest.approx(0.2, rel=0.05)
    fits = F.fit(_rows(), "latency ~ P", by=["algorithm"], where={"allocation": "node"})
    assert [f.group for f in fits] == sorted(TRUE)
    (small,) = F.fit(_rows(), "latency ~ P", by=[], where={"bytes": "1", "group": "binary-node"})
    assert small.n == len([r for r in _rows() if r["algorithm"] == "bcast:binary"]) // 2


def test_prediction_interval_contains_the_truth_and_widens_with_extrapolation() -> None:
    f = next(f for f in F.fit(_rows(noise=0.5), "seed-p") if f.group == "linear-socket")
    a, b, c = TRUE["linear"]
    near, far = f.predict(P=256), f.predict(P=4096)
    for P, pr in ((256, near), (4096, far)):
        assert pr["lower"] < pr["mean"] < pr["upper"]
        assert pr["lower"] <= a * P + b + c * P <= pr["upper"]
    assert far["upper"] - far["lower"] > near["upper"] - near["lower"]
    wider = f.predict(alpha=0.01, P=4096)
    assert wider["upper"] - wider["lower"] > far["upper"] - far["lower"]


def test_statistic_choice_changes_the_data() -> None:
    med = F.fit(_rows(), "latency ~ 0 + P", by=[], where={"group": "linear-node"})[0]
    lo = F.fit(_rows(), "latency ~ 0 + P", by=[], stat="min", where={"group": "linear-node"})[0]
    assert lo.coefficients[0].estimate == pytest.approx(0.9 * med.coefficients[0].estimate)


def test_pictures_are_written(tmp_path: Path) -> None:
    fits = F.fit(_rows(), "seed-p")
    for fn, name in ((F.plot_residuals, "r.png"), (F.plot_predicted, "p.png")):
        fig = fn(fits, tmp_path / name)
        assert fig.axes, "the Figure is returned"
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_relative_differences() -> None:
    measured = _rows()
    predicted = [
        dict(r, min=2.0 * float(r["min"]), median=0.5 * float(r["median"]))  # type: ignore[arg-type]
        for r in measured[: len(measured) // 2]
    ]
    c = F.compare(measured, predicted)
    # predicted: pipeline by socket and node, linear by socket; linear's lone prediction
    # also serves linear by node; binary has none
    assert c.unmatched == len(measured) - len(predicted) - len(predicted) // 3
    n = len(predicted)  # matched with their own allocation first, in the measured rows' order
    assert np.allclose(c.rel_min[:n], -0.5)
    assert np.allclose(c.rel_median[:n], 1.0)
    assert len(c.keys) == n + n // 3
    assert "+100.0%" in c.table()


def test_compare_uses_the_one_statistic_a_prediction_has(tmp_path: Path) -> None:
    measured = _rows()[:5]
    predicted = [{k: v for k, v in r.items() if k != "min"} for r in measured]
    c = F.compare(measured, predicted)
    assert np.allclose(c.predicted_min, c.measured_median)
    assert F.plot_comparison(c, tmp_path / "c.png").axes
    assert (tmp_path / "c.png").stat().st_size > 1000


@pytest.mark.parametrize(
    ("rows", "model", "kwargs"),
    [
        ([], "seed-p", {}),
        (None, "latency P", {}),
        (None, "latency ~ nonsense_column", {}),
        (None, "latency ~ P +", {}),
        (None, "seed-p", {"stat": "mode"}),
        (None, "seed-p", {"threshold": 0}),
        (None, "seed-p", {"by": ["colour"]}),
        (None, "seed-p", {"where": {"colour": "red"}}),
        (None, "seed-p", {"where": {"algorithm": "nothing"}}),
        (None, "seed-p", {"where": {"P": "many"}}),
        (None, "latency ~ C(P)", {"where": {"group": "linear-node"}}),  # as many terms as rows
        ([{"P": "x", "bytes": 1, "median": 1.0}], "seed-p", {}),
        ([{"P": 4, "median": 1.0}], "seed-p", {}),
        ([42], "seed-p", {}),
    ],
)
def test_bad_input_is_a_clear_error(rows: object, model: str, kwargs: dict[str, object]) -> None:
    with pytest.raises(collkit.InvalidArgumentError):
        F.fit(_rows() if rows is None else rows, model, **kwargs)  # type: ignore[arg-type]


def _at(Ps: tuple[int, ...], repeat: int = 3) -> list[dict[str, object]]:
    """linear-node rows at these P only, each P `repeat` times with other latencies."""
    base = [r for r in _rows() if r["algorithm"] == "bcast:linear" and r["allocation"] == "by node"]
    return [
        dict(r, median=float(r["median"]) + k * 0.1)  # type: ignore[arg-type]
        for k in range(repeat)
        for r in base
        if r["P"] in Ps
    ]


@pytest.mark.parametrize(
    ("model", "Ps", "needle"),
    [
        # every row of _rows() has bytes = 1: size is the intercept again
        ("latency ~ P + size", (2, 8, 14, 20), "size is 1 in every row"),
        # all rows at one P: P is the intercept again (unchecked: t = 4.24 for this fit)
        ("latency ~ P", (8,), "P is 8 in every row"),
        # a column that is a multiple of another
        ("latency ~ P + I(2 * P)", (2, 8, 14), "P, I(2 * P) are linearly dependent"),
        # two distinct P cannot fit a curve with three coefficients
        ("latency ~ P + log2P", (2, 8), "Intercept, P, log2P are linearly dependent"),
    ],
)
def test_a_fit_the_rows_cannot_make_is_refused(
    model: str, Ps: tuple[int, ...], needle: str
) -> None:
    with pytest.raises(collkit.InvalidArgumentError, match="cannot tell its") as e:
        F.fit(_at(Ps), model, by=[])
    assert needle in str(e.value), e.value
    assert f"{len(Ps)} distinct P" in str(e.value), e.value


def test_a_deficient_seed_p_group_is_named() -> None:
    # one P above the threshold: [P > 128] and P:[P > 128] are one column times P there
    rows = [r for r in _rows() if int(r["P"]) <= 134]  # type: ignore[call-overload]
    with pytest.raises(collkit.InvalidArgumentError, match="for binary-node: the rows") as e:
        F.fit(rows, "seed-p")
    assert "linearly dependent" in str(e.value) and "distinct P" in str(e.value)


def test_two_points_determine_a_line_but_not_its_error() -> None:
    rows = _at((2, 8), repeat=1)
    with pytest.raises(collkit.InvalidArgumentError, match="2 rows cannot fit 2 coefficients"):
        F.fit(rows, "latency ~ P", by=[])


@pytest.mark.parametrize("stat", ["median", "min"])
def test_negative_latencies_are_refused(stat: str) -> None:
    # unchecked: a negative median (a broken clock, a hand-edited file) was fitted without a word
    rows = _rows()
    rows[5] = dict(rows[5], **{stat: -0.25})
    with pytest.raises(collkit.InvalidArgumentError, match=rf"'{stat}_us' is -0.25: a time"):
        F.fit(rows, "seed-p", stat=stat)


def test_infinite_latencies_and_bool_P_are_refused_not_dropped() -> None:
    # unchecked: Infinity was dropped like a missing value, P = True read as 1
    for change in ({"median": math.inf}, {"P": True}, {"P": 64.5}):
        rows = _rows()
        rows[3] = dict(rows[3], **change)
        with pytest.raises(collkit.InvalidArgumentError, match="result row"):
            F.fit(rows, "seed-p")


def test_a_negative_prediction_is_refused() -> None:
    # latency ~ P on rows falling with P predicts below zero past the rows: main printed it
    rows = [
        {"collective": "bcast", "algorithm": "bcast:x", "P": P, "bytes": 8, "median": m}
        for P, m in ((2, 10.0), (4, 8.1), (8, 6.0), (16, 4.2), (32, 1.9))
    ]
    (f,) = F.fit(rows, "latency ~ P", by=[])
    assert f.predict(P=24)["mean"] > 0
    with pytest.raises(collkit.InvalidArgumentError, match=r"negative latency \(-.* at P=64"):
        f.predict(P=64)


def test_bad_predictions_are_clear_errors() -> None:
    f = F.fit(_rows(), "seed-log")[0]
    for values in ({"P": 0}, {"P": "many"}, {"colour": 3}, {"P": 8, "group": "unknown-group"}):
        with pytest.raises(collkit.InvalidArgumentError):
            f.predict(**values)  # type: ignore[arg-type]
    with pytest.raises(collkit.InvalidArgumentError):
        f.predict(alpha=2.0, P=8)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=40))
def test_hostile_formulas_give_a_clear_error(text: str) -> None:
    rows = _rows()[:40]
    with contextlib.suppress(collkit.CollkitError):
        F.fit(rows, "latency ~ " + text, by=[])


def test_fits_simulated_rows_like_measured_ones() -> None:
    """The same code on rows from the schedule itself: a postal-model time of bcast:linear is
    exactly (P - 1) alpha, of bcast:pipeline (one segment) (P - 1) alpha."""
    simulate = pytest.importorskip("collkit.simulate")
    rows = []
    for algo in ("bcast:linear", "bcast:binomial"):
        for P in (2, 4, 8, 16, 32, 64):
            t = simulate.simulate(algo, P, bytes=8, model="postal", alpha="1us").makespan / 1e3
            rows.append(
                {
                    "collective": "bcast",
                    "algorithm": algo,
                    "P": P,
                    "bytes": 8,
                    "source": "simulated",
                    "median": t,
                    "min": t,
                }
            )
    fits = {f.group: f for f in F.fit(rows, "latency ~ log2P + P", by=["group"])}
    lin = fits["linear--"]
    assert lin.coefficient("P").estimate == pytest.approx(1.0, abs=1e-6)
    assert lin.coefficient("log2P").estimate == pytest.approx(0.0, abs=1e-6)
    binom = fits["binomial--"]
    assert binom.coefficient("log2P").estimate == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize(
    ("text", "short"),
    [
        ("by socket", "socket"),
        ("map-by node", "node"),
        ("bind-to core", "core"),
        ("socket", "socket"),
        ("1 node x 8 ranks on 2 cores (oversubscribed)", "core"),
        ("8 ranks from hostfile hosts", "8_ranks_from_hostfile_hosts"),
        ("", "-"),
    ],
)
def test_allocation_names(text: str, short: str) -> None:
    assert F.short_allocation(text) == short


def _write_rows(path: Path, rows: list[dict[str, object]]) -> Path:
    results = pytest.importorskip("collkit.results")
    store = results.ResultStore(path)
    for r in rows:
        store.append(results.row_from_dict(r))
    return path


def test_cli_fits_predicts_and_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from collkit.cli import main

    rows = _write_rows(tmp_path / "rows.jsonl", _rows())
    code = main(["fit", str(rows), "--predict", "P=4096", "--plots", str(tmp_path / "img")])
    out = capsys.readouterr().out
    assert code == 0
    assert out.count("| P |") == 6  # one table per algorithm-allocation group
    assert "prediction at P=4096" in out
    assert (tmp_path / "img" / "residuals.png").exists()
    assert (tmp_path / "img" / "predicted.png").exists()


def test_cli_compares_with_predicted_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from collkit.cli import main

    measured = _rows()[:10]
    rows = _write_rows(tmp_path / "m.jsonl", measured)
    pred = _write_rows(
        tmp_path / "p.jsonl",
        [dict(r, source="simulated", median=2 * float(r["median"])) for r in measured],  # type: ignore[arg-type]
    )
    assert main(["fit", str(rows), "--against", str(pred), "--plots", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "-50.0%" in out and "10 rows matched" in out
    assert (tmp_path / "comparison.png").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["--model", "latency ~ nothing"],
        ["--predict", "P"],
        ["--predict", "P=lots"],
        ["--where", "colour=red"],
        ["--stat", "mode"],
    ],
)
def test_cli_bad_input_exits_2(tmp_path: Path, argv: list[str]) -> None:
    from collkit.cli import main

    rows = _write_rows(tmp_path / "rows.jsonl", _rows())
    with pytest.raises(SystemExit) as e:
        code = main(["fit", str(rows), *argv])
        raise SystemExit(code)
    assert e.value.code == 2


def test_cli_missing_file_exits_2(tmp_path: Path) -> None:
    from collkit.cli import main

    pytest.importorskip("collkit.results")
    assert main(["fit", str(tmp_path / "none.jsonl")]) == 2


def test_binding_in_the_settings_is_part_of_the_placement() -> None:
    rows = [
        dict(r, allocation="1 node x 4 ranks on 2 cores", settings="HYDRA_BINDING=core")
        for r in _rows()
    ]
    df = F.frame(rows)
    assert set(df["allocation"]) == {"core"}
    assert set(df["binding"]) == {"core"}
    assert set(df["group"]) == {f"{a}-core/bind-core" for a in TRUE}
    assert set(F.frame(_rows()[:3])["group"]) == {"pipeline-socket"}  # unbound
