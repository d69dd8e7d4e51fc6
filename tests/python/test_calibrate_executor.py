"""The executor's calibration: the least-squares fit finds known per-call and per-op costs in
synthetic measurements, the profile keeps them (and reads version 1 without them), the
predictions of validate add them, and bad executor sections are refused."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
from test_profile import make

import collkit
from collkit import cli
from collkit.calibrate_executor import (
    CALIBRATION_ALGOS,
    DATATYPE_BYTES,
    SHM_DEFAULT_MAX,
    SlotCopies,
    datatype_of,
    elapsed,
    executor_threshold,
    fit_executor,
    late_start,
)
from collkit.errors import InvalidArgumentError
from collkit.profile import load_profile, profile_from_dict
from collkit.simulate import Model
from collkit.validate import largest_message, predict, registry_algorithms

CALL = 900.0  # ns per call
EXTRA_O = 400.0  # the executor's cost per send / receive op on top of MPI's o
EXTRA_REDUCE = 250.0  # ... per reduction op
SKEW = 400.0  # rank 1 leaves the bench's MPI_Barrier this much after rank 0
SIZES = (64, 512, 4096, 12288, 98304, 262144)


def _synthetic_records(
    monkeypatch: pytest.MonkeyPatch,
    sizes: tuple[int, ...] = SIZES,
    large: int = 0,
    large_factor: float = 1.0,
) -> list[dict[str, Any]]:
    """Calibration records that follow the kernel's LogGOPS with the executor's costs added:
    `o` larger by EXTRA_O, `reduce_base` by EXTRA_REDUCE, every call CALL more, measured after
    a barrier that rank 1 leaves SKEW after rank 0; cases whose largest message is `large` or
    more (0: none) with the per-byte G and O `large_factor` times (beyond the caches)."""
    monkeypatch.delenv("COLLKIT_SHM", raising=False)
    monkeypatch.delenv("COLLKIT_SHM_MAX", raising=False)
    p = make()
    thr, _ = executor_threshold(p.threshold_bytes)
    out = []
    for algo in CALIBRATION_ALGOS:
        coll = algo.split(":")[0]
        elem = DATATYPE_BYTES[datatype_of(coll)]
        for s in sizes:
            big = largest_message(algo, 2, s // elem, elem)
            params = p.params("loggops", message_bytes=big, executor=False)
            if big <= thr:
                params["S"] = float("inf")
            if large and big >= large:
                for k in ("G", "O"):
                    params[k] *= large_factor
            params["o"] += EXTRA_O
            params["reduce_base"] += EXTRA_REDUCE
            sched = collkit.generate(algo, 2, count=s // elem, elem_size=elem)
            t = elapsed(sched, Model.make("loggops", **params), SKEW)
            us = (t + CALL) / 1e3
            out.append(
                {
                    "kind": "executor",
                    "algorithm": algo,
                    "P": 2,
                    "bytes": s,
                    "min": us,
                    "median": 1.5 * us,
                    "samples": 20,
                    "largest_message": big,
                }
            )
    return out


def test_the_fit_finds_the_executors_costs(monkeypatch: pytest.MonkeyPatch) -> None:
    p = make()
    recs = _synthetic_records(monkeypatch)
    ex = fit_executor(p, recs, models=("loggops",))
    e = ex["min"]
    assert e["threshold_bytes"] == SHM_DEFAULT_MAX and "shared-memory" in e["transport"]
    assert set(e["regimes"]) == {"eager", "slots", "rendezvous"}
    eager = e["regimes"]["eager"]
    # The kernel's own parameters miss the executor by a lot; the fitted ones reproduce it.
    q = eager["fit"]["loggops"]
    assert q["rms_rel_residual_before"] > 0.3
    assert q["rms_rel_residual"] < 0.02
    # ... and find the per-call and per-op costs and the barrier's skew put in (at P = 2 every
    # case has one L on its path: L and the per-call cost trade, their sum does not).
    kernel = p.params("loggops", executor=False)
    lg = eager["loggops"]
    assert lg["call"] + lg["L"] == pytest.approx(CALL + kernel["L"], rel=0.1)
    assert lg["barrier_skew"] == pytest.approx(SKEW, rel=0.1)
    assert lg["o"] - kernel["o"] == pytest.approx(EXTRA_O, rel=0.1)
    assert lg["reduce_base"] - kernel["reduce_base"] == pytest.approx(EXTRA_REDUCE, rel=0.25)
    assert e["regimes"]["rendezvous"]["fit"]["loggops"]["rms_rel_residual"] < 0.05


def test_messages_beyond_the_caches_get_a_regime_of_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Per-byte costs twice as high from 512 KiB up (half a 1 MiB L2): one MPI regime cannot
    # fit both sides; with the cache's size in the records a third regime, "large", does.
    p = make()
    l2 = 1 << 20
    sizes = (64, 4096, 98304, 262144, 524288, 1572864, 3145728)
    recs = _synthetic_records(monkeypatch, sizes, large=l2 // 2, large_factor=2.0)
    one = fit_executor(p, recs, models=("loggops",))["min"]  # no cache record: as before
    assert set(one["regimes"]) == {"eager", "slots", "rendezvous"} and not one["large_bytes"]
    two = fit_executor(p, [*recs, {"kind": "cache", "l2_bytes": l2}], models=("loggops",))["min"]
    assert set(two["regimes"]) == {"eager", "slots", "rendezvous", "large"}
    assert two["large_bytes"] == l2 // 2 and "L2" in two["large_why"]
    rms = {k: two["regimes"][k]["fit"]["loggops"]["rms_rel_residual"] for k in two["regimes"]}
    assert rms["large"] < 0.05 and rms["rendezvous"] < 0.05
    assert one["regimes"]["rendezvous"]["fit"]["loggops"]["rms_rel_residual"] > 2 * max(
        rms["large"], rms["rendezvous"]
    )
    # A profile picks the regime of the largest message.
    p.executor = {"min": two}
    g_mid = p.params("loggops", message_bytes=200_000)["G"]
    g_big = p.params("loggops", message_bytes=1 << 20)["G"]
    assert g_big == two["regimes"]["large"]["loggops"]["G"] != g_mid
    # Too few cases beyond the caches: no regime of their own.
    few = [r for r in recs if r["largest_message"] < 1 << 20]
    three = fit_executor(p, [*few, {"kind": "cache", "l2_bytes": l2}], models=("loggops",))["min"]
    assert "large" not in three["regimes"] and three["large_why"] == "too few cases beyond it"


def test_without_shared_memory_the_mpi_threshold_splits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLLKIT_SHM", "0")
    assert executor_threshold(4096.0)[0] == 4096.0
    monkeypatch.delenv("COLLKIT_SHM")
    monkeypatch.setenv("COLLKIT_SHM_MAX", "1024")
    assert executor_threshold(4096.0)[0] == 1024.0
    assert executor_threshold(4096.0, on_one_node=False)[0] == 4096.0


@pytest.fixture(scope="module")
def fitted() -> Any:
    with pytest.MonkeyPatch.context() as mp:
        p = make()
        p.executor = fit_executor(p, _synthetic_records(mp), models=("loggops", "postal"))
        return p


@pytest.fixture
def with_executor(fitted: Any) -> Any:
    return copy.deepcopy(fitted)


def test_profile_keeps_the_executor_and_predictions_use_it(
    with_executor: Any, tmp_path: Path
) -> None:
    p = with_executor
    q = load_profile(p.save(tmp_path / "p.json"))
    assert q.executor["min"]["regimes"]["eager"]["loggops"] == pytest.approx(
        p.executor["min"]["regimes"]["eager"]["loggops"]
    )
    assert "executor, min" in q.summary()
    with_ex = q.params("loggops", message_bytes=8)
    without = q.params("loggops", message_bytes=8, executor=False)
    assert with_ex["o"] > without["o"] and with_ex["gamma"] == without["gamma"]
    assert q.call_ns("loggops", message_bytes=8) > 0
    assert q.call_ns("loggops", message_bytes=8, executor=False) == 0
    # A model the executor was not fitted with keeps the kernel's parameters.
    assert q.params("logp") == q.params("logp", executor=False)
    # Through the slots a fit of their own, its bytes in the slots' copies (SlotCopies); the
    # eager regime's plain fit stays for simulations without them.
    kw: dict[str, Any] = dict(message_bytes=1024, slots=True)
    slots = q.params("loggops", **kw)
    assert slots["G"] == slots["O"] == 0 and slots != q.params("loggops", message_bytes=1024)
    rate = q.executor_term("slot_copy", "loggops", **kw)
    assert rate > 0 and q.executor_term("slot_copy", "loggops", message_bytes=1024) == 0
    # validate's prediction: the makespan with the slots' fit and copies, plus the call.
    mn, _, regime = predict(q, "loggops", "allreduce:rd", 2, 1024, "allreduce")
    assert regime == "eager"
    skew = q.barrier_skew_ns("loggops", **kw)
    assert skew > 0
    sched = collkit.generate("allreduce:rd", 2, count=128, elem_size=8)
    sim = elapsed(sched, Model.make("loggops", **slots), skew, rate)
    assert mn == pytest.approx((sim + q.call_ns("loggops", **kw)) / 1e3)
    # In windows every rank starts at once: no skew.
    win, _, _ = predict(q, "loggops", "allreduce:rd", 2, 1024, "allreduce", sync="window")
    assert win < mn
    old, _, _ = predict(q, "loggops", "allreduce:rd", 2, 1024, "allreduce", executor=False)
    assert old < mn


def test_a_late_start_delays_the_ranks_but_0() -> None:
    m = Model.make("loggops", L=500, o=100, g=100)
    one = collkit.generate("bcast:binomial", 2, count=8, elem_size=1)
    exchange = collkit.generate("allreduce:rd", 2, count=1, elem_size=8)
    # A message to a rank that starts late finds it waiting less; an exchange waits longer.
    assert elapsed(one, m, 300) == pytest.approx(elapsed(one, m) - 300)
    assert elapsed(exchange, m, 300) == pytest.approx(elapsed(exchange, m) + 300)
    late, starts = late_start(exchange, 300)
    assert list(starts) == [0, 300] and late.total_ops == exchange.total_ops + 1


def test_version_1_profiles_are_read() -> None:
    d: dict[str, Any] = json.loads(make().to_json())
    d["version"] = 1
    d.pop("executor")
    assert profile_from_dict(d).executor == {}


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.__setitem__("executor", []), "'executor' must be an object"),
        (lambda d: d["executor"].__setitem__("mean", {}), "no such statistic"),
        (lambda d: d["executor"]["min"].__setitem__("regimes", {}), "needs 'threshold_bytes'"),
        (
            lambda d: d["executor"]["min"]["regimes"]["eager"]["loggops"].pop("call"),
            "giving exactly",
        ),
        (
            lambda d: d["executor"]["min"]["regimes"]["eager"]["loggops"].__setitem__("o", -1),
            "must be a number >= 0",
        ),
        (
            lambda d: d["executor"]["min"]["regimes"].__setitem__("warm", {}),
            "regime is eager, slots, rendezvous, large",
        ),
        (  # the slots' copies belong to the slots' fit alone
            lambda d: d["executor"]["min"]["regimes"]["eager"]["loggops"].__setitem__(
                "slot_copy", 0.1
            ),
            "giving exactly",
        ),
        (
            lambda d: d["executor"]["min"]["regimes"]["slots"]["loggops"].pop("slot_copy"),
            "giving exactly",
        ),
        (lambda d: d["executor"]["min"].__setitem__("large_bytes", "big"), "large_bytes"),
        (lambda d: d.__setitem__("version", 4), "reads versions 1, 2, 3"),
    ],
)
def test_bad_executor_sections_are_refused(with_executor: Any, mutate: Any, message: str) -> None:
    d = json.loads(with_executor.to_json())
    bad = copy.deepcopy(d)
    mutate(bad)
    with pytest.raises(InvalidArgumentError, match=message):
        profile_from_dict(bad)
    profile_from_dict(d)  # the unmutated one is fine


def test_validate_measured_before_and_after(
    with_executor: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from collkit.results import ResultStore, Row, read_jsonl
    from collkit.validate import validate_rows

    prof = with_executor.save(tmp_path / "p.json")
    # Measured rows that are the synthetic truth (the executor's costs added) for a ring.
    recs = [r for r in _synthetic_records(monkeypatch) if r["algorithm"] == "allreduce:ring"]
    store = ResultStore(tmp_path / "m.jsonl")
    for r in recs:
        row = Row(
            collective="allreduce",
            algorithm=r["algorithm"],
            P=2,
            bytes=r["bytes"],
            datatype="double",
            count=r["bytes"] // 8,
            source="measured",
            mpi="MPICH x",
            machine="m",
            iterations=20,
        )
        row.min_us, row.median_us = r["min"], r["median"]
        store.append(row)
    rows = read_jsonl(tmp_path / "m.jsonl")
    after = validate_rows(load_profile(prof), rows)
    before = validate_rows(load_profile(prof), rows, executor=False)
    assert after.executor and not before.executor
    assert after.median_abs_error() < 0.05 < before.median_abs_error()
    for extra in ([], ["--no-executor"]):
        out = tmp_path / ("v" + "".join(extra))
        argv = ["validate", "--profile", str(prof), "--measured", str(tmp_path / "m.jsonl")]
        assert cli.main([*argv, *extra, "-o", str(out)]) == 0
        md = out.with_name(out.name + ".md").read_text()
        assert ("+ executor" in md) == (not extra)
        assert ("without the executor's costs" in md) == (not extra)
        png = out.with_name(out.name + "-predicted.png")
        assert png.read_bytes()[:4] == b"\x89PNG"
    capsys.readouterr()


def test_the_medians_fit_never_predicts_below_the_minimas(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The minima and the medians are fitted apart; medians that are the minima plus a
    constant at small sizes and 2 % more at large ones pull a free medians' fit to another
    split of the time (a lower per-op cost, a higher per-call one), which predicts some
    medians below their minima. Fitted with the minima's fit as its floor, never."""
    import collkit.calibrate_executor as ce

    recs = _synthetic_records(monkeypatch)
    for r in recs:
        r["median"] = r["min"] + 1.5 if r["bytes"] <= 4096 else r["min"] * 1.02
    p = make()
    cases = [
        (coll, a, s)
        for coll in ("allreduce", "reduce")
        for a in registry_algorithms(coll, 2)
        for s in (8, 1024, 16384, 131072, 1048576)
    ]

    def below(prof: Any, slots: bool = False) -> list[tuple[str, int]]:
        # The eager regime's plain fit (these cases are plain LogGOPS), or the slots' fit.
        if not slots:
            prof = copy.deepcopy(prof)
            for ex in prof.executor.values():
                ex["regimes"].pop("slots")
        out = []
        for coll, a, s in cases:
            lo, hi, _ = predict(prof, "loggops", a, 2, s, coll, raw_median=True)
            if hi < lo * (1 - 1e-9):
                out.append((a, s))
        return out

    free = ce.fit_regime

    def no_floor(*a: Any, floor: Any = None, **k: Any) -> dict[str, Any]:
        return free(*a, **k)

    monkeypatch.setattr(ce, "fit_regime", no_floor)
    p.executor = fit_executor(p, recs, models=("loggops",))
    assert below(p), "the data must pull a free medians' fit below the minima's somewhere"
    monkeypatch.setattr(ce, "fit_regime", free)
    p.executor = fit_executor(p, recs, models=("loggops",))
    assert below(p) == [] and below(p, slots=True) == []
    for regime, fits in p.executor["median"]["regimes"].items():
        lo = p.executor["min"]["regimes"][regime]["loggops"]
        for k, v in fits["loggops"].items():
            if k not in ("S", "barrier_skew"):
                assert v >= lo[k], (regime, k)
        assert fits["loggops"]["barrier_skew"] == lo["barrier_skew"]


