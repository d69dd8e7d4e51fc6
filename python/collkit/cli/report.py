"""One self-contained HTML page of a results folder: the tables of its row files with the
pictures collkit draws for them, its tuning tables, calibrated profiles and reports, every picture
embedded, so the page is one file to open in a browser, mail or attach.

  collkit report collkit-tour            writes collkit-tour/report.html
  collkit report bench-results -o bench.html
"""

from __future__ import annotations

import argparse
import sys

from collkit.errors import InvalidArgumentError

NAME = "report"
HELP = "one self-contained HTML page of a results folder (tables and plots)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", metavar="DIR", help="a results folder (bench, tune, validate, tour)")
    p.add_argument(
        "-o",
        "--out",
        default=None,
        metavar="FILE.html",
        help="the page to write (default DIR/report.html): a new file, or a page collkit "
        "report wrote (never one of DIR's files or any other file)",
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")  # pictures into the page, never a window
    from collkit.report import write

    folder = Path(args.folder)
    if not folder.is_dir():
        raise InvalidArgumentError(f"{args.folder}: not a folder")
    path = write(folder, args.out)
    print(f"wrote {path}", file=sys.stderr)
    return 0
