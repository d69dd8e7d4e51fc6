"""collkit tune: the statistics that decide a win, the table's schema, the MPI tuning files loaded
into the real MPIs (which must take the chosen algorithm: the bits of a floating-point reduction
identify its order, so the result under the file must equal the result with that algorithm
forced, and differ from the MPI's default), and a tiny campaign end to end."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_pmpi import launch, mpicc

from collkit.errors import InvalidArgumentError
from collkit.mpi import MPI
from collkit.mpi.mpich import default_tree as mpich_default_tree
from collkit.mpi.mpich import find_libmpi
from collkit.mpi.mpich import selection_file as mpich_file
from collkit.mpi.openmpi import ALGORITHMS as OPENMPI_ALGORITHMS
from collkit.mpi.openmpi import rules_file as openmpi_rules
from collkit.results import Row
from collkit.tune import Choice, Comparison, choose, compare, rules, size_ranges, validate
from collkit.tune import load as load_table
from collkit.tune.campaign import by_element_type, candidates, element_type
from collkit.tune.families import equivalent
from collkit.tune.table import Rule, Table
from collkit.tune.table import save as save_table
from mpi_support import TIMEOUT_S, built, mpich_or_skip, openmpi_or_skip

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"


# ---- statistics ---------------------------------------------------------------------------------


def test_a_clear_win_is_a_win_and_noise_is_not() -> None:
    rng = np.random.default_rng(1)
    native = rng.normal(10, 0.5, 60)
    fast = compare("allreduce:rd", rng.normal(7, 0.5, 60), native)
    assert fast.p_value < 1e-6 and 1.3 < fast.ci95[0] <= fast.speedup <= fast.ci95[1] < 1.6
    same = compare("allreduce:ring", rng.normal(10, 0.5, 60), native)
    assert not (same.p_value < 0.01 and same.ci95[0] > 1)
    slow = compare("allreduce:ring", rng.normal(12, 0.5, 60), native)
    assert slow.p_value > 0.5 and slow.speedup < 1


def rows_for(algo: str, center: float, P: int = 4, nbytes: int = 8, seed: int = 0) -> Row:
    s = list(np.random.default_rng(seed).normal(center, center * 0.03, 40))
    row = Row("allreduce", algo, P, nbytes, samples=s, median_us=float(np.median(s)), valid=True)
    # Measured interleaved with a steady native (10 µs), three rounds, probes agreeing; the MPI's
    # own algorithms are forced per job and so are never interleaved.
    row.interleaved = not algo.startswith("mpich:")
    if row.interleaved:
        row.round_median_us = [float(np.median(x)) for x in np.array_split(s, 3)]
        row.round_native_before_us = row.round_native_after_us = [10.0] * 3
        row.round_probe_rtt_ns_min, row.round_probe_rtt_ns_max = [115.0] * 3, [120.0] * 3
    return row


def test_choose_keeps_native_unless_the_win_is_real_and_merges_ranges() -> None:
    rows = []
    for i, nbytes in enumerate((8, 16, 32, 64)):
        rows.append(rows_for("native", 10.0, nbytes=nbytes, seed=i))
        # rd wins clearly at 8 and 16 B, ring only by noise at 32 and 64 B.
        rows.append(rows_for("allreduce:rd", 6.0 if nbytes <= 16 else 10.5, nbytes=nbytes, seed=9))
        rows.append(rows_for("allreduce:ring", 10.0, nbytes=nbytes, seed=i + 100))
        rows.append(rows_for("mpich:ring", 5.0 if nbytes == 64 else 11, nbytes=nbytes, seed=5))
    bad = rows_for("allreduce:rm(a4)", 1.0, nbytes=32)
    bad.valid = False  # a wrong result never wins, however fast
    choices = choose([*rows, bad])
    assert [c.collkit.algorithm if c.collkit else "native" for c in choices] == [
        "allreduce:rd",
        "allreduce:rd",
        "native",
        "native",
    ]
    # mpich:ring is faster at 64 B, but measured in a job of its own (forced through the
    # environment), never beside native: it is shown, not chosen.
    assert [c.mpi.algorithm if c.mpi else None for c in choices] == [None] * 4
    ring64 = next(x for x in choices[3].candidates if x.algorithm == "mpich:ring")
    assert ring64.speedup > 1.5 and not ring64.interleaved
    rs = rules(choices)
    assert [(r.algorithm, r.bytes) for r in rs] == [
        ("allreduce:rd", (8, 31)),
        ("native", (32, 127)),
    ]
    assert rs[0].speedup > 1.5 and rs[0].p_value < 0.01 and rs[0].P == (4, 4)


def test_a_win_smaller_than_the_librarys_routing_is_not_a_win() -> None:
    """tune times collkit through the C API; a program reaches it through libcollkit_pmpi, whose
    routing costs each call more. A candidate 1 µs faster than a 10 µs native wins when the
    routing costs 0.5 µs, and not when it costs 1.5 µs; the MPI's forced algorithms are never
    charged it (they do not go through the library)."""
    rows = [
        rows_for("native", 10.0),
        rows_for("allreduce:rd", 9.0, seed=3),
        rows_for("mpich:ring", 9.0, seed=4),
    ]
    cheap = choose(rows, routing_us=0.5)[0]
    assert cheap.collkit is not None and cheap.collkit.algorithm == "allreduce:rd"
    assert cheap.collkit.median_us == pytest.approx(np.median(rows[1].samples) + 0.5)
    (dear,) = choose(rows, routing_us=1.5)
    assert dear.collkit is None
    ring = next(c for c in dear.candidates if c.algorithm == "mpich:ring")
    assert ring.median_us == pytest.approx(np.median(rows[2].samples))
    assert rows[1].median_us < 9.5  # the rows themselves are left as measured


def test_a_gain_of_a_few_per_cent_makes_no_rule_by_default() -> None:
    """tune's default minimum gain: a candidate 5 % faster than native, however significant,
    is no rule (such gains turned into losses in IMB under load); 20 % faster is one, and
    with --min-gain 0 the 5 % is one too."""
    from collkit.tune.campaign import TuneOptions

    default = TuneOptions(["allreduce"], [4], [8]).min_gain
    few = [rows_for("native", 10.0), rows_for("allreduce:rd", 10.0 / 1.05, seed=3)]
    many = [rows_for("native", 10.0), rows_for("allreduce:rd", 10.0 / 1.2, seed=3)]
    assert choose(few, min_gain=default)[0].collkit is None
    assert choose(many, min_gain=default)[0].collkit is not None
    assert choose(few, min_gain=0.0)[0].collkit is not None


def test_each_collective_is_charged_its_own_kind_of_routing() -> None:
    """An alltoallv's routing (its int arrays widened, its rank and size asked: ~60 ns here)
    costs more than an allreduce's (~10 ns): per collective, each candidate is charged its
    collective's figure, and a collective the mapping lacks nothing. Each collective stands in
    by its kind: rooted ones by bcast, those keyed by P alone by alltoallv, those keyed by the
    vector's total by allgatherv, the others by allreduce."""
    from collkit.mpi.routing import REGULAR, stand_in

    def rows_of(coll: str, algo: str) -> list[Row]:
        rows = [rows_for("native", 10.0), rows_for(f"allreduce:{algo}", 9.0, seed=3)]
        for r in rows:
            r.collective = coll
            r.algorithm = r.algorithm.replace("allreduce:", f"{coll}:")
        return rows

    rows = rows_of("allreduce", "rd") + rows_of("alltoallv", "linear")
    by = {c.collective: c for c in choose(rows, routing_us={"allreduce": 0.5, "alltoallv": 1.5})}
    assert by["allreduce"].collkit is not None and by["alltoallv"].collkit is None
    (lin,) = by["alltoallv"].candidates
    assert lin.median_us == pytest.approx(np.median(rows[3].samples) + 1.5)
    (free,) = [
        c for c in choose(rows, routing_us={"allreduce": 1.5}) if c.collective == "alltoallv"
    ]
    assert free.collkit is not None  # not in the mapping: charged nothing
    kinds = {c: stand_in(c) for c in ("reduce", "gatherv", "scatterv", "reduce_scatter", "scan")}
    assert kinds == {
        "reduce": "bcast",
        "gatherv": "alltoallv",
        "scatterv": "alltoallv",
        "reduce_scatter": "allgatherv",
        "scan": "allreduce",
    }
    assert all(stand_in(c) == c for c in REGULAR)
    assert stand_in("alltoallv") == "alltoallv" and stand_in("allgatherv") == "allgatherv"


