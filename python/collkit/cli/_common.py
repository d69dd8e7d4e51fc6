"""The arguments the subcommands share, declared once: ALGO, -P, --count / --bytes, --elem-size,
--root, and the parsers of their values. A flag means the same thing in every command."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from collkit import placement, units
from collkit.algorithms import Algorithm
from collkit.collectives import ROOTED, count_unit
from collkit.errors import CollkitError, InvalidArgumentError
from collkit.placement import Placement

if TYPE_CHECKING:  # rich is imported when a command prints a table: a run starts faster
    from rich.console import Console
    from rich.table import Table

MAX_P = 1 << 31
MAX_COUNT = 1 << 48  # the core's largest buffer, in elements
DEFAULT_COUNT = 4
MAX_LIST = 100_000  # values in one -P or --count list

T = TypeVar("T")


def _usage(fn: Callable[[str], T]) -> Callable[[str], T]:
    """An argparse type from a parser that raises CollkitError: the message, not a traceback."""

    def parse(text: str) -> T:
        try:
            return fn(text)
        except CollkitError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    parse.__name__ = fn.__name__
    return parse


def _int_or_pow(text: str, what: str, limit: int) -> int:
    """An integer, or B^E; a power is refused before it is computed if it exceeds `limit`."""
    text = text.strip()
    try:
        if "^" not in text:
            return int(text)
        base_s, _, exp_s = text.partition("^")
        base, exp = int(base_s), int(exp_s)
    except ValueError:
        raise InvalidArgumentError(f"bad {what} '{text}'") from None
    if exp < 0:
        raise InvalidArgumentError(f"{what} {text}: negative exponent")
    if abs(base) >= 2 and exp * math.log2(abs(base)) > math.log2(limit) + 1:
        raise InvalidArgumentError(f"{what} {text} is more than {limit}")
    return int(base**exp)


def _int_list(text: str, what: str, limit: int, examples: str) -> list[int]:
    """'8', '1..64', '2^10', '1..256,1000', '2^4..2^8:pow2' (powers of two in the range)."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise InvalidArgumentError(f"empty entry in {what}s '{text}' (examples: {examples})")
        pow2 = part.endswith(":pow2")
        if pow2:
            part = part[: -len(":pow2")]
        try:
            if ".." in part:
                lo_s, _, hi_s = part.partition("..")
                lo, hi = _int_or_pow(lo_s, what, limit), _int_or_pow(hi_s, what, limit)
                if hi < lo:
                    raise InvalidArgumentError(f"empty range '{part}'")
                if pow2:
                    out.extend(1 << k for k in range(64) if lo <= 1 << k <= hi)
                elif hi - lo >= MAX_LIST:
                    raise InvalidArgumentError(f"range '{part}' has more than {MAX_LIST} values")
                else:
                    out.extend(range(lo, hi + 1))
            else:
                v = _int_or_pow(part, what, limit)
                out.extend([v] if not pow2 or v & (v - 1) == 0 else [])
        except InvalidArgumentError as e:
            raise InvalidArgumentError(f"{e} (examples: {examples})") from None
        if len(out) > MAX_LIST:
            raise InvalidArgumentError(f"more than {MAX_LIST} {what}s in '{text[:40]}'")
    if not out:
        raise InvalidArgumentError(f"no {what}s in '{text}'")
    return out


def p_list(text: str) -> list[int]:
    """Process counts: '8', '1..64', '2^10', '1..256,1000,4096', '2^4..2^8:pow2'."""
    out = _int_list(text, "process count", MAX_P, "8, 1..64, 2^10, 1..256,1000")
    for p in out:
        if not 1 <= p <= MAX_P:
            raise InvalidArgumentError(f"P = {p} must be in [1, 2^31]")
    return out


def count_list(text: str) -> list[int]:
    """Element counts: '4', '0,1,7', '0..8', '2^20'."""
    out = _int_list(text, "count", MAX_COUNT, "4, 0,1,7, 0..8, 2^20")
    for c in out:
        if c < 0:
            raise InvalidArgumentError(f"count {c} is negative")
        if c > MAX_COUNT:
            raise InvalidArgumentError(f"count {c} is more than 2^48 elements")
    return out


def _one(values: Callable[[str], list[int]], what: str) -> Callable[[str], int]:
    """A parser of one value from a parser of lists."""

    def one(text: str) -> int:
        vs = values(text)
        if len(vs) != 1:
            raise InvalidArgumentError(f"expected one {what}, got '{text}'")
        return vs[0]

    return one


one_p = _one(p_list, "process count")
one_count = _one(count_list, "count")


