"""Streaming export: `collkit export ALGO -P N -o FILE` writes text and GOAL rank by rank from the
generator, byte for byte what the whole-Schedule writers produce."""

from __future__ import annotations

from pathlib import Path

import pytest

import collkit
from collkit import _core, cli, io


@pytest.mark.parametrize("fmt", ["text", "goal"])
@pytest.mark.parametrize(
    "name,P", [("allreduce:rd", 13), ("alltoall:bruck", 9), ("bcast:binomial", 16)]
)
def test_streamed_file_equals_the_whole_schedule(
    fmt: str, name: str, P: int, tmp_path: Path
) -> None:
    path = tmp_path / f"s.{fmt}"
    algo = collkit.Algorithm(name).core
    n = _core.write_schedule(algo, P, 3, 8, 0, fmt, str(path), 0.5, 0.25)
    want = io.dumps(
        collkit.generate(name, P, 3),
        fmt,
        **({"reduce_ns_per_byte": 0.5, "copy_ns_per_byte": 0.25} if fmt == "goal" else {}),
    )
    assert path.read_text() == want and n == len(want.encode())
    assert io.load(path) == collkit.generate(name, P, 3)


def test_export_cli_streams_to_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "COMMANDS", ["export"])
    out = tmp_path / "rd.goal"
    assert cli.main(["export", "allreduce:rd", "-P", "6", "-o", str(out)]) == 0
    assert out.read_text() == io.dumps(collkit.generate("allreduce:rd", 6, 4), "goal")
    code = cli.main(["export", "allreduce:rd", "-P", "6", "-o", str(tmp_path / "no" / "x.goal")])
    assert code == 2 and "cannot write" in capsys.readouterr().err
