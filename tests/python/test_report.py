"""`collkit report DIR`: one self-contained HTML page of a results folder, tested on folders the
tour makes (its simulate and export steps; with MPI, its bench step) and on a tuning folder."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from collkit.cli import main
from collkit.report import _ROW_COLUMNS
from collkit.results import ResultStore, Row, read_jsonl


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
    # bench's plot, beside its rows; on a busy machine with a suspect row, the report's plot
    # without it and bench's picture as well
    assert len(page.imgs) == (2 if any(r.suspect for r in rows) else 1)
    assert "load " in text  # the rows' load range


def _bench_folder(tmp_path: Path) -> tuple[Path, list[Row]]:
    """A bench folder: at 8 B native 10 µs, rd 5 µs, ring a suspect 23.7 ms; at 64 B native 12,
    rd 6; with a picture beside the rows (drawn with every row, as bench draws it)."""
    d = tmp_path / "b"
    d.mkdir()

    def row(algo: str, nbytes: int, us: float, suspect: str = "") -> Row:
        return Row("allreduce", algo, 4, nbytes, mpi="MPICH x", machine="m", date="2026",
                   min_us=us, q1_us=us, median_us=us, q3_us=us, iterations=10,
                   interleaved=True, suspect=suspect)  # fmt: skip

    rows = [
        row("native", 8, 10.0),
        row("allreduce:rd", 8, 5.0),
        row("allreduce:ring", 8, 23700.0, suspect="native moved between its blocks"),
        row("native", 64, 12.0),
        row("allreduce:rd", 64, 6.0),
    ]
    store = ResultStore(d / "bench-allreduce.jsonl")
    for r in rows:
        store.append(r)
    import matplotlib

    matplotlib.use("Agg")
    from collkit.bench import plot

    plot(rows, d / "bench-allreduce.png")
    return d, rows


def _trs(text: str) -> list[tuple[str, list[str]]]:
    """(class, cells) of the rows of the page's tables."""
    out = []
    for cls, body in re.findall(r'<tr class="([^"]*)">(.*?)</tr>', text):
        out.append((cls, [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", body)]))
    return out


def test_report_marks_suspect_rows_and_their_native_leaves_them_out_of_the_plot_and_gives_speedups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import collkit.bench

    d, _ = _bench_folder(tmp_path)
    plotted: list[list[Row]] = []
    real = collkit.bench.plot

    def spy(rs: Sequence[Row], *a: Any, **k: Any) -> Any:
        plotted.append(list(rs))
        return real(rs, *a, **k)

    monkeypatch.setattr(collkit.bench, "plot", spy)
    assert main(["report", str(d)]) == 0
    text, page = _page(d / "report.html")
    # the plot is drawn anew without the suspect row; the picture bench drew is still shown
    assert len(plotted) == 1 and {r.median_us for r in plotted[0]} == {10.0, 5.0, 12.0, 6.0}
    assert len(page.imgs) == 2 and "<h2>bench-allreduce.png</h2>" in text
    cells = {(c[1], int(c[3])): (cls, c) for cls, c in _trs(text)}
    col = [n for n, _ in _ROW_COLUMNS]
    sp, note = col.index("speedup"), col.index("note")
    assert float(cells[("allreduce:rd", 8)][1][sp]) == pytest.approx(2.0)
    assert float(cells[("allreduce:rd", 64)][1][sp]) == pytest.approx(2.0)
    assert cells[("allreduce:ring", 8)][0] == "sus"
    assert cells[("native", 8)][0] == "sus"  # the native row the suspect was compared with
    assert "compared with a suspect row (allreduce:ring" in cells[("native", 8)][1][note]
    assert cells[("native", 64)][0] == "" and cells[("allreduce:rd", 8)][0] == ""
    assert "1 suspect rows" in text


def test_report_without_suspect_rows_shows_the_picture_beside_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d, _ = _bench_folder(tmp_path)
    rows = [r for r in read_jsonl(d / "bench-allreduce.jsonl") if not r.suspect]
    (d / "bench-allreduce.jsonl").unlink()
    store = ResultStore(d / "bench-allreduce.jsonl")
    for r in rows:
        store.append(r)
    assert main(["report", str(d)]) == 0
    text, page = _page(d / "report.html")
    beside = base64.b64encode((d / "bench-allreduce.png").read_bytes()).decode()
    assert len(page.imgs) == 1 and page.imgs[0].endswith(beside)
    assert "suspect rows" not in text and 'class="sus"' not in text


# ---- -o: only a new file or a page collkit wrote --------------------------------------------


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("out", "message"),
    [
        ("bench-allreduce.jsonl", "a file the report reads"),
        ("bench-allreduce.png", "a file the report reads"),
        ("this-machine.json", "a file the report reads"),
        ("tune/collkit-tuning.json", "a file the report reads"),
        ("validate.jsonl", "a file the report reads"),
        ("link.html", "a file the report reads"),  # a link to a row file
        ("mine.html", "not a page collkit report wrote"),
        ("", "give the page to write"),
        ("tune", "is a folder"),
        ("new.txt", "a name ending in .html"),
        ("none/r.html", "does not exist"),
    ],
)
def test_report_never_writes_over_a_file_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], out: str, message: str
) -> None:
    d, _ = _bench_folder(tmp_path)
    (d / "this-machine.json").write_text('{"format": "collkit-profile"}\n')
    (d / "tune").mkdir()
    (d / "tune" / "collkit-tuning.json").write_text('{"format": "collkit-tuning"}\n')
    (d / "validate.jsonl").write_text("")
    (d / "mine.html").write_text("<html>my notes</html>\n")
    (d / "link.html").symlink_to("bench-allreduce.jsonl")
    before = _snapshot(d)
    assert main(["report", str(d), "-o", str(d / out) if out else ""]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert _snapshot(d) == before


def test_report_writes_over_its_own_page_and_refuses_a_default_page_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d, _ = _bench_folder(tmp_path)
    assert main(["report", str(d)]) == 0
    first = (d / "report.html").read_text()
    assert main(["report", str(d)]) == 0  # its own page: written again
    assert (d / "report.html").read_text().split("<h2>")[1:] == first.split("<h2>")[1:]
    (d / "report.html").write_text("a page of mine\n")
    assert main(["report", str(d)]) == 2
    assert "not a page collkit report wrote" in capsys.readouterr().err
    assert (d / "report.html").read_text() == "a page of mine\n"
