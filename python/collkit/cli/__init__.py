"""The `collkit` command. Each subcommand lives in its own module of this package and is listed
once in COMMANDS; `collkit --help` and `collkit CMD --help` are built from them."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from collkit.cli._common import refuse_output_over_input, register_number_types
from collkit.errors import CollkitError

# Subcommand modules, in the order `collkit --help` lists them. Each has:
#   NAME: str, HELP: str, add_arguments(parser) -> None, run(args) -> int
COMMANDS = [
    "algorithms",
    "show",
    "verify",
    "limit",
    "export",
    "simulate",
    "fit",
    "schedules",
    "bench",
    "calibrate",
    "validate",
    "tune",
    "run",
    "report",
    "cluster",
    "tour",
]

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_PIPE = 0, 1, 2, 141


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the flush at exit does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (pytest's capture)
        pass


def version() -> str:
    """The installed collkit's version (its package metadata)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as _version

    try:
        return _version("collkit")
    except PackageNotFoundError:  # a source tree on sys.path, not installed
        from collkit import __version__

        return f"{__version__} (source tree)"


def build_parser(commands: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of `commands` (default: every command)."""
    parser = argparse.ArgumentParser(
        prog="collkit",
        description="Write a collective algorithm once: prove it, simulate it, run it, tune it.",
        epilog="Algorithm names: COLLECTIVE:ALGO[(ARGS)], e.g. allreduce:rd, "
        "allreduce:rm(a8,a4), alltoall:bruck(r=4). `collkit algorithms` lists them.",
    )
    parser.add_argument("--version", action="version", version=f"collkit {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if commands is None else commands:
        mod = importlib.import_module(f"collkit.cli.{name}")
        p = sub.add_parser(
            mod.NAME,
            help=mod.HELP,
            description=mod.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        mod.add_arguments(p)
        register_number_types(p)  # type=int / float: ASCII digits, as every number collkit reads
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        # A command named first is parsed by its own parser alone: a run imports only its
        # module (and what it needs), not every command's (rich, the tuner, ...).
        parser = build_parser([argv[0]] if argv and argv[0] in COMMANDS else None)
        args = parser.parse_args(argv)
    except KeyboardInterrupt:  # Ctrl-C while starting: the same exit as while running
        print("interrupted", file=sys.stderr)
        return 130
    if not getattr(args, "_run", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        refuse_output_over_input(args)
        code: int = args._run(args)
        sys.stdout.flush()  # a write error shows here, not at exit as a traceback
        return code
    except CollkitError as e:
        print(f"collkit {args.command}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except MemoryError:
        print(
            f"collkit {args.command}: error: out of memory (try a smaller P or count)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`collkit verify ... | head`): what was left is lost, so not
        # 0 (all well) nor 1 (a check failed) but 141, as a process killed by SIGPIPE.
        _silence_stdout()
        return EXIT_PIPE
    except OSError as e:  # a file or stdout that could not be read or written: /dev/full, EIO
        _silence_stdout()
        where = e.filename if e.filename else "stdout"
        print(f"collkit {args.command}: error: {where}: {e.strerror or e}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
