"""collkit export of node-aware algorithms: the placement reaches the size check as it reaches
the generator, in every format, and the file reads back as the schedule generate makes."""

from __future__ import annotations

from pathlib import Path

import pytest

import collkit
from collkit import _core, io
from collkit.algorithms import Algorithm
from collkit.cli import main
from collkit.cli._common import DEFAULT_COUNT
from collkit.placement import Placement

NODE_AWARE = sorted(
    str(a["name"]) for a in _core.algorithms() if Algorithm(str(a["name"])).needs_placement
)


def test_there_are_node_aware_algorithms() -> None:
    assert "allreduce:hier" in NODE_AWARE


@pytest.mark.parametrize("fmt", ["text", "json", "goal"])
@pytest.mark.parametrize("name", NODE_AWARE)
@pytest.mark.parametrize("order", ["contiguous", "round_robin"])
def test_node_aware_export_writes_the_placed_schedule(
    tmp_path: Path, name: str, fmt: str, order: str
) -> None:
    out = tmp_path / f"s.{fmt}"
    argv = ["export", name, "-P", "8", "--rpn", "4", "--order", order, "--format", fmt]
    assert main([*argv, "-o", str(out)]) == 0
    want = collkit.generate(name, P=8, count=DEFAULT_COUNT, placement=Placement(4, order))
    got = io.load(out)
    assert got == want
    assert (got.rpn, got.order) == (4, order)


def test_node_aware_export_without_placement_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "allreduce:hier", "-P", "8", "--format", "goal"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("collkit export: error:") and "--rpn" in err
