"""`collkit tune --counts`: the irregular collectives' count vectors at each size, and the rules
tune writes for them (allgatherv and reduce_scatter keyed by the call's total, gatherv, scatterv
and alltoallv by one rule of every size), decided from rows a stand-in for the bench driver
makes (no MPI). tests/mpi/test_tune_irregular_mpi.py runs the real thing on MPICH."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import collkit.tune.campaign as camp
from collkit.bench import DATATYPES, Campaign
from collkit.cli import main
from collkit.counts import parse_counts
from collkit.errors import InvalidArgumentError
from collkit.results import ResultStore, Row
from collkit.tune.campaign import TuneOptions
from collkit.tune.irregular import BY_P_ALONE, BY_TOTAL, EVERY_SIZE, at_size, forms_at
from collkit.tune.run import TunePlan, check_options, run
from collkit.tune.select import choose, irregular_notes, merge_forms, rules
from collkit.tune.table import Table, load

# ---- the vectors tune measures ------------------------------------------------------------------


def _vec(form: str, coll: str, P: int) -> list[int]:
    return parse_counts(form).vector(P, per_pair=coll == "alltoallv")


def test_the_irregular_collectives_are_keyed_as_the_library_keys_them() -> None:
    assert BY_TOTAL == ("allgatherv", "reduce_scatter")
    assert BY_P_ALONE == ("alltoallv", "gatherv", "scatterv")
    assert EVERY_SIZE == (0, 4611686018427387904)  # the library's rule of every size


@pytest.mark.parametrize("coll", ["allgatherv", "alltoallv"])
@pytest.mark.parametrize("P", [2, 3, 5])
def test_a_form_at_a_size_has_that_mean_entry(coll: str, P: int) -> None:
    entries = P * P if coll == "alltoallv" else P
    for mean in (0, 1, 7, 64, 1000):
        target = entries * mean
        # exact: the regular layout, everything in one entry, a list's proportions
        assert at_size("equal(3)", coll, P, mean) == f"equal({mean})"
        one = at_size("zeros-but-one(5,1)", coll, P, mean)
        assert one == f"zeros-but-one({target},1)"
        assert sum(_vec(one, coll, P)) == target
        weights = [1 + (i % 3) for i in range(entries)]
        listed = at_size(",".join(map(str, weights)), coll, P, mean)
        v = _vec(listed, coll, P)
        assert sum(v) == target
        if mean:  # the proportions kept, each entry within one element of its share
            share = [w * target / sum(weights) for w in weights]
            assert all(abs(a - b) < 1 for a, b in zip(v, share, strict=True))
        # random keeps its seed, its mean the size's
        assert at_size("random(9,3)", coll, P, mean) == f"random(9,{2 * mean})"
        # skewed: the smallest maximum whose entries reach the target
        sk = at_size("skewed(4,2)", coll, P, mean)
        m = re.fullmatch(r"skewed\((\d+),2\)", sk)
        assert m is not None
        top = int(m[1])
        assert sum(_vec(sk, coll, P)) >= target
        if top > 0:
            assert sum(_vec(f"skewed({top - 1},2)", coll, P)) < target


def test_forms_at_each_size_in_order_once() -> None:
    got = forms_at(["equal(1)", "random(4,1)", "equal(9)"], "allgatherv", 2, 8, [8, 64])
    assert got == ["equal(1)", "random(4,2)", "equal(8)", "random(4,16)"]


def test_a_form_that_cannot_be_scaled_is_a_clear_error() -> None:
    with pytest.raises(InvalidArgumentError, match="a list of zeros has no proportions"):
        at_size("0,0", "allgatherv", 2, 8)
    with pytest.raises(InvalidArgumentError, match="2 entries, but P = 3 needs 3"):
        at_size("1,2", "allgatherv", 3, 8)
    with pytest.raises(InvalidArgumentError, match=r"P = 2 needs P\^2 = 4"):
        at_size("1,2", "alltoallv", 2, 8)


# ---- the options --------------------------------------------------------------------------------


def _opts(colls: list[str], tmp: Path, **kw: object) -> TuneOptions:
    return TuneOptions(colls, [2], [8, 64], out=str(tmp / "t"), plot=False, **kw)  # type: ignore[arg-type]


def test_counts_are_refused_where_they_cannot_apply(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="--counts: allreduce take one count for every"):
        check_options(_opts(["allreduce"], tmp_path, counts=["random(1,2)"]))
    with pytest.raises(InvalidArgumentError, match="a form given twice"):
        check_options(_opts(["allgatherv"], tmp_path, counts=["equal(1)", "equal( 1)"]))
    with pytest.raises(InvalidArgumentError, match="2 entries, but P = 3 needs 3"):
        check_options(
            TuneOptions(["gatherv"], [2, 3], [8], out=str(tmp_path / "t"), counts=["1,2"])
        )
    # with an irregular collective among them, the forms are its own
    check_options(_opts(["allreduce", "allgatherv"], tmp_path, counts=["random(1,2)"]))


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["allreduce", "--counts", "random(1,2)"], "--counts: allreduce take one count"),
        (["allgatherv", "--counts", "rand(1,2)"], "unknown form 'rand'"),
        (["allgatherv", "--counts", "random(1"], "not a count form"),
        (["allgatherv", "--counts", "random(1,2,3)"], "random takes 2 argument(s), not 3"),
    ],
)
def test_the_command_refuses_bad_counts_with_exit_2(
    argv: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(["tune", *argv, "-np", "2", "-o", str(tmp_path / "t"), "--no-plot"])
    except SystemExit as e:  # argparse's usage error
        code = int(str(e.code))
    assert code == 2
    err = capsys.readouterr().err
    assert "collkit tune: error:" in err and said in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "t").exists()  # refused before any folder


def test_help_says_the_default_forms(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["tune", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "Default: equal(1) and random(1,2)" in out
    assert "allgatherv and reduce_scatter rules are keyed by the call's total bytes" in out


# ---- a stand-in for the bench driver ------------------------------------------------------------


def _row(c: Campaign, algo: str, form: str, us: float, seed: int, size: int = 0) -> Row:
    """A row of `c` at the vector `form` (a regular collective: at `size`) measured interleaved
    with a steady native (10 µs) in three rounds, probes agreeing, as collkit_bench's rows
    come."""
    P = c.P[0]
    count = sum(c.vector(form, P)) if form else c.count(size)
    s = list(np.random.default_rng(seed).normal(us, us * 0.03, 40))
    row = Row(
        c.collective,
        algo,
        P,
        count * DATATYPES[c.datatype],
        datatype=c.datatype,
        count=count,
        counts=form,
        samples=s,
        median_us=float(np.median(s)),
        valid=True,
        pattern=c.pattern,
        interleaved=c.interleave,
        mpi="stand-in MPI",
        machine="vm",
        block=c.block,
    )
    row.round_median_us = [float(np.median(x)) for x in np.array_split(s, 3)]
    row.round_native_before_us = row.round_native_after_us = [10.0] * 3
    row.round_probe_rtt_ns_min, row.round_probe_rtt_ns_max = [115.0] * 3, [120.0] * 3
    return row


Speed = Callable[[str, str], float]


def stand_in(speed: Speed, campaigns: list[Campaign]) -> Callable[..., list[Row]]:
    """run_campaign: every algorithm at every point of the campaign, at speed(algo, form) µs;
    `campaigns` gets the interleaved ones (the native call alone, tune's reference, is not kept
    there)."""

    def run_campaign(c: Campaign, mpi: object, store: ResultStore, *a: object) -> list[Row]:
        if c.interleave:
            campaigns.append(c)
        points = [(f, 0) for f in c.forms()] if c.irregular else [("", s) for s in c.sizes]
        for k, (form, size) in enumerate(points):
            for j, name in enumerate(c.algorithms):
                us = 10.0 if name == "native" else speed(name, form)
                store.append(_row(c, name, form, us, seed=100 * k + j, size=size))
        return []

    return run_campaign


class _MPI:
    version = "stand-in MPI"

    def describe(self) -> str:
        return "stand-in MPI"


def _tune(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, opts: TuneOptions, speed: Speed
) -> tuple[Table, list[str], list[Campaign]]:
    campaigns: list[Campaign] = []
    monkeypatch.setattr(camp, "run_campaign", stand_in(speed, campaigns))
    out = tmp_path / "t"
    out.mkdir()
    plan = TunePlan(
        opts,
        out,
        None,
        {},
        None,
        _MPI(),
        "stand-in MPI",
        "vm",  # type: ignore[arg-type]
        {(c, P) for c in opts.collectives for P in opts.P},
    )
    result = run(plan)
    return load(out / "collkit-tuning.json"), result.notes, campaigns


def _o(colls: list[str], tmp: Path, **kw: object) -> TuneOptions:
    return TuneOptions(
        colls,
        [2],
        [8, 64],
        out=str(tmp / "t"),
        plot=False,
        mpi_algorithms=False,
        routing_us=0.0,
        patterns=["back_to_back"],
        **kw,  # type: ignore[arg-type]
    )


def test_tune_measures_each_form_at_each_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table, _, campaigns = _tune(
        tmp_path, monkeypatch, _o(["allgatherv"], tmp_path, only=["ring"]), lambda a, f: 5.0
    )
    (c,) = campaigns
    assert c.counts == ["equal(8)", "random(1,16)", "equal(64)", "random(1,128)"]
    assert c.algorithms == ["native", "allgatherv:ring"]
    rows = list(ResultStore(tmp_path / "t" / "tune.jsonl"))
    # each row says its form and the whole vector's bytes, as bench's rows do
    for r in rows:
        assert r.bytes == sum(_vec(r.counts, "allgatherv", 2)) and r.count == r.bytes
    # keyed by the measured totals: the smallest total measured up to twice the largest
    totals = sorted({r.bytes for r in rows})
    assert [(r.algorithm, r.bytes) for r in table.rules] == [
        ("allgatherv:ring", (totals[0], 2 * totals[-1] - 1))
    ]
    for t in totals:
        assert table.lookup("allgatherv", 2, t) == "allgatherv:ring"
    assert table.lookup("allgatherv", 2, totals[0] - 1) == "native"


def test_allgatherv_rules_follow_the_totals_where_the_winner_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ring wins at the small size, loses at the large: two ranges split at the large size's
    smallest total, native above."""
    opts = _o(["allgatherv"], tmp_path, only=["ring"], counts=["equal(1)"])
    table, _, _ = _tune(tmp_path, monkeypatch, opts, lambda a, f: 5.0 if f == "equal(8)" else 20.0)
    assert [(r.algorithm, r.bytes) for r in table.rules] == [
        ("allgatherv:ring", (16, 127)),
        ("native", (128, 255)),
    ]


