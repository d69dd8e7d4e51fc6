"""Bad input to the `collkit` command, each case tried on main (issue 12): exit 2 and a message
that says what is wrong, never a traceback, a hang, a wrong answer or a silent repair. The CLI
runs in-process (main(argv); argparse's usage errors arrive as SystemExit(2))."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

import collkit
from collkit import io
from collkit.cli import main
from collkit.errors import ScheduleFormatError


class Hung(Exception):
    pass


def cli(capsys: pytest.CaptureFixture[str], *argv: str, timeout: int = 30) -> tuple[int, str]:
    """main(argv) in this process, stopped after `timeout` seconds: (exit status, out + err)."""

    def alarm(signum: int, frame: FrameType | None) -> None:
        raise Hung(f"collkit {' '.join(argv)[:80]} ran past {timeout} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(timeout)
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse's usage errors
        code = e.code if isinstance(e.code, int) else 2
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.fixture
def schedule_text() -> str:
    return io.to_text(collkit.generate("allreduce:rd", P=2, count=2))


@pytest.fixture
def chdir_tmp(tmp_path: Path) -> Iterator[Path]:
    old = Path.cwd()
    os.chdir(tmp_path)
    yield tmp_path
    os.chdir(old)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        # main: "all verified: 0 of 0" and exit 0
        (["verify", "allreduce:rd", "-P", "4", "--count", ""], "empty entry in counts"),
        (["verify", "allreduce:rd", "-P", "4", "--count", ",,"], "empty entry in counts"),
        # main: computed 10^999999999 (hangs)
        (["verify", "allreduce:rd", "-P", "10^999999999"], "is more than 2147483648"),
        (["show", "allreduce:rd", "-P", "4", "--rank", "2^99999999999"], "rank 2^99999999999"),
        # main: MemoryError / bad_alloc traceback
        (["verify", "allreduce:rd", "-P", "2^31"], "generate ranks one at a time"),
        (["export", "allreduce:rd", "-P", "2^31"], "1024 GiB collkit writes to stdout"),
        # main: the binding layer's TypeError
        (["show", "allreduce:rd", "-P", "4", "--count", "9" * 30], "more than 2^48"),
        (["verify", "allreduce:rd", "-P", "4", "--count", "2^60"], "more than"),
        (["verify", "reduce:binomial", "-P", "4", "--root", "5"], "--root 5 is not a rank"),
        (["show", "allreduce:rd", "-P", "2^31", "--stats"], "--rank R"),  # main: killed (memory)
        (["schedules", "allreduce", "-P", "2^31", "--totals"], "--search"),  # main: hours
        (["show", "allreduce:rd", "-P", "4", "--elem-size", "0"], "--elem-size"),
        (["limit", "reduce", "--alpha", "fast"], "is not a time"),
        (["schedules", "allreduce", "-P", "8", "--beta", "0GB/s"], "bandwidth"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    code, out = cli(capsys, *argv)
    assert code == 2, out
    assert needle in out


@pytest.mark.parametrize("which", ["missing", "folder", "-"])
def test_verify_file_that_is_not_a_readable_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, which: str
) -> None:
    path = {"missing": str(tmp_path / "nope.txt"), "folder": str(tmp_path), "-": "-"}[which]
    code, out = cli(capsys, "verify", "--file", path)
    assert code == 2 and "--file" in out, out


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (("rank 0 scratch 2", "rank 0 scratch 4611686018427387904"), "GiB for its buffers"),
        (("rank 0 scratch 2", "rank 0 scratch 281474976710656"), "GiB for its buffers"),
        (("count 2", "count 4611686018427387904"), "GiB for its buffers"),
    ],
)
def test_verify_file_with_huge_buffers_is_refused_before_allocating(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    schedule_text: str,
    edit: tuple[str, str],
    needle: str,
) -> None:
    f = tmp_path / "big.txt"
    f.write_text(schedule_text.replace(*edit))
    code, out = cli(capsys, "verify", "--file", str(f))
    assert code == 2 and needle in out, out


def test_verify_file_with_a_100kb_algorithm_name_is_quick(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, schedule_text: str
) -> None:
    # main: the terminal highlighter crawled over the name for minutes
    f = tmp_path / "long.txt"
    f.write_text(schedule_text.replace("algorithm allreduce:rd", "algorithm " + "x" * 100_000))
    t0 = time.perf_counter()
    code, out = cli(capsys, "verify", "--file", str(f), timeout=60)
    assert code == 0 and "verified" in out
    assert time.perf_counter() - t0 < 30


def test_a_100kb_algorithm_argument_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = cli(capsys, "verify", "allreduce:" + "r" * 100_000, "-P", "4")
    assert code == 2 and "is not a name" in out


def test_show_and_verify_share_the_default_count(capsys: pytest.CaptureFixture[str]) -> None:
    # main: show defaulted to count 4, verify to 3
    code, out = cli(capsys, "show", "allreduce:rd", "-P", "2")
    assert code == 0 and "count 4" in out
    code, out = cli(capsys, "verify", "allreduce:rd", "-P", "2", "-v")
    assert code == 0 and "  4  " in out


def test_simulate_and_export_share_the_default_count(capsys: pytest.CaptureFixture[str]) -> None:
    # simulate declared its own ALGO / -P / --count with a default of one element
    code, out = cli(capsys, "simulate", "allreduce:rd", "-P", "2")
    assert code == 0 and "32 B per rank" in out
    code, out = cli(capsys, "export", "allreduce:rd", "-P", "2")
    assert code == 0 and "count 4" in out
    # and the shared --root check: a rank of P, said before anything runs
    code, out = cli(capsys, "simulate", "reduce:binomial", "-P", "4", "--root", "4")
    assert code == 2 and "--root 4 is not a rank of P = 4" in out


def test_export_reads_goal_costs_with_units(capsys: pytest.CaptureFixture[str]) -> None:
    # export took bare floats (--reduce-ns-per-byte) beside the simulator's --gamma with units
    code, out = cli(
        capsys, "export", "allreduce:rd", "-P", "2", "--format", "goal", "--gamma", "5GB/s"
    )
    assert code == 0 and "calc 6" in out  # 32 B at 0.2 ns/B
    code, same = cli(
        capsys, "export", "allreduce:rd", "-P", "2", "--format", "goal", "--gamma", "0.2"
    )
    assert code == 0 and same == out
    code, out = cli(capsys, "export", "allreduce:rd", "-P", "2", "--copy-beta=-1ns")
    assert code == 2 and "per-byte cost" in out


def test_verify_of_nothing_is_not_all_verified(capsys: pytest.CaptureFixture[str]) -> None:
    # main: every P refused by the algorithm printed "all verified: 0 of 0 cases" and exit 0
    code, out = cli(capsys, "verify", "alltoall:bruck_local", "-P", "10", "--rpn", "4")
    assert code == 2 and "nothing verified" in out and "all verified" not in out
    # a sweep where some P are refused still verifies the others
    code, out = cli(capsys, "verify", "reduce_scatter_block:noncommutative", "-P", "5,8")
    assert code == 0 and "skipped 1 P" in out and "all verified: 1 of 1" in out


def test_schedules_reads_a_bare_time_as_ns(capsys: pytest.CaptureFixture[str]) -> None:
    # main: --alpha-p 500 was 500 s (printed "alpha_p = 5e+08 us")
    code, out = cli(capsys, "schedules", "allreduce", "-P", "4", "--alpha-p", "500", "--totals")
    assert code == 0 and "alpha_p = 0.5 us" in out
    code, out = cli(capsys, "schedules", "allreduce", "-P", "4", "--count")
    assert code == 2 and "--count" in out  # the schedule tally is --totals now


def _rows_file(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _row(P: int, median: float) -> str:
    return json.dumps(
        {"collective": "bcast", "algorithm": "bcast:binomial", "P": P, "bytes": 8, "median": median}
    )


def test_fit_refuses_a_garbage_last_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # main: the last line was dropped without a word
    rows = [_row(P, 1.0 + P) for P in (2, 4, 8, 16)]
    f = _rows_file(tmp_path / "r.jsonl", [*rows, "garbage{"])
    code, out = cli(capsys, "fit", str(f), "--model", "latency ~ P")
    assert code == 2 and "r.jsonl:5" in out and "not a JSON object" in out, out


def test_duplicate_json_keys_are_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # main: silently the last value
    rows = [_row(P, 1.0 + P) for P in (2, 4, 8)]
    rows.append(rows[0][:-1] + ', "P": 64}')
    f = _rows_file(tmp_path / "r.jsonl", rows)
    code, out = cli(capsys, "fit", str(f), "--model", "latency ~ P")
    assert code == 2 and "'P' twice" in out, out
    doc = io.to_json(collkit.generate("allreduce:rd", P=2, count=1))
    with pytest.raises(ScheduleFormatError, match="twice"):
        io.from_json(doc.replace('"P": 2,', '"P": 2, "P": 3,'))


def test_fit_plots_makes_no_folders_anywhere(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # main: --plots a/b/c made every missing folder; unwritable paths gave tracebacks
    f = _rows_file(tmp_path / "r.jsonl", [_row(P, 1.0 + P) for P in (2, 4, 8, 16)])
    deep = tmp_path / "a" / "b" / "c"
    code, out = cli(capsys, "fit", str(f), "--model", "latency ~ P", "--plots", str(deep))
    assert code == 2 and "does not exist" in out and not (tmp_path / "a").exists()
    code, out = cli(capsys, "fit", str(f), "--model", "latency ~ P", "--plots", "/proc/collkit")
    assert code == 2 and "--plots" in out
    code, out = cli(capsys, "fit", str(f), "--model", "latency ~ P", "--plots", str(f))
    assert code == 2 and "not a folder" in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        # main: 3 B became 0 doubles without a word
        (["allreduce", "-P", "2", "--sizes", "3"], "not a whole number of 8-byte double"),
        # main: the MPI's own abort
        (["reduce", "-np", "2", "--root", "5"], "--root 5 is not a rank of P = 2"),
        (["allreduce", "-np", "2", "--hosts", "no-such-hostfile"], "does not exist"),
        (["allreduce", "-np", "2", "--root", "1"], "allreduce has no root"),
    ],
)
def test_bench_checks_before_the_mpi_starts(
    capsys: pytest.CaptureFixture[str], chdir_tmp: Path, argv: list[str], needle: str
) -> None:
    code, out = cli(capsys, "bench", *argv, "--no-plot")
    assert code == 2 and needle in out, out
    assert not any(chdir_tmp.rglob("*.jsonl"))


def test_bench_np_is_an_alias_of_p() -> None:
    from collkit.cli import build_parser

    p = build_parser()
    a, b = (
        p.parse_args(["bench", "allreduce", "-np", "2,4"]),
        p.parse_args(["bench", "allreduce", "-P", "2,4"]),
    )
    assert a.P == b.P == [2, 4]


def test_bench_says_it_is_building(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # main: the first `collkit bench` compiled for minutes in silence
    from collkit.cli import bench as bench_cli
    from collkit.mpi import find_mpi

    monkeypatch.setattr(bench_cli, "build", lambda mpi: time.sleep(1.5))
    bench_cli._build(find_mpi())
    err = capsys.readouterr().err
    assert "building collkit's MPI programs" in err and "built in" in err


def test_piped_tables_keep_names_whole() -> None:
    # main: rich folded names at 80 columns when stdout was a pipe
    p = subprocess.run(
        [sys.executable, "-m", "collkit", "algorithms"], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 0
    names = [ln.split()[0] for ln in p.stdout.splitlines()[2:] if ln.strip()]
    assert "allreduce:rabenseifner" in names and "reduce:folded_binomial" in names
    assert "│" not in p.stdout and "\x1b[" not in p.stdout