# An executor fit of a CI run (MPICH, shared memory, 2026-11-28): the medians' parameters each at
# or above the minima's, yet rd at P = 2 simulated 20 ns faster from the medians.
CI_MIN = dict(L=17.32, o=116.1, g=248.7, G=0.05215, O=0.009237, S=math.inf, reduce_base=14.84)
CI_MEDIAN = dict(CI_MIN, L=48.34, G=0.05896, reduce_base=79.69)


def test_a_later_arrival_can_shorten_the_schedule() -> None:
    """The simulation is a list schedule: a message that is already there when rank 1 leaves
    the barrier takes its CPU before its own send; one that comes later lets the send go
    first. More latency, a shorter makespan: no fit's ordering can rule that out."""
    sched = collkit.generate("allreduce:rd", 2, count=1, elem_size=8)
    local = dict(gamma=0.046, copy_beta=0.025)

    def t(**kw: float) -> float:
        return elapsed(sched, Model.make("loggops", **{**CI_MIN, **local, **kw}), 138.9)

    assert t(L=30) < t(L=17.32) - 50
    assert t(**CI_MEDIAN) < t()


def test_a_median_is_never_predicted_below_the_minimum(with_executor: Any) -> None:
    p = with_executor
    for stat, fit in (("min", CI_MIN), ("median", CI_MEDIAN)):
        del p.executor[stat]["regimes"]["slots"]  # a profile of CI's, before the slots' fit
        eager = p.executor[stat]["regimes"]["eager"]["loggops"]
        eager.update(fit, call=233.4, barrier_skew=138.9)
    lo, hi, _ = predict(p, "loggops", "allreduce:rd", 2, 8, "allreduce")
    assert hi == pytest.approx(lo)  # the anomaly's median, predicted as the minimum
    for a, s in (("allreduce:rd", 1024), ("allreduce:ring", 16384)):
        lo, hi, _ = predict(p, "loggops", a, 2, s, "allreduce")
        assert hi > lo, (a, s)


