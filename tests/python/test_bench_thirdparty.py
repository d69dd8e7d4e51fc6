"""benchmarks/bench_thirdparty.py without MPI or IMB: the parser of IMB's tables (on output of a
real IMB-MPI1 run, and hostile text), the pair statistics, the checks of --imb-src and the
arguments, and resuming from a half-written pairs file without repeating a run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collkit.errors import CollkitError, InvalidArgumentError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_thirdparty as bt

SETTINGS = settings(
    max_examples=int(os.environ.get("COLLKIT_PROPERTY_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# From `mpiexec -n 2 IMB-MPI1 -npmin 2 -msglog 3:6 -iter 200 -time 2 -mem 1 -zero_size 0
# Allreduce Bcast Barrier` (IMB 2021.11 at 46e8757, the pip MPICH 5.0), header shortened.
SAMPLE = """\
#----------------------------------------------------------------
#    Intel(R) MPI Benchmarks 2021.11, MPI-1 part
#----------------------------------------------------------------
# Date                  : Tue Dec  1 21:58:59 2026
# MPI Version           : 5.0

# List of Benchmarks to run:

# Allreduce
# Bcast
# Barrier

#----------------------------------------------------------------
# Benchmarking Allreduce
# #processes = 2
#----------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            8          200         0.37         0.44         0.41
           16          200         0.35         0.41         0.38
           32          200         0.62         0.69         0.66
           64          200         0.36         0.41         0.38

#----------------------------------------------------------------
# Benchmarking Bcast
# #processes = 2
#----------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            8          200         0.16         0.21         0.18
           16          200         0.16         0.20         0.18
           32          200         0.19         0.22         0.20
           64          200         0.16         0.20         0.18

#---------------------------------------------------
# Benchmarking Barrier
# #processes = 2
#---------------------------------------------------
 #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
          200         0.39         0.39         0.39