def rank(text: str) -> int:
    """A rank: an integer in [0, 2^31); checked against P by the command."""
    r = _int_or_pow(text, "rank", MAX_P)
    if not 0 <= r < MAX_P:
        raise InvalidArgumentError(f"rank {r} must be in [0, 2^31)")
    return r


def elem_size(text: str) -> int:
    n = units.parse_size(text, "--elem-size")
    if not 1 <= n <= 1 << 20:
        raise InvalidArgumentError(f"--elem-size {text}: must be in [1 B, 1 MiB]")
    return n


# argparse types: a bad value is exit 2 with the parser's message.
parse_p_list = _usage(p_list)
parse_p = _usage(one_p)
parse_count_list = _usage(count_list)
parse_count = _usage(one_count)
parse_rank = _usage(rank)
parse_elem_size = _usage(elem_size)
parse_bytes = _usage(units.parse_size)
parse_time = _usage(units.parse_time)
parse_per_byte = _usage(units.parse_per_byte)


def _rpn(text: str) -> int:
    v = _int_or_pow(text, "ranks per node", 1 << 31)
    if not 1 <= v <= 1 << 31:
        raise InvalidArgumentError(f"ranks per node {text} must be in [1, 2^31]")
    return v


def _order(text: str) -> str:
    return placement.parse_order(text)


parse_rpn = _usage(_rpn)
parse_order = _usage(_order)


