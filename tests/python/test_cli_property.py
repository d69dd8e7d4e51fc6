"""Property test of the whole command line: random argument vectors (every command, every flag
the parsers declare, values from a hostile pool) and random files, run in-process. Each run
ends with exit 0, 1 (a check that failed) or 2 with a message, within a time limit: never a
traceback, never a hang.

COLLKIT_PROPERTY_EXAMPLES=2000 for a longer hunt; the slow-marked test runs 600 examples.
"""

from __future__ import annotations

import argparse
import contextlib
import io as stdio
import os
import resource
import signal
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import collkit
from collkit import io
from collkit.cli import COMMANDS, _common, build_parser, main

MEMORY_HEADROOM = 4 << 30  # bytes a run may add to this process's address space
TIME_LIMIT = 30  # seconds per run: generous on a loaded 2-core machine; a hang is minutes
# Runs that would start real work we do not want here: the tour (minutes), the emulated cluster
# (as root it makes namespaces: tests/mpi/test_cluster.py), and bench's MPI (pointed at an mpiexec
# that does not exist, so it stops at the check of the MPI).
SKIP = {"tour", "cluster"}
BENCH_TAIL = ["--mpiexec", "/nonexistent/mpiexec", "--no-plot"]


def mpi_tail(cmd: str) -> list[str]:
    """What stops a command that would measure at the check of the MPI."""
    if cmd == "bench":
        return BENCH_TAIL
    return BENCH_TAIL[:2] if cmd in ("calibrate", "validate") else []


WORK = Path(tempfile.mkdtemp(prefix="collkit-cli-property-"))
RD = collkit.generate("allreduce:rd", P=3, count=2)
FILES = {
    "text": io.to_text(RD),
    "json": io.to_json(RD),
    "goal": io.to_goal(RD),
    "rows": "".join(
        f'{{"collective": "bcast", "algorithm": "bcast:binomial", "P": {P}, "bytes": 8, '
        f'"median": {1.5 * P}}}\n'
        for P in (2, 4, 8, 16)
    ),
    "hosts": "localhost\n",
}


def _options() -> dict[str, list[str]]:
    """Every option string of every command, read from the parsers themselves."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out: dict[str, list[str]] = {}
    for name, p in sub.choices.items():
        out[name] = sorted(
            s for a in p._actions for s in a.option_strings if s not in ("-h", "--help")
        )
    return out


OPTIONS = _options()

VALUES = [
    # counts, process counts, ranks
    "0", "1", "2", "3", "5", "8", "-1", "2^31", "2^63", "10^999999999", "9" * 60, "1..4",
    "4..1", "1..3,5", "2^1..2^3:pow2", "1,,2", "", " ", "x", "1e3", "nan", "inf", "-0",
    # sizes, times, per-byte costs
    "8B", "1KiB", "3", "1.5MB", "1e99B", "500ns", "1.34us", "2ms", "-5ns", "1e308s", "0.4ns/B",
    "2.5GB/s", "0GB/s", "5 parsecs",
    # algorithm names and collectives
    "allreduce:rd", "allreduce:ring(seg=64KiB)", "alltoall:bruck(r=0)", "reduce:binomial",
    "bcast:binomial", "allreduce:rm(a2,a2)", "allreduce", "reduce", "multicast", "allreduce:",
    "allreduce:rd(", "a" * 5000, "ALLREDUCE:RD", "allreduce:rd;rm -rf /",
    # models, distributions, topologies, formulas, choices
    "postal", "pipelined-postal", "loggops", "exponential(50ns)", "uniform(0,1us)",
    "fattree(k=4,hop=100ns)", "torus(dims=2x2)", "latency ~ P", "latency ~ ((", "seed-p",
    "text", "json", "goal", "median", "P=8", "P=x", "core", "native", "rd,native",
    # paths: good files, missing, a folder, unwritable, nested missing folders
    "sched.txt", "sched.json", "sched.goal", "rows.jsonl", "hosts", "random.bin", "missing.txt",
    ".", "/proc/collkit-out", "no/such/folder/out.png", "out.png", "out.json", "-",
    # hostile: past the launcher, tiny segments, devices, a deep file, huge costs
    "2147483648", "2^31", "bcast:pipeline(seg=1B)", "allreduce:ring(seg=1B)", "2^40", "1TiB",
    "file(/dev/zero)", "/dev/zero", "/dev/full", "deep.json", "1e300", "rows.jsonl.rejected",
]  # fmt: skip


def _write_files(random_bytes: bytes, mutate_at: int, junk: str) -> None:
    """The files the path values name: valid ones, a mutated one and random bytes."""
    for name, key in (
        ("sched.txt", "text"),
        ("sched.json", "json"),
        ("sched.goal", "goal"),
        ("rows.jsonl", "rows"),
        ("hosts", "hosts"),
    ):
        text = FILES[key]
        if key in ("text", "json", "rows") and junk:
            i = mutate_at % (len(text) + 1)
            text = text[:i] + junk + text[i:]
        (WORK / name).write_text(text)
    (WORK / "random.bin").write_bytes(random_bytes)
    (WORK / "deep.json").write_text("[" * 100_000)


class Hung(Exception):
    pass


def _address_space_limit() -> tuple[int, int]:
    """Cap this process's address space at its size now + MEMORY_HEADROOM for one run: a run
    that would take the shared machine's memory gets MemoryError (exit 2) instead."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    vm = next(
        int(line.split()[1]) * 1024
        for line in Path("/proc/self/status").read_text().splitlines()
        if line.startswith("VmSize:")
    )
    cap = vm + MEMORY_HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard < 0 else min(cap, hard), hard))
    return soft, hard