# All processes entering MPI_Finalize
"""


LINE_66 = next(i for i, ln in enumerate(SAMPLE.splitlines(), 1) if ln.endswith("0.66"))


def test_parse_imb_reads_t_avg_per_benchmark_processes_and_size() -> None:
    t = bt.parse_imb(SAMPLE)
    assert set(t) == {"Allreduce", "Bcast", "Barrier"}
    assert t["Allreduce"][2] == {8: 0.41, 16: 0.38, 32: 0.66, 64: 0.38}
    assert t["Bcast"][2][32] == 0.20
    assert t["Barrier"] == {2: {0: 0.39}}  # no #bytes column: size 0, as the table reads it


def test_parse_imb_keeps_process_counts_apart() -> None:
    # -npmin below -np: IMB times each group size in a block of its own
    four = SAMPLE.replace(
        "# Benchmarking Bcast\n# #processes = 2",
        "# Benchmarking Bcast\n"
        "# #processes = 4\n# ( 0 additional processes waiting in MPI_Barrier)",
    )
    t = bt.parse_imb(four)
    assert set(t["Bcast"]) == {4} and set(t["Allreduce"]) == {2}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "no result table"),
        (
            "#    Intel(R) MPI Benchmarks 2021.11\n# All processes entering MPI_Finalize\n",
            "no result table",
        ),
        # the run stopped after a block's header: not a silent empty result
        (SAMPLE[: SAMPLE.index("            8          200         0.16")], "Bcast at 2"),
        # IMB's own line when its -time budget runs out (a loaded machine): the rest not timed
        (
            SAMPLE.replace(
                "           32          200         0.62         0.69         0.66\n",
                "           32 time-out.; Time limit (secs_per_sample * msg_sizes_list_len)"
                ' is over; use "-time X" or SECS_PER_SAMPLE=X (IMB_settings.h) to increase'
                " time limit.\n",
            ),
            "stopped Allreduce at 32 B: its time limit",
        ),
        (SAMPLE.replace("0.66\n", "0.66   7\n"), f"line {LINE_66}: 6 fields under a header of 5"),
        (SAMPLE.replace("0.38\n\n#---", "x.38\n\n#---", 1), "not a number"),
        (SAMPLE.replace("0.39         0.39\n", "0.39         nan\n"), "out of range"),
        (SAMPLE.replace("# #processes = 2\n", "", 1), "no '#processes = N' line"),
    ],
)
def test_parse_imb_refuses_what_is_not_a_whole_table(text: str, says: str) -> None:
    with pytest.raises(InvalidArgumentError, match=says):
        bt.parse_imb(text)


@SETTINGS
@given(st.text(max_size=400))
def test_parse_imb_random_text_is_a_table_or_a_clear_error(text: str) -> None:
    try:
        bt.parse_imb(text)
    except CollkitError as e:
        assert str(e).startswith("IMB output")


@SETTINGS
@given(
    st.integers(0, len(SAMPLE)),
    st.integers(0, 40),
    st.sampled_from(["", "-", "1e999", "nan", " 8 200 1 1", "\n# Benchmarking X\n", "é", "\x00"]),
)
def test_parse_imb_mutated_output_is_a_table_or_a_clear_error(at: int, cut: int, put: str) -> None:
    text = SAMPLE[:at] + put + SAMPLE[at + cut :]
    try:
        t = bt.parse_imb(text)
    except CollkitError as e:
        assert str(e).startswith("IMB output")
        return
    for by_p in t.values():
        for rows in by_p.values():
            assert rows and all(n >= 0 and 0 <= x < float("inf") for n, x in rows.items())


def test_pair_stats_medians_ratio_and_pairs_won() -> None:
    pairs = [(2.0, 1.0), (2.0, 3.0), (4.0, 2.0), (1.0, 0.8)]  # ratios 0.5 1.5 0.5 0.8
    s = bt.pair_stats(pairs)
    assert s is not None
    ratios = sorted(c / n for n, c in pairs)
    assert s.ratio == pytest.approx((ratios[1] + ratios[2]) / 2)
    assert s.won == sum(c < n for n, c in pairs) == 3
    assert s.pairs == 4 and s.native_us == 2.0 and s.collkit_us == pytest.approx(1.5)
    assert s.q1 <= s.ratio <= s.q3
    # the median of the ratios, not the ratio of the medians
    skew = [(1.0, 3.0), (10.0, 5.0), (100.0, 120.0)]  # ratios 3, 0.5, 1.2
    t = bt.pair_stats(skew)
    assert t is not None and t.ratio == pytest.approx(1.2)
    assert t.collkit_us / t.native_us == pytest.approx(0.5)
    # a native time IMB printed as 0.00 has no ratio
    z = bt.pair_stats([(0.0, 1.0), (2.0, 1.0)])
    assert z is not None and z.pairs == 1 and z.ratio == 0.5
    assert bt.pair_stats([(0.0, 1.0)]) is None


KEY = {"mpi": "MPICH 5.0", "kind": "mpich", "imb": "c0ffee", "np": 2, "msglog": [3, 6],
       "iter": 200, "collectives": ["Allreduce", "Bcast", "Barrier"], "table": "ab12"}  # fmt: skip


def run_row(pair: int, way: str, scale: float, key: dict[str, Any] = KEY) -> dict[str, Any]:
    t = bt.parse_imb(SAMPLE)
    routes = [
        {"collective": "allreduce", "algorithm": "allreduce:rd", "P": 2, "bytes": 8, "calls": 90},
        {"collective": "allreduce", "algorithm": "native", "P": 2, "bytes": 8, "calls": 10},
    ]
    return {
        "key": key,
        "pair": pair,
        "variant": "default",
        "way": way,
        "t_avg": {
            b: {str(P): {str(n): x * scale for n, x in r.items()} for P, r in bp.items()}
            for b, bp in t.items()
        },
        "routes": routes if way == bt.ROUTES else [],
        "load": [1.0, 1.0],
        "command": way,
    }


def test_pairs_of_and_collkit_share_read_complete_pairs_of_the_key() -> None:
    other = {**KEY, "table": "another"}
    runs = [
        run_row(0, "native", 1.0),
        run_row(0, "collkit", 0.5),
        run_row(1, "native", 1.0),
        run_row(1, "collkit", 2.0),
        run_row(2, "native", 1.0),  # its collkit half not run yet: not a pair
        run_row(3, "native", 1.0, other),
        run_row(3, "collkit", 9.0, other),
        run_row(0, bt.ROUTES, 7.0),  # counts the routes, untimed: never half of a pair
        run_row(0, bt.ROUTES, 7.0),
    ]
    pairs = bt.pairs_of(runs, KEY, "default", "Allreduce", 2, 32)
    assert pairs == [(0.66, 0.33), (0.66, 1.32)]
    assert bt.pairs_of(runs, KEY, "sync0", "Allreduce", 2, 32) == []
    assert bt.collkit_share(runs, KEY, "default", "allreduce", 2, 8) == (180, 200)
    assert bt.collkit_share(runs, KEY, "default", "bcast", 2, 8) == (0, 0)


def test_read_runs_resumes_a_half_written_file_and_todo_skips_what_ran(tmp_path: Path) -> None:
    log = tmp_path / "pairs.jsonl"
    whole = [run_row(0, "native", 1.0), run_row(0, "collkit", 0.9), run_row(1, "native", 1.1)]
    cut = json.dumps(run_row(1, "collkit", 1.0))[:57]  # stopped while writing
    log.write_text("".join(json.dumps(r) + "\n" for r in whole) + cut)
    runs = bt.read_runs(log)
    assert [(r["pair"], r["way"]) for r in runs] == [(0, "native"), (0, "collkit"), (1, "native")]
    kept = log.read_text()
    assert kept.endswith("\n") and [json.loads(ln) for ln in kept.splitlines()] == whole
    left = bt.todo(runs, KEY, 3, ["default"])
    assert left == [(1, "default", "collkit"), (2, "default", "native"), (2, "default", "collkit"),
                    (0, "default", bt.ROUTES)]  # fmt: skip
    assert bt.todo(runs, {**KEY, "np": 4}, 1, ["default"]) == [
        (0, "default", "native"),
        (0, "default", "collkit"),
        (0, "default", "routes"),
    ]
    assert bt.todo([*runs, run_row(0, bt.ROUTES, 1.0)], KEY, 1, ["default"]) == []


def test_read_runs_ends_a_last_line_written_whole_without_its_newline(tmp_path: Path) -> None:
    log = tmp_path / "pairs.jsonl"
    log.write_text(json.dumps(run_row(0, "native", 1.0)))
    assert len(bt.read_runs(log)) == 1
    bt.append_run(log, run_row(0, "collkit", 1.0))
    assert [r["way"] for r in bt.read_runs(log)] == ["native", "collkit"]


def test_read_runs_refuses_a_bad_line_before_the_end(tmp_path: Path) -> None:
    log = tmp_path / "pairs.jsonl"
    log.write_text(json.dumps(run_row(0, "native", 1.0)) + "\n{not json\n" + "{}\n")
    before = log.read_text()
    with pytest.raises(InvalidArgumentError, match=r"pairs.jsonl:2: not a run"):
        bt.read_runs(log)
    assert log.read_text() == before  # nothing measured is dropped


def test_measure_runs_only_what_the_pairs_file_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "pairs.jsonl"
    a = SimpleNamespace(np=2, msglog=(3, 6), iter=200, collectives=["Allreduce", "Bcast"],
                        variants=["default"], pairs=2)  # fmt: skip
    mpi = SimpleNamespace(version=KEY["mpi"], kind="mpich")
    log.write_text(json.dumps(run_row(0, "native", 1.0)) + "\n" + '{"key": {"mpi": "MPI')
    calls: list[tuple[str, list[str]]] = []

    def fake(way: str, mpi: Any, binary: Path, args: list[str], a: Any, table: Path) -> Any:
        calls.append((way, args))
        return SAMPLE, [], [way]

    monkeypatch.setattr(bt, "run_imb", fake)
    runs = bt.measure(mpi, tmp_path / "IMB-MPI1", KEY, a, tmp_path / "t.json", log)  # type: ignore[arg-type]
    # pair 0's native not again; the untimed routes run last
    assert [w for w, _ in calls] == ["collkit", "native", "collkit", bt.ROUTES]
    assert calls[0][1] == ["-npmin", "2", "-msglog", "3:6", "-iter", "200", *bt.FIXED,
                           "Allreduce", "Bcast"]  # fmt: skip
    again = bt.read_runs(log)
    assert [(r["pair"], r["way"]) for r in again] == [
        (0, "native"), (0, "collkit"), (1, "native"), (1, "collkit"), (0, bt.ROUTES)
    ]  # fmt: skip
    assert again == runs
    calls.clear()
    bt.measure(mpi, tmp_path / "IMB-MPI1", KEY, a, tmp_path / "t.json", log)  # type: ignore[arg-type]
    assert calls == []


def test_imb_args_of_each_variant() -> None:
    a = SimpleNamespace(np=2, msglog=(3, 16), iter=2000, collectives=["Allreduce"])
    for v, flags in [("sync0", ["-sync", "0"]), ("root_shift", ["-root_shift", "1"]),
                     ("off_cache", ["-off_cache", "-1"]), ("default", [])]:  # fmt: skip
        args = bt.imb_args(a, v)  # type: ignore[arg-type]
        assert args[-1 - len(flags) : -1] == flags
        assert args[:6] == ["-npmin", "2", "-msglog", "3:16", "-iter", "2000"]


def test_table_bytes_per_block_where_imb_gives_the_vector() -> None:
    assert bt.table_bytes("Reduce_scatter_block", 64, 4) == 16
    assert bt.table_bytes("Allreduce", 64, 4) == 64
    # The irregular calls' total: P blocks of #bytes (allgatherv), P^2 (alltoallv).
    assert bt.table_bytes("Allgatherv", 64, 4) == 256
    assert bt.table_bytes("alltoallv", 64, 4) == 1024


def fake_checkout(root: Path) -> Path:
    """A folder that passes for an IMB checkout: the files the check looks for, committed."""
    (root / "src_cpp" / "MPI1").mkdir(parents=True)
    (root / "src_c").mkdir()
    (root / "src_c" / "IMB_allreduce.c").write_text("int x;\n")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    return root


@pytest.mark.parametrize(
    ("table", "says"),
    [(None, "No such file|cannot read|not found"), ('{"format": "x"}', "format")],
)
def test_a_table_that_does_not_load_stops_before_any_build(
    tmp_path: Path, table: str | None, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    src = fake_checkout(tmp_path / "imb")
    path = tmp_path / "t.json"
    if table is not None:
        path.write_text(table)
    cache = tmp_path / "cache"
    args = ["--imb-src", str(src), "--tuning", str(path), "--cache", str(cache)]
    assert bt.main([*args, "--out", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err
    assert re.search(says, err) and "bench_thirdparty.py: error:" in err
    assert not cache.exists()


def test_imb_src_missing_or_not_a_checkout_names_where_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match=r"no such folder.*github\.com/intel/mpi-bench"):
        bt.imb_commit(tmp_path / "none")
    with pytest.raises(InvalidArgumentError, match="not a checkout of intel/mpi-benchmarks"):
        bt.imb_commit(tmp_path)
    (tmp_path / "src_cpp" / "MPI1").mkdir(parents=True)
    (tmp_path / "src_c").mkdir()
    (tmp_path / "src_c" / "IMB_allreduce.c").write_text("int x;\n")
    with pytest.raises(InvalidArgumentError, match="not a git checkout"):
        bt.imb_commit(tmp_path)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    clean = bt.imb_commit(tmp_path)
    assert len(clean) == 40
    (tmp_path / "src_c" / "IMB_allreduce.c").write_text("int y;\n")
    dirty = bt.imb_commit(tmp_path)
    assert dirty.startswith(clean + "-dirty") and dirty != clean


def test_build_dir_is_keyed_by_mpi_and_commit(tmp_path: Path) -> None:
    m1 = SimpleNamespace(kind="mpich", version="MPICH 5.0", mpicxx="/a/mpicxx")
    m2 = SimpleNamespace(kind="openmpi", version="Open MPI 4.1.4", mpicxx="/usr/bin/mpicxx.openmpi")
    dirs = {bt.build_dir(tmp_path, m, c) for m in (m1, m2) for c in ("a" * 40, "b" * 40)}  # type: ignore[arg-type]
    assert len(dirs) == 4
    assert bt.mpicc_of(m2) == "/usr/bin/mpicc.openmpi"  # type: ignore[arg-type]
    assert bt.mpicc_of(m1) == "/a/mpicc"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--msglog", "16:3"], "LO <= HI"),
        (["--msglog", "3-16"], "expected LO:HI"),
        (["--collectives", "Allreduce,PingPong"], "'PingPong' is not one IMB-MPI1 times"),
        (["--collectives", "bcast,Bcast"], "given twice"),
        (["--variants", "default,sync"], "variant 'sync'"),
        (["--pairs", "0"], "expected 1 .. 1000000"),
        (["--np", "two"], "'two' is not an integer"),
    ],
)
def test_bad_arguments_are_a_clear_error(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        bt.main(["--imb-src", "/nonexistent", "--tuning", "t.json", *args])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "bench_thirdparty.py: error:" in err and says in err and "Traceback" not in err


def test_missing_imb_src_exits_2_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.md"
    rc = bt.main(["--imb-src", str(tmp_path / "imb"), "--tuning", "t.json", "--out", str(out)])
    assert rc == 2
    assert "error: --imb-src" in capsys.readouterr().err
    assert not out.exists() and not out.with_suffix(".jsonl").exists()


@SETTINGS
@given(st.text(max_size=12))
def test_parse_msglog_random_text_is_a_range_or_a_clear_error(text: str) -> None:
    import argparse

    try:
        lo, hi = bt.parse_msglog(text)
    except argparse.ArgumentTypeError as e:
        assert "msglog" in str(e)
        return
    assert 0 <= lo <= hi <= 30


def test_measure_keeps_an_unreadable_output_and_runs_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "pairs.jsonl"
    a = SimpleNamespace(np=2, msglog=(3, 6), iter=200, collectives=["Allreduce", "Bcast"],
                        variants=["default"], pairs=1)  # fmt: skip
    mpi = SimpleNamespace(version=KEY["mpi"], kind="mpich")
    # another process's message written into the middle of a table row
    stray = SAMPLE.replace("0.66\n", "0.66[proxy:0@vm] write error: Broken pipe\n")
    outputs = [stray, SAMPLE, SAMPLE, SAMPLE]

    def fake(way: str, mpi: Any, binary: Path, args: list[str], a: Any, table: Path) -> Any:
        return outputs.pop(0), [], [way]

    monkeypatch.setattr(bt, "run_imb", fake)
    runs = bt.measure(mpi, tmp_path / "IMB-MPI1", KEY, a, tmp_path / "t.json", log)  # type: ignore[arg-type]
    assert [(r["way"], len(r["rejected"])) for r in runs] == [
        ("native", 1), ("collkit", 0), (bt.ROUTES, 0)
    ]  # fmt: skip
    kept = tmp_path / runs[0]["rejected"][0]
    assert kept.read_text() == stray and not outputs

    outputs[:] = [stray] * bt.REJECTS
    with pytest.raises(CollkitError, match=f"{bt.REJECTS} IMB outputs in a row not readable"):
        bt.measure(mpi, tmp_path / "IMB-MPI1", {**KEY, "np": 3}, a, tmp_path / "t.json", log)  # type: ignore[arg-type]
    assert len(bt.read_runs(log)) == 3  # nothing recorded of the unreadable run


def test_the_key_follows_the_tables_routing_not_its_bytes(tmp_path: Path) -> None:
    rule = {"collective": "allreduce", "P": [2, 2], "bytes": [8, 4096], "source": "measured"}

    def table(name: str, date: str, algorithm: str) -> Path:
        t = {"format": "collkit-tuning", "version": 1, "mpi": "MPICH 5.0", "date": date,
             "rules": [{**rule, "algorithm": algorithm}]}  # fmt: skip
        (tmp_path / name).write_text(json.dumps(t))
        return tmp_path / name

    a = SimpleNamespace(np=2, msglog=(3, 6), iter=200, collectives=["Allreduce"])
    mpi = SimpleNamespace(version="MPICH 5.0", kind="mpich")
    key = [  # tune rewrites its table (a new date) when a campaign is resumed
        bt.run_key(mpi, "c0ffee", a, table(n, d, alg))  # type: ignore[arg-type]
        for n, d, alg in [
            ("a", "monday", "allreduce:rd"),
            ("b", "tuesday", "allreduce:rd"),
            ("c", "monday", "allreduce:ring"),
        ]
    ]
    assert key[0] == key[1] and key[0] != key[2]


def test_tune_keeps_the_table_it_tuned_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resumed --tune must not choose again: a new routing would orphan the pairs measured."""
    a = SimpleNamespace(tune=True, tune_dir=tmp_path, collectives=["Allreduce"], msglog=(3, 6),
                        np=2, block=16)  # fmt: skip
    mpi = SimpleNamespace(version="MPICH 5.0", kind="mpich", mpiexec="x", mpicxx="y")
    tuned: list[tuple[str, ...]] = []

    def fake_collkit(*args: str, env: Any = None) -> Any:
        tuned.append(args)
        (tmp_path / "mpich").mkdir(exist_ok=True)
        (tmp_path / "mpich" / "collkit-tuning.json").write_text("{}")
        return SimpleNamespace(returncode=0, stdout="", stderr="")

    monkeypatch.setattr(bt, "collkit", fake_collkit)
    first = bt.table_for(mpi, a)  # type: ignore[arg-type]
    assert len(tuned) == 1 and tuned[0][0] == "tune"
    assert bt.table_for(mpi, a) == first  # type: ignore[arg-type]
    assert len(tuned) == 1  # not tuned again


def test_predicted_takes_the_variants_pattern_else_the_smallest() -> None:
    rule = bt.tuning.Rule(
        "bcast", (2, 2), (8, 15), "bcast:binomial", speedup=1.25,
        speedups={"back_to_back": 2.0, "barrier": 1.25},
    )  # fmt: skip
    assert bt.predicted(rule, "sync0") == (0.5, "back_to_back")
    assert bt.predicted(rule, "default") == (0.8, "barrier")
    # No rotate_root speedup measured: the rule's own (the smallest of its patterns').
    assert bt.predicted(rule, "root_shift") == (0.8, "smallest of its patterns")
    native = bt.tuning.Rule("bcast", (2, 2), (16, 31), "native")
    assert bt.predicted(native, "default") is None
    assert bt.predicted(None, "default") is None
    assert bt.predicted(bt.tuning.Rule("bcast", (2, 2), (8, 15), "bcast:binomial"), "sync0") is None
