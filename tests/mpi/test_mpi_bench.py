"""`collkit bench`: campaigns over the mpich wheel write rows in the one schema, resume without
re-measuring, reject bad input clearly; the multicast benchmark fits alpha_p and alpha_r."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collkit.bench import Campaign, run_campaign, run_multicast
from collkit.cli import bench as bench_cli
from collkit.errors import AlgorithmNameError, CollkitError, InvalidArgumentError
from collkit.mpi import MPI
from collkit.results import ResultStore, read_jsonl
from mpi_support import built, mpich_or_skip


@pytest.fixture(scope="module")
def mpich() -> MPI:
    mpi = mpich_or_skip()
    built(mpi)
    return mpi


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    bench_cli.add_arguments(p)
    return p.parse_args(argv)


def small_campaign(out: Path, sizes: str, *more: str) -> argparse.Namespace:
    """allreduce by rd, native and MPICH's ring on 2 ranks, 20 iterations, into `out`."""
    algos = ["--algos", "rd,native,mpich:ring", "-np", "2", "--sizes", sizes]
    return parse(["allreduce", *algos, "--iters", "20", "--warmup", "2", "-o", str(out), *more])


def test_parse_sizes() -> None:
    assert bench_cli.parse_sizes("8B..64") == [8, 16, 32, 64]
    assert bench_cli.parse_sizes("8,1KiB") == [8, 1024]
    assert bench_cli.parse_sizes("0..4") == [0, 1, 2, 4]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30))
def test_parse_sizes_hostile_text_is_a_clear_error(text: str) -> None:
    try:
        sizes = bench_cli.parse_sizes(text)
    except argparse.ArgumentTypeError:
        return
    assert sizes and all(0 <= s <= 1 << 34 for s in sizes) and len(sizes) <= 64


def test_campaign_writes_rows_and_resumes(mpich: MPI, tmp_path: Path) -> None:
    out = tmp_path / "allreduce.jsonl"
    args = small_campaign(out, "8,64")
    assert bench_cli.run(args) == 0
    rows = read_jsonl(out)
    assert sorted((r.algorithm, r.bytes) for r in rows) == sorted(
        (a, b) for a in ("allreduce:rd", "native", "mpich:ring") for b in (8, 64)
    )
    for r in rows:
        assert r.source == "measured" and r.P == 2 and r.mpi.startswith("MPICH")
        # Only collkit's rows are checked against the MPI; the MPI against itself proves nothing.
        assert r.valid is (True if r.algorithm == "allreduce:rd" else None) and not r.error
        assert 0 < r.min_us <= r.q1_us <= r.median_us <= r.q3_us <= r.max_us and r.iterations >= 10
    ring = next(r for r in rows if r.algorithm == "mpich:ring")
    assert "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=ring" in ring.settings
    assert out.with_suffix(".csv").exists() and out.with_suffix(".png").stat().st_size > 1000

    # A rerun with one more size measures only that size; the old rows stay as they were.
    before = out.read_text()
    args = small_campaign(out, "8,64,512", "--no-plot")
    assert bench_cli.run(args) == 0
    after = out.read_text()
    assert after.startswith(before)
    new = read_jsonl(out)[len(rows) :]
    assert sorted((r.algorithm, r.bytes) for r in new) == sorted(
        (a, 512) for a in ("allreduce:rd", "native", "mpich:ring")
    )


def test_campaign_resumes_from_a_partial_file(mpich: MPI, tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "r.jsonl")
    c = Campaign(
        collective="allreduce", algorithms=["rd"], P=[3], sizes=[8, 16], iterations=10, warmup=1
    )
    first = run_campaign(c, mpich, store)
    assert len(first) == 2
    # Lose the last row, as if the run had been killed while measuring it.
    lines = store.jsonl.read_text().splitlines(keepends=True)
    store.jsonl.write_text(lines[0] + lines[1][:20])
    again = ResultStore(store.jsonl)
    redone = run_campaign(c, mpich, again)
    assert [r.bytes for r in redone] == [first[1].bytes]
    assert [r.bytes for r in read_jsonl(store.jsonl)] == [8, 16]