def run_cli(argv: list[str]) -> tuple[int, str]:
    """main(argv) in this process: (exit status, stderr + stdout)."""
    code, out, err = run_cli_split(argv)
    return code, err + out


def run_cli_split(argv: list[str]) -> tuple[int, str, str]:
    """main(argv) in this process, within TIME_LIMIT and MEMORY_HEADROOM: (exit status, stdout,
    stderr)."""

    def alarm(signum: int, frame: FrameType | None) -> None:
        raise Hung(f"collkit {' '.join(argv)[:200]} ran past {TIME_LIMIT} s")

    old_dir, old = os.getcwd(), signal.signal(signal.SIGALRM, alarm)
    out, err = stdio.StringIO(), stdio.StringIO()
    os.chdir(WORK)
    limits = _address_space_limit()
    signal.alarm(TIME_LIMIT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:  # argparse's usage errors
                code = e.code if isinstance(e.code, int) else 2
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        resource.setrlimit(resource.RLIMIT_AS, limits)
        os.chdir(old_dir)
    return code, out.getvalue(), err.getvalue()


# A valid command line per command, which the test then perturbs: most random vectors would
# otherwise stop at the first missing argument and never reach the commands' own code.
TEMPLATES: dict[str, list[list[str]]] = {
    "algorithms": [[], ["allreduce"], ["allreduce:rd"]],
    "show": [["allreduce:rd", "-P", "4"], ["reduce:binomial", "-P", "3", "--stats"]],
    "verify": [["allreduce:rd", "-P", "1..4"], ["--file", "sched.txt"]],
    "limit": [["reduce", "-P", "2..8"], ["allreduce", "-P", "4"]],
    "export": [["allreduce:rd", "-P", "4", "-o", "out.json"], ["--from", "sched.json"]],
    "simulate": [["allreduce:rd", "-P", "8"], ["bcast:binomial", "-P", "5", "--model", "loggops"]],
    "fit": [["rows.jsonl", "--model", "latency ~ P"], ["rows.jsonl", "--against", "rows.jsonl"]],
    "schedules": [["allreduce", "-P", "8", "--top", "3"], ["allreduce", "-P", "6", "--totals"]],
    "bench": [["allreduce", "-P", "2"], ["reduce", "-np", "2", "--sizes", "8..64"]],
}


@st.composite
def argv_for(draw: st.DrawFn) -> list[str]:
    cmd = draw(st.sampled_from([c for c in COMMANDS if c not in SKIP]))
    pool = st.sampled_from(VALUES)
    value = st.one_of(pool, pool, pool, st.text(max_size=12))
    argv = [cmd, *draw(st.sampled_from(TEMPLATES.get(cmd, [[]])))]
    for _ in range(draw(st.integers(0, 2))):  # replace a token of the template
        if len(argv) > 1:
            argv[draw(st.integers(1, len(argv) - 1))] = draw(value)
    for _ in range(draw(st.integers(0, 4))):  # add options, most with a value
        argv.append(draw(st.sampled_from(OPTIONS[cmd])))
        if draw(st.integers(0, 9)):
            argv.append(draw(value))
    return argv + mpi_tail(cmd)


def check(argv: list[str], random_bytes: bytes, mutate_at: int, junk: str) -> None:
    _write_files(random_bytes, mutate_at, junk)
    code, stdout, stderr = run_cli_split(argv)
    out = stderr + stdout
    assert code in (0, 1, 2), (argv, code, out[-2000:])
    if code == 2:  # the message on stderr: stdout is the command's output, read by a pipe
        assert stderr.strip(), f"exit 2 without a message on stderr: {argv} (stdout: {stdout})"
        assert "error:" not in stdout, (argv, stdout[-2000:])
    assert "Traceback" not in out, (argv, out[-2000:])


COMMON = dict(deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)


@settings(max_examples=int(os.environ.get("COLLKIT_PROPERTY_EXAMPLES", "40")), **COMMON)  # type: ignore[arg-type]
@given(argv_for(), st.binary(max_size=300), st.integers(0, 10_000), st.text(max_size=6))
def test_random_command_lines_end_cleanly(
    argv: list[str], random_bytes: bytes, mutate_at: int, junk: str
) -> None:
    check(argv, random_bytes, mutate_at, junk)


@pytest.mark.slow
@settings(max_examples=600, **COMMON)  # type: ignore[arg-type]
@given(argv_for(), st.binary(max_size=2000), st.integers(0, 10_000), st.text(max_size=20))
def test_random_command_lines_end_cleanly_long(
    argv: list[str], random_bytes: bytes, mutate_at: int, junk: str
) -> None:
    check(argv, random_bytes, mutate_at, junk)


@pytest.mark.parametrize("cmd", sorted(set(COMMANDS) - SKIP))
def test_every_command_with_every_flag_and_no_value(cmd: str) -> None:
    # each flag alone (argparse's 'expected one argument' and the commands' own checks)
    for opt in OPTIONS[cmd]:
        argv = [cmd, opt, *mpi_tail(cmd)]
        check(argv, b"", 0, "")


def _numeric_options() -> list[tuple[str, str, Any]]:
    """(command, flag, type) of every option whose value is a number: its type reads '3'."""
    out = []

    def walk(p: argparse.ArgumentParser, name: str) -> None:
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):  # commands, and cluster's up, down...
                for sub, sp in a.choices.items():
                    walk(sp, f"{name} {sub}".strip())
                continue
            if not a.option_strings or a.type in (None, str):
                continue
            t = p._registry_get("type", a.type, a.type)  # type=int: what collkit registered
            try:
                t("3")
            except (argparse.ArgumentTypeError, ValueError, TypeError):
                continue
            out.append((name, a.option_strings[0], t))

    walk(build_parser(), "")
    return out


