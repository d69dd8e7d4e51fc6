"""Call patterns (docs/tuning.md, "Patterns"): the rows say theirs, bench and tune take them,
and a tuning rule is written only where its candidate wins in every pattern measured."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collkit.bench import BenchOptions, Campaign, check_bench
from collkit.errors import InvalidArgumentError
from collkit.results import (
    LIST_FIELDS,
    PATTERNS,
    ResultStore,
    Row,
    read_csv,
    read_jsonl,
    row_from_dict,
    row_to_json,
    write_csv,
)

# ---- rows ---------------------------------------------------------------------------------------


def test_a_row_says_its_pattern_and_round_trips_in_jsonl_and_csv(tmp_path: Path) -> None:
    rows = [
        Row("bcast", "bcast:binomial", 2, 8, pattern=p, median_us=1.0, samples=[1.0])
        for p in PATTERNS
    ]
    assert Row("bcast", "native", 2, 8).pattern == "back_to_back"
    store = ResultStore(tmp_path / "r.jsonl")
    for r in rows:
        assert store.append(r)
    write_csv(tmp_path / "r.csv", rows)
    assert [r.pattern for r in read_jsonl(tmp_path / "r.jsonl")] == list(PATTERNS)
    assert [r.pattern for r in read_csv(tmp_path / "r.csv")] == list(PATTERNS)
    # The pattern is part of a row's identity: the same call made otherwise is another row.
    assert len({r.key() for r in rows}) == len(PATTERNS)
    again = ResultStore(tmp_path / "r.jsonl")
    assert all(r in again for r in rows)
    assert Row("bcast", "bcast:binomial", 2, 8, pattern="evict", attempt=1) not in again


def test_rows_written_before_patterns_load_as_back_to_back(tmp_path: Path) -> None:
    d = json.loads(row_to_json(Row("allreduce", "native", 2, 8, median_us=1.0)))
    del d["pattern"]
    (tmp_path / "old.jsonl").write_text(json.dumps(d) + "\n")
    (old,) = read_jsonl(tmp_path / "old.jsonl")
    assert old.pattern == "back_to_back"
    # A resumed campaign finds it: the row it would measure back to back is already there.
    assert Row("allreduce", "native", 2, 8) in ResultStore(tmp_path / "old.jsonl")
    # An old CSV without the column, and an empty cell, alike.
    header = [k for k in d if k not in LIST_FIELDS]
    lines = [",".join(header), ",".join("" if d[k] is None else str(d[k]) for k in header)]
    (tmp_path / "old.csv").write_text("\n".join(lines) + "\n")
    assert read_csv(tmp_path / "old.csv")[0].pattern == "back_to_back"
    assert row_from_dict({**d, "pattern": ""}).pattern == "back_to_back"


@pytest.mark.parametrize("bad", ["sync0", "BARRIER", " barrier", "back-to-back", 3, ["evict"]])
def test_a_row_with_an_unknown_pattern_is_a_clear_error(bad: object) -> None:
    d = {"collective": "allreduce", "algorithm": "native", "P": 2, "bytes": 8, "pattern": bad}
    with pytest.raises(InvalidArgumentError, match="pattern"):
        row_from_dict(d)


# ---- bench --------------------------------------------------------------------------------------


def test_bench_checks_the_pattern_before_it_runs_anything() -> None:
    c = Campaign("bcast", ["native", "binomial"], [2], [8], pattern="rotate_root")
    assert c.pattern == "rotate_root"
    with pytest.raises(InvalidArgumentError, match="rotate_root moves the root: allreduce"):
        Campaign("allreduce", ["native"], [2], [8], pattern="rotate_root")
    with pytest.raises(InvalidArgumentError, match="not with --sync window"):
        Campaign("allreduce", ["native"], [2], [8], pattern="barrier", sync="window")
    with pytest.raises(InvalidArgumentError, match="must be one of back_to_back"):
        check_bench(BenchOptions("allreduce", P=[2], pattern="sync0"))
    with pytest.raises(InvalidArgumentError, match="rotate_root"):
        check_bench(BenchOptions("barrier", P=[2], pattern="rotate_root"))


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=30) | st.sampled_from(PATTERNS),
    st.sampled_from(["allreduce", "bcast", "barrier", "gather"]),
    st.sampled_from(["barrier", "window"]),
)
def test_a_bench_pattern_is_taken_or_a_clear_error(pattern: str, coll: str, sync: str) -> None:
    from collkit.bench import check_pattern

    try:
        check_pattern(pattern, coll, sync)
    except InvalidArgumentError as e:
        assert "pattern" in str(e) and "\n" not in str(e)
        return
    assert pattern in PATTERNS
    assert pattern != "rotate_root" or coll in ("bcast", "gather")
    assert pattern not in ("barrier", "evict") or sync == "barrier"


def test_bench_cli_refuses_a_bad_pattern_with_exit_2() -> None:
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "collkit", "bench", "allreduce", "-np", "2", "--pattern", "x"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 2
    assert "collkit bench: error: pattern 'x' must be one of" in r.stderr
    assert "Traceback" not in r.stderr


# ---- selection ----------------------------------------------------------------------------------


def measured(algo: str, center: float, pattern: str, nbytes: int = 8, seed: int = 0) -> Row:
    """A row measured interleaved with a steady native (10 µs) in three rounds, probes agreeing."""
    s = list(np.random.default_rng(seed).normal(center, center * 0.03, 40))
    row = Row("bcast", algo, 2, nbytes, samples=s, median_us=float(np.median(s)), valid=True)
    row.pattern, row.interleaved = pattern, True
    row.round_median_us = [float(np.median(x)) for x in np.array_split(s, 3)]
    row.round_native_before_us = row.round_native_after_us = [10.0] * 3
    row.round_probe_rtt_ns_min, row.round_probe_rtt_ns_max = [115.0] * 3, [120.0] * 3
    return row


def pattern_rows(fast_in: dict[str, float]) -> list[Row]:
    """native at 10 µs in each pattern; bcast:binomial at fast_in[pattern] µs."""
    rows = []
    for k, (p, us) in enumerate(fast_in.items()):
        rows.append(measured("native", 10.0, p, seed=k))
        rows.append(measured("bcast:binomial", us, p, seed=k + 10))
    return rows


def test_a_win_back_to_back_that_loses_with_a_barrier_gets_no_rule() -> None:
    from collkit.tune.select import choose, rules

    rows = pattern_rows({"back_to_back": 6.0, "barrier": 12.0})
    (c,) = choose(rows)
    assert c.collkit is None  # native stays
    (cand,) = c.candidates
    assert cand.lost_in == ["barrier"] and cand.pattern == "barrier"
    assert cand.speedups["back_to_back"] > 1.5 and cand.speedups["barrier"] < 1
    (rule,) = rules([c])
    assert rule.algorithm == "native" and rule.speedups == {}
    # Measured back to back alone, the same candidate wins: the barrier is what it lost in.
    alone = choose([r for r in rows if r.pattern == "back_to_back"])[0]
    assert alone.collkit is not None and alone.collkit.speedups == {}
    # Told to decide by back_to_back alone, it wins there, the barrier's loss still shown.
    (by,) = choose(rows, decide_by="back_to_back")
    assert by.collkit is not None and by.collkit.pattern == "back_to_back"
    assert set(by.collkit.speedups) == {"back_to_back", "barrier"}


def test_a_win_in_every_pattern_is_a_rule_with_the_smallest_speedup() -> None:
    from collkit.tune.select import choose, rules

    rows = pattern_rows({"back_to_back": 5.0, "barrier": 8.0, "rotate_root": 6.0})
    (c,) = choose(rows)
    assert c.collkit is not None and c.collkit.pattern == "barrier"
    sp = c.collkit.speedups
    assert list(sp) == ["back_to_back", "barrier", "rotate_root"]
    assert c.collkit.speedup == pytest.approx(min(sp.values()))
    assert sp["back_to_back"] > sp["rotate_root"] > sp["barrier"] > 1.1
    (rule,) = rules([c])
    assert rule.algorithm == "bcast:binomial" and rule.speedup == pytest.approx(sp["barrier"])
    assert rule.speedups == sp


def test_a_pattern_not_measured_for_a_candidate_is_no_win() -> None:
    from collkit.tune.select import choose

    rows = pattern_rows({"back_to_back": 5.0, "barrier": 5.0})
    rows.append(measured("native", 10.0, "evict", seed=30))  # the candidate has no evict row
    (c,) = choose(rows)
    assert c.collkit is None and c.candidates[0].lost_in == ["evict"]
    # Only the patterns asked for count: a folder's other rows are left out.
    (asked,) = choose(rows, patterns={"bcast": ["back_to_back", "barrier"]})
    assert asked.collkit is not None and set(asked.collkit.speedups) == {
        "back_to_back",
        "barrier",
    }


def test_a_rule_keeps_its_speedups_and_old_tables_load(tmp_path: Path) -> None:
    from collkit.tune.table import Rule, Table, load, save

    rule = Rule("bcast", (2, 2), (8, 15), "bcast:binomial", speedup=1.2)
    rule.speedups = {"back_to_back": 1.5, "barrier": 1.2, "evict": math.nan}
    save(Table(rules=[rule], mpi="MPICH 5.0.2"), tmp_path / "t.json")
    d = json.loads((tmp_path / "t.json").read_text())
    assert d["rules"][0]["speedups"] == {"back_to_back": 1.5, "barrier": 1.2, "evict": None}
    (back,) = load(tmp_path / "t.json").rules
    assert back.speedups["barrier"] == 1.2 and math.isnan(back.speedups["evict"])
    # A table without per-pattern fields loads, its rules without speedups; and is written so.
    del d["rules"][0]["speedups"]
    (tmp_path / "old.json").write_text(json.dumps(d))
    (old,) = load(tmp_path / "old.json").rules
    assert old.speedups == {} and old.algorithm == "bcast:binomial"
    save(load(tmp_path / "old.json"), tmp_path / "again.json")
    assert "speedups" not in json.loads((tmp_path / "again.json").read_text())["rules"][0]


@pytest.mark.parametrize(
    "speedups",
    [{"sync0": 1.0}, {"barrier": "fast"}, ["barrier"], {"barrier": 1.0, "": 2.0}, 1.5],
)
def test_a_table_with_bad_speedups_is_a_clear_error(speedups: object) -> None:
    from collkit.tune.table import validate

    doc = {
        "format": "collkit-tuning",
        "version": 1,
        "rules": [
            {
                "collective": "bcast",
                "P": [2, 2],
                "bytes": [8, 15],
                "algorithm": "bcast:binomial",
                "speedups": speedups,
            }
        ],
    }
    with pytest.raises(InvalidArgumentError, match="speedups"):
        validate(doc)


# ---- tune's options -----------------------------------------------------------------------------


def test_tune_parses_patterns_and_refuses_bad_ones() -> None:
    import argparse

    from collkit.cli.tune import parse_patterns

    assert parse_patterns("barrier, back_to_back,barrier") == ["barrier", "back_to_back"]
    for bad in ("", ",", "barrier,,evict", "sync0", "barrier,Evict"):
        with pytest.raises(argparse.ArgumentTypeError, match="back_to_back"):
            parse_patterns(bad)


def test_a_resumed_campaign_keeps_its_first_runs_choice_of_evict(tmp_path: Path) -> None:
    # evict is a default pattern only where its work is cheap here, a timing that a busier or
    # quieter rerun can read the other way: the folder's measured rows decide it then, so the
    # same command measures only what is missing (no new pattern, none dropped).
    from collkit.tune.run import resumed_patterns

    defaults = ["back_to_back", "barrier", "evict"]
    assert resumed_patterns(defaults, tmp_path, 16, "vm") == defaults  # nothing measured yet
    store = ResultStore(tmp_path / "tune.jsonl")
    row = measured("native", 10.0, "back_to_back")
    row.block, row.machine = 16, "vm"
    store.append(row)
    assert resumed_patterns(defaults, tmp_path, 16, "vm") == ["back_to_back", "barrier"]
    assert resumed_patterns(defaults, tmp_path, 16, "other") == defaults  # not this machine's
    assert resumed_patterns(defaults, tmp_path, 4, "vm") == defaults  # nor this block's
    evicted = measured("native", 10.0, "evict")
    evicted.block, evicted.machine = 16, "vm"
    store.append(evicted)
    assert resumed_patterns(["back_to_back", "barrier"], tmp_path, 16, "vm") == defaults


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40) | st.lists(st.sampled_from([*PATTERNS, "x", " ", ""])).map(",".join))
def test_patterns_option_gives_patterns_or_a_clear_error(text: str) -> None:
    import argparse

    from collkit.cli.tune import parse_patterns

    try:
        got = parse_patterns(text)
    except argparse.ArgumentTypeError as e:
        assert "back_to_back" in str(e) and "\n" not in str(e)
        return
    assert got and all(p in PATTERNS for p in got) and len(set(got)) == len(got)


def test_tune_checks_patterns_against_its_collectives() -> None:
    from collkit.tune.campaign import TuneOptions, check_patterns, default_patterns, patterns_for

    check_patterns(["bcast", "allreduce"], ["barrier", "rotate_root"], None)
    with pytest.raises(InvalidArgumentError, match="none of allreduce"):
        check_patterns(["allreduce"], ["rotate_root"], None)
    with pytest.raises(InvalidArgumentError, match="not among --patterns"):
        check_patterns(["bcast"], ["barrier"], "evict")
    with pytest.raises(InvalidArgumentError, match="every collective must have a root"):
        check_patterns(["bcast", "allreduce"], None, "rotate_root")
    opts = TuneOptions(["bcast", "allreduce"], [2], [8], patterns=["barrier", "rotate_root"])
    assert patterns_for(opts, "bcast") == ["barrier", "rotate_root"]
    assert patterns_for(opts, "allreduce") == ["barrier"]
    # The default: barrier beside back_to_back where a block has more than one call (at one
    # call they time the same), rotate_root with a root, evict where its work is cheap enough.
    assert default_patterns(["allreduce"], 1, 100, 500, 0.1) == ["back_to_back"]
    assert default_patterns(["bcast"], 16, 100, 500, 0.1) == [
        "back_to_back",
        "barrier",
        "rotate_root",
    ]
    assert default_patterns(["allreduce"], 1, 100, 500, 1e-6)[-1] == "evict"


def test_tune_cli_refuses_bad_patterns_with_exit_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    base = [sys.executable, "-m", "collkit", "tune", "-np", "2", "-o", str(tmp_path / "t")]
    for args, msg in (
        (["allreduce", "--patterns", "barrier,sync0"], "unknown pattern 'sync0'"),
        (["allreduce", "--patterns", "rotate_root"], "none of allreduce has one"),
        (["bcast", "--patterns", "barrier", "--decide-by", "evict"], "not among --patterns"),
        (["bcast", "--simulate", "postal", "--patterns", "barrier"], "not --simulate"),
    ):
        r = subprocess.run([*base, *args], capture_output=True, text=True, timeout=60, check=False)
        assert r.returncode == 2, (args, r.stderr)
        assert "collkit tune: error:" in r.stderr and msg in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    assert not (tmp_path / "t").exists()  # refused before anything was made


# ---- the tour's check ---------------------------------------------------------------------------


def test_the_tours_check_says_per_pattern_whether_the_rules_held() -> None:
    from collkit.cli.tour import check_patterns_of, pattern_line
    from collkit.tune.table import Rule

    held = pattern_line("barrier", [(1.3, True, 8), (1.1, True, 64)])
    assert held == "pattern barrier: speedup 1.10x..1.30x: [green]held[/green]"
    lost = pattern_line("back_to_back", [(1.3, True, 8), (0.9, False, 64), (math.nan, False, 512)])
    assert "speedup 0.90x..1.30x: [red]did not hold[/red] (at 64 B, 512 B)" in lost
    assert "not measured" in pattern_line("evict", [(math.nan, False, 8)])
    # The patterns of the rules tune wrote, in PATTERNS' order; none named: tune's default.
    r = Rule("allreduce", (2, 2), (8, 15), "allreduce:rd", speedups={"evict": 1.1, "barrier": 1.2})
    assert check_patterns_of([r], 16) == ["barrier", "evict"]
    plain = Rule("allreduce", (2, 2), (8, 15), "allreduce:rd")
    assert check_patterns_of([plain], 16)[:2] == ["back_to_back", "barrier"]
    assert check_patterns_of([plain], 1)[0] == "back_to_back"


def test_an_empty_key_in_a_table_is_refused_like_any_unknown_key() -> None:
    from collkit.tune.table import validate

    rule = {"collective": "bcast", "P": [2, 2], "bytes": [8, 15], "algorithm": "native", "": 1}
    with pytest.raises(InvalidArgumentError, match='unknown keys: ""'):
        validate({"format": "collkit-tuning", "version": 1, "rules": [rule]})
    with pytest.raises(InvalidArgumentError, match='unknown keys: ""'):
        validate({"format": "collkit-tuning", "version": 1, "rules": [], "": 0})


# ---- the barrier before each call -------------------------------------------------------------


def test_a_campaign_names_the_barrier_before_collkits_calls_or_a_clear_error() -> None:
    c = Campaign("bcast", ["native", "binomial"], [2], [8], pattern="barrier", barrier="tree")
    assert c.barrier == "barrier:tree"  # canonical: what a table rule says
    assert (
        Campaign("bcast", ["native"], [2], [8], pattern="barrier", barrier="native").barrier == ""
    )
    with pytest.raises(InvalidArgumentError, match="needs the pattern barrier or evict"):
        Campaign("bcast", ["native"], [2], [8], barrier="barrier:tree")
    for bad in ("allreduce:rd", "nonsense", "barrier:tree(k=x)"):
        with pytest.raises(InvalidArgumentError):
            Campaign("bcast", ["native"], [2], [8], pattern="barrier", barrier=bad)


def test_the_barrier_is_part_of_a_rows_identity_and_old_rows_have_none(tmp_path: Path) -> None:
    a = Row("bcast", "bcast:binomial", 2, 8, pattern="barrier", barrier="barrier:tree")
    b = Row("bcast", "bcast:binomial", 2, 8, pattern="barrier")
    assert a.key() != b.key()
    store = ResultStore(tmp_path / "r.jsonl")
    assert store.append(a) and store.append(b)
    assert sorted(r.barrier for r in ResultStore(tmp_path / "r.jsonl")) == ["", "barrier:tree"]
    old = {"collective": "bcast", "algorithm": "native", "P": 2, "bytes": 8, "pattern": "barrier"}
    assert row_from_dict(old).barrier == ""


def test_tune_keeps_the_rows_timed_after_the_barrier_in_effect() -> None:
    from collkit.tune.campaign import after_barriers, table_barriers
    from collkit.tune.table import Rule, Table

    rows = [
        Row("bcast", "native", 2, 8, pattern="barrier"),
        Row("bcast", "native", 2, 8, pattern="barrier", barrier="barrier:tree"),  # a check's
        Row("bcast", "bcast:binomial", 2, 8, pattern="barrier"),
        Row("bcast", "bcast:binomial", 2, 8, pattern="barrier", barrier="barrier:tree"),
        Row("bcast", "bcast:binomial", 2, 8, pattern="back_to_back"),
        Row("bcast", "bcast:binomial", 4, 8, pattern="barrier"),
    ]
    kept = after_barriers(rows, {2: "barrier:tree"})
    assert [(r.P, r.algorithm, r.pattern, r.barrier) for r in kept] == [
        (2, "native", "barrier", ""),
        (2, "bcast:binomial", "barrier", "barrier:tree"),
        (2, "bcast:binomial", "back_to_back", ""),
        (4, "bcast:binomial", "barrier", ""),  # no barrier rule at P = 4: the MPI's
    ]
    t = Table(rules=[Rule("barrier", (2, 3), (0, 0), "barrier:tree")])
    assert table_barriers(t, [2, 3, 4]) == {2: "barrier:tree", 3: "barrier:tree", 4: ""}
    assert table_barriers(None, [2]) == {}


def stand_in_row(c: Campaign, name: str, after: str, samples: list[float], **more: Any) -> Row:
    """A row of campaign `c` at P = 2, 8 B (a barrier: 0 B), timed after `after`, as a stand-in
    run_campaign stores it."""
    return Row(
        c.collective,
        name,
        2,
        8 if c.collective != "barrier" else 0,
        datatype=c.datatype,
        pattern=c.pattern,
        barrier=after,
        interleaved=c.interleave,
        samples=samples,
        **more,
    )


@pytest.mark.parametrize(
    "slower", [{}, {"barrier:tree": 1.5}, {"barrier:tree": 1.5, "barrier:recexch": 1.5}]
)
def test_a_barrier_that_slows_the_mpis_calls_after_it_is_passed_over(
    slower: dict[str, float], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """tune times the MPI's own bcast after each barrier that won alone, fastest first: one
    that makes it 1.5x slower than after the MPI's barrier (no collkit bcast winning there) is
    passed over for the next, and with none left the barrier stays the MPI's; each try times
    bcast's barrier pattern after that barrier."""
    import collkit.tune.campaign as camp
    from collkit.tune.campaign import TuneOptions

    runs: list[tuple[str, str, bool]] = []
    alone: list[tuple[str, str]] = []
    rng = np.random.default_rng(1)

    def fake_run(
        c: Campaign, mpi: object, store: ResultStore, *a: object, **k: object
    ) -> list[Row]:
        if not c.interleave:  # the MPI's calls in a job of their own: steady at 1
            assert c.algorithms == ["native"] and c.barrier == ""
            alone.append((c.collective, c.pattern))
        else:
            runs.append((c.collective, c.barrier, c.native_after_barrier))
        for name in c.algorithms:
            after = c.barrier if (name != "native" or c.native_after_barrier) else ""
            scale = slower.get(after, 1.0) if name == "native" else 1.0
            store.append(stand_in_row(c, name, after, list(scale * (1 + 0.01 * rng.random(50)))))
        return []

    monkeypatch.setattr(camp, "run_campaign", fake_run)
    monkeypatch.setattr(
        camp, "barrier_winners", lambda *a: {2: ["barrier:tree", "barrier:recexch"]}
    )
    opts = TuneOptions(
        ["barrier", "bcast"],
        [2],
        [8],
        patterns=["barrier"],
        mpi_algorithms=False,
        only=["binomial"],
    )
    barriers: dict[int, str] = {}
    harmed: dict[int, list[tuple[str, list[tuple[str, int, float]]]]] = {}
    store = ResultStore(tmp_path / "t.jsonl")
    camp.measure(opts, object(), store, barriers=barriers, harmed=harmed)  # type: ignore[arg-type]
    bcast = [(b, n) for c, b, n in runs if c == "bcast"]
    assert alone == [("barrier", "barrier"), ("bcast", "barrier")]  # once each, never re-run
    if not slower:
        assert barriers == {2: "barrier:tree"} and harmed == {}
        assert bcast == [("barrier:tree", False), ("barrier:tree", True)]
    elif len(slower) == 1:
        assert barriers == {2: "barrier:recexch"}
        ((b, ((coll, nbytes, x),)),) = harmed[2]
        assert (b, coll, nbytes) == ("barrier:tree", "bcast", 8) and 1.4 < x < 1.6
        assert bcast == [
            ("barrier:tree", False),
            ("barrier:tree", True),
            ("barrier:recexch", False),
            ("barrier:recexch", True),
        ]
    else:
        assert barriers == {2: ""} and [b for b, _ in harmed[2]] == [
            "barrier:tree",
            "barrier:recexch",
        ]
        assert bcast[-1] == ("", False)  # timed again after the MPI's barrier


