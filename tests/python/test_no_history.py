"""Docs, help, comments and file names read as a reference, not a diary: no tracked file cites an
issue number, a development pass, a developer, a worktree or a numbered stop. Each hit is named
(file, line, the text) so it can be rewritten as what the code does and why.

Real uses are not caught: the patterns name development passes only, not "pass" as a verb or a
reader's or the verifier's pass; a short list (ALLOWED) lets through Intel's "Developer
Reference" and colours (#222).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_ORDINALS = (
    "third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|"
    "fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|"
    r"\d+(?:st|nd|rd|th)"
)
# Each pattern names what it catches, for the failure message.
PATTERNS: dict[str, re.Pattern[str]] = {
    "issue number": re.compile(r"\bissues? ?#?\d", re.I),
    "#number": re.compile(r"(?<![\w#&/$])#\d+\b"),
    "development pass": re.compile(
        rf"\b(?:{_ORDINALS}|this|previous|earlier|later|review|cleanup|polish|development) "
        r"pass\b|\b(?:in|from|since|after|before|of) pass \d",
        re.I,
    ),
    "developer": re.compile(
        r"\bdevelopers?\b|\bdeveloped on\b|\bengineers?\b|\bthe lead'?s?\b", re.I
    ),
    "worktree": re.compile(r"\bworktrees?\b|/work/wt-|\bwt-[a-z]", re.I),
    "stop number": re.compile(r"\bstop \d", re.I),
    "branch": re.compile(r"\bon (?:the )?branch\b|\bbranch `[\w./-]+`|\bmerged into main\b", re.I),
    # collkit's own commits; a third-party source's version is written "REPO at HASH"
    "commit id": re.compile(r"\b(?:at )?commits? [0-9a-f]{7,40}\b|\bat commit\b", re.I),
    "before the change": re.compile(
        r"\bpreviously\b|\bbefore (?:this|the) change\b|\bsince reverted\b|\bthe previous "
        r"(?:build|commit|generator|version)\b",
        re.I,
    ),
}
# Real uses that a pattern would otherwise catch.
ALLOWED = re.compile(
    r"Developer Reference"  # Intel MPI's manual, by its title
    r"|color\"?: \"?#[0-9a-f]{3,8}\b"  # colours: the HTML report's CSS, a plot's arrows
)
EXCLUDED = ("tests/python/test_no_history.py",)  # this file spells the patterns out


def hits(name: str, text: str) -> list[str]:
    """Every line of `text` (the file `name`) that a pattern catches, as 'name:line: [what] ...';
    the file's name is checked too."""
    found = []
    for what, pattern in PATTERNS.items():
        if pattern.search(name) and not ALLOWED.search(name):
            found.append(f"{name}: [{what}] in the file's name")
    for n, line in enumerate(text.splitlines(), 1):
        for what, pattern in PATTERNS.items():
            if pattern.search(ALLOWED.sub("", line)):
                found.append(f"{name}:{n}: [{what}] {line.strip()[:120]}")
    return found


@pytest.mark.parametrize(
    "line",
    [
        "Large counts (issue 6): bandwidth",
        "the executor bounds those in flight (#27).",
        "measured in issues 3, 14",
        "# Issue #27: a campaign starts on a loaded machine",
        "Cleaned up in the eleventh pass.",
        "this pass also adds the 12th pass's fix",
        "as measured since pass 4",
        "2 cores shared with other developers",
        "the shared 2-core machine these were developed on",
        "while other engineers built",
        "the lead's session was idle",
        "failed: /work/wt-sim/.venv/bin/collkit simulate",
        "B / A was last stop 1.39",
        "the simulator is being written on branch `sim` and was not on main",
        "made with the simulator merged into main for the run",
        "Old: the library of commit 2cf03c6 (decisions made anew)",
        "with sim at commit a20dade merged",
        "A: the build before it (commit 2b7720f)",
        "wrong under MPI_IN_PLACE, since reverted",
        "previously the queue held every op",
        "before this change, instructions were flat",
        "checked op for op against the previous generator",
    ],
)
def test_the_patterns_catch_history(line: str) -> None:
    assert hits("x.md", line), line


@pytest.mark.parametrize(
    "line",
    [
        "every Rabenseifner variant passes every case",
        "a bcast root may pass 1 x `contiguous(64, MPI_INT)`",
        "counts are MPI_Count, so they may pass 2^31 elements",
        "Launcher arguments that pass `env` to every rank",
        "it is read twice (the first pass keeps each send's destination, the second pass pairs)",
        "// Pass 3: conflicting accesses are ordered by dependencies.",
        "Intel MPI Library Developer Reference for Linux OS",
        "body { color: #222; max-width: 80em; }",
        'arrowprops={"arrowstyle": "->", "color": "#444444", "lw": 0.7}',
        "#include <vector>",
        "stopped at the limit; a stop 'button'",
        "IMB: https://github.com/intel/mpi-benchmarks at 46e8757a920c334abfea6340499f1c5deaefb834",
        "a send on each branch of the tree; the branch predictor",
        "commit the rows as they come (a commit per row)",
        "the previous step's blocks",
    ],
)
def test_the_patterns_spare_real_uses(line: str) -> None:
    assert not hits("x.md", line), hits("x.md", line)


def test_a_file_name_is_checked_too() -> None:
    assert hits("benchmarks/results/issue20-shm.md", "")
    assert not hits("benchmarks/results/shm-first-calls.md", "")


def tracked_files() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
    ).stdout
    return [p for p in out.decode().split("\0") if p and not p.startswith(EXCLUDED)]


def test_no_tracked_file_cites_history() -> None:
    found: list[str] = []
    for name in tracked_files():
        path = ROOT / name
        if not path.is_file():  # deleted in the working tree, not yet in the index
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # binary: a picture, an archive
            continue
        found += hits(name, text)
    assert not found, "history in docs, comments or names (say what it does and why):\n" + (
        "\n".join(found)
    )
