"""One self-contained HTML page of a results folder (`collkit report DIR`): for people who would
rather look than read.

What the page holds, from what collkit writes into a folder (bench, tune, validate, calibrate,
the tour): every row file (*.jsonl in the one row schema) as a table with a summary line (rows,
collectives, MPIs, machines, load), each row's speedup over the native row it was measured with,
and the picture collkit draws for it (the .png written beside it, or bench's latency plot drawn
anew; drawn anew without them where rows are suspect, which are marked in the table with the
native rows they were compared with); tuning tables (collkit-tuning.json) as their rules;
calibrated profiles as their summary; Markdown reports (validate's) as text; every other picture;
and the list of the remaining files. Pictures are embedded (data: URIs) and the style is inline,
so the page is one file that can be mailed or attached to a ticket.

The page is written only to a new file or over a page collkit wrote (check_output): never over one
of the folder's files or any other file.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import io
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path

from collkit.errors import InvalidArgumentError
from collkit.results import Rejected, Row, read_jsonl

# In every page's head: what tells a page collkit wrote (and may write over) from other files.
GENERATOR = '<meta name="generator" content="collkit report">'
MAX_TABLE_ROWS = 2000  # per row file: a longer table is cut, and says so

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 80em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
tr.bad td { background: #fde8e8; } tr.sus td { background: #fff7d6; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
.meta { color: #666; font-size: 0.9em; }
"""


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def _num(x: float, digits: int = 3) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}g}"


def _img(data: bytes, alt: str) -> str:
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{base64.b64encode(data).decode()}">'


def _figure_png(rows: Sequence[Row], title: str) -> bytes | None:
    """bench's latency plot of `rows`, as PNG bytes (None when no row has a statistic)."""
    if not any(not r.error and not math.isnan(r.median_us) for r in rows):
        return None
    from collkit.bench import plot

    fig = plot(rows, title=title)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


_ROW_COLUMNS = (
    ("collective", "l"),
    ("algorithm", "l"),
    ("P", ""),
    ("bytes", ""),
    ("source", "l"),
    ("min (µs)", ""),
    ("median (µs)", ""),
    ("q3 (µs)", ""),
    ("speedup", ""),
    ("iterations", ""),
    ("valid", "l"),
    ("load", ""),
    ("note", "l"),
)


def _group(r: Row) -> tuple[object, ...]:
    """What a row and the native row it is compared with share."""
    return (r.source, r.collective, r.P, r.bytes, r.datatype, r.mpi, r.machine, r.allocation,
            r.block, r.sync)  # fmt: skip


def _job(r: Row) -> tuple[object, ...]:
    """_group and the job and attempt: interleaved rows are compared with their job's native."""
    key = (*_group(r), r.interleaved, r.attempt)
    return key


def natives(rows: Sequence[Row]) -> dict[int, Row]:
    """Each row's native row (by id of the row): the one of its own job and attempt where there
    is one (interleaved rounds), else the latest of its group; natives have none."""
    exact: dict[tuple[object, ...], Row] = {}
    anyof: dict[tuple[object, ...], Row] = {}
    for r in sorted((r for r in rows if r.algorithm == "native"), key=lambda r: r.date):
        exact[_job(r)] = r
        anyof[_group(r)] = r
    out: dict[int, Row] = {}
    for r in rows:
        if r.algorithm == "native":
            continue
        n = exact.get(_job(r)) or anyof.get(_group(r))
        if n is not None:
            out[id(r)] = n
    return out


def speedup(r: Row, native: Row | None) -> float:
    """native median / this row's median (NaN without a native row or a median)."""
    if native is None or r.error or native.error or not r.median_us > 0:
        return math.nan
    return native.median_us / r.median_us


def _row_cells(r: Row, native: Row | None, beside: str) -> list[str]:
    valid = "" if r.valid is None else ("yes" if r.valid else "NO")
    note = r.error or r.suspect or beside
    return [
        r.collective,
        r.algorithm,
        str(r.P),
        str(r.bytes),
        r.source,
        _num(r.min_us),
        _num(r.median_us),
        _num(r.q3_us),
        _num(speedup(r, native)),
        str(r.iterations),
        valid,
        _num(r.load_avg_1m),
        note[:200],
    ]