@pytest.mark.parametrize(
    "algos, error",
    [
        ("allreduce:nope", AlgorithmNameError),
        ("bcast:nonexistent", AlgorithmNameError),
        ("mpich:not_an_algorithm", InvalidArgumentError),
        ("ompi:ring", InvalidArgumentError),
        ("rd,,native", InvalidArgumentError),
    ],
)
def test_bad_algorithms_are_clear_errors(
    mpich: MPI, tmp_path: Path, algos: str, error: type[Exception]
) -> None:
    args = parse(["allreduce", "--algos", algos, "-np", "2", "-o", str(tmp_path / "x.jsonl")])
    with pytest.raises(error):
        bench_cli.run(args)
    assert not (tmp_path / "x.jsonl").exists()  # nothing measured, nothing written


def test_unknown_collkit_algorithm_of_a_collective_is_an_error(mpich: MPI) -> None:
    with pytest.raises(CollkitError, match="unknown algorithm"):
        Campaign(collective="bcast", algorithms=["nonexistent"], P=[2], sizes=[8])


def test_multicast_fits_alpha_p_and_alpha_r(mpich: MPI) -> None:
    recs = run_multicast(mpich, 2, max_b=4, iterations=50, warmup=5, fit_max_b=4)
    per_b = [r for r in recs if r["kind"] == "multicast"]
    assert sorted({(r["mode"], r["b"]) for r in per_b}) == sorted(
        (m, b) for m in ("blocking", "nonblocking") for b in range(1, 5)
    )
    fits = {r["mode"]: r for r in recs if r["kind"] == "fit"}
    assert set(fits) == {"blocking", "nonblocking"}
    for f in fits.values():
        for k in ("alpha_p_min", "alpha_r_min", "alpha_p_median", "alpha_r_median"):
            assert isinstance(f[k], float)
    with pytest.raises(InvalidArgumentError):
        run_multicast(mpich, 1)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--algos", "allreduce:nope"], "unknown algorithm"),
        (["--algos", "mpich:nope"], "not an algorithm of this MPI"),
        (["--datatype", "quad"], "datatype 'quad'"),
    ],
)
def test_cli_bad_input_exits_2(
    mpich: MPI, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    from collkit.cli import main

    code = main(["bench", "allreduce", "-np", "2", "-o", str(tmp_path / "r.jsonl"), *argv])
    assert code == 2 and needle in capsys.readouterr().err


@pytest.mark.parametrize("sizes", ["1MiB..8B", "", "8,,16", "lots", "1..1TiB"])
def test_cli_bad_sizes_exit_2(sizes: str, capsys: pytest.CaptureFixture[str]) -> None:
    from collkit.cli import main

    with pytest.raises(SystemExit) as e:
        main(["bench", "allreduce", "--sizes", sizes])
    assert e.value.code == 2 and "--sizes" in capsys.readouterr().err


def test_cli_json_prints_rows_with_the_row_files_keys(
    mpich: MPI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from collkit.cli import main
    from collkit.results import FIELDS

    out = tmp_path / "r.jsonl"
    code = main(
        ["bench", "allreduce", "--algos", "rd,native", "-np", "2", "--sizes", "8",
         "--iters", "10", "--warmup", "1", "--rounds", "2", "--mpiexec", mpich.mpiexec,
         "--no-plot", "--json", "-o", str(out)]
    )  # fmt: skip
    cap = capsys.readouterr()
    assert code == 0, cap.err[-2000:]
    objs = [json.loads(ln) for ln in cap.out.splitlines()]  # nothing but JSON on stdout
    assert sorted(o["algorithm"] for o in objs) == ["allreduce:rd", "native"]
    assert all(set(o) == set(FIELDS) for o in objs)
    # the same rows as the row file, key for key
    assert sorted(objs, key=lambda o: o["algorithm"]) == sorted(
        (json.loads(ln) for ln in out.read_text().splitlines()), key=lambda o: o["algorithm"]
    )