# The slots' copies as ops (SlotCopies): a model without per-byte costs, so that the copies are
# all the bytes cost.
NO_BYTES = dict(L=50.0, o=70.0, g=40.0, G=0.0, O=0.0, S=math.inf, gamma=0.05, copy_beta=0.01)


def _sched(algo: str, nbytes: int) -> Any:
    elem = DATATYPE_BYTES[datatype_of(algo.split(":")[0])]
    return collkit.generate(algo, 2, count=nbytes // elem, elem_size=elem)


def test_a_lone_message_through_the_slots_is_copied_twice_in_turn() -> None:
    m = Model.make("loggops", **NO_BYTES)
    one = _sched("bcast:binomial", 12288)
    sc = SlotCopies(one)
    assert len(sc.copy_at) == 2  # the sender's copy in, the receiver's copy out
    assert sc.at(0.0) is one and sc.at(0.1).total_ops == one.total_ops + 2
    assert elapsed(sc, m, 0, 0.1) == pytest.approx(elapsed(one, m) + 2 * 1229, abs=2)
    # Built on the fly from a plain schedule, the same.
    assert elapsed(one, m, 0, 0.1) == elapsed(sc, m, 0, 0.1)


def test_a_stream_through_the_slots_overlaps_the_two_copies() -> None:
    m = Model.make("loggops", **NO_BYTES)
    stream = SlotCopies(_sched("bcast:pipeline", 98304))  # 12 messages of 8 KiB
    t = elapsed(stream, m, 0, 0.1) - elapsed(stream, m)
    chunk = 0.1 * 8192
    # Each copy out overlaps the next copy in: 13 copies long, not 24.
    assert 12 * chunk < t < 14 * chunk


def test_a_receive_reduced_out_of_its_slot_is_not_copied() -> None:
    # The executor reduces straight out of the slot when the reduction is the receive's one
    # reader (mpi/src/executor.cpp): reduce and rd at P = 2 copy their sends in, nothing out.
    for algo in ("reduce:binomial", "allreduce:rd"):
        sc = SlotCopies(_sched(algo, 4096))
        sends = int(sum(k == 0 for k in _sched(algo, 4096).arrays()["kind"]))
        assert len(sc.copy_at) == sends, algo
    # allgather's received blocks are kept: each rank's send copied in, its receive out.
    assert len(SlotCopies(_sched("allgather:ring", 4096)).copy_at) == 4


def test_the_slots_fit_finds_the_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cases made with the kernel's parameters but its per-byte costs and the slots' copies
    instead (0.09 ns a byte, the receiver's after the sender's), the per-call cost and the
    barrier's skew: the slots' fit finds them and reproduces the cases; the plain LogGOPS fit
    of the same cases cannot tell a lone message from a stream and misses."""
    monkeypatch.delenv("COLLKIT_SHM", raising=False)
    monkeypatch.delenv("COLLKIT_SHM_MAX", raising=False)
    p = make()
    rate = 0.09
    recs = []
    for algo in CALIBRATION_ALGOS:
        coll = algo.split(":")[0]
        elem = DATATYPE_BYTES[datatype_of(coll)]
        for s in (64, 512, 4096, 12288) + ((98304, 262144) if algo == "bcast:pipeline" else ()):
            sched = _sched(algo, s)
            ps = p.params("loggops", executor=False, transport="shm")
            ps.update(G=0.0, O=0.0, S=math.inf)
            t = elapsed(sched, Model.make("loggops", **ps), SKEW, rate) + CALL
            big = largest_message(algo, 2, s // elem, elem)
            recs.append(
                {
                    "kind": "executor",
                    "algorithm": algo,
                    "P": 2,
                    "bytes": s,
                    "min": t / 1e3,
                    "median": 1.2 * t / 1e3,
                    "samples": 20,
                    "largest_message": big,
                    "transport": "shm",
                }
            )
    e = fit_executor(p, recs, models=("loggops",))["min"]
    slots, plain = e["regimes"]["slots"], e["regimes"]["eager"]
    lg = slots["loggops"]
    assert lg["slot_copy"] == pytest.approx(rate, rel=0.01)
    assert lg["barrier_skew"] == pytest.approx(SKEW, rel=0.01)
    assert lg["call"] + lg["L"] == pytest.approx(CALL + ps["L"], rel=0.01)  # they trade
    assert slots["fit"]["loggops"]["rms_rel_residual"] < 0.01
    assert plain["fit"]["loggops"]["rms_rel_residual"] > 0.03