@pytest.mark.mpi
@pytest.mark.parametrize("coll", ["allreduce", "alltoallv"])
def test_the_routing_of_each_kind_of_call_is_measured(
    coll: str, mpich_fp: tuple[MPI, Path, Path]
) -> None:
    """collkit_pmpi_overhead runs for each stand-in (the irregular ones on two ranks) and says
    a cost: not negative, and far below a call's time."""
    from collkit.mpi.routing import routing_cost_us

    us = routing_cost_us(mpich_fp[0], collective=coll, calls=200, blocks=10)
    assert 0.0 <= us < 5.0


def test_size_ranges_cover_up_to_the_next_size() -> None:
    assert size_ranges([8, 64, 16]) == [(8, 15), (16, 63), (64, 127)]
    assert size_ranges([0]) == [(0, 0)]


def test_candidates_are_the_registry_with_grids() -> None:
    c = candidates("alltoall", 4)
    assert {"alltoall:bruck", "alltoall:bruck(r=3)", "alltoall:bruck(r=4)"} <= set(c)
    assert "alltoall:pairwise" in c
    rm = [x for x in candidates("allreduce", 8, top_k=2) if x.startswith("allreduce:rm")]
    assert len(rm) == 2
    assert equivalent("allreduce", "allreduce:ring", "ompi") == "ompi:ring"
    assert equivalent("alltoall", "alltoall:bruck(r=3)", "mpich") == "mpich:brucks"


def test_segmented_trees_are_candidates_only_where_a_size_has_pieces() -> None:
    # 2 KiB pieces: tried when the campaign has a size above 4 KiB, for bcast and reduce alone
    for coll in ("bcast", "reduce"):
        assert f"{coll}:binomial(seg=2KiB)" not in candidates(coll, 2, largest=4096)
        assert f"{coll}:binomial(seg=2KiB)" in candidates(coll, 2, largest=8192)
        assert f"{coll}:binomial(seg=2KiB)" in candidates(coll, 6, largest=1 << 20)
    assert not any("seg=2KiB" in c for c in candidates("allreduce", 2, largest=1 << 20))


@pytest.mark.parametrize("P", [5, 64, 1000, 65536])
def test_bruck_radixes_stay_few_and_sensible_at_any_P(P: int) -> None:
    # unchecked: every radix 2..P, 65,535 candidates per Bruck variant at -np 65536
    for variant in ("alltoall:bruck", "alltoall:bruck_modified", "allgather:bruck"):
        coll = variant.split(":")[0]
        names = [x for x in candidates(coll, P) if x.split("(")[0] == variant]
        # r = 2 is the default: its canonical name has no parameter
        radixes = {int(x.split("r=")[1].rstrip(")")) if "r=" in x else 2 for x in names}
        assert len(names) <= 8 + 2 * P.bit_length() + 4, (variant, len(names))
        assert {2, min(P, 8), P} <= radixes, radixes  # r = P is the one-round exchange
        s = math.isqrt(P - 1) + 1
        assert s in radixes and all(2 <= r <= P for r in radixes)


