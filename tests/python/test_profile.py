"""Machine profiles: the fits recover known parameters, the threshold is found where sends start
to wait, profiles round-trip and bad ones are refused clearly, and the simulator, the CLI and
tune --simulate take them."""

from __future__ import annotations

import contextlib
import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import collkit
from collkit import cli
from collkit.errors import InvalidArgumentError
from collkit.profile import Profile, fit_line, fit_profile, load_profile, profile_from_dict

# Known parameters (ns, ns/B): the synthetic kernel records below follow LogGP exactly.
TRUE = {"L": 300.0, "o_s": 150.0, "o_r": 250.0, "g": 120.0, "G": 0.25, "S": 16384}
SIZES = [1, 8, 64, 512, 4096, 16384, 65536, 262144, 1048576]
N = 8
LATE_US = 200.0


def _rec(kind: str, s: int, ns: float, **extra: Any) -> dict[str, Any]:
    us = ns / 1e3
    return {"kind": kind, "bytes": s, "min": us, "median": 1.5 * us, **extra}


def synthetic(rendezvous_extra_ns: float = 2000.0) -> list[dict[str, Any]]:
    t = TRUE
    out: list[dict[str, Any]] = [{"kind": "meta", "n": N, "late_us": LATE_US}]
    for s in SIZES:
        rdv = s > t["S"]
        one_way = t["o_s"] + t["L"] + (s - 1) * t["G"] + t["o_r"] + (rendezvous_extra_ns * rdv)
        out.append(_rec("prtt1", s, 2 * one_way))
        out.append(_rec("prttn", s, 2 * one_way + (N - 1) * (t["g"] + (s - 1) * t["G"])))
        out.append(_rec("o_s", s, t["o_s"]))
        out.append(_rec("o_r", s, t["o_r"]))
        out.append(_rec("late", s, (LATE_US * 1e3 + one_way) if rdv else t["o_s"]))
    for dt, per in (("double", 0.125), ("float", 0.25)):
        for s in (1024, 16384, 131072, 1048576):
            out.append(_rec("reduce", s, 40 + per * s, datatype=dt, op="sum"))
    for s in (1024, 16384, 131072, 1048576):
        out.append(_rec("copy", s, 10 + 0.05 * s))
    return out


MULTICAST = [
    {
        "kind": "fit",
        "mode": "nonblocking",
        "alpha_p_min": 0.5,
        "alpha_r_min": 0.1,
        "alpha_p_median": 0.8,
        "alpha_r_median": 0.2,
    }
]


def make() -> Profile:
    return fit_profile(
        synthetic(), MULTICAST, name="test", machine="m", mpi="MPICH x", pair="intra-node"
    )


def test_fit_recovers_the_parameters() -> None:
    p = make()
    assert p.threshold_bytes == TRUE["S"]
    m = p.models["min"]["eager"]
    lg = m["loggops"]
    assert lg["L"] == pytest.approx(TRUE["L"], rel=0.02)
    assert lg["o"] == pytest.approx((TRUE["o_s"] + TRUE["o_r"]) / 2, rel=1e-3)
    assert lg["g"] == pytest.approx(TRUE["g"], rel=0.02)
    assert lg["G"] == pytest.approx(TRUE["G"], rel=0.02)
    assert lg["S"] == TRUE["S"]
    assert m["postal"]["beta"] == pytest.approx(TRUE["G"], rel=0.02)
    # alpha_r from the multicast's slope; one message arrives after alpha_p + alpha_r.
    assert m["pipelined-postal"]["alpha_r"] == pytest.approx(100.0)
    pp = m["pipelined-postal"]
    assert pp["alpha_p"] + pp["alpha_r"] == pytest.approx(m["postal"]["alpha"])
    # The medians are 1.5 times the minima here: so are their fits.
    med = p.models["median"]["eager"]["loggops"]
    assert med["o"] == pytest.approx(1.5 * lg["o"], rel=1e-3)
    assert p.models["median"]["eager"]["pipelined-postal"]["alpha_r"] == pytest.approx(200.0)
    # Above S the one-way time carries the handshake: the rendezvous postal alpha shows it.
    rdv = p.models["min"]["rendezvous"]["postal"]
    eager = m["postal"]
    assert rdv["alpha"] - eager["alpha"] == pytest.approx(2000.0, rel=0.05)
    # ... and LogGOPS keeps the eager CPU overhead, the handshake going into L: 2o + L + (s-1)G
    # is the rendezvous one-way time.
    lr = p.models["min"]["rendezvous"]["loggops"]
    assert lr["o"] == lg["o"] and lr["S"] == TRUE["S"]
    s = 65536
    one_way = TRUE["o_s"] + TRUE["L"] + (s - 1) * TRUE["G"] + TRUE["o_r"] + 2000.0
    per_byte = max(lr["G"], lr["O"])
    assert 2 * lr["o"] + lr["L"] + (s - 1) * per_byte == pytest.approx(one_way, rel=0.01)
    g = p.local["min"]["gamma"]
    assert g["double"]["sum"]["gamma"] == pytest.approx(0.125, rel=1e-3)
    assert g["float"]["sum"]["gamma"] == pytest.approx(0.25, rel=1e-3)
    assert g["double"]["sum"]["reduce_base"] == pytest.approx(40.0, rel=0.02)
    assert p.local["min"]["copy_beta"] == pytest.approx(0.05, rel=1e-3)
    assert p.fits["min"]["eager"]["one_way"]["max_rel_residual"] < 1e-3