def _rows_section(
    path: Path, rows: list[Row], rejected: list[Rejected], root: Path
) -> tuple[str, bool]:
    """The section of a row file, and whether it shows the picture beside it (else that
    picture, drawn with suspect rows, is shown with the folder's other pictures)."""
    rel = path.relative_to(root)
    parts = [f"<h2>{_e(rel)}</h2>"]
    loads = [r.load_avg_1m for r in rows if not math.isnan(r.load_avg_1m)]
    mpis = sorted({r.mpi for r in rows if r.mpi})
    machines = sorted({r.machine for r in rows if r.machine})
    dates = sorted(r.date for r in rows if r.date)
    facts = [
        f"{len(rows)} rows",
        "collectives: " + ", ".join(sorted({r.collective for r in rows})),
        ("MPI: " + "; ".join(mpis)) if mpis else "",
        ("machine: " + "; ".join(machines)) if machines else "",
        f"dated {dates[0]} .. {dates[-1]}" if dates else "",
    ]
    if loads:
        facts.append(f"load {min(loads):.1f} .. {max(loads):.1f}")
    errors = sum(1 for r in rows if r.error)
    invalid = sum(1 for r in rows if r.valid is False)
    if errors or invalid:
        facts.append(f"{errors} rows with an error, {invalid} invalid")
    if rejected:
        facts.append(f"{len(rejected)} lines that are not rows (left out)")
    native_of = natives(rows)
    # A suspect row's comparison is not trusted, and neither is the native row it was compared
    # with: both are marked, and the plot leaves suspect rows out (one 24 ms outlier stretched
    # the axis over every trusted row).
    beside: dict[int, str] = {}
    for r in rows:
        n = native_of.get(id(r))
        if r.suspect and n is not None and id(n) not in beside:
            beside[id(n)] = f"compared with a suspect row ({r.algorithm}: {r.suspect})"
    suspect = [r for r in rows if r.suspect]
    if suspect:
        facts.append(
            f"{len(suspect)} suspect rows (marked, with the native rows they were compared "
            "with; not plotted)"
        )
    if native_of:
        facts.append("speedup = the native row's median / the row's median")
    parts.append(f'<p class="meta">{_e("; ".join(f for f in facts if f))}</p>')
    png = path.with_suffix(".png")
    if png.is_file() and not suspect:
        parts.append(_img(png.read_bytes(), str(png.name)))
        shows_png = True
    else:
        data = _figure_png([r for r in rows if not r.suspect], str(rel))
        if data is not None:
            parts.append(_img(data, f"latency of {rel}"))
        shows_png = False
    head = "".join(f'<th class="{c}">{_e(n)}</th>' for n, c in _ROW_COLUMNS)
    body = []
    shown = sorted(rows, key=lambda r: (r.collective, r.P, r.bytes, r.algorithm, r.source))
    for r in shown[:MAX_TABLE_ROWS]:
        cls = (
            "bad"
            if r.error or r.valid is False
            else ("sus" if r.suspect or id(r) in beside else "")
        )
        cells = "".join(
            f'<td class="{c}">{_e(v)}</td>'
            for v, (_, c) in zip(
                _row_cells(r, native_of.get(id(r)), beside.get(id(r), "")),
                _ROW_COLUMNS,
                strict=True,
            )
        )
        body.append(f'<tr class="{cls}">{cells}</tr>')
    parts.append(f"<table><tr>{head}</tr>{''.join(body)}</table>")
    if len(rows) > MAX_TABLE_ROWS:
        parts.append(
            f"<p>(the first {MAX_TABLE_ROWS} of {len(rows)} rows; all are in the file)</p>"
        )
    return "\n".join(parts), shows_png


def _tuning_section(path: Path, root: Path) -> str | None:
    from collkit.tune.table import load

    try:
        t = load(path)
    except Exception:  # not a tuning table after all: listed with the other files
        return None
    head = "".join(
        f"<th>{h}</th>" for h in ("collective", "P", "bytes", "algorithm", "source", "speedup")
    )
    body = "".join(
        "<tr>"
        + f'<td class="l">{_e(r.collective)}</td><td>{r.P[0]}..{r.P[1]}</td>'
        + f'<td>{r.bytes[0]}..{r.bytes[1]}</td><td class="l">{_e(r.algorithm)}</td>'
        + f'<td class="l">{_e(r.source)}</td><td>{_num(r.speedup)}</td></tr>'
        for r in t.rules
    )
    timing = "single calls" if t.block == 1 else f"blocks of {t.block} back-to-back calls"
    meta = f"{len(t.rules)} rules; MPI {t.mpi}; machine {t.machine}; {t.date}; timed as {timing}"
    return (
        f"<h2>{_e(path.relative_to(root))} (tuning table)</h2>"
        f'<p class="meta">{_e(meta)}</p><table><tr>{head}</tr>{body}</table>'
    )


def _profile_section(path: Path, root: Path) -> str | None:
    from collkit.profile import load_profile

    try:
        prof = load_profile(path)
    except Exception:
        return None
    return (
        f"<h2>{_e(path.relative_to(root))} (calibrated profile)</h2><pre>{_e(prof.summary())}</pre>"
    )


def _json_format(path: Path) -> str:
    """The "format" of a small JSON file ("" for none, or a file too big to be a table)."""
    if path.stat().st_size > 16 << 20:
        return ""
    try:
        d = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError, RecursionError):
        return ""
    return str(d.get("format", "")) if isinstance(d, dict) else ""


def _inputs(root: Path) -> list[Path]:
    """The files the page of `root` reads or lists: every readable file but the pages."""
    return sorted(
        p for p in root.rglob("*") if p.is_file() and p.suffix != ".html" and os.access(p, os.R_OK)
    )