# ---- the table's schema -------------------------------------------------------------------------


GOOD = {
    "format": "collkit-tuning",
    "version": 1,
    "rules": [{"collective": "allreduce", "P": [4, 4], "bytes": [0, 63], "algorithm": "rd"}],
}


def test_validate_names_what_is_wrong() -> None:
    with pytest.raises(InvalidArgumentError, match="rule 0"):
        validate(GOOD)  # 'rd' has no collective: names are full names
    good = json.loads(json.dumps(GOOD))
    good["rules"][0]["algorithm"] = "allreduce:rd"
    t = validate(good)
    assert t.lookup("allreduce", 4, 63) == "allreduce:rd"
    assert t.lookup("allreduce", 4, 64) == "native" and t.lookup("allreduce", 5, 8) == "native"
    for key, value, msg in [
        ("P", [0, 4], "P"),
        ("bytes", [9, 8], "bytes"),
        ("collective", "neighbor_alltoall", "collective"),
        ("algorithm", "bcast:binomial", "not a allreduce"),
        ("extra", 1, "unknown keys"),
    ]:
        bad = json.loads(json.dumps(good))
        bad["rules"][0][key] = value
        with pytest.raises(InvalidArgumentError, match=msg):
            validate(bad)


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
        lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4),
        max_leaves=20,
    )
)
def test_validate_rejects_hostile_documents_with_a_clear_error(doc: object) -> None:
    for d in (doc, {"format": "collkit-tuning", "version": 1, "rules": doc}):
        with contextlib.suppress(InvalidArgumentError):
            validate(d)


# ---- the MPIs' own files, loaded into the MPIs -------------------------------------------------


def comparison(algo: str) -> Comparison:
    return Comparison(algo, 1.0, 2.0, 2.0, 1e-9, (1.5, 2.5))