def test_no_rendezvous_seen_means_S_is_infinite() -> None:
    recs = [r for r in synthetic() if r["kind"] != "late"]
    p = fit_profile(recs, [], name="t", machine="m", mpi="x", pair="intra-node")
    assert math.isinf(p.threshold_bytes)
    assert "rendezvous" not in p.models["min"]
    assert math.isinf(p.params("loggops")["S"])


def test_params_pick_the_regime_and_the_local_costs() -> None:
    p = make()
    small = p.params("postal", message_bytes=8)
    big = p.params("postal", message_bytes=1 << 20)
    assert big["alpha"] > small["alpha"]
    assert p.params("loggops", datatype="float")["gamma"] == pytest.approx(0.25, rel=1e-3)
    with pytest.raises(InvalidArgumentError, match="no gamma for int/sum"):
        p.params("loggops", datatype="int")
    with pytest.raises(InvalidArgumentError, match="unknown model"):
        p.params("no-such-model")
    with pytest.raises(InvalidArgumentError, match="no 'mean' fits"):
        p.params("postal", stat="mean")


def test_local_costs_are_taken_at_the_size_of_the_message() -> None:
    # A reduction of buffers that outgrow the caches costs more a byte: 0.125 ns/B up to
    # 128 KiB, 0.25 ns/B beyond. A prediction takes the slope around its largest message.
    recs = [r for r in synthetic() if r["kind"] not in ("reduce", "copy")]
    for s in (1024, 16384, 131072):
        recs.append(_rec("reduce", s, 40 + 0.125 * s, datatype="double", op="sum"))
        recs.append(_rec("copy", s, 10 + 0.05 * s))
    big = 1048576
    recs.append(
        _rec(
            "reduce", big, 40 + 0.125 * 131072 + 0.25 * (big - 131072), datatype="double", op="sum"
        )
    )
    recs.append(_rec("copy", big, 10 + 0.05 * 131072 + 0.1 * (big - 131072)))
    p = fit_profile(recs, [], name="t", machine="m", mpi="x", pair="intra-node")
    line = p.local["min"]["gamma"]["double"]["sum"]["gamma"]
    assert 0.125 < line < 0.25  # one line through both: right at neither
    for n, gamma, copy_beta in ((8, 0.125, 0.05), (65536, 0.125, 0.05), (1 << 20, 0.25, 0.1)):
        got = p.params("loggops", message_bytes=n, executor=False)
        assert got["gamma"] == pytest.approx(gamma, rel=1e-6), n
        assert got["copy_beta"] == pytest.approx(copy_beta, rel=1e-6), n
    # Beyond the largest size measured: the last slope. The medians: their own points.
    assert p.params("loggops", message_bytes=1 << 24)["gamma"] == pytest.approx(0.25, rel=1e-6)
    assert p.params("loggops", stat="median", message_bytes=8)["gamma"] == pytest.approx(
        1.5 * 0.125, rel=1e-6
    )
    # Another datatype has no points of its own here: its line.
    assert p.local_slope("reduce", "min", 8, datatype="float", op="sum") is None


