"""docs/tuning.md's "From Python" section runs as written: its tune example (simulated, no MPI)
is executed in a fresh folder; its bench example (which needs the MPI) compiles and names what
collkit.bench has."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import collkit.bench
from collkit.tune.table import load

DOC = Path(__file__).resolve().parents[2] / "docs" / "tuning.md"


def _blocks() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("### From Python\n")
    end = text.index("\n#", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end], re.S)


def test_the_tune_example_runs_and_writes_its_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _blocks()[0]
    assert "simulate=" in code  # what lets it run without an MPI
    monkeypatch.chdir(tmp_path)
    ns: dict[str, object] = {}
    exec(compile(code, f"{DOC}:From Python", "exec"), ns)
    out = capsys.readouterr().out.splitlines()
    result = ns["result"]
    choices = result.choices  # type: ignore[attr-defined]
    assert len(choices) == 6 and len(out) == len(choices) + 1
    table = load(tmp_path / "tune-py" / "collkit-tuning.json")
    assert out[-1] == f"64 B at P = 8: {table.lookup('allreduce', 8, 64)}"
    for line, c in zip(out, choices, strict=False):
        assert line.split()[:3] == [c.collective, str(c.P), str(c.bytes)]


def test_the_bench_example_names_what_collkit_bench_has() -> None:
    code = _blocks()[1]
    tree = ast.parse(code)
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert imported == {"BenchOptions", "bench"}
    assert all(hasattr(collkit.bench, name) for name in imported)
    call = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and ast.unparse(n.func) == "BenchOptions"
    )
    opts = eval(compile(ast.Expression(call), "doc", "eval"), vars(collkit.bench))
    assert opts.collective == "allreduce" and opts.P == [2]
