"""Every algorithm file opens with the header STYLE.md asks for (Algorithm, Phases, Cost,
Restrictions, Reference), and the header says what the file's Registrar says: it names the
registered algorithm, and its Cost and Reference begin with the registered cost and reference
(the header may go on to explain). Said once, checked here, so the two cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import collkit

ROOT = Path(__file__).resolve().parents[2]
FIELDS = ("Algorithm", "Phases", "Cost", "Restrictions", "Reference")


def header(path: Path) -> dict[str, str]:
    """The header's fields, each paragraph joined into one whitespace-normalized line."""
    fields: dict[str, str] = {}
    key = None
    for line in path.read_text().splitlines():
        if not line.startswith("//"):
            break
        m = re.match(r"// (\w+):\s*(.*)", line)
        if m and m.group(1) in FIELDS:
            key = m.group(1)
            fields[key] = m.group(2)
        elif key:
            fields[key] += " " + line[2:].strip()
    return {k: " ".join(v.split()) for k, v in fields.items()}


def _norm(text: str) -> str:
    return " ".join(text.split()).rstrip(".")


@pytest.mark.parametrize("spec", collkit.algorithms(), ids=lambda s: s["name"])
def test_header_agrees_with_the_registrar(spec: dict[str, object]) -> None:
    coll, name = str(spec["name"]).split(":")
    path = ROOT / "core" / "algorithms" / coll / f"{name}.cpp"
    assert path.exists(), f"{spec['name']} is not registered from {path.name} (file stem = name)"
    h = header(path)
    assert list(h) == list(FIELDS), f"{path}: header fields {list(h)}, expected {list(FIELDS)}"
    named = re.search(re.escape(str(spec["name"])) + r"\b", h["Algorithm"])
    assert named, f"{path}: the Algorithm line does not name {spec['name']}"
    for key, field in (("Cost", "cost"), ("Reference", "reference")):
        assert _norm(h[key]).startswith(_norm(str(spec[field]))), (
            f"{path}: header {key} {h[key]!r} does not begin with the registered "
            f"{field} {spec[field]!r}"
        )


def test_the_check_catches_drift(tmp_path: Path) -> None:
    path = tmp_path / "x.cpp"
    path.write_text("// Algorithm:    a (allreduce:x)\n// Cost:         lg P alpha\n//   + n\n#x\n")
    assert header(path) == {"Algorithm": "a (allreduce:x)", "Cost": "lg P alpha + n"}
    assert not _norm(header(path)["Cost"]).startswith(_norm("2 lg P alpha"))
