"""`collkit report DIR`: one self-contained HTML page of a results folder, tested on folders the
tour makes (its simulate and export steps; with MPI, its bench step) and on a tuning folder."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from collkit.cli import main
from collkit.results import read_jsonl


class _Page(HTMLParser):
    """The page's images, links to other files, and table rows."""

    def __init__(self) -> None:
        super().__init__()
        self.imgs: list[str] = []
        self.external: list[str] = []
        self.trs = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a.get("src") or "")
        if tag in ("link", "script") or (tag == "a" and a.get("href")):
            self.external.append(tag)
        if tag == "tr":
            self.trs += 1


def _page(path: Path) -> tuple[str, _Page]:
    text = path.read_text(encoding="utf-8")
    p = _Page()
    p.feed(text)
    # self-contained: every picture is embedded PNG data, nothing is fetched
    assert p.external == []
    for src in p.imgs:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    return text, p


def _tour(tmp_path: Path, capsys: pytest.CaptureFixture[str], *skip: str) -> Path:
    out = tmp_path / "tour"
    argv = ["tour", "--quick", "--out", str(out)]
    for s in skip:
        argv += ["--skip", s]
    code = main(argv)
    cap = capsys.readouterr()
    assert code == 0, cap.out[-3000:] + cap.err[-3000:]
    assert "report.html" in cap.out
    return out


def test_report_of_the_tours_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _tour(
        tmp_path, capsys, "algorithms", "show", "verify", "nodes", "mpi", "tune", "validate",
        "cluster",
    )  # fmt: skip
    text, page = _page(out / "report.html")  # the tour wrote it
    assert len(page.imgs) == 1 and "rd-P8.png" in text  # the simulate step's picture
    for name in ("rd-P6.txt", "rd-P6.json", "rd-P8.perfetto.json"):
        assert name in text  # listed among the other files


def test_report_of_a_tuning_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = tmp_path / "t"
    argv = ["tune", "allreduce", "-np", "4,8", "--sizes", "8,64KiB", "--simulate", "postal",
            "-o", str(t)]  # fmt: skip
    assert main(argv) == 0
    (t / "weird <name>.md").write_text("a <b> & c\n")
    assert main(["report", str(t), "-o", str(tmp_path / "r.html")]) == 0
    text, page = _page(tmp_path / "r.html")
    rows = read_jsonl(t / "tune.jsonl")
    assert page.trs >= len(rows) + 1  # every row of tune.jsonl, and the tuning table's rules
    assert f"{len(rows)} rows" in text
    for r in rows:
        assert f">{r.algorithm}<" in text
    assert "collkit-tuning.json (tuning table)" in text
    assert len(page.imgs) == 1  # tune.png, beside tune.jsonl
    assert "weird &lt;name&gt;.md" in text and "a &lt;b&gt; &amp; c" in text  # escaped
    assert not re.search(r"<b>", text)


def test_report_of_a_missing_folder_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(tmp_path / "none")]) == 2
    assert "not a folder" in capsys.readouterr().err


@pytest.mark.mpi
def test_report_of_the_tours_bench_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mpi_support import mpich_or_skip

    mpich_or_skip()
    out = _tour(
        tmp_path, capsys, "algorithms", "show", "verify", "export", "simulate", "nodes", "tune",
        "validate", "cluster",
    )  # fmt: skip
    text, page = _page(out / "report.html")
    rows = read_jsonl(out / "bench-allreduce.jsonl")
    assert rows and f"{len(rows)} rows" in text
    assert {">allreduce:rd<", ">native<"} <= {f">{r.algorithm}<" for r in rows}
    assert len(page.imgs) == 1  # bench's plot, beside its rows
    assert "load " in text  # the rows' load range