NUMERIC_OPTIONS = _numeric_options()
# Digits that Python's int() and float() read as 3 (Arabic-Indic, fullwidth, Devanagari, bold).
FOREIGN_THREES = "٣３३𝟑"


def test_every_numeric_option_is_found() -> None:
    flags = {(c, f) for c, f, _ in NUMERIC_OPTIONS}
    for c, f in (("show", "-P"), ("show", "--rank"), ("simulate", "--trials"),
                 ("schedules", "--simulate"), ("schedules", "--max-fanout"), ("fit", "--threshold"),
                 ("bench", "--iters"), ("tune", "--alpha"), ("simulate", "--seed"),
                 ("cluster up", "--nodes")):  # fmt: skip
        assert (c, f) in flags


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(NUMERIC_OPTIONS),
    st.text(alphabet="0123456789", max_size=3),
    st.sampled_from([*FOREIGN_THREES, "_", "1_0", "٣_"]),
    st.text(alphabet="0123456789", max_size=3),
    st.sampled_from(["", "ns", "us", "KiB", "B", "..8", ",8", "^2"]),
)
def test_numeric_options_refuse_other_digits_and_underscores(
    option: tuple[str, str, Any], head: str, odd: str, tail: str, unit: str
) -> None:
    # int() and float() read '٣' as 3 and '1_0' as 10: every option refuses them instead.
    cmd, flag, parse = option
    text = head + odd + tail + unit
    with pytest.raises((argparse.ArgumentTypeError, ValueError)):
        parse(text)
        pytest.fail(f"collkit {cmd} {flag} {text} was accepted")