def test_a_gain_only_over_the_mpis_calls_slowed_in_the_same_job_is_no_rule(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """MPICH on a 2-core VM: its own calls ran 3x slower in the jobs that interleave them with
    collkit's than in a job of their own, and a collkit barrier slowed the calls after it. So a
    collkit bcast after barrier:tree that beats the interleaved native (1.5 against 3) but not
    the MPI alone (1.0) is no win; the MPI's bcast after barrier:tree (2.0) is slower than
    alone, so barrier:tree is passed over; and after the MPI's barrier the collkit bcast (0.7)
    wins, its speedup said against the MPI alone (1 / 0.7), not against the slowed job's."""
    import collkit.tune.campaign as camp
    from collkit.tune.campaign import TuneOptions, after_barriers, campaign_rows
    from collkit.tune.select import choose

    rng = np.random.default_rng(2)

    def scale(name: str, after: str, interleaved: bool) -> float:
        if name != "native":
            return 1.5 if after == "barrier:tree" else 0.7
        if after == "barrier:tree":
            return 2.0
        return 3.0 if interleaved else 1.0

    def fake_run(
        c: Campaign, mpi: object, store: ResultStore, *a: object, **k: object
    ) -> list[Row]:
        native_us = scale("native", c.barrier if c.native_after_barrier else "", c.interleave)
        for name in c.algorithms:
            after = c.barrier if (name != "native" or c.native_after_barrier) else ""
            x = scale(name, after, c.interleave)
            s = list(x * (1 + 0.01 * rng.random(45)))
            store.append(
                stand_in_row(
                    c,
                    name,
                    after,
                    s,
                    valid=True,
                    round_median_us=[x] * 3,
                    round_native_before_us=[native_us] * 3,
                    round_native_after_us=[native_us] * 3,
                    round_probe_rtt_ns_min=[115.0] * 3,
                    round_probe_rtt_ns_max=[120.0] * 3,
                )
            )
        return []

    monkeypatch.setattr(camp, "run_campaign", fake_run)
    monkeypatch.setattr(camp, "barrier_winners", lambda *a: {2: ["barrier:tree"]})
    opts = TuneOptions(
        ["barrier", "bcast"], [2], [8], patterns=["barrier"], mpi_algorithms=False,
        only=["binomial"],
    )  # fmt: skip
    barriers: dict[int, str] = {}
    harmed: dict[int, list[tuple[str, list[tuple[str, int, float]]]]] = {}
    store = ResultStore(tmp_path / "t.jsonl")
    camp.measure(opts, object(), store, barriers=barriers, harmed=harmed)  # type: ignore[arg-type]
    assert barriers == {2: ""}
    ((b, ((coll, nbytes, x),)),) = harmed[2]
    assert (b, coll, nbytes) == ("barrier:tree", "bcast", 8) and 1.9 < x < 2.1
    (c,) = [
        ch
        for ch in choose(after_barriers(campaign_rows(opts, store), barriers))
        if ch.collective == "bcast"
    ]
    assert c.collkit is not None and c.collkit.algorithm == "bcast:binomial"
    assert 1.35 < c.collkit.speedup < 1.5  # 1 / 0.7, against the MPI alone, not 3 / 0.7
    assert c.collkit.alone_speedup == pytest.approx(c.collkit.speedup)


@pytest.mark.parametrize("solo_us", [0.16, 0.30])
def test_a_candidate_slowed_by_the_interleaving_is_timed_in_a_job_of_its_own(
    solo_us: float, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Open MPI's alltoallv at P = 2 on a 2-core VM: in tune's interleaved job the MPI's call
    took 0.60 us and alltoallv:linear 0.45 (a win there), the MPI's call alone 0.21 (a loss
    against it), and linear alone 0.16 (a win). So a candidate that wins in its job and loses
    to the MPI alone is timed in a job of its own, and that job is what is set against the
    MPI alone: it wins at 0.16 (speedup 0.21 / 0.16), and at 0.30 the MPI's call stays. A
    candidate that loses in its own job (pairwise, 0.70) or wins against both (ring, 0.10)
    needs no job of its own."""
    import collkit.tune.campaign as camp
    from collkit.tune.campaign import TuneOptions, campaign_rows
    from collkit.tune.select import choose

    rng = np.random.default_rng(3)
    us = {
        ("native", True): 0.60,
        ("native", False): 0.21,
        ("allgather:ring", True): 0.10,
        ("allgather:rd", True): 0.45,
        ("allgather:rd", False): solo_us,
        ("allgather:bruck", True): 0.70,
        ("allgather:bruck", False): 0.05,  # never asked for: it loses in its own job
    }
    jobs: list[tuple[list[str], bool]] = []

    def fake_run(
        c: Campaign, mpi: object, store: ResultStore, *a: object, **k: object
    ) -> list[Row]:
        jobs.append((list(c.algorithms), c.interleave))
        native_us = us[("native", c.interleave)]
        for name in c.algorithms:
            x = us[(name, c.interleave)]
            more: dict[str, Any] = {}
            if c.interleave:
                more = dict(
                    round_median_us=[x] * 3,
                    round_native_before_us=[native_us] * 3,
                    round_native_after_us=[native_us] * 3,
                    round_probe_rtt_ns_min=[115.0] * 3,
                    round_probe_rtt_ns_max=[120.0] * 3,
                )
            s = list(x * (1 + 0.02 * rng.random(45)))
            store.append(stand_in_row(c, name, "", s, valid=True, **more))
        return []

    monkeypatch.setattr(camp, "run_campaign", fake_run)
    opts = TuneOptions(
        ["allgather"], [2], [8], patterns=["back_to_back"], mpi_algorithms=False,
        only=["ring", "rd", "bruck"],
    )  # fmt: skip
    store = ResultStore(tmp_path / "t.jsonl")
    camp.measure(opts, object(), store)  # type: ignore[arg-type]
    assert [(sorted(a), i) for a, i in jobs] == [
        (sorted(["native", "allgather:ring", "allgather:rd", "allgather:bruck"]), True),
        (["native"], False),
        (["allgather:rd"], False),  # the one ambiguous candidate, alone
    ]
    (c,) = choose(campaign_rows(opts, store))
    rd = next(x for x in c.candidates if x.algorithm == "allgather:rd")
    assert rd.alone_us == pytest.approx(solo_us, rel=0.03)
    assert rd.alone_speedup == pytest.approx(0.21 / solo_us, rel=0.05)
    assert c.winners[0] == "allgather:ring"  # 0.10 wins against both, and gains most
    assert ("allgather:rd" in c.winners) == (solo_us < 0.21)
    assert "allgather:bruck" not in c.winners


def test_a_campaign_timed_again_after_another_barrier_times_its_candidates_alone_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """When tune passes a barrier over and times the barrier pattern again after the next one,
    the candidates that need a job of their own get one after that barrier too (their rows
    after the first barrier no longer count: after_barriers)."""
    import collkit.tune.campaign as camp
    from collkit.tune.campaign import TuneOptions

    timed: list[tuple[str, str, bool]] = []
    alone: list[str] = []

    def fake_run(c: Campaign, *a: object, **k: object) -> list[Row]:
        timed.append((c.collective, c.barrier, c.interleave))
        return []

    monkeypatch.setattr(camp, "run_campaign", fake_run)
    monkeypatch.setattr(camp, "remeasure_suspects", lambda *a, **k: None)
    monkeypatch.setattr(
        camp, "time_alone", lambda opts, c, *a, **k: alone.append(f"{c.collective}/{c.barrier}")
    )
    opts = TuneOptions(["bcast"], [2], [8], patterns=["barrier"], mpi_algorithms=False)
    c = Campaign(
        collective="bcast", algorithms=["native", "bcast:binomial"], P=[2], sizes=[8],
        pattern="barrier",
    )  # fmt: skip
    store = ResultStore(tmp_path / "t.jsonl")
    camp.run_after(opts, [c], "barrier:recexch", object(), store, None, None)  # type: ignore[arg-type]
    assert timed == [("bcast", "barrier:recexch", True)]
    assert alone == ["bcast/barrier:recexch"]


def test_a_win_in_the_slowest_rank_that_loses_in_the_ranks_mean_is_no_rule() -> None:
    """A bcast whose receiver finishes sooner than the MPI's (the slowest rank's time: 8 against
    10 µs) but whose root, which the MPI's lets go at once, waits (the mean over ranks: 7
    against 6 µs, what IMB's t_avg reports) is no win; with both faster it wins, its speedup
    the smaller of the two; rows without means over ranks are compared in the slowest rank's."""
    from collkit.tune.select import choose

    def with_means(row: Row, center: float, seed: int) -> Row:
        s = np.random.default_rng(seed).normal(center, center * 0.03, len(row.samples))
        row.rank_mean_samples = [min(float(m), x) for m, x in zip(s, row.samples, strict=True)]
        return row

    native = with_means(measured("native", 10.0, "barrier", seed=1), 6.0, 2)
    rootwait = with_means(measured("bcast:binomial", 8.0, "barrier", seed=3), 7.0, 4)
    (c,) = choose([native, rootwait])
    assert c.collkit is None
    (cand,) = c.candidates
    assert cand.rank_mean_speedup < 0.9 and cand.speedup == pytest.approx(cand.rank_mean_speedup)
    both = with_means(measured("bcast:binomial", 8.0, "barrier", seed=3), 5.5, 4)
    (w,) = choose([native, both])
    assert w.collkit is not None and 1.05 < w.collkit.speedup < 1.15  # 6 / 5.5, not 10 / 8
    old = measured("bcast:binomial", 8.0, "barrier", seed=3)  # no means: the slowest rank's
    (o,) = choose([native, old])
    assert o.collkit is not None and o.collkit.rank_mean_speedup == math.inf
