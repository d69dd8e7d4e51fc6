"""benchmarks/results_md.py: a run replaces its own section of a result file and keeps the
others, whatever they hold (subsections, code blocks with shell comments)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from results_md import replace_section, write_section

FILE = """# Title

One section per MPI.

## MPICH

- date: 1
### a subsection

old MPICH table

## Open MPI

```
# a shell comment, not a heading
mpirun ...
```

Open MPI table
"""


def test_a_section_is_replaced_up_to_the_next_of_its_level() -> None:
    new = replace_section(FILE, "## MPICH", "- date: 2\n\nnew MPICH table")
    assert "old MPICH table" not in new
    assert "### a subsection" not in new
    assert new.index("## MPICH\n\n- date: 2\n\nnew MPICH table\n\n## Open MPI") > 0
    assert new.endswith("Open MPI table\n")
    assert new.startswith("# Title\n\nOne section per MPI.\n")


def test_a_code_block_does_not_end_a_section() -> None:
    new = replace_section(FILE, "## Open MPI", "rerun")
    assert new.endswith("## Open MPI\n\nrerun\n")
    assert "a shell comment" not in new
    assert "old MPICH table" in new


def test_a_new_section_is_appended_and_a_rerun_changes_nothing_else() -> None:
    once = replace_section(FILE, "## Intel MPI", "intel table")
    assert once == FILE + "\n## Intel MPI\n\nintel table\n"
    assert replace_section(once, "## Intel MPI", "intel table") == once


def test_a_heading_is_matched_whole_and_at_its_level() -> None:
    text = "# T\n\n## MPICH 5\n\nfive\n\n### MPICH\n\nsub\n"
    new = replace_section(text, "## MPICH", "x")
    assert new == text + "\n## MPICH\n\nx\n"


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="not a heading"):
        replace_section(FILE, "MPICH", "x")
    with pytest.raises(ValueError, match="holds a heading of its level"):
        replace_section(FILE, "## MPICH", "text\n## Open MPI\n")


def test_write_section_makes_the_file_with_its_title(tmp_path: Path) -> None:
    path = tmp_path / "r.md"
    write_section(path, "# R\n\nintro", "## A", "a1")
    write_section(path, "# ignored once the file exists", "## B", "b1")
    write_section(path, "# R", "## A", "a2")
    assert path.read_text() == "# R\n\nintro\n\n## A\n\na2\n\n## B\n\nb1\n"