def test_local_slope_ignores_what_it_cannot_read_and_keeps_the_line_for_noise() -> None:
    p = make()
    p.measurements = [
        {"kind": "copy", "bytes": "x", "min": 1.0},
        {"kind": "copy", "bytes": 1024, "min": None},
        {"kind": "copy", "bytes": 1024, "min": 2.0},
        {"kind": "copy", "bytes": 4096, "min": 1.0},  # faster at more bytes: noise
    ]
    assert p.local_slope("copy", "min", 2048) is None
    assert p.params("loggops", message_bytes=2048)["copy_beta"] == p.local["min"]["copy_beta"]
    p.measurements = []
    assert p.local_slope("copy", "min", 2048) is None


def test_a_medians_slope_is_never_below_the_minimas() -> None:
    """Two medians a size apart can rise less than the two minima (the smaller one's median
    noisier): the medians' slope is then the minima's, or a median would be predicted faster
    than the minimum (measured so in a calibration: copy 1-16 KiB, 0.0163 against 0.0182)."""
    p = make()
    p.measurements = [
        {"kind": "copy", "bytes": 1024, "min": 0.084, "median": 0.114},
        {"kind": "copy", "bytes": 16384, "min": 0.363, "median": 0.365},
    ]
    assert p.local_slope("copy", "median", 8) < p.local_slope("copy", "min", 8)  # type: ignore[operator]
    lo = p.params("loggops", message_bytes=8)["copy_beta"]
    assert lo == pytest.approx(0.279 / 15360 * 1e3)
    assert p.params("loggops", stat="median", message_bytes=8)["copy_beta"] == lo


def test_fit_line_is_relative_and_nonnegative() -> None:
    line = fit_line([1, 10, 100, 1000, 10**6], [5.1, 6, 15, 105, 100005])
    assert line.a == pytest.approx(5, rel=0.01) and line.b == pytest.approx(0.1, rel=0.01)
    flat = fit_line([1, 2, 3], [3.0, 2.0, 1.0])  # a falling line: b is held at 0
    assert flat.b == pytest.approx(0.0, abs=1e-9) and flat.a > 0


def test_profile_round_trips(tmp_path: Path) -> None:
    p = make()
    path = p.save(tmp_path / "p.json")
    q = load_profile(path)
    assert q.params("loggops") == p.params("loggops")
    assert q.params("pipelined-postal", stat="median") == p.params(
        "pipelined-postal", stat="median"
    )
    assert q.threshold_bytes == p.threshold_bytes


def test_the_simulator_takes_a_profile() -> None:
    p = make()
    params = p.params("loggops")
    r = collkit.simulate("allreduce:rd", 2, bytes=8, model="loggops", **params)
    # The input copied to the output, one exchange of 8 B (o + L + o + 7 G at the receiver),
    # then the reduction.
    copy_ = 8 * params["copy_beta"]
    exchange = 2 * params["o"] + params["L"] + 7 * max(params["G"], params["O"])
    reduce_ = params["reduce_base"] + 8 * params["gamma"]
    assert r.makespan == pytest.approx(copy_ + exchange + reduce_, rel=1e-9)
    assert p.model("loggops").params["L"] == params["L"]


def _good() -> dict[str, Any]:
    d: dict[str, Any] = json.loads(make().to_json())
    return d


