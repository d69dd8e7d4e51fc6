"""The docs and benchmarks/results agree: every result a doc cites exists, every result file is
cited by a doc or listed in benchmarks/README.md, each names the command that made it (and its
date and load) in its first lines, each benchmark script has one result file (a section per MPI
or mode, not a file each), and the folder stays small (results belong in git history, not in the
tree)."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
MAX_FILES = 38
MAX_BYTES = 3 * 1024 * 1024
HEADER_LINES = 15

_EXT = r"(?:md|jsonl|json|csv|png|txt|env)"
_CITED = re.compile(rf"benchmarks/results/([A-Za-z0-9_./-]+?\.{_EXT})(?![A-Za-z0-9_.-])")
_LISTED = re.compile(rf"\]\(results/([A-Za-z0-9_./-]+?\.{_EXT})\)")
_SCRIPT_ROW = re.compile(r"\| `([A-Za-z0-9_]+\.py)\b")
_DATE = re.compile(r"20\d\d-\d\d-\d\d")
_COMMAND = re.compile(
    r"`(?:\.venv/bin/)?(?:python3? )?(benchmarks/[A-Za-z0-9_]+\.py|collkit[ _]\S*)"
)


def doc_texts(root: Path) -> dict[str, str]:
    """README.md and docs/*.md, by path relative to `root`."""
    docs = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in docs if p.exists()}


def cited(texts: dict[str, str]) -> dict[str, set[str]]:
    """The result files each text cites (paths under benchmarks/results/), placeholders left out."""
    out: dict[str, set[str]] = {}
    for name, text in texts.items():
        for m in _CITED.finditer(text):
            if not re.fullmatch(r"[A-Z_]+\.\w+", m.group(1)):  # NAME.md: a pattern, not a file
                out.setdefault(m.group(1), set()).add(name)
    return out


def listed(readme: str) -> set[str]:
    """The result files benchmarks/README.md links to (`](results/NAME)`)."""
    return {m.group(1) for m in _LISTED.finditer(readme)}


def scripts_with_files(readme: str) -> dict[str, set[str]]:
    """The .md result files each script of benchmarks/README.md's first table (the rows that
    open with `SCRIPT.py`) links to, rows of one script together."""
    out: dict[str, set[str]] = {}
    for line in readme.splitlines():
        m = _SCRIPT_ROW.match(line)
        if m:
            md = {f for f in listed(line) if f.endswith(".md")}
            out.setdefault(m.group(1), set()).update(md)
    return out


def several_files(root: Path) -> list[str]:
    """'script: files' for each benchmark script that links more than one .md result: a script
    writes one file, a section per MPI or mode."""
    readme = (root / "benchmarks" / "README.md").read_text(encoding="utf-8")
    return [
        f"{script}: {', '.join(sorted(files))}"
        for script, files in sorted(scripts_with_files(readme).items())
        if len(files) > 1
    ]


def result_files(results: Path) -> list[str]:
    return sorted(
        str(p.relative_to(results))
        for p in results.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.parts)
    )


def missing_citations(root: Path) -> list[str]:
    """'doc: path' for each cited result file that does not exist."""
    results = root / "benchmarks" / "results"
    return sorted(
        f"{doc}: benchmarks/results/{path}"
        for path, docs in cited(doc_texts(root)).items()
        for doc in docs
        if not (results / path).is_file()
    )


def unreferenced(root: Path) -> list[str]:
    """Result files that no doc cites and benchmarks/README.md does not list."""
    results = root / "benchmarks" / "results"
    readme = root / "benchmarks" / "README.md"
    known = set(cited(doc_texts(root))) | listed(readme.read_text(encoding="utf-8"))
    return [f for f in result_files(results) if f not in known]


def header_problem(root: Path, path: Path) -> str:
    """Why `path`'s first lines do not say how it was made ('' when they do): a command (a script
    of benchmarks/ that exists, or collkit's own command or programs), a date, and the load."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".json":
        try:
            meta = json.loads(text)
        except ValueError:
            return "not JSON"
        head = "\n".join(f"{k}: `{v}`" for k, v in meta.items() if isinstance(v, str))
    else:
        head = "\n".join(text.splitlines()[:HEADER_LINES])
    commands = [m.group(1) for m in _COMMAND.finditer(head)]
    if not commands:
        return "names no command (`benchmarks/SCRIPT.py ...` or `collkit ...`) in its first lines"
    scripts = [c for c in commands if c.startswith("benchmarks/")]
    if scripts and not all((root / c).is_file() for c in scripts):
        return f"names a script that does not exist: {scripts}"
    if not _DATE.search(head):
        return "gives no date (YYYY-MM-DD) in its first lines"
    if "load" not in head.lower():
        return "gives no load in its first lines"
    return ""


def header_problems(root: Path) -> list[str]:
    """'file: why' for each result whose header does not name its command, date and load. Data
    files (rows, pictures) are listed in benchmarks/README.md beside the command that made them."""
    results = root / "benchmarks" / "results"
    out = []
    for f in result_files(results):
        path = results / f
        if path.suffix in (".md", ".txt", ".json"):
            why = header_problem(root, path)
            if why:
                out.append(f"{f}: {why}")
    return out


def size_problems(results: Path) -> list[str]:
    files = result_files(results)
    total = sum((results / f).stat().st_size for f in files)
    out = []
    if len(files) > MAX_FILES:
        out.append(f"{len(files)} files (at most {MAX_FILES})")
    if total > MAX_BYTES:
        out.append(f"{total} bytes (at most {MAX_BYTES})")
    return out


def test_every_cited_result_exists() -> None:
    assert missing_citations(ROOT) == []


def test_every_result_is_cited_or_listed() -> None:
    assert unreferenced(ROOT) == [], "cite it in a doc or list it in benchmarks/README.md"


def test_every_result_names_its_command_date_and_load() -> None:
    assert header_problems(ROOT) == []


def test_results_stay_small() -> None:
    assert size_problems(RESULTS) == []


def test_one_result_file_per_benchmark() -> None:
    assert several_files(ROOT) == [], "one file per script, a section per MPI or mode"


def _tree(tmp_path: Path, doc: str, results: dict[str, str], readme: str = "") -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "x.md").write_text(doc)
    (tmp_path / "README.md").write_text("")
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "benchmarks" / "README.md").write_text(readme)
    (tmp_path / "benchmarks" / "run.py").write_text("")
    for name, text in results.items():
        (tmp_path / "benchmarks" / "results" / name).write_text(text)
    return tmp_path


GOOD = "# t\n\n- 2026-11-28, load 1.2\n- command: `.venv/bin/python benchmarks/run.py --x`\n"


def test_the_checks_see_what_is_wrong(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        "see [a](../benchmarks/results/a.md) and `benchmarks/results/gone.md`. Also "
        "`benchmarks/results/NAME.md` is a pattern, `benchmarks/results/executor-<mpi>.md` too.",
        {
            "a.md": GOOD,
            "stray.md": GOOD,
            "rows.jsonl": "{}\n",
            "nocmd.md": "# t\n2026-11-28, load 1\n",
            "noscript.md": GOOD.replace("benchmarks/run.py", "benchmarks/gone.py"),
            "nodate.md": GOOD.replace("2026-11-28", "yesterday"),
            "noload.md": GOOD.replace("load", "busy"),
            "p.json": json.dumps({"date": "2026-11-28", "load": "1", "command": "collkit x"}),
        },
        readme="| `run.py` | one | [a](results/a.md) |\n"
        "| `run.py --x` | its other mode | [r](results/rows.jsonl) |\n"
        "| `two.py` | per MPI | [n](results/nocmd.md), [s](results/noscript.md) |\n"
        "[d](results/nodate.md) [l](results/noload.md) [p](results/p.json)",
    )
    assert missing_citations(root) == ["docs/x.md: benchmarks/results/gone.md"]
    assert several_files(root) == ["two.py: nocmd.md, noscript.md"]
    assert unreferenced(root) == ["stray.md"]
    problems = header_problems(root)
    assert [p.split(":")[0] for p in problems] == [
        "nocmd.md",
        "nodate.md",
        "noload.md",
        "noscript.md",
    ]
    results = root / "benchmarks" / "results"
    assert size_problems(results) == []
    for i in range(MAX_FILES):
        (results / f"extra{i}.md").write_text(GOOD)
    assert size_problems(results) == [f"{MAX_FILES + 8} files (at most {MAX_FILES})"]
