"""Argument types shared by the subcommands: process-count ranges, sizes, algorithm names."""

from __future__ import annotations

import argparse

from collkit.algorithms import Algorithm, parse_size
from collkit.errors import CollkitError

MAX_P = 1 << 31


def _int_or_pow(text: str) -> int:
    text = text.strip()
    if "^" in text:
        base, _, exp = text.partition("^")
        return int(int(base) ** int(exp))
    return int(text)


def parse_p_list(text: str) -> list[int]:
    """Process counts: '8', '1..64', '2^10', '1..256,1000,4096', '2^4..2^8:pow2' (powers of two)."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise argparse.ArgumentTypeError(f"empty entry in process counts '{text}'")
        pow2 = part.endswith(":pow2")
        if pow2:
            part = part[: -len(":pow2")]
        try:
            if ".." in part:
                lo_s, _, hi_s = part.partition("..")
                lo, hi = _int_or_pow(lo_s), _int_or_pow(hi_s)
                if hi < lo:
                    raise argparse.ArgumentTypeError(f"empty range '{part}'")
                if hi - lo > 10_000_000:
                    raise argparse.ArgumentTypeError(f"range '{part}' is too long")
                vals = range(lo, hi + 1)
                out.extend(v for v in vals if not pow2 or (v & (v - 1)) == 0)
            else:
                out.append(_int_or_pow(part))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"bad process count '{part}' (examples: 8, 1..64, 2^10, 1..256,1000)"
            ) from None
    for p in out:
        if p < 1 or p > MAX_P:
            raise argparse.ArgumentTypeError(f"P = {p} must be in [1, 2^31]")
    return out


def parse_p(text: str) -> int:
    ps = parse_p_list(text)
    if len(ps) != 1:
        raise argparse.ArgumentTypeError(f"expected one process count, got '{text}'")
    return ps[0]


def parse_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"count '{text}' is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"count {value} is negative")
    return value


def parse_bytes(text: str) -> int:
    try:
        return parse_size(text)
    except CollkitError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def algorithm(text: str) -> Algorithm:
    try:
        return Algorithm(text)
    except CollkitError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_problem_arguments(
    p: argparse.ArgumentParser, *, p_list: bool = False, optional: str = ""
) -> None:
    """ALGO, -P and the buffer size options that most subcommands share. `optional`: ALGO and
    -P may be left out, and the help says when (e.g. "omit with --from")."""
    p.add_argument(
        "algorithm",
        type=algorithm,
        metavar="ALGO",
        nargs="?" if optional else None,
        help="algorithm name, e.g. allreduce:rd (see `collkit algorithms`)"
        + (f"; {optional}" if optional else ""),
    )
    if p_list:
        p.add_argument(
            "-P",
            dest="P",
            type=parse_p_list,
            required=not optional,
            metavar="LIST",
            help="process counts: 8, 1..256, 2^10, 1..64,100,1000",
        )
    else:
        p.add_argument(
            "-P",
            dest="P",
            type=parse_p,
            required=not optional,
            metavar="N",
            help="number of processes",
        )
    add_size_arguments(p)


def add_size_arguments(p: argparse.ArgumentParser) -> None:
    """--count, --elem-size and --root."""
    p.add_argument(
        "--count",
        type=parse_count,
        default=None,
        metavar="C",
        help="elements per rank (alltoall: per block); default 4",
    )
    p.add_argument(
        "--elem-size",
        type=parse_bytes,
        default=8,
        metavar="BYTES",
        help="bytes per element (default 8)",
    )
    p.add_argument("--root", type=int, default=0, help="root rank of reduce / bcast (default 0)")
