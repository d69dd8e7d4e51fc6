"""Every command's table when stdout is a pipe (`collkit ... | head`, `| grep`, `> file`): plain
columns, whole names, no box drawing and no terminal escapes (README: "plain columns when not a
terminal"); on a terminal the same tables are ruled. Each command runs in a subprocess whose
stdout is a pipe, as a shell pipe sees it."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BOX = {chr(c) for c in range(0x2500, 0x2580)}  # rich's boxes are drawn with these


def piped(*argv: str, cwd: Path | None = None, code: str | None = None) -> str:
    """stdout of `collkit ARGV` (or of `python -c CODE`) when it is a pipe; exit status 0."""
    cmd = [sys.executable, "-c", code] if code else [sys.executable, "-m", "collkit", *argv]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=cwd)  # pipes
    assert p.returncode == 0, (argv, p.stderr[-2000:])
    return p.stdout


def assert_plain(out: str, *names: str) -> None:
    """No box drawing, no escapes, and each name whole as a word of some line."""
    assert out.strip(), "nothing printed"
    drawn = sorted(BOX & set(out))
    assert not drawn, f"box drawing {drawn} in a pipe:\n{out[:800]}"
    assert "\x1b[" not in out, f"terminal escapes in a pipe:\n{out[:800]}"
    words = {w for line in out.splitlines() for w in line.split()}
    for name in names:
        assert name in words, f"{name} not whole in:\n{out[:1500]}"


@pytest.fixture(scope="module")
def rows_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    f = tmp_path_factory.mktemp("pipes") / "rows.jsonl"
    row = {"collective": "bcast", "algorithm": "bcast:binomial", "bytes": 8}
    f.write_text("".join(json.dumps({**row, "P": P, "median": 1.5 * P}) + "\n" for P in (2, 4, 8)))
    return f


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["algorithms"], ["allreduce:rabenseifner", "reduce:folded_binomial"]),
        (["algorithms", "allreduce"], ["allreduce:rd", "allreduce:ring"]),
        (["algorithms", "allreduce:rd"], ["restrictions:"]),
        (["verify", "allreduce:rd", "-P", "1..5", "--count", "0,3"], ["verified"]),
        (["simulate", "allreduce:rd", "-P", "8"], ["allreduce:rd"]),
        (["simulate", "allreduce:rd", "-P", "4", "--per-rank"], ["rank"]),
        (["schedules", "allreduce", "-P", "12", "--top", "5", "--simulate", "5"], ["a4,a3"]),
        (["schedules", "allreduce", "-P", "6", "--totals"], ["schedules"]),
        (["show", "allreduce:rd", "-P", "3"], ["rank"]),
        (["show", "allreduce:rd", "-P", "4", "--stats"], ["allreduce:rd"]),
        (["limit", "reduce", "-P", "2..8"], ["reduce:rabenseifner"]),
    ],
)
def test_tables_are_plain_columns_in_a_pipe(argv: list[str], names: list[str]) -> None:
    assert_plain(piped(*argv), *names)


def test_fit_tables_are_plain_in_a_pipe(rows_file: Path) -> None:
    assert_plain(piped("fit", str(rows_file), "--model", "latency ~ P"), "P")


def test_bench_table_is_plain_in_a_pipe() -> None:
    # bench needs an MPI to measure; its table is printed by the same function from rows
    code = textwrap.dedent(
        """
        from collkit.cli.bench import _print_table
        from collkit.results import Row
        rows = [Row("allreduce", a, 4, 8, min_us=1.0, q1_us=1.1, median_us=1.2, q3_us=1.3,
                    p99_us=1.4, max_us=1.5, iterations=10) for a in ("allreduce:rd", "native")]
        rows.append(Row("allreduce", "allreduce:ring", 4, 8, error="[Errno 2] no such file"))
        _print_table(rows)
        """
    )
    out = piped(code=code)
    assert_plain(out, "allreduce:rd", "native", "allreduce:ring")
    assert "[Errno 2] no such file" in out  # an error's text is printed as it is


def test_tune_table_is_plain_in_a_pipe(tmp_path: Path) -> None:
    out = piped("tune", "allreduce", "-P", "4", "--sizes", "8", "--simulate", "postal",
                "-o", str(tmp_path / "t"), "--no-plot")  # fmt: skip
    assert_plain(out, "allreduce")


def test_validate_against_a_baseline_is_plain_in_a_pipe(tmp_path: Path) -> None:
    from test_validate import _case, _validation

    from collkit.results import ResultStore

    a = _validation([_case("rd", 8, 1.0, 1.0), _case("ring", 8, 2.0, 2.0)])
    b = _validation([_case("rd", 8, 1.0, 1.2), _case("ring", 8, 2.0, 1.5)])
    for v, name in ((a, "a.jsonl"), (b, "b.jsonl")):
        store = ResultStore(tmp_path / name)
        for r in v.rows():
            store.append(r)
    out = piped("validate", "--measured", "b.jsonl", "--baseline", "a.jsonl", "-o", "rep",
                cwd=tmp_path)  # fmt: skip
    assert_plain(out)


def test_on_a_terminal_the_same_table_is_ruled() -> None:
    # The other side of the rule, so that the checks above can fail: a terminal gets boxes.
    # Read while it writes: the table outgrows the terminal's buffer, and a writer left alone
    # there waits for a reader for ever.
    leader, follower = pty.openpty()
    try:
        p = subprocess.Popen([sys.executable, "-m", "collkit", "algorithms", "allreduce"],
                             stdout=follower, stderr=subprocess.PIPE)  # fmt: skip
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not data:
                break
            chunks.append(data)
        _, err = p.communicate(timeout=120)
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert p.returncode == 0, err
    assert BOX & set(b"".join(chunks).decode("utf-8", "replace"))