def build(folder: str | os.PathLike[str]) -> str:
    """The HTML page of `folder` (see the module's docstring)."""
    from collkit import __version__

    root = Path(folder)
    if not root.is_dir():
        raise InvalidArgumentError(f"{folder}: not a folder")
    files = _inputs(root)
    sections: list[str] = []
    used: set[Path] = set()
    for p in files:
        if p.suffix != ".jsonl":
            continue
        rejected: list[Rejected] = []
        try:
            rows = read_jsonl(p, rejected)
        except InvalidArgumentError:  # too big, a device: listed with the other files
            continue
        if not rows:
            continue  # not a row file (multicast records, a trace): listed below
        section, shows_png = _rows_section(p, rows, rejected, root)
        sections.append(section)
        used.add(p)
        used.add(p.with_suffix(".csv"))
        if shows_png:
            used.add(p.with_suffix(".png"))
    for p in files:
        if p.suffix != ".json" or p in used:
            continue
        fmt = _json_format(p)
        sec = (
            _tuning_section(p, root)
            if fmt == "collkit-tuning"
            else _profile_section(p, root)
            if fmt == "collkit-profile"
            else None
        )
        if sec:
            sections.append(sec)
            used.add(p)
    for p in files:
        if p.suffix == ".md" and p not in used and p.stat().st_size < 1 << 20:
            sections.append(
                f"<h2>{_e(p.relative_to(root))}</h2><pre>{_e(p.read_text(errors='replace'))}</pre>"
            )
            used.add(p)
    for p in files:
        if p.suffix == ".png" and p not in used:
            sections.append(f"<h2>{_e(p.relative_to(root))}</h2>{_img(p.read_bytes(), p.name)}")
            used.add(p)
    rest = [p for p in files if p not in used]
    if rest:
        items = "".join(
            f"<li>{_e(p.relative_to(root))} ({p.stat().st_size:,} bytes)</li>" for p in rest
        )
        sections.append(f"<h2>Other files</h2><ul>{items}</ul>")
    if not sections:
        sections.append("<p>No results in this folder.</p>")
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    title = f"collkit results: {root.resolve().name}"
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">{GENERATOR}'
        f"<title>{_e(title)}</title>"
        f"<style>{_STYLE}</style></head><body>\n<h1>{_e(title)}</h1>\n"
        f'<p class="meta">{_e(root.resolve())}; made {now} by collkit {_e(__version__)}</p>\n'
        + "\n".join(sections)
        + "\n</body></html>\n"
    )


def is_page(path: Path) -> bool:
    """Whether `path` is a page this module wrote (its generator tag, or for pages written
    without one, its doctype and title), judged by its first bytes."""
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return GENERATOR.encode() in head or (
        head.startswith(b"<!DOCTYPE html>") and b"<title>collkit results: " in head
    )


def check_output(folder: str | os.PathLike[str], out: str | os.PathLike[str]) -> Path:
    """The page's path, or an error that says why it may not be written there: a name that is
    no page (.html), a folder, device or file the report reads, any file that is not a page
    collkit wrote (it would be lost), or a folder that does not exist."""
    text = os.fspath(out)
    what = f"-o {text}" if text else "-o ''"
    if not text.strip():
        raise InvalidArgumentError(f"{what}: give the page to write (a name ending in .html)")
    path = Path(text)
    if path.is_dir():
        raise InvalidArgumentError(f"{what} is a folder: give the page to write (NAME.html)")
    if path.exists():
        if not path.is_file():
            raise InvalidArgumentError(f"{what} is not a regular file: give another path")
        root = Path(folder)
        for p in _inputs(root) if root.is_dir() else []:
            if os.path.samefile(p, path):
                which = "" if os.path.abspath(p) == os.path.abspath(path) else f"{p}, "
                raise InvalidArgumentError(
                    f"{what} is {which}a file the report reads: writing it would destroy the "
                    "input; give another path"
                )
        if not is_page(path):
            raise InvalidArgumentError(
                f"{what} exists and is not a page collkit report wrote: writing it would lose "
                "it; move it away, or give another path"
            )
    if path.suffix != ".html":
        # a page in the folder is named .html, so that the next report leaves it out
        raise InvalidArgumentError(f"{what}: the page is HTML: give a name ending in .html")
    if not path.resolve().parent.is_dir():
        raise InvalidArgumentError(f"{what}: folder {path.parent} does not exist")
    return path


def write(folder: str | os.PathLike[str], out: str | os.PathLike[str] | None = None) -> Path:
    """Writes the page of `folder` to `out` (default FOLDER/report.html); returns its path.
    The path is checked first (check_output): only a new file or a page collkit wrote is
    written."""
    if not Path(folder).is_dir():
        raise InvalidArgumentError(f"{folder}: not a folder")
    path = check_output(folder, out if out is not None else Path(folder) / "report.html")
    page = build(folder)
    path.write_text(page, encoding="utf-8")
    return path


__all__ = ["build", "check_output", "is_page", "write"]