def split_names(text: str) -> list[str]:
    """A comma list of algorithm names split at the commas outside parentheses:
    'rd,hier(intra=reduce:binomial,inter=allreduce:rd)' is two names."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth <= 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    out.append(cur.strip())
    return out


def algorithm(text: str) -> Algorithm:
    if len(text) > 1000:  # no name is this long; the highlighter would crawl over it
        raise argparse.ArgumentTypeError(f"a {len(text)}-character algorithm name is not a name")
    try:
        return Algorithm(text)
    except CollkitError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def algorithm_list(text: str) -> list[Algorithm]:
    """A comma list of algorithm names (commas inside parentheses belong to a name)."""
    return [algorithm(name) for name in split_names(text)]


def bytes_list(text: str) -> list[int]:
    """Sizes: '8', '8,1KiB,64KiB'."""
    out = []
    for part in text.split(","):
        try:
            out.append(units.parse_size(part.strip()))
        except CollkitError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return out


def add_problem_arguments(
    p: argparse.ArgumentParser,
    *,
    lists: bool = False,
    optional: str = "",
    with_bytes: bool = False,
    root_help: str = "",
    algorithms: bool = False,
) -> None:
    """ALGO, -P and the buffer size options that most subcommands share. `lists`: -P, --count
    and --bytes take lists (a sweep). `optional`: ALGO and -P may be left out, and the help says
    when (e.g. "omit with --from"). `with_bytes`: --bytes SIZE as an alternative to --count.
    `algorithms`: ALGO is a comma list of names (a list even for one)."""
    p.add_argument(
        "algorithm",
        type=algorithm_list if algorithms else algorithm,
        metavar="ALGO",
        nargs="?" if optional else None,
        help="algorithm name, e.g. allreduce:rd (see `collkit algorithms`)"
        + ("; or a comma list of names" if algorithms else "")
        + (f"; {optional}" if optional else ""),
    )
    add_p_argument(p, lists=lists, required=not optional)
    add_size_arguments(p, lists=lists, with_bytes=with_bytes, root_help=root_help)
    add_placement_arguments(p)


def add_placement_arguments(p: argparse.ArgumentParser) -> None:
    """--rpn N and --order: the placement of ranks on nodes (node-aware algorithms need it; the
    simulator's topology takes its node size from it)."""
    g = p.add_argument_group("placement of ranks on nodes")
    g.add_argument(
        "--rpn",
        type=parse_rpn,
        default=None,
        metavar="N",
        help="ranks per node (node-aware algorithms such as allreduce:hier need it; the "
        "simulator's topology takes its node size from it)",
    )
    g.add_argument(
        "--order",
        type=parse_order,
        default=None,
        metavar="ORDER",
        help="how ranks fill nodes: contiguous (node n holds ranks n*rpn..; default) or "
        "round_robin (rank r on node r %% nodes)",
    )


def placement_of(args: argparse.Namespace) -> Placement | None:
    """The Placement from --rpn / --order (None without --rpn); --order alone, or a node-aware
    ALGO without --rpn, is an error."""
    if args.rpn is None:
        if args.order is not None:
            raise InvalidArgumentError("--order needs --rpn N (ranks per node)")
        algo = getattr(args, "algorithm", None)
        if isinstance(algo, Algorithm) and algo.needs_placement:
            raise InvalidArgumentError(
                f"{algo.canonical} is node-aware: give the placement of ranks on nodes with "
                "--rpn N (ranks per node) and, if not contiguous, --order round_robin"
            )
        return None
    return Placement(args.rpn, args.order or "contiguous")


def add_p_argument(
    p: argparse.ArgumentParser,
    *,
    lists: bool = False,
    required: bool = True,
    default: list[int] | None = None,
    aliases: tuple[str, ...] = (),
) -> None:
    """-P N (one process count) or -P LIST (a sweep: 8, 1..256, 2^10, 1..64,100,1000)."""
    p.add_argument(
        "-P",
        *aliases,
        dest="P",
        type=parse_p_list if lists else parse_p,
        required=required and default is None,
        default=default,
        metavar="LIST" if lists else "N",
        help="process counts: 8, 1..256, 2^10, 1..64,100,1000"
        + (f" (default {','.join(map(str, default))})" if default else "")
        if lists
        else "number of processes: 8, 2^10",
    )


def add_size_arguments(
    p: argparse.ArgumentParser,
    *,
    lists: bool = False,
    with_bytes: bool = False,
    root_help: str = "",
) -> None:
    """--count (or --bytes), --elem-size and --root."""
    g = p.add_mutually_exclusive_group() if with_bytes else p
    g.add_argument(
        "--count",
        type=parse_count_list if lists else parse_count,
        default=None,
        metavar="LIST" if lists else "C",
        help=f"elements {count_unit()}{': 0,1,7 or 0..8' if lists else ''}; "
        f"default {DEFAULT_COUNT}",
    )
    if with_bytes:
        g.add_argument(
            "--bytes",
            type=bytes_list if lists else parse_bytes,
            default=None,
            metavar="LIST" if lists else "SIZE",
            help="bytes (count x element size) instead of --count (rounded up to whole elements)"
            + (": 8,1KiB,64KiB" if lists else ""),
        )
    p.add_argument(
        "--elem-size",
        type=parse_elem_size,
        default=8,
        metavar="BYTES",
        help="bytes per element (default 8)",
    )
    p.add_argument(
        "--root",
        type=parse_rank,
        default=0,
        metavar="R",
        help=root_help or f"root rank of {' / '.join(ROOTED)} (default 0)",
    )


def counts_of(args: argparse.Namespace) -> list[int]:
    """The --count values (a list even for one), DEFAULT_COUNT when none was given."""
    c = args.count
    if c is None:
        return [DEFAULT_COUNT]
    return list(c) if isinstance(c, list) else [c]


def check_root(root: int, P: int) -> int:
    """The root; an error if it is not a rank of P."""
    if root >= P:
        raise InvalidArgumentError(f"--root {root} is not a rank of P = {P}")
    return root


def input_file(path: str, what: str = "--file") -> Path:
    """A readable regular file, or an error that says why not ('-' is not supported)."""
    if path == "-":
        raise InvalidArgumentError(f"{what}: reading stdin ('-') is not supported; give a path")
    f = Path(path)
    if not f.exists():
        raise InvalidArgumentError(f"{what}: {path} does not exist")
    if not f.is_file():
        raise InvalidArgumentError(f"{what}: {path} is not a regular file")
    if not os.access(f, os.R_OK):
        raise InvalidArgumentError(f"{what}: {path} is not readable")
    return f


def output_dir(text: str, what: str) -> Path:
    """A folder to write into: an existing writable folder, or a new one made in an existing
    folder (never a chain of folders: a typo should not create a tree)."""
    d = Path(text)
    if d.exists() and not d.is_dir():
        raise InvalidArgumentError(f"{what}: {text} is not a folder")
    if not d.exists():
        if not d.parent.is_dir():
            raise InvalidArgumentError(f"{what}: folder {d.parent} does not exist")
        try:
            d.mkdir()
        except OSError as e:
            raise InvalidArgumentError(f"{what}: cannot make {text}: {e.strerror or e}") from None
    if not os.access(d, os.W_OK):
        raise InvalidArgumentError(f"{what}: {text} is not writable")
    return d


def table(title: str) -> Table:
    """A table for console(): ruled on a terminal, plain columns when piped."""
    from rich.table import Table

    if sys.stdout.isatty():
        return Table(title=title)
    return Table(title=title, box=None, title_justify="left")


def console() -> Console:
    """Where the commands print: no highlighter (it crawls over long texts); when stdout is not a
    terminal, plain text as wide as it needs (a pipe gets whole names, not 80-column folds)."""
    from rich.console import Console

    if sys.stdout.isatty():
        return Console(highlight=False)
    return Console(highlight=False, width=100_000, no_color=True, soft_wrap=True)