def test_forms_at_one_total_that_disagree_leave_it_to_the_mpi() -> None:
    """equal(8) and the list 12,4 both total 16 B at P = 2: ring wins at one only, so the call
    (keyed by its total alone) stays native there, and the notes say why."""
    c = Campaign("allgatherv", ["native", "ring"], [2], [8], counts=["equal(8)", "12,4"])
    rows = [
        _row(c, a, f, 10.0 if a == "native" else (5.0 if f == "equal(8)" else 20.0), seed=k)
        for k, (a, f) in enumerate(
            (a, f) for a in ("native", "allgatherv:ring") for f in ("equal(8)", "12,4")
        )
    ]
    choices = choose(rows)
    assert [(x.counts, x.collkit.algorithm if x.collkit else None) for x in choices] == [
        ("12,4", None),
        ("equal(8)", "allgatherv:ring"),
    ]
    (merged,) = merge_forms(choices)
    assert merged.collkit is None and merged.counts == "12,4; equal(8)"
    (rule,) = rules(choices)
    assert (rule.algorithm, rule.bytes) == ("native", (16, 31))
    (note,) = irregular_notes(choices)
    assert "allgatherv P=2 16 B: the forms at this total chose differently" in note
    assert "equal(8): allgatherv:ring" in note and "12,4: native" in note


