"""The `collkit` command. Each subcommand lives in its own module of this package and is listed
once in COMMANDS; `collkit --help` and `collkit CMD --help` are built from them."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

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
    "cluster",
    "tour",
]

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="collkit",
        description="Write a collective algorithm once: prove it, simulate it, run it, tune it.",
        epilog="Algorithm names: COLLECTIVE:ALGO[(ARGS)], e.g. allreduce:rd, "
        "allreduce:rm(a8,a4), alltoall:bruck(r=4). `collkit algorithms` lists them.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        mod = importlib.import_module(f"collkit.cli.{name}")
        p = sub.add_parser(
            mod.NAME,
            help=mod.HELP,
            description=mod.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        code: int = args._run(args)
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
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
