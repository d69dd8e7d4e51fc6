"""Adding a collective is its CollectiveSpec (an enum value in collective.hpp and its spec in
collective.cpp), one line of mpi/src/call_table.hpp, its declarations in mpi/include/collkit.h
(written by hand for its readers; test_collectives.py checks them against the table, and their
names are ck_<name>, so this check does not see them) and its algorithm files under
core/algorithms/<collective>/: everything else (the C API's definitions, the PMPI wrappers, the
executor, the verifier, the simulator, the CLI, the Python API) is generic over the collectives.

Shown on the collectives added last (gather, reduce_scatter_block; scatter's name is also a plot's
word): the source files that name them in code, comments and docstrings left out, are those three,
plus the optional places an MPI is told about it (the mpi4py face's function and the MPIs' own
algorithms for it, python/collkit/mpi/). A second list of collectives anywhere else fails here."""

from __future__ import annotations

import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

from conftest import MPI_PENDING

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = {
    "core/include/collkit/collective.hpp",  # the enum value
    "core/src/collective.cpp",  # its CollectiveSpec
    "mpi/src/call_table.hpp",  # its one line: C API, PMPI, calls, non-blocking forms
}
OPTIONAL = {
    "python/collkit/mpi/face.py",  # the mpi4py face's function (by hand: mpi4py's signature)
    "python/collkit/mpi/__init__.py",  # ... exported
    "python/collkit/mpi/mpich.py",  # each MPI's own algorithms for it, to compare and force
    "python/collkit/mpi/openmpi.py",
    "python/collkit/mpi/intel.py",
    # the interposer's overhead benchmark calls MPI_Alltoallv / MPI_Allgatherv and their ck_ by
    # hand, each with its own arguments, as the mpi4py face does
    "mpi/src/pmpi_overhead.cpp",
}


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)}


def _cxx_words(text: str) -> set[str]:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return _words(re.sub(r"//[^\n]*", " ", text))


def _py_words(text: str) -> set[str]:
    """Names and string contents, docstrings and comments left out."""
    out: set[str] = set()
    prev = tokenize.NEWLINE
    for t in tokenize.generate_tokens(io.StringIO(text).readline):
        if t.type == tokenize.NAME:
            out.add(t.string.lower())
        elif t.type == tokenize.STRING and prev not in (
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
        ):
            out |= _words(t.string)
        if t.type not in (tokenize.COMMENT, tokenize.NL):
            prev = t.type
    return out


def places(collective: str) -> set[str]:
    """The source files (not tests, not the collective's algorithms) that name `collective`."""
    listed = subprocess.run(
        ["git", "ls-files", "core", "mpi", "python"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if listed.returncode != 0 or not listed.stdout:
        pytest.skip("not a git checkout")
    out = set()
    for f in listed.stdout.split():
        if "/tests/" in f or f.startswith("core/algorithms/"):
            continue
        path = ROOT / f
        if path.suffix in (".cpp", ".hpp", ".h", ".c"):
            words = _cxx_words(path.read_text(encoding="utf-8"))
        elif path.suffix in (".py", ".pyi"):
            words = _py_words(path.read_text(encoding="utf-8"))
        else:
            continue
        if collective in words:
            out.add(f)
    return out


# The irregular collectives (count vectors, prefixes) were added as their specs too; a
# collective the MPI side does not run yet (conftest.MPI_PENDING) has no table line so far.
@pytest.mark.parametrize(
    "collective",
    [
        "gather",
        "reduce_scatter_block",
        "allgatherv",
        "alltoallv",
        "gatherv",
        "scatterv",
        "reduce_scatter",
        "scan",
        "exscan",
    ],
)
def test_a_collective_is_its_spec_one_table_line_and_its_algorithms(collective: str) -> None:
    found = places(collective)
    required = REQUIRED - ({"mpi/src/call_table.hpp"} if collective in MPI_PENDING else set())
    assert found >= required, f"{collective}: not where a collective is declared"
    assert found <= REQUIRED | OPTIONAL, (
        f"{collective} is also named in {sorted(found - REQUIRED - OPTIONAL)}: a second list of "
        "collectives (make it generic, or read the list from the core)"
    )
    assert (ROOT / "core" / "algorithms" / collective).is_dir()
    table = (ROOT / "mpi/src/call_table.hpp").read_text(encoding="utf-8")
    lines = len(re.findall(rf"^\s*X\({collective},", table, flags=re.M))
    assert lines == (0 if collective in MPI_PENDING else 1)


def test_the_check_sees_a_second_list(tmp_path: Path) -> None:
    # The reader finds a collective in a dictionary key written one per line, and skips comments
    # and docstrings (what would otherwise make the check above fail or pass wrongly).
    code = '"""gather in a docstring"""\n# scatter in a comment\nD = {\n    "gather": 1,\n}\n'
    assert "gather" in _py_words(code) and "scatter" not in _py_words(code)
    assert "gather" not in _cxx_words("// gather\n/* gather */ int x;")
    assert "gather" in _cxx_words("X(gather, Gather, 1)")