@pytest.mark.parametrize("coll", ["gatherv", "scatterv", "alltoallv"])
def test_one_rule_of_every_size_where_one_candidate_wins_at_every_point(
    coll: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    algo = {"gatherv": "linear", "scatterv": "linear", "alltoallv": "pairwise"}[coll]
    opts = _o([coll], tmp_path, only=[algo])
    if coll != "alltoallv":
        opts.patterns = ["back_to_back", "rotate_root"]
    table, notes, _ = _tune(tmp_path, monkeypatch, opts, lambda a, f: 6.0 if "random" in f else 5.0)
    (rule,) = table.rules
    assert (rule.algorithm, rule.bytes) == (f"{coll}:{algo}", EVERY_SIZE)
    assert rule.speedup == pytest.approx(10 / 6, rel=0.05)  # where it gains least
    assert any(
        re.search(
            rf"{coll} P=2: {coll}:{algo} won by 1\.[67]\dx at least at every one of its 4 ", n
        )
        and "one rule of every size" in n
        for n in notes
    ), notes
    # the library's key: every size of the call at P = 2, none at another P
    assert table.lookup(coll, 2, 0) == table.lookup(coll, 2, 1 << 40) == f"{coll}:{algo}"
    assert table.lookup(coll, 3, 0) == "native"


def test_a_point_lost_makes_the_rule_of_every_size_native(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opts = _o(["gatherv"], tmp_path, only=["linear", "binomial"])
    opts.patterns = ["back_to_back"]

    def speed(a: str, f: str) -> float:
        if a == "gatherv:linear":
            return 20.0 if f == "random(1,128)" else 5.0  # loses at one point
        return 20.0 if f == "equal(8)" else 6.0  # binomial loses at another

    table, notes, _ = _tune(tmp_path, monkeypatch, opts, speed)
    (rule,) = table.rules
    assert (rule.algorithm, rule.bytes) == ("native", EVERY_SIZE)
    (note,) = [n for n in notes if n.startswith("gatherv P=2")]
    assert "no candidate won at every one of its 4 points" in note
    assert "gatherv:linear at 3" in note and "gatherv:binomial at 3" in note
    assert "native for every size (gatherv is routed by P alone)" in note
    # a candidate that wins at every point, not the fastest at each, is the rule
    (tmp_path / "b").mkdir()
    table2, _, _ = _tune(
        tmp_path / "b",
        monkeypatch,
        _o(["gatherv"], tmp_path / "b", only=["linear", "binomial"]),
        lambda a, f: 8.0 if a == "gatherv:linear" else (20.0 if f == "equal(8)" else 5.0),
    )
    assert [(r.algorithm, r.bytes) for r in table2.rules] == [("gatherv:linear", EVERY_SIZE)]


def test_reduce_scatter_is_keyed_by_its_total_in_doubles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opts = _o(["reduce_scatter"], tmp_path, only=["pairwise"], counts=["equal(1)"])
    table, _, campaigns = _tune(tmp_path, monkeypatch, opts, lambda a, f: 5.0)
    (c,) = campaigns
    assert c.datatype == "double" and c.counts == ["equal(1)", "equal(8)"]
    (rule,) = table.rules
    assert (rule.algorithm, rule.bytes) == ("reduce_scatter:pairwise", (16, 255))


@pytest.mark.parametrize("coll", ["scan", "exscan"])
def test_scan_and_exscan_are_tuned_as_regular_collectives(
    coll: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One count per rank: bytes per rank, no forms, rules per size as allreduce's."""
    opts = _o([coll], tmp_path, only=["recursive_doubling"])
    table, _, campaigns = _tune(
        tmp_path, monkeypatch, opts, lambda a, f: 5.0 if f == "" else math.nan
    )
    (c,) = campaigns
    assert not c.irregular and c.counts == [] and c.datatype == "double"
    assert {r.counts for r in ResultStore(tmp_path / "t" / "tune.jsonl")} == {""}
    (rule,) = table.rules
    assert (rule.algorithm, rule.bytes) == (f"{coll}:recursive_doubling", (8, 127))


def test_vectors_go_to_as_many_driver_jobs_as_its_command_line_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """alltoallv at P = 64: 4096 entries a vector, 20 KB of text at a 4 KiB mean; 10 sizes x 2
    forms would be 400 KB in one argument, past Linux's 128 KiB: tune splits them into jobs."""
    from collkit.tune.irregular import ARG_BYTES, batches

    forms = forms_at(["equal(1)", "random(1,2)"], "alltoallv", 64, 1, [4096] * 1 + [2048, 1024])
    got = batches(forms, "alltoallv", 64)
    assert [f for b in got for f in b] == forms and len(got) > 1
    for b in got:
        text = ";".join(",".join(map(str, _vec(f, "alltoallv", 64))) for f in b)
        assert len(text) <= ARG_BYTES
    with pytest.raises(InvalidArgumentError, match="alltoallv at P = 400: the vector equal"):
        batches(["equal(1)"], "alltoallv", 400)
    with pytest.raises(InvalidArgumentError, match="collkit_bench's command line"):
        check_options(
            TuneOptions(["alltoallv"], [400], [8], out=str(tmp_path / "t"), counts=["equal(1)"])
        )


def test_a_simulated_tune_simulates_each_vector_and_keys_its_rules_alike(tmp_path: Path) -> None:
    """--simulate: each form at each size simulated with its vector (collkit.sim), the rows as
    measured ones say them, the rules keyed alike; a rerun simulates nothing again."""
    import collkit.tune as ct

    opts = TuneOptions(
        ["allgatherv", "gatherv"],
        [4],
        [8, 1024],
        simulate="loggp",
        counts=["skewed(1)", "equal(1)"],
        out=str(tmp_path / "t"),
        plot=False,
    )
    first = ct.tune(opts)
    rows = [r for r in first.rows if r.collective == "allgatherv"]
    assert {r.counts for r in rows} == {"skewed(16)", "equal(8)", "skewed(1967)", "equal(1024)"}
    for r in rows:
        assert r.source == "simulated" and r.bytes == sum(_vec(r.counts, "allgatherv", 4))
        assert r.datatype == "char" and r.count == r.bytes
    table = load(tmp_path / "t" / "collkit-tuning.json")
    by = {r.collective: r for r in table.rules}
    assert by["gatherv"].bytes == EVERY_SIZE and by["gatherv"].source == "simulated"
    assert by["allgatherv"].bytes[0] == min(r.bytes for r in rows)
    assert any(
        n.startswith("gatherv P=4: ") and "at every one of its 4 points" in n for n in first.notes
    )
    again = ct.tune(opts)
    assert [(r.key(), r.median_us) for r in again.rows] == [
        (r.key(), r.median_us) for r in first.rows
    ]
