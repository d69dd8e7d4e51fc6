"""One result file per benchmark, one section per MPI or mode: a run replaces its own section of
benchmarks/results/NAME.md and keeps the others (not a benchmark: the scripts here write through
it).

A section is a heading line (`## MPICH 5.0.2, P = 2`) and everything up to the next heading of
the same or a higher level; lines inside fenced code blocks (```) are not headings, so a shell
comment in a command block does not end a section.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

__all__ = ["MPI_NAMES", "replace_section", "write_section"]

# A section's name for each MPI of the scripts' --mpi: one heading whatever its version, so a
# run with a newer version replaces the older one's section.
MPI_NAMES = {"mpich": "MPICH", "openmpi": "Open MPI"}

_HEADING = re.compile(r"(#{1,6}) \S")


def _level(line: str) -> int:
    m = _HEADING.match(line)
    return len(m.group(1)) if m else 0


def _headings(lines: Sequence[str]) -> list[tuple[int, int]]:
    """(index, level) of each heading line of `lines`, fenced code left out."""
    out = []
    fenced = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and _level(line):
            out.append((i, _level(line)))
    return out


def replace_section(text: str, heading: str, body: str) -> str:
    """`text` with the section that opens with the line `heading` replaced by `heading` and
    `body`; a section not there yet is appended at the end. The other sections are kept as
    they were, in their order."""
    level = _level(heading)
    if not level or "\n" in heading:
        raise ValueError(f"not a heading line: {heading!r}")
    section = [heading, "", *body.strip("\n").split("\n"), ""]
    for i, lv in _headings(section[1:]):
        if lv <= level:
            raise ValueError(
                f"the body of {heading!r} holds a heading of its level: {section[i + 1]!r}"
            )
    lines = text.split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    heads = _headings(lines)
    start = next((i for i, lv in heads if lv == level and lines[i] == heading), None)
    if start is None:
        return "\n".join([*lines, "", *section]).lstrip("\n")
    end = next((i for i, lv in heads if i > start and lv <= level), len(lines))
    return "\n".join([*lines[:start], *section, *lines[end:]]).rstrip("\n") + "\n"


def write_section(path: Path, title: str, heading: str, body: str) -> str:
    """Replace the section `heading` of the result file `path` by `body` (the file is made,
    opening with `title`, when it is not there) and return the file's new text."""
    old = path.read_text(encoding="utf-8") if path.exists() else f"{title.rstrip()}\n"
    new = replace_section(old, heading, body)
    path.write_text(new, encoding="utf-8")
    return new
