"""Property test of the outputs of `collkit report` and `collkit tune`: an -o that is one of the
inputs, empty, a folder where a file goes (or a file where a folder goes), any existing file that
is not the command's own, spelled in any of the ways a path can be (relative, with ./ or //, a
trailing slash, through a symbolic or a hard link). Each run exits 2 with `collkit CMD: error:`
and changes no file: never a traceback, never a file lost or begun.

COLLKIT_PROPERTY_EXAMPLES=2000 for a longer hunt than the suite's default.
"""

from __future__ import annotations

import contextlib
import io as stdio
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collkit.cli import main
from collkit.results import ResultStore, Row
from collkit.tune.table import Rule, Table
from collkit.tune.table import save as save_table

WORK = Path(tempfile.mkdtemp(prefix="collkit-outputs-property-"))
RESULTS = WORK / "results"  # what report reads
TUNED = RESULTS / "tune"  # a tune folder: its table was measured with an MPI
BROKEN = WORK / "broken"  # a tune folder whose collkit-tuning.json is not a table
SIMULATE = ["allreduce", "-P", "4", "--sizes", "8", "--simulate", "postal", "--only", "rd"]


def _make() -> None:
    TUNED.mkdir(parents=True)
    store = ResultStore(RESULTS / "bench-allreduce.jsonl")
    for algo, us in (("native", 10.0), ("allreduce:rd", 5.0)):
        store.append(Row("allreduce", algo, 4, 8, mpi="MPICH x", machine="m", median_us=us))
    (RESULTS / "this-machine.json").write_text('{"format": "collkit-profile"}\n')
    (RESULTS / "validate.md").write_text("# validation\n")
    (RESULTS / "notes.html").write_text("<html>a page of mine</html>\n")
    (RESULTS / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    measured = Table(
        rules=[Rule("allreduce", (4, 4), (8, 15), "allreduce:rd", median_us=2.0)],
        mpi="MPICH 5.0.2",
        machine="m",
        date="d",
    )
    save_table(measured, TUNED / "collkit-tuning.json")
    (TUNED / "tune.jsonl").write_text("")
    (RESULTS / "link.html").symlink_to("bench-allreduce.jsonl")
    os.link(RESULTS / "validate.md", RESULTS / "hard.html")
    BROKEN.mkdir()
    (BROKEN / "collkit-tuning.json").write_text('{"format": "collkit-tuning", "rules": [}\n')


_make()
FILES = sorted(p for p in WORK.rglob("*") if p.is_file() or p.is_symlink())
FOLDERS = [RESULTS, TUNED, BROKEN]


def _spell(path: Path, how: int) -> str:
    """One of the spellings of `path`: absolute, relative to WORK, with ./, with //, with a
    trailing slash."""
    rel = os.path.relpath(path, WORK)
    return [str(path), rel, f"./{rel}", rel.replace("/", "//"), f"{rel}/"][how]


def _snapshot() -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for p in sorted(WORK.rglob("*")):
        key = str(p.relative_to(WORK))
        out[key] = (
            f"-> {os.readlink(p)}" if p.is_symlink() else p.read_bytes() if p.is_file() else "dir"
        )
    return out


def _run(argv: list[str]) -> tuple[int, str]:
    old = os.getcwd()
    out, err = stdio.StringIO(), stdio.StringIO()
    os.chdir(WORK)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 2
    finally:
        os.chdir(old)
    return code, err.getvalue()


def _check(cmd: str, argv: list[str]) -> None:
    before = _snapshot()
    code, err = _run(argv)
    assert code == 2, (argv, code, err[-2000:])
    assert f"collkit {cmd}: error: " in err and "Traceback" not in err, (argv, err[-2000:])
    assert _snapshot() == before, argv


COMMON = dict(deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)
EXAMPLES = int(os.environ.get("COLLKIT_PROPERTY_EXAMPLES", "40"))
BLANK = st.sampled_from(["", " ", "\t"])


@settings(max_examples=EXAMPLES, **COMMON)  # type: ignore[arg-type]
@given(
    st.one_of(
        st.tuples(st.sampled_from(FILES + FOLDERS), st.integers(0, 4)).map(lambda t: _spell(*t)),
        BLANK,
    ),
    st.sampled_from([RESULTS, TUNED]),
)
def test_report_never_writes_over_an_input_a_folder_or_another_file(out: str, folder: Path) -> None:
    _check("report", ["report", str(folder), "-o", out])


@settings(max_examples=EXAMPLES, **COMMON)  # type: ignore[arg-type]
@given(
    st.one_of(
        st.tuples(st.sampled_from([*FILES, TUNED, BROKEN]), st.integers(0, 4)).map(
            lambda t: _spell(*t)
        ),
        BLANK,
    )
)
def test_tune_never_writes_over_a_file_or_a_table_made_another_way(out: str) -> None:
    _check("tune", ["tune", *SIMULATE, "--no-plot", "-o", out])
