"""The `collkit` command as a user runs it: output, exit status 0 / 1 / 2, clear errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from collkit.cli import main


def run(*argv: str) -> tuple[int, str]:
    """Run the CLI in a subprocess (as a user would) and return (exit status, stdout+stderr)."""
    p = subprocess.run(
        [sys.executable, "-m", "collkit", *argv], capture_output=True, text=True, timeout=300
    )
    return p.returncode, p.stdout + p.stderr


def test_help_lists_the_commands() -> None:
    code, out = run("--help")
    assert code == 0
    for cmd in ("algorithms", "show", "verify", "export", "tour"):
        assert cmd in out


def test_version_is_said_once() -> None:
    """`collkit --version`, the package metadata and collkit.__version__ agree; pyproject.toml
    reads the version from collkit/__init__.py instead of writing it a second time."""
    from importlib.metadata import version
    from pathlib import Path

    import collkit

    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    code, out = run("--version")
    assert code == 0 and out.strip() == f"collkit {collkit.__version__}", out
    assert version("collkit") == collkit.__version__
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"]
    assert pyproject["project"]["dynamic"] == ["version"]


def test_no_command_prints_help_and_exits_2() -> None:
    assert main([]) == 2


def test_algorithms_lists_rd_with_cost() -> None:
    code, out = run("algorithms", "allreduce")
    assert code == 0 and "allreduce:rd" in out
    code, out = run("algorithms", "allreduce:rd")
    assert code == 0 and "reference" in out and "Ruefenacht et al. 2017" in out
    code, out = run("algorithms", "--json")
    assert code == 0 and '"name": "allreduce:rd"' in out


def test_verify_sweep_passes_and_summarises() -> None:
    code, out = run("verify", "allreduce:rd", "-P", "1..40", "--count", "0,3")
    assert code == 0
    assert "80 of 80 cases" in out and "all verified" in out


def test_verify_non_commutative_flag() -> None:
    code, out = run("verify", "allreduce:rd", "-P", "2^5", "--non-commutative")
    assert code == 0 and "non-commutative" in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["verify", "allreduce:rd", "-P", "0"], "P = 0 must be in"),
        (["verify", "allreduce:rd", "-P", "1..x"], "bad process count"),
        (["verify", "allreduce:rd", "-P", "4", "--count", "-3"], "count -3 is negative"),
        (["verify", "allreduce:nope", "-P", "4"], "unknown algorithm 'nope'"),
        (["verify", "allreduce:rd(", "-P", "4"], "^"),
        (["verify", "allreduce", "-P", "4"], "expected ':'"),
        (["verify", "allreduce:rd"], "give ALGO and -P"),
        (["show", "allreduce:rd", "-P", "4", "--rank", "9"], "rank 9 is not in [0, 4)"),
        (["show", "allreduce:rd", "-P", "100000"], "pick some with --rank"),
        (["algorithms", "neighbor_alltoall"], "unknown collective"),
    ],
)
def test_bad_input_exits_2_with_a_clear_error(argv: list[str], needle: str) -> None:
    code, out = run(*argv)
    assert code == 2, out
    assert needle in out
    assert "Traceback" not in out


def test_show_stats_for_a_million_ranks_streams() -> None:
    code, out = run("show", "allreduce:rd", "-P", "1000000", "--rank", "0", "--rank", "999999",
                    "--stats")  # fmt: skip
    assert code == 0 and "over 2 rank(s)" in out