def test_a_model_the_profile_lacks_takes_its_parameters_fits() -> None:
    # A profile saved before a model was registered: the model takes the fits of its
    # parameters (here loggp's L, o, g, G from loggops); one with a parameter the profile
    # never measured is a clear error at use.
    d = _good()
    for regime in d["models"]["min"].values():
        regime.pop("loggp")
    p = profile_from_dict(d)
    loggops = p.params("loggops")
    assert {k: loggops[k] for k in ("L", "o", "g", "G")} == {
        k: v for k, v in p.params("loggp").items() if k in ("L", "o", "g", "G")
    }
    for regime in d["models"]["min"].values():
        for m in ("logp", "loggops"):
            regime.pop(m)
    with pytest.raises(InvalidArgumentError, match="no fit of model loggp: it measured no L, o, g"):
        profile_from_dict(d).params("loggp")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(format="x"), "not a collkit profile"),
        (lambda d: d.update(version=99), "version 99"),
        (lambda d: d.update(extra=1), "unknown profile fields"),
        (lambda d: d["models"]["min"]["eager"]["postal"].update(alpha=-1), "must be a number"),
        (lambda d: d["models"]["min"]["eager"]["postal"].pop("beta"), "exactly alpha, beta"),
        # One parameter, one fit: two models that give L differently.
        (lambda d: d["models"]["min"]["eager"]["loggp"].update(L=1.5), "loggp gives L=1.5 unlike"),
        (lambda d: d["models"].update(mean=d["models"]["min"]), "statistic must be one of"),
        (lambda d: d.update(name=3), "'name' must be a string"),
        (lambda d: d["local"]["min"].update(copy_beta="fast"), "copy_beta"),
    ],
)
def test_bad_profiles_are_refused(mutate: Any, message: str) -> None:
    d = _good()
    mutate(d)
    with pytest.raises(InvalidArgumentError, match=message):
        profile_from_dict(d)


