"""Write a schedule as text, JSON or GOAL (LogGOPSim), generated from an algorithm or read
from a file (to convert between formats).

examples:
  collkit export allreduce:rd -P 8                       text form to stdout
  collkit export allreduce:rd -P 8 --count 1024 -o rd.goal          GOAL (from the extension)
  collkit export allreduce:rd -P 8 --format json -o rd.json
  collkit export --from rd.json --format text            convert a saved schedule
  collkit export --from plain.goal -o plain.txt          import a LogGOPSim GOAL file

Every format reads back into an identical schedule (collkit.io.load). A generated schedule is
written rank by rank, to a file or stdout, in every format: memory of one rank's program
whatever P. Formats are described in docs/schedule-formats.md.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from collkit import _core, io
from collkit.cli._common import (
    add_problem_arguments,
    input_file,
    parse_per_byte,
    placement_of,
    problem_counts,
    refuse_problem_options,
)
from collkit.placement import Placement, core_args
from collkit.simulate import memory_estimate

NAME = "export"
HELP = "write a schedule as text, JSON or GOAL (or convert a saved one)"

EXIT_OK, EXIT_USAGE = 0, 2


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_problem_arguments(p, optional="omit with --from", counts=True)
    p.set_defaults(root=None, elem_size=None)  # None: not given (refused with --from)
    p.add_argument(
        "--from",
        dest="source",
        metavar="FILE",
        help="read this schedule file (.txt, .json, .goal or sniffed) instead of generating one",
    )
    p.add_argument(
        "--format",
        choices=io.FORMATS,
        default=None,
        help="output format (default: from the extension of -o, else text)",
    )
    p.add_argument(
        "-o", "--output", metavar="FILE", default=None, help="write here instead of stdout"
    )
    # The simulator's names for the same costs (collkit simulate --gamma / --copy-beta), read by
    # the one units parser: '0.4ns', '0.4ns/B', '2.5GB/s', a bare number is ns per byte.
    p.add_argument(
        "--gamma",
        "--reduce-ns-per-byte",
        dest="gamma",
        type=parse_per_byte,
        default=0.0,
        metavar="COST",
        help="GOAL: calc time of a reduce per byte, e.g. 0.2ns or 5GB/s (default 0)",
    )
    p.add_argument(
        "--copy-beta",
        "--copy-ns-per-byte",
        dest="copy_beta",
        type=parse_per_byte,
        default=0.0,
        metavar="COST",
        help="GOAL: calc time of a copy per byte (default 0)",
    )


def _usage(msg: str) -> int:
    print(f"collkit export: error: {msg}", file=sys.stderr)
    return EXIT_USAGE


# Every format writes at least this many bytes per op (text: "  12: send out[0:4] to 3").
_MIN_BYTES_PER_OP = 20
_STDOUT_LIMIT = 2**40


def _too_large(
    args: argparse.Namespace,
    count: int,
    to_stdout: bool,
    placement: Placement | None,
    vec: list[int] | None,
) -> str | None:
    """Why the output could not be written (more than the disk holds, or than 1 TiB to
    stdout), from the op counts of sample ranks (with the placement a node-aware algorithm
    needs); None if it fits."""
    _, ops = memory_estimate(
        args.algorithm, args.P, count, args.elem_size, args.root, placement=placement, counts=vec
    )
    need = ops * _MIN_BYTES_PER_OP
    if to_stdout:
        room, where = _STDOUT_LIMIT, "the 1024 GiB collkit writes to stdout"
    else:
        folder = Path(args.output).resolve().parent
        try:
            room = shutil.disk_usage(folder).free
        except OSError:
            return None  # the write says why it cannot
        where = f"the {room / 2**30:.1f} GiB free in {folder}"
    if need <= room:
        return None
    return (
        f"this export would write at least {need / 2**30:.1f} GiB ({ops:,} ops), more than "
        f"{where}: lower -P or --count"
    )


def run(args: argparse.Namespace) -> int:
    if args.source is not None:
        if args.algorithm is not None or args.P is not None:
            return _usage("give either ALGO -P N or --from FILE, not both")
        refuse_problem_options(args, "--from")
        schedule = io.load(str(input_file(args.source, "--from")))
    else:
        if args.algorithm is None or args.P is None:
            return _usage("give ALGO and -P N (or --from FILE to convert a saved schedule)")
        count, vec = problem_counts(args, args.algorithm.collective, args.P, args.count)
        args.elem_size = 8 if args.elem_size is None else args.elem_size
        args.root = 0 if args.root is None else args.root
        placement = placement_of(args)
        fmt = args.format or (args.output and io.format_for_path(args.output)) or "text"
        # Streamed rank by rank, to the file or to stdout, in every format: memory of one
        # rank's program, whatever P.
        to_stdout = args.output in (None, "-")
        if not to_stdout and Path(args.output).is_dir():
            return _usage(f"cannot write {args.output}: it is a directory")
        too_large = _too_large(args, count, to_stdout, placement, vec)
        if too_large:
            return _usage(too_large)
        _core.write_schedule(
            args.algorithm.core,
            args.P,
            count,
            args.elem_size,
            args.root,
            fmt,
            "" if to_stdout else args.output,
            args.gamma,
            args.copy_beta,
            sys.stdout.write if to_stdout else None,
            *core_args(placement),
            vec or [],
        )
        if to_stdout:
            sys.stdout.flush()
        return EXIT_OK
    fmt = args.format or (args.output and io.format_for_path(args.output)) or "text"
    goal_options = {}
    if fmt == "goal":
        goal_options = {
            "reduce_ns_per_byte": args.gamma,
            "copy_ns_per_byte": args.copy_beta,
        }
    text = io.dumps(schedule, fmt, **goal_options)
    if args.output is None or args.output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as e:
            return _usage(f"cannot write {args.output}: {e.strerror or e}")
    return EXIT_OK
