"""Streaming export: `collkit export ALGO -P N [-o FILE]` writes text, GOAL and JSON rank by rank
from the generator, to a file or stdout, byte for byte what the whole-Schedule writers produce."""

from __future__ import annotations

from pathlib import Path

import pytest

import collkit
from collkit import _core, cli, io


@pytest.mark.parametrize("fmt", ["text", "goal", "json"])
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


@pytest.mark.parametrize("fmt", ["text", "goal", "json"])
def test_export_cli_streams_to_stdout(
    fmt: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "COMMANDS", ["export"])
    assert cli.main(["export", "bcast:binomial", "-P", "11", "--format", fmt]) == 0
    assert capsys.readouterr().out == io.dumps(collkit.generate("bcast:binomial", 11, 4), fmt)


def test_streamed_json_reaches_python_in_pieces_of_a_megabyte() -> None:
    pieces: list[str] = []
    algo = collkit.Algorithm("allreduce:rd").core
    n = _core.write_schedule(algo, 2**12, 1, 8, 0, "json", "", 0.0, 0.0, pieces.append)
    assert len(pieces) > 1 and max(len(p) for p in pieces) < 2**20 + 2**16
    text = "".join(pieces)
    assert n == len(text) and io.from_json(text) == collkit.generate("allreduce:rd", 2**12, 1)


def test_export_that_cannot_fit_is_refused_before_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "COMMANDS", ["export"])
    out = tmp_path / "x.json"
    assert cli.main(["export", "allreduce:rd", "-P", "2^30", "-o", str(out)]) == 2
    assert "GiB free in" in capsys.readouterr().err and not out.exists()