def test_unreadable_profiles_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match=r"profile: cannot read .*missing\.json"):
        load_profile(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(InvalidArgumentError, match="not JSON"):
        load_profile(bad)
    bad.write_text('{"format": "collkit-profile", "format": "collkit-profile"}')
    with pytest.raises(InvalidArgumentError, match="twice"):
        load_profile(bad)


_json = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(
    path=st.lists(
        st.sampled_from(["models", "min", "eager", "loggops", "L", "local", "gamma"]), max_size=4
    ),
    value=_json,
)
def test_reader_fails_only_with_its_own_error(path: list[str], value: Any) -> None:
    """Any value put anywhere in a good profile: it reads, or it is an InvalidArgumentError."""
    d = _good()
    node: Any = d
    for key in path[:-1]:
        if isinstance(node, dict) and key in node:
            node = node[key]
    if isinstance(node, dict) and path:
        node[path[-1]] = copy.deepcopy(value)
    else:
        d["models"] = value
    try:
        p = profile_from_dict(d)
    except InvalidArgumentError:
        return
    for model in ("postal", "pipelined-postal", "logp", "loggp", "loggops"):
        with contextlib.suppress(InvalidArgumentError):
            p.params(model)


def test_cli_simulate_and_tune_take_a_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make().save(tmp_path / "p.json")
    monkeypatch.setattr(cli, "COMMANDS", ["simulate", "tune"])
    argv = ["simulate", "allreduce:rd", "-P", "2", "--bytes", "8", "--model", "loggops"]
    assert cli.main([*argv, "--profile", str(path), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    want = collkit.simulate("allreduce:rd", 2, bytes=8, model="loggops", **make().params("loggops"))
    assert row["median_us"] == pytest.approx(want.makespan / 1e3)
    # An explicit flag wins over the profile.
    assert cli.main([*argv, "--profile", str(path), "--L", "1ms", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["median_us"] > 1000
    assert cli.main([*argv, "--profile", str(tmp_path / "none.json")]) == 2
    assert "none.json does not exist" in capsys.readouterr().err
    out = tmp_path / "tune"
    code = cli.main(
        [
            "tune",
            "allreduce",
            "-np",
            "4",
            "--sizes",
            "8,1KiB",
            "--simulate",
            "loggops",
            "--profile",
            str(path),
            "--only",
            "rd,ring",
            "-o",
            str(out),
            "--no-plot",
        ]
    )
    assert code == 0
    rows = [json.loads(x) for x in (out / "tune.jsonl").read_text().splitlines()]
    L = make().params("loggops")["L"]
    assert rows and all(f"L={L:g}ns" in r["mpi"] for r in rows)
    assert cli.main(["tune", "allreduce", "-np", "4", "--profile", str(path)]) == 2
    assert "--profile is for --simulate" in capsys.readouterr().err


# collkit's shared-memory transport (known parameters, ns, ns/B): its kernels' records.
SHM = {"L": 60.0, "o_s": 80.0, "o_r": 100.0, "g": 40.0, "G": 0.05, "O": 0.04, "slot": 16384}


def synthetic_shm() -> list[dict[str, Any]]:
    t = SHM
    out: list[dict[str, Any]] = [{"kind": "shm", "slot_bytes": t["slot"], "why": "test"}]
    for s in (x for x in SIZES if x <= t["slot"]):
        cpu = (s - 1) * t["O"]
        one_way = t["o_s"] + cpu + t["L"] + t["o_r"] + cpu
        out.append(_rec("shm_prtt1", s, 2 * one_way))
        out.append(_rec("shm_prttn", s, 2 * one_way + (N - 1) * (t["g"] + (s - 1) * t["G"])))
        out.append(_rec("shm_o_s", s, t["o_s"] + cpu))
        out.append(_rec("shm_o_r", s, t["o_r"] + cpu))
    return out


def test_the_shared_memory_transport_is_fitted_and_used_for_its_messages() -> None:
    p = fit_profile(
        synthetic() + synthetic_shm(),
        MULTICAST,
        name="test",
        machine="m",
        mpi="MPICH x",
        pair="intra-node",
    )
    assert p.shm_bytes == SHM["slot"]
    lg = p.models["min"]["shm"]["loggops"]
    assert lg["o"] == pytest.approx((SHM["o_s"] + SHM["o_r"]) / 2, rel=1e-3)
    assert lg["O"] == pytest.approx(SHM["O"], rel=1e-3)
    assert lg["g"] == pytest.approx(SHM["g"], rel=0.02)
    assert lg["G"] == pytest.approx(SHM["G"], rel=0.02)
    assert lg["L"] == pytest.approx(SHM["L"], rel=0.05)
    assert math.isinf(lg["S"])  # a send through a slot never waits for its receiver
    # Up to the slot size (or unsaid) the slots' parameters, MPI's above or without them.
    assert p.regime(8) == p.regime(None) == p.regime(16384, transport="shm") == "shm"
    assert p.regime(8, transport="p2p (COLLKIT_SHM=0)") == "eager"
    assert p.regime(16385) == "rendezvous"
    assert p.params("loggops", message_bytes=8)["o"] == lg["o"]
    assert p.params("loggops", message_bytes=8, transport="p2p")["o"] == pytest.approx(
        (TRUE["o_s"] + TRUE["o_r"]) / 2, rel=1e-3
    )
    with pytest.raises(InvalidArgumentError, match="transport"):
        p.regime(8, transport="tcp")
    # It survives a round trip; a profile without it (version 2) has none.
    back = profile_from_dict(json.loads(p.to_json()))
    assert back.shm_bytes == p.shm_bytes and back.models["min"]["shm"] == p.models["min"]["shm"]
    assert make().shm_bytes == 0 and make().regime(8) == "eager"


def test_the_medians_fits_are_never_below_the_minimas() -> None:
    """Fitted apart, a median line can split one time differently (here: the medians' send
    overhead below the minima's, their latency above): every median parameter is kept at or
    above the minimum's, so the predicted median is never below the predicted minimum."""
    recs = synthetic()
    for r in recs:
        if r["kind"] in ("o_s", "o_r"):
            r["median"] = 0.5 * r["min"]  # below the minimum: the median of another sample set
    p = fit_profile(recs, MULTICAST, name="t", machine="m", mpi="MPICH x", pair="intra-node")
    for regime, ms in p.models["median"].items():
        for m, ps in ms.items():
            for k, v in ps.items():
                if k != "S":
                    assert v >= p.models["min"][regime][m][k], (regime, m, k)
    for algo in ("allreduce:rd", "allreduce:ring", "bcast:binomial", "alltoall:pairwise"):
        for nbytes in (8, 4096, 1 << 20):
            lo = collkit.simulate(
                algo,
                P=4,
                bytes=nbytes,
                model="loggops",
                **p.params("loggops", message_bytes=nbytes),
            )
            hi = collkit.simulate(
                algo,
                P=4,
                bytes=nbytes,
                model="loggops",
                **p.params("loggops", stat="median", message_bytes=nbytes),
            )
            assert hi.makespan >= lo.makespan