def fingerprint(mpi: MPI, exe: Path, P: int, n: int, env: dict[str, str] | None = None) -> str:
    r = launch(mpi, P, [str(exe), "allreduce", str(n)], env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return r.stdout.split()[-1]


@pytest.fixture(scope="module")
def mpich_fp(tmp_path_factory: pytest.TempPathFactory) -> tuple[MPI, Path, Path]:
    mpi = mpich_or_skip()
    bindir = built(mpi)
    exe = tmp_path_factory.mktemp("fp") / "fingerprint"
    subprocess.run([mpicc(mpi), "-O2", "-o", str(exe), str(PROGRAMS / "fingerprint.c")], check=True)
    return mpi, bindir, exe


@pytest.mark.mpi
def test_mpich_takes_the_algorithm_its_selection_file_chooses(
    mpich_fp: tuple[MPI, Path, Path], tmp_path: Path
) -> None:
    mpi, bindir, exe = mpich_fp
    # P = 4: 32 KiB -> ring, 128 KiB -> recursive doubling; nothing tuned at P = 3.
    choices = [
        Choice("allreduce", 4, 32768, "measured", None, comparison("mpich:ring"), []),
        Choice(
            "allreduce", 4, 131072, "measured", None, comparison("mpich:recursive_doubling"), []
        ),
    ]
    tree = mpich_file(choices, mpich_default_tree(find_libmpi(bindir / "collkit_bench")))
    path = tmp_path / "mpich-selection.json"
    path.write_text(json.dumps(tree))
    use = {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(path)}
    for n, algo in ((4096, "ring"), (16384, "recursive_doubling")):
        forced = fingerprint(mpi, exe, 4, n, {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": algo})
        assert fingerprint(mpi, exe, 4, n, use) == forced, algo
    # The check can tell algorithms apart: at 32 KiB MPICH's default is not the ring.
    assert fingerprint(mpi, exe, 4, 4096) != fingerprint(
        mpi, exe, 4, 4096, {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"}
    )
    # P = 3 was not tuned: MPICH's own choice stays.
    assert fingerprint(mpi, exe, 3, 4096, use) == fingerprint(mpi, exe, 3, 4096)


@pytest.mark.mpi
def test_open_mpi_takes_the_algorithm_its_rules_file_chooses(tmp_path: Path) -> None:
    mpi = openmpi_or_skip()
    exe = tmp_path / "fingerprint"
    subprocess.run([mpicc(mpi), "-O2", "-o", str(exe), str(PROGRAMS / "fingerprint.c")], check=True)
    choices = [
        Choice("allreduce", 4, 32768, "measured", None, comparison("ompi:ring"), []),
        Choice("allreduce", 4, 131072, "measured", None, comparison("ompi:basic_linear"), []),
    ]
    path = tmp_path / "openmpi-rules.txt"
    path.write_text(openmpi_rules(choices, "test"))
    use = {
        "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
        "OMPI_MCA_coll_tuned_dynamic_rules_filename": str(path),
    }
    for n, algo in ((4096, "ring"), (16384, "basic_linear")):
        forced = fingerprint(
            mpi,
            exe,
            4,
            n,
            {
                "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                "OMPI_MCA_coll_tuned_allreduce_algorithm": str(
                    OPENMPI_ALGORITHMS["allreduce"][algo]
                ),
            },
        )
        assert fingerprint(mpi, exe, 4, n, use) == forced, algo
    assert fingerprint(mpi, exe, 4, 16384) != fingerprint(mpi, exe, 4, 16384, use)
    # Sizes past the tuned ones and P = 5 keep Open MPI's fixed decision.
    assert fingerprint(mpi, exe, 4, 65536, use) == fingerprint(mpi, exe, 4, 65536)
    assert fingerprint(mpi, exe, 5, 4096, use) == fingerprint(mpi, exe, 5, 4096)


# ---- the command --------------------------------------------------------------------------------


def tune(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "collkit", "tune", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S * 4,
        check=False,
        env=dict(os.environ),
    )


@pytest.mark.mpi
def test_tune_writes_the_three_files_and_resumes(
    mpich_fp: tuple[MPI, Path, Path], tmp_path: Path
) -> None:
    mpi, _, exe = mpich_fp
    out = tmp_path / "t"
    args = ["allreduce", "-np", "2", "--sizes", "8B,1KiB", "--iters", "20", "--max-ms", "40"]
    args += ["--only", "rd", "-o", str(out)]
    r = tune(*args)
    assert r.returncode == 0, r.stderr[-3000:]
    for f in ("collkit-tuning.json", "mpich-selection.json", "openmpi-rules.txt", "tune.png"):
        assert (out / f).stat().st_size > 0, f
    table = load_table(out / "collkit-tuning.json")
    assert {x.P for x in table.rules} == {(2, 2)}
    assert all(x.algorithm in ("native", "allreduce:rd") for x in table.rules)
    assert all(not math.isnan(x.native_median_us) for x in table.rules)
    lines = (out / "tune.jsonl").read_text().splitlines()
    # native, rd, native in a job of its own (the reference alone) and every MPICH algorithm
    # forced, at two sizes, and rd in a job of its own where it won in its job but not against
    # the MPI alone; each row with its samples and their means over ranks.
    first = [ln for ln in lines if json.loads(ln)["attempt"] == 0]
    solo = [
        x
        for x in map(json.loads, first)
        if x["algorithm"] == "allreduce:rd" and not x["interleaved"]
    ]
    assert len(solo) in (0, 2)
    assert len(first) == 2 * (3 + len(mpi.native_algorithms("allreduce"))) + len(solo)
    alone = [
        x
        for x in map(json.loads, first)
        if x["algorithm"] == "native" and not x["interleaved"] and not x["settings"]
    ]
    assert sorted(x["bytes"] for x in alone) == [8, 1024]
    for x in map(json.loads, first):
        if not x["error"]:
            assert len(x["rank_mean_samples"]) == len(x["samples"]) >= 10
            # a mean over ranks is never above the slowest rank's time
            assert all(
                m <= s + 1e-3 for m, s in zip(x["rank_mean_samples"], x["samples"], strict=True)
            )
    # Later attempts re-measure (interleaved, with native again) only rows found suspect.
    rows = [json.loads(ln) for ln in lines]
    for x in rows:
        if x["attempt"] > 0 and x["algorithm"] != "native":
            prev = [
                y
                for y in rows
                if (y["algorithm"], y["bytes"], y["attempt"])
                == (x["algorithm"], x["bytes"], x["attempt"] - 1)
            ]
            assert prev and prev[0]["suspect"], x["algorithm"]
    assert all(len(json.loads(ln)["samples"]) >= 10 for ln in lines if '"error": ""' in ln)
    # MPICH accepts the file it was given (a run with it completes with correct results).
    use = {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(out / "mpich-selection.json")}
    assert fingerprint(mpi, exe, 2, 128, use) == fingerprint(mpi, exe, 2, 128)
    again = tune(*args)
    assert again.returncode == 0
    assert (out / "tune.jsonl").read_text().splitlines() == lines  # nothing measured twice
    assert "already measured" in again.stderr


@pytest.mark.mpi
def test_tune_campaigns_the_block_collectives(
    mpich_fp: tuple[MPI, Path, Path], tmp_path: Path
) -> None:
    mpi, _, _ = mpich_fp
    out = tmp_path / "t"
    args = ["allgather", "scatter", "-np", "2", "--sizes", "8B,1KiB", "--iters", "20"]
    args += ["--max-ms", "40", "--only", "ring,linear", "-o", str(out)]
    r = tune(*args)
    assert r.returncode == 0, r.stderr[-3000:]
    table = load_table(out / "collkit-tuning.json")
    assert {x.collective for x in table.rules} == {"allgather", "scatter"}
    assert all(x.algorithm in ("native", "allgather:ring", "scatter:linear") for x in table.rules)
    rows = [json.loads(ln) for ln in (out / "tune.jsonl").read_text().splitlines()]
    # collkit's algorithm (validated against the MPI's call), native and every MPICH algorithm.
    for coll, ours in (("allgather", "allgather:ring"), ("scatter", "scatter:linear")):
        names = {x["algorithm"] for x in rows if x["collective"] == coll}
        assert names == {ours, "native", *mpi.native_algorithms(coll)}, names
        assert all(x["valid"] is True for x in rows if x["algorithm"] == ours)
    # Open MPI's rules file names them by its own collective ids.
    text = (out / "openmpi-rules.txt").read_text()
    assert "0  # allgather" in text and "15  # scatter" in text


def test_reductions_are_timed_in_a_type_that_fits_the_size() -> None:
    # 4 bytes is a whole int, not a double: timed as one (before, as a zero-count call).
    assert element_type("allreduce", 8) == element_type("reduce", 1024) == "double"
    assert element_type("allreduce", 4) == element_type("allreduce", 12) == "int"
    assert element_type("allreduce", 2) is None and element_type("reduce", 3) is None
    assert element_type("bcast", 3) == element_type("barrier", 0) == "char"
    assert by_element_type("allreduce", [1, 2, 4, 8, 16]) == {
        None: [1, 2],
        "int": [4],
        "double": [8, 16],
    }


@pytest.mark.mpi
def test_a_4_byte_allreduce_is_timed_in_ints_and_gets_its_rule(
    mpich_fp: tuple[MPI, Path, Path], tmp_path: Path
) -> None:
    """Programs reduce 4-byte flags every step (LAMMPS's neighbour-list check, an MPI_INT
    MPI_MAX): tune times 4 B in one int, where it timed a zero-count call before; 1-2 B of a
    reduction are said and left out, a bcast of 2 B is timed."""
    out = tmp_path / "t"
    args = ["allreduce", "bcast", "-np", "2", "--sizes", "2B..8B", "--only", "rd,binomial"]
    args += ["--no-mpi-algos", "--iters", "20", "--max-ms", "40", "-o", str(out)]
    r = tune(*args)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "allreduce: 2 B not timed (a reduction is timed in doubles, or ints" in r.stderr
    rows = [json.loads(ln) for ln in (out / "tune.jsonl").read_text().splitlines()]
    got = {(x["collective"], x["bytes"], x["datatype"], x["count"]) for x in rows}
    assert got == {
        ("allreduce", 4, "int", 1),
        ("allreduce", 8, "double", 1),
        ("bcast", 2, "char", 2),
        ("bcast", 4, "char", 4),
        ("bcast", 8, "char", 8),
    }, got
    assert all(x["valid"] is True for x in rows if x["algorithm"] != "native")
    table = load_table(out / "collkit-tuning.json")
    # The allreduce rules start at 4 B (a 4-byte call has its rule; 1-3 B have none).
    starts = sorted(x.bytes[0] for x in table.rules if x.collective == "allreduce")
    assert starts[0] == 4, starts


@pytest.mark.mpi
def test_tune_times_blocks_of_back_to_back_calls_and_never_mixes_them_with_single_calls(
    mpich_fp: tuple[MPI, Path, Path], tmp_path: Path
) -> None:
    """--block N: each sample is N back-to-back calls, the way a loop calls them;
    rows timed as single calls in the same folder are neither reused nor compared."""
    out = tmp_path / "t"
    base = ["allreduce", "-np", "2", "--sizes", "8B", "--only", "rd", "--no-mpi-algos"]
    base += ["--iters", "20", "--max-ms", "40", "-o", str(out)]
    assert tune(*base).returncode == 0
    assert load_table(out / "collkit-tuning.json").block == 1
    # one pattern: at --block 8 the default adds barrier, a native row of its own
    r = tune(*base, "--block", "8", "--patterns", "back_to_back")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "already measured" not in r.stderr
    rows = [json.loads(ln) for ln in (out / "tune.jsonl").read_text().splitlines()]
    by_block = {b: [x for x in rows if x["block"] == b] for b in (1, 8)}
    for b, rs in by_block.items():
        assert {x["algorithm"] for x in rs} == {"native", "allreduce:rd"}, b
    table = load_table(out / "collkit-tuning.json")
    assert table.block == 8
    (rule,) = table.rules
    # The evidence is the block-8 rows' (medians of 8-call blocks), not the single calls'.
    # (one native row per attempt: a suspect candidate is measured again with native beside it)
    native8 = [x["median_us"] for x in by_block[8] if x["algorithm"] == "native"]
    assert any(rule.native_median_us == pytest.approx(x, rel=1e-3) for x in native8), native8


@pytest.mark.mpi
def test_a_cpu_hog_that_stops_mid_campaign_makes_no_winner(
    mpich_fp: tuple[MPI, Path, Path], tmp_path: Path
) -> None:
    """A campaign starts on a loaded machine and the load goes away mid-campaign (here:
    busy processes, stopped the moment the first row is written). Measured one algorithm after
    another, native was timed under the load and the candidate without it, and the candidate
    "won" by the load's factor. Interleaved, no candidate wins because of the change."""
    import threading
    import time

    out = tmp_path / "t"
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(2 * (os.cpu_count() or 1))
    ]
    stopped = threading.Event()

    def stop_at_first_row() -> None:
        jsonl = out / "tune.jsonl"
        while not stopped.is_set():
            if jsonl.exists() and jsonl.stat().st_size > 0:
                break
            time.sleep(0.01)
        for h in hogs:
            h.kill()
        stopped.set()

    watcher = threading.Thread(target=stop_at_first_row, daemon=True)
    watcher.start()
    try:
        r = tune(
            *("allreduce", "-np", "2", "--sizes", "8B,64B,1KiB", "--only", "rd"),
            *("--no-mpi-algos", "--iters", "30", "--max-ms", "200", "-o", str(out)),
        )
    finally:
        stopped.set()
        watcher.join()
        for h in hogs:
            h.kill()
            h.wait()
    assert r.returncode == 0, r.stderr[-3000:]
    table = load_table(out / "collkit-tuning.json")
    # rd and MPICH's allreduce both are one exchange at P = 2: a "win" of more than 2x is the load.
    false = [x for x in table.rules if x.algorithm != "native" and x.speedup > 2]
    assert not false, [(x.algorithm, x.bytes, x.speedup) for x in false]
    rows = [json.loads(ln) for ln in (out / "tune.jsonl").read_text().splitlines()]
    assert {x["algorithm"] for x in rows} == {"native", "allreduce:rd"}
    for x in rows:
        # Every row says how loaded the machine was and where its cores stood, and was measured
        # in rounds beside native (but the native call's reference, timed in a job of its own;
        # a candidate's figures are the worse against it and its job's native, so a reference
        # timed under the load gains it nothing).
        assert x["interleaved"] or x["algorithm"] == "native"
        assert x["load_avg_1m"] is not None
        assert x["probe_rtt_ns_before"] > 0 and x["probe_rtt_ns_after"] > 0
        assert len(x["round_median_us"]) >= 3


@pytest.mark.mpi
def test_the_tour_says_when_a_chosen_rule_loses_and_does_not_use_it(
    mpich_fp: tuple[MPI, Path, Path], tmp_path: Path
) -> None:
    """After tune, the tour measures each chosen rule against native in one job; a rule that
    loses there is said to lose and the program runs without it (a tune step's win can be drift
    that a check in one job shows to be slower)."""
    from rich.console import Console

    from collkit.cli.tour import check_rules
    from collkit.tune.table import Rule, Table, save

    mpi = mpich_fp[0]
    # A rule as a drifted campaign could have written it: 4 KiB in 8-byte segments (512
    # messages per step where native sends one) "5x faster".
    loser = "allreduce:ring(seg=8)"
    save(
        Table(
            rules=[Rule("allreduce", (2, 2), (4096, 4096), loser, speedup=5.0)],
            mpi=mpi.version,
        ),
        tmp_path / "collkit-tuning.json",
    )
    console = Console(record=True, width=200)
    checked = check_rules(console, mpi, tmp_path, [4096])
    text = console.export_text()
    # It loses every round, or (on a machine too busy for the probes to agree) its comparison is
    # suspect: either way it is said and the rule is not used.
    assert "LOSES to native here: not used" in text or "suspect (" in text, text
    assert "holds" not in text
    assert "did not hold against native in the same job" in text
    (rule,) = load_table(checked).rules
    assert rule.algorithm == "native" and math.isnan(rule.speedup)
    rows = [json.loads(ln) for ln in (tmp_path / "check.jsonl").read_text().splitlines()]
    assert {x["algorithm"] for x in rows} == {"native", "allreduce:ring(seg=8B)"}
    assert all(x["interleaved"] for x in rows)


@pytest.mark.parametrize(
    ("checked", "lost", "parts"),
    [
        # A rule keeps its algorithm from each size that held up to the next checked size.
        ([8, 16, 32, 64], {16, 64}, [(8, 15, "rd"), (16, 31, "n"), (32, 63, "rd"), (64, 127, "n")]),
        ([8, 16, 32, 64], {16, 32}, [(8, 15, "rd"), (16, 63, "n"), (64, 127, "rd")]),
        # The first checked size above the rule's start speaks for the start too.
        ([16, 64], {64}, [(8, 63, "rd"), (64, 127, "n")]),
        ([8, 16], {8, 16}, [(8, 127, "n")]),
    ],
)
def test_the_tour_routes_only_the_sizes_that_lost_to_native(
    checked: list[int], lost: set[int], parts: list[tuple[int, int, str]]
) -> None:
    from collkit.cli.tour import split_by_size
    from collkit.tune.table import Rule

    rule = Rule("allreduce", (2, 2), (8, 127), "allreduce:rd", speedup=1.5, p_value=0.01)
    got = split_by_size(rule, checked, lost)
    names = {"allreduce:rd": "rd", "native": "n"}
    assert [(r.bytes[0], r.bytes[1], names[r.algorithm]) for r in got] == parts
    for r in got:  # a native part says no speedup; a kept part keeps the measured one
        assert (r.speedup == 1.5) == (r.algorithm != "native")
        assert r.P == (2, 2) and r.collective == "allreduce"
    assert rule.bytes == (8, 127) and rule.algorithm == "allreduce:rd"  # the input unchanged


@pytest.mark.parametrize(
    "args",
    [
        ["neighbor_alltoall"],
        ["allreduce", "--sizes", "8B..1B"],
        ["allreduce", "-np", "0"],
        ["allreduce", "--alpha", "2"],
        ["allreduce", "--param", "L=1us"],
        ["allreduce", "--only", "allreduce:nope", "-np", "2", "--sizes", "8"],
        ["allreduce", "--block", "0"],
        ["allreduce", "--block", "8", "--simulate", "loggp"],
    ],
)
def test_bad_input_exits_2(args: list[str], tmp_path: Path) -> None:
    r = tune(*args, "-o", str(tmp_path / "o"))
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "error" in r.stderr


def test_tune_from_the_simulator_marks_rows_simulated(tmp_path: Path) -> None:
    out = tmp_path / "s"
    r = tune("alltoall", "-np", "64", "--sizes", "8,4KiB", "--simulate", "postal", "-o", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    table = load_table(out / "collkit-tuning.json")
    assert table.rules and all(x.source == "simulated" for x in table.rules)
    assert all(x.algorithm.startswith("alltoall:") for x in table.rules)
    assert not (out / "mpich-selection.json").exists()
    # Intel MPI's variables: its algorithm of each winner's family (the registry's equivalents).
    lines = [x for x in (out / "impi-tuning.env").read_text().splitlines() if x[:1] != "#"]
    rng = r"\d+:\d+-\d+@64-64"
    assert lines and all(re.fullmatch(f'I_MPI_ADJUST_ALLTOALL="{rng}(;{rng})*"', x) for x in lines)


def test_a_simulation_that_cannot_fit_is_a_row_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # unchecked: tune --simulate -np 65536 went on simulating allreduce:ring at 1 MiB (8.6e9 ops,
    # hours); collkit simulate's limit (its memory estimate against the memory available) now
    # applies to every candidate
    import collkit.cli.simulate as cli_simulate
    from collkit.results import ResultStore
    from collkit.simulate import memory_estimate
    from collkit.tune.campaign import TuneOptions, simulate_rows

    small = memory_estimate("allreduce:ring", 64, 1, 8, model="postal")[0]
    big = memory_estimate("allreduce:ring", 64, 2**14, 8, model="postal")[0]
    assert small < big
    monkeypatch.setattr(cli_simulate, "_available_memory", lambda: (small + big) // 2)
    opts = TuneOptions(["allreduce"], [64], [8, 2**17], only=["ring"])
    rows = simulate_rows(opts, "postal", {}, ResultStore(tmp_path / "r.jsonl"), lambda _: None)
    by_size = {r.bytes: r for r in rows}
    assert by_size[8].error == "" and by_size[8].median_us > 0
    assert "GiB available" in by_size[2**17].error, by_size[2**17]


def test_a_long_simulation_is_announced_before_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # unchecked: tune --simulate -np 65536 --sizes 64KiB sat silent for 15 minutes (and was stopped
    # there) on allreduce:ring, 8.6e9 ops; a candidate over ANNOUNCE_OPS is now said first
    import collkit.sim.run as sim_run
    from collkit.results import ResultStore
    from collkit.simulate import memory_estimate
    from collkit.tune.campaign import TuneOptions, simulate_rows

    ops_small = memory_estimate("allreduce:ring", 16, 1, 8, model="postal")[1]
    ops_big = memory_estimate("allreduce:ring", 16, 2**12, 8, model="postal")[1]
    assert ops_small < ops_big
    monkeypatch.setattr(sim_run, "ANNOUNCE_OPS", (ops_small + ops_big) // 2)
    said: list[str] = []
    opts = TuneOptions(["allreduce"], [16], [8, 2**15], only=["ring"])
    rows = simulate_rows(opts, "postal", {}, ResultStore(tmp_path / "r.jsonl"), said.append)
    assert all(r.error == "" for r in rows)
    long = [m for m in said if "ops to simulate" in m]
    assert len(long) == 1, said
    assert "allreduce:ring" in long[0] and f"{ops_big:,} ops" in long[0] and "resumes" in long[0]


@pytest.mark.mpi
def test_multi_stage_rm_names_reach_the_driver_whole(
    mpich_fp: tuple[MPI, Path, Path], tmp_path: Path
) -> None:
    """A candidate name with commas inside its parentheses is one algorithm, not two."""
    from collkit.bench import Campaign, run_campaign
    from collkit.results import ResultStore

    mpi = mpich_fp[0]
    name = "allreduce:rm(c4m4,e4m4)"
    assert name in candidates("allreduce", 4, top_k=3)
    c = Campaign("allreduce", [name], [4], [64], iterations=5, warmup=1, max_ms=20, raw=True)
    (row,) = run_campaign(c, mpi, ResultStore(tmp_path / "r.jsonl"))
    assert row.error == "" and row.valid is True and len(row.samples) >= 5


def test_only_names_keep_their_commas() -> None:
    from collkit.cli.tune import split_names

    assert split_names("rd,rm(a2,a2), ring,") == ["rd", "rm(a2,a2)", "ring"]


def test_open_mpi_rules_name_every_collective_by_its_id_or_leave_it_out() -> None:
    """Open MPI's ids for the block collectives; a collective without one is left to Open MPI's
    own decision with a comment, not a KeyError."""
    choices = [
        Choice("gather", 4, 64, "measured", None, comparison("gather:binomial"), []),
        Choice("allgather", 4, 64, "measured", None, comparison("allgather:ring"), []),
        Choice("gatherv", 4, 64, "measured", None, comparison("gatherv:linear"), []),
    ]
    text = openmpi_rules(choices)
    assert "\n0  # allgather\n" in text and "\n9  # gather\n" in text
    assert "# gatherv: no coll/tuned rules id" in text and "2  # collectives" in text


# ---- the output folder: never a lost rule, a lost file or a traceback (--simulate, no MPI) ----


def _tune_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    from collkit.cli import main

    code = main(["tune", *args, "--no-plot"])
    return code, capsys.readouterr().err


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.is_dir() else {}


def test_simulated_zero_byte_calls_are_a_tie_the_native_call_keeps() -> None:
    rows = [
        Row("allreduce", a, 4, 0, source="simulated", mpi="postal()", median_us=0.0)
        for a in ("allreduce:rd", "allreduce:ring")
    ]
    (c,) = choose(rows)
    assert c.collkit is None and all(x.speedup == 1.0 for x in c.candidates)
    assert [r.algorithm for r in rules([c])] == ["native"]


def test_a_zero_byte_size_tunes_and_later_tunes_into_the_folder_still_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "d")
    base = ("allreduce", "-P", "4", "--simulate", "postal", "--only", "rd,ring", "-o", out)
    code, err = _tune_main(capsys, *base, "--sizes", "0")
    assert code == 0, err
    assert load_table(Path(out) / "collkit-tuning.json").lookup("allreduce", 4, 0) == "native"
    code, err = _tune_main(capsys, *base, "--sizes", "8")
    assert code == 0, err
    t = load_table(Path(out) / "collkit-tuning.json")
    assert t.lookup("allreduce", 4, 0) == "native" and t.lookup("allreduce", 4, 8) != "native"


def test_a_campaign_of_another_collective_keeps_the_folders_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "d"
    sim = ("--simulate", "postal", "-o", str(out))
    assert _tune_main(capsys, "allreduce", "-P", "4", "--sizes", "8,64", *sim)[0] == 0

    def keys(rs: list[Rule]) -> list[tuple[object, ...]]:
        return [(r.collective, r.P, r.bytes, r.algorithm, r.source, r.median_us) for r in rs]

    before = keys(load_table(out / "collkit-tuning.json").rules)
    assert before and {k[0] for k in before} == {"allreduce"}
    code, err = _tune_main(capsys, "bcast", "-P", "64", "--sizes", "8", *sim)
    assert code == 0, err
    after = keys(load_table(out / "collkit-tuning.json").rules)
    assert [k for k in after if k[0] == "allreduce"] == before
    assert any(k[0] == "bcast" and k[1] == (64, 64) for k in after)
    # a rule the folder's rows do not give (a table written by hand) is kept too
    t = load_table(out / "collkit-tuning.json")
    t.rules.append(Rule("alltoall", (16, 16), (8, 15), "alltoall:pairwise", source="simulated"))
    save_table(t, out / "collkit-tuning.json")
    code, err = _tune_main(capsys, "bcast", "-P", "8", "--sizes", "8", *sim)
    assert code == 0, err
    assert "alltoall at P = 16" in err  # said among the rules kept
    assert load_table(out / "collkit-tuning.json").lookup("alltoall", 16, 8) == "alltoall:pairwise"


def test_simulated_rules_join_a_measured_table_and_never_replace_its_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "d"
    out.mkdir()
    measured = Table(
        rules=[
            Rule("allreduce", (4, 4), (8 << i, (16 << i) - 1), "allreduce:rd", median_us=2.0)
            for i in range(6)
        ],
        mpi="MPICH 5.0.2",
        machine="m",
        date="d",
    )
    save_table(measured, out / "collkit-tuning.json")
    (out / "openmpi-rules.txt").write_text("# the measured campaign's\n")
    before = _files(out)
    # the same collective and P, simulated: it would replace measured rules
    sim = ("--sizes", "8", "--simulate", "postal", "-o", str(out))
    code, err = _tune_main(capsys, "allreduce", "-P", "4", *sim)
    assert code == 2
    assert "6 rules (allreduce at P = 4) measured with MPICH 5.0.2" in err and "another -o" in err
    assert _files(out) == before  # not a byte written, no tune.jsonl begun
    # another collective (or P), simulated: added beside the measured rules, which stay
    code, err = _tune_main(capsys, "bcast", "-P", "64", *sim)
    assert code == 0, err
    t = load_table(out / "collkit-tuning.json")
    assert (t.mpi, t.machine) == ("MPICH 5.0.2", "m")
    mine = [r for r in t.rules if r.collective == "allreduce"]
    assert [(r.bytes, r.algorithm, r.source, r.median_us) for r in mine] == [
        (r.bytes, r.algorithm, r.source, r.median_us) for r in measured.rules
    ]
    assert any(r.collective == "bcast" and r.source == "simulated" for r in t.rules)
    assert (out / "openmpi-rules.txt").read_text() == "# the measured campaign's\n"


def test_a_measurement_with_another_mpi_never_replaces_measured_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import collkit.tune.run as tune_run

    class Other:
        version = "Open MPI 9.9"

    monkeypatch.setattr(tune_run, "find_mpi", lambda *_: Other())
    monkeypatch.setattr(tune_run, "check_launchable", lambda *_: None)
    out = tmp_path / "d"
    out.mkdir()
    rule = Rule("allreduce", (4, 4), (8, 15), "allreduce:rd", median_us=2.0)
    save_table(Table(rules=[rule], mpi="MPICH 5.0.2", machine="m"), out / "collkit-tuning.json")
    before = _files(out)
    code, err = _tune_main(capsys, "bcast", "-P", "2", "--sizes", "8", "-o", str(out))
    assert code == 2 and "1 rule (allreduce at P = 4) measured with MPICH 5.0.2" in err
    assert _files(out) == before


@pytest.mark.parametrize("content", ["{not json", '{"format": "collkit-tuning"}', ""])
def test_a_folders_table_collkit_cannot_read_is_not_written_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    out = tmp_path / "d"
    out.mkdir()
    (out / "collkit-tuning.json").write_text(content)
    code, err = _tune_main(
        capsys, "bcast", "-P", "4", "--sizes", "8", "--simulate", "postal", "-o", str(out)
    )
    assert code == 2 and "is not a tuning table collkit can read" in err
    assert _files(out) == {"collkit-tuning.json": content.encode()}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--simulate", "", "-o", "o"], "--simulate '': give a model"),
        (["--simulate", "postal", "-o", ""], "-o '': give the folder"),
        (["--simulate", " ", "-o", "o"], "give a model"),
        (["--simulate", "nope", "-o", "o"], "unknown model 'nope'"),
    ],
)
def test_empty_model_or_folder_is_an_error_and_nothing_is_written(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    message: str,
) -> None:
    import collkit.tune.run as tune_run

    def no_mpi(*_: object) -> None:
        raise AssertionError("a campaign on the MPI was started")

    monkeypatch.setattr(tune_run, "find_mpi", no_mpi)
    monkeypatch.chdir(tmp_path)
    code, err = _tune_main(capsys, "allreduce", "-P", "4", "--sizes", "8", *args)
    assert code == 2 and message in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no folder made, nothing in the current one


def test_a_profile_among_the_files_tune_writes_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_profile import make as make_profile

    out = tmp_path / "d"
    out.mkdir()
    prof = make_profile().save(out / "tune.csv")
    before = prof.read_bytes()
    code, err = _tune_main(
        capsys, "allreduce", "-P", "4", "--sizes", "8", "--simulate", "loggops",
        "--profile", str(prof), "-o", str(out),
    )  # fmt: skip
    assert code == 2 and "which tune writes" in err
    assert prof.read_bytes() == before
