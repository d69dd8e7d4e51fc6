"""The type stubs of the compiled module are generated; keep them in step with the bindings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

STUB = Path(__file__).resolve().parents[2] / "python" / "collkit" / "_core.pyi"


def test_core_stub_is_up_to_date(tmp_path: Path) -> None:
    pytest.importorskip("nanobind.stubgen")
    out = tmp_path / "_core.pyi"
    subprocess.run(
        [sys.executable, "-m", "nanobind.stubgen", "-q", "-m", "collkit._core", "-o", str(out)],
        check=True,
    )
    assert out.read_text() == STUB.read_text(), (
        "regenerate: python -m nanobind.stubgen -m collkit._core -o python/collkit/_core.pyi"
    )
