"""Every module of collkit imports on its own, and the modules' top-level imports form no circle.

An import circle shows only in some orders: `import collkit.a` works when collkit.b was imported
first and fails alone. So each module is imported first thing in a fresh interpreter (a child
forked from one that has imported no collkit module), and the top-level imports are read from
the sources as a graph that must have no cycle (which catches a circle in any order at once).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import collkit

PKG = Path(collkit.__file__).parent

# The child imports nothing of collkit before the module; numpy first, only to save each fork
# its import (it cannot hide a circle among collkit's modules).
_CHILD = r"""
import importlib, json, os, sys, traceback
import numpy
out = {}
for name in sys.argv[1:]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            importlib.import_module(name)
            msg = ""
        except BaseException:
            msg = traceback.format_exc(limit=-3)
        os.write(w, msg.encode())
        os._exit(0)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    os.waitpid(pid, 0)
    out[name] = b"".join(chunks).decode()
print(json.dumps(out))
"""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> list[str]:
    return sorted(_module_name(p) for p in PKG.rglob("*.py"))


def test_every_module_imports_alone_in_a_fresh_interpreter() -> None:
    mods = [m for m in _modules() if m != "collkit.__main__"]  # __main__ runs the CLI
    assert "collkit.validate" in mods and "collkit.profile" in mods
    r = subprocess.run(
        [sys.executable, "-c", _CHILD, *mods],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=PKG.parent,
    )
    assert r.returncode == 0, r.stderr
    failed = {m: tb for m, tb in json.loads(r.stdout).items() if tb}
    assert set(json.loads(r.stdout)) == set(mods)
    assert not failed, "\n".join(f"{m}:\n{tb}" for m, tb in failed.items())


def _imports(path: Path, modules: set[str], *, in_functions: bool = False) -> set[str]:
    """The collkit modules `path` imports when it is imported: its module-level statements
    (inside if / try / class too, never under TYPE_CHECKING); with `in_functions` also those
    its functions import when they run."""
    me = _module_name(path)
    pkg = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            for s in node.orelse:
                visit(s)
            return
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            and not in_functions
        ):
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            if base in modules:
                out.add(base)
            # `from collkit import units`: the submodule
            out.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    # A package's own __init__ runs before any of its submodules: not an edge of a circle.
    return {m for m in out if m != me and not me.startswith(m + ".")}


def _graph(*, in_functions: bool = False) -> dict[str, set[str]]:
    mods = set(_modules())
    return {
        _module_name(p): _imports(p, mods, in_functions=in_functions) for p in PKG.rglob("*.py")
    }


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of `graph` as its modules in order, or [] when it has none."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(n: str) -> list[str]:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return [*stack[stack.index(m) :], m]
            if m not in state and (found := dfs(m)):
                return found
        stack.pop()
        state[n] = 2
        return []

    for n in sorted(graph):
        if n not in state and (found := dfs(n)):
            return found
    return []


def test_cycle_finder_finds_a_circle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_top_level_imports_form_no_circle() -> None:
    graph = _graph()
    assert "collkit.measure" in graph["collkit.calibrate_executor"]
    assert _cycle(graph) == []


# Measuring, the executor's calibration, the profile and the validation: one way, each lower one
# without the upper ones, even counting what their functions import when they run (a circle
# dodged by an import inside a function is still a circle).
LAYERS = ("collkit.measure", "collkit.calibrate_executor", "collkit.profile", "collkit.validate")


def _reaches(graph: dict[str, set[str]], a: str, b: str) -> bool:
    seen, todo = {a}, [a]
    while todo:
        for d in graph[todo.pop()] - seen:
            seen.add(d)
            todo.append(d)
    return b in seen


@pytest.mark.parametrize("lower", range(len(LAYERS) - 1))
def test_calibration_layers_import_one_way(lower: int) -> None:
    graph = _graph(in_functions=True)
    low, up = LAYERS[lower], LAYERS[lower + 1]
    assert _reaches(graph, up, low)
    for upper in LAYERS[lower + 1 :]:
        assert not _reaches(graph, low, upper), f"{low} imports {upper}"