@pytest.mark.parametrize(
    "argv",
    [["show", "allreduce:rd", "-P", "٣"], ["show", "allreduce:rd", "-P", "８"],
     ["show", "allreduce:rd", "-P", "1_0"],
     ["simulate", "allreduce:rd", "-P", "8", "--alpha", "٣ns"],
     ["simulate", "allreduce:rd", "-P", "8", "--trials", "٣"],
     ["schedules", "allreduce", "-P", "8", "--top", "1_0"],
     ["simulate", "allreduce:rd", "-P", "8", "--topology", "fattree(k=1_0,hop=1ns)"],
     ["simulate", "allreduce:rd", "-P", "8", "--noise", "lognormal(1us,1_0)"]],
)  # fmt: skip
def test_other_digits_and_underscores_exit_2_with_a_message(argv: list[str]) -> None:
    code, out = run_cli(argv)
    assert code == 2 and "error" in out and "Traceback" not in out, out


# The list and number parsers of the shared options, fed hostile lists: empty elements, signs,
# other scripts' digits, underscores, huge values. Each either gives what the text says (ASCII,
# in range) or refuses it with InvalidArgumentError: never a skipped element or a traceback.
LIST_PARSERS = {
    "-P": _common.p_list,
    "--count": _common.count_list,
    "--bytes": _common.bytes_list,
    "--rank": _common.rank,
    "--elem-size": _common.elem_size,
    "--rpn": _common._rpn,
}
ELEMENT = st.one_of(
    st.integers(-5, 300).map(str),
    st.sampled_from(["", " ", "0", "-0", "+8", "-1", "2^10", "2^64", "9" * 40, "1..8", "8..1",
                     "2^1..2^5:pow2", "1_0", "٣", "８", "1e3", "8B", "1KiB", "nan", "0x10"]),
    st.text(max_size=4),
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(LIST_PARSERS)), st.lists(ELEMENT, min_size=1, max_size=5))
def test_list_options_parse_every_element_or_refuse_the_list(flag: str, parts: list[str]) -> None:
    text = ",".join(parts)
    try:
        v = LIST_PARSERS[flag](text)
    except (collkit.CollkitError, argparse.ArgumentTypeError):
        return
    values = v if isinstance(v, list) else [v]
    assert values and all(isinstance(x, int) and 0 <= x < 2**63 for x in values), (text, v)
    # An empty element or a non-ASCII digit never gets through (it would be skipped or read
    # as a number).
    assert all(p.strip() for p in parts), (text, v)
    assert text.isascii() and "_" not in text, (text, v)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(["--alpha", "--beta", "--gamma"]),
    st.lists(st.sampled_from(["1", "2ns", "0.5us", "", " ", "٣", "1_0", "x", "-1", "2.5GB/s"]),
             min_size=2, max_size=4),
)  # fmt: skip
def test_simulate_parameter_lists_run_all_or_nothing(flag: str, parts: list[str]) -> None:
    text = ",".join(parts)
    code, out, err = run_cli_split(["simulate", "allreduce:rd", "-P", "4", flag, text])
    ok = all(p.strip() and p.isascii() and "_" not in p and p not in ("x", "-1") for p in parts)
    if flag == "--alpha" and "2.5GB/s" in parts:
        ok = False  # a bandwidth is a per-byte cost (beta, gamma), not a time
    if ok:
        assert code == 0 and len(out.splitlines()) == len(parts), (text, err)
    else:
        assert code == 2 and out == "" and "error:" in err and "skipped" not in err, (text, err)
