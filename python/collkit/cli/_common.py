"""The arguments the subcommands share, declared once: ALGO, -P, --count / --bytes, --elem-size,
--root, and the parsers of their values. A flag means the same thing in every command."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from collkit import placement, units
from collkit.algorithms import Algorithm
from collkit.collectives import ROOTED, collectives, count_unit
from collkit.collectives import collective as collective_spec
from collkit.counts import CountSpec, parse_counts
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


_DIGITS = re.compile(r"[+-]?[0-9]+(\^[+-]?[0-9]+)?", re.ASCII)


def _int_or_pow(text: str, what: str, limit: int) -> int:
    """An integer, or B^E; a power is refused before it is computed if it exceeds `limit`."""
    text = text.strip()
    try:
        if "^" not in text:
            return units.parse_int(text, what)
        base_s, _, exp_s = text.partition("^")
        base, exp = units.parse_int(base_s, what), units.parse_int(exp_s, what)
    except InvalidArgumentError:  # units' ASCII grammar: int() would take '٣', '８', '1_0'
        if _DIGITS.fullmatch(text) and "^" not in text and len(text) <= 1000:
            return int(text)  # ASCII digits past int64: the caller's range check says so
        if _DIGITS.fullmatch(text):
            raise InvalidArgumentError(f"{what} {text[:40]}... is more than {limit}") from None
        raise InvalidArgumentError(f"bad {what} '{text}' (ASCII digits 0-9)") from None
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
parse_counts_form = _usage(parse_counts)


def counts_form(text: str) -> str:
    """A --counts form (bench's and tune's), checked (collkit.counts) and kept as written,
    without blanks."""
    parse_counts_form(text)
    return "".join(text.split())


def _int_type(text: str) -> int:
    """argparse's type=int, in units' ASCII grammar (int() takes '٣', '８' and '1_0')."""
    return units.parse_int(text, "bad value")


def _float_type(text: str) -> float:
    """argparse's type=float, in units' ASCII grammar: finite (no nan, inf), no other digits."""
    return units.parse_float(text, "bad value")


def _nonnegative(text: str) -> int:
    return units.parse_int(text, "value", lo=0)


def _positive(text: str) -> int:
    return units.parse_int(text, "value", lo=1)


parse_int = _usage(_int_type)
parse_float = _usage(_float_type)
parse_nonnegative = _usage(_nonnegative)
parse_positive = _usage(_positive)


def register_number_types(p: argparse.ArgumentParser) -> None:
    """Make `type=int` and `type=float` in `p`, its groups and its subcommands' parsers (cluster
    up ...) mean the ASCII grammar: every command's integer and number options read numbers the
    same way, declared here once. Types are looked up as arguments are parsed, so this may come
    after the arguments are added."""
    p.register("type", int, parse_int)
    p.register("type", float, parse_float)
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sub in a.choices.values():
                register_number_types(sub)


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
    counts: bool = False,
) -> None:
    """ALGO, -P and the buffer size options that most subcommands share. `counts`: --counts
    FORM too (the commands that generate a schedule). `lists`: -P, --count
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
    if counts:
        add_counts_argument(p)
    add_placement_arguments(p)


def add_counts_argument(p: argparse.ArgumentParser) -> None:
    """--counts FORM: the count vector of an irregular collective, drawn for each P (instead of
    --count)."""
    p.add_argument(
        "--counts",
        type=parse_counts_form,
        default=None,
        metavar="FORM",
        help="the count vector of an irregular collective (`collkit algorithms`: the ones with "
        "per-rank or per-pair counts), drawn for each P instead of --count: 1,0,5 (P entries; "
        "P^2 for per-pair counts), equal(n), random(seed,max), skewed(max[,seed]), "
        "zeros-but-one[(n[,k])]",
    )


def vectors_of(args: argparse.Namespace, collective: str, P: int) -> list[int] | None:
    """The count vector --counts draws for P ranks of `collective` (None without --counts);
    an error for a collective that takes none or with --count / --bytes too."""
    form: CountSpec | None = getattr(args, "counts", None)
    if form is None:
        return None
    if getattr(args, "count", None) is not None or getattr(args, "bytes", None) is not None:
        raise InvalidArgumentError("give --count (or --bytes) or --counts, not both")
    kind = collective_spec(collective)["counts"]
    if kind == "none":
        taking = ", ".join(c["name"] for c in collectives() if c["counts"] != "none")
        raise InvalidArgumentError(
            f"--counts: {collective} takes one count for every rank (--count); a count vector "
            f"is for {taking}"
        )
    return form.vector(P, per_pair=kind == "per_pair")


def problem_counts(
    args: argparse.Namespace, collective: str, P: int, count: int | None
) -> tuple[int, list[int] | None]:
    """The count and count vector for P: with --counts the vector drawn for P (count its
    largest entry), else `count` (DEFAULT_COUNT when None) and None."""
    vec = vectors_of(args, collective, P)
    if vec is None:
        return (DEFAULT_COUNT if count is None else count), None
    return max(vec, default=0), vec


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


def default_np(args: argparse.Namespace, fallback: int, *, lists: bool) -> None:
    """-np where the command line gives none (args.P None): inside a Slurm allocation without
    --hosts, its task count (collkit.slurm.default_np), else `fallback`."""
    if args.P is None:
        from collkit import slurm

        n = slurm.default_np(getattr(args, "hosts", None)) or fallback
        args.P = [n] if lists else n


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


def refuse_problem_options(args: argparse.Namespace, source: str) -> None:
    """An error naming the problem options given with a schedule file (`source`: --file or
    --from): the file says its own P, count, element size, root and placement, and an option
    that cannot apply is refused, never dropped without a word."""
    given = [
        flag
        for attr, flag in (
            ("count", "--count"),
            ("counts", "--counts"),
            ("bytes", "--bytes"),
            ("elem_size", "--elem-size"),
            ("root", "--root"),
            ("rpn", "--rpn"),
            ("order", "--order"),
        )
        if getattr(args, attr, None) is not None
    ]
    if given:
        raise InvalidArgumentError(
            f"{source} brings its own problem: leave out {', '.join(given)} (the file says its "
            "P, count, element size, root and placement)"
        )


def counts_of(args: argparse.Namespace) -> list[int]:
    """The --count values (a list even for one), DEFAULT_COUNT when none was given."""
    c = args.count
    if c is None:
        return [DEFAULT_COUNT]
    return list(c) if isinstance(c, list) else [c]


# MPICH's hydra and Open MPI's mpirun read -n into a 32-bit int: 2^31 wraps (hydra then starts
# one process, Open MPI reads -2147483648) and 2^32 + 1 starts one. Neither starts 2^31 - 1.
MAX_LAUNCH = (1 << 31) - 1
# Environment that tells the launcher of other hosts (a host file or a batch allocation): then
# this machine's process limit does not bound P.
_HOSTS_ENV = ("HYDRA_HOST_FILE", "OMPI_MCA_orte_default_hostfile", "PBS_NODEFILE", "SLURM_JOB_ID")


def local_process_limit() -> int:
    """The most processes this machine could start for one launch: the kernel's pid_max and
    threads-max and this user's RLIMIT_NPROC, whichever is least."""
    import resource

    limits = [MAX_LAUNCH]
    for f in ("/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            limits.append(int(Path(f).read_text().split()[0]))
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    if soft != resource.RLIM_INFINITY and soft > 0:
        limits.append(soft)
    return min(limits)


def check_launchable(Ps: list[int], hosts: str | None = None, flag: str = "-np") -> None:
    """An error, before anything starts, for a process count the MPI launcher cannot start:
    above 2^31 - 1 (the launchers' int wraps: 2^31 ran one rank and stored it as P = 2^31), or,
    on this machine alone (no host file), above the processes the kernel lets it start."""
    for P in Ps:
        if P > MAX_LAUNCH:
            raise InvalidArgumentError(
                f"{flag} {P}: MPI launchers take at most 2^31 - 1 = {MAX_LAUNCH} processes "
                "(mpiexec would wrap the number and start one)"
            )
    if hosts is not None or any(os.environ.get(k) for k in _HOSTS_ENV):
        return
    limit = local_process_limit()
    for P in Ps:
        if limit < P:
            raise InvalidArgumentError(
                f"{flag} {P}: this machine can start at most {limit} processes (kernel pid_max, "
                "threads-max, ulimit -u); run across nodes with a host file, or lower it"
            )


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


# The attributes that name files a command reads, and those it writes (every command declares
# its files under these names), so that one check refuses an output that is one of the inputs.
INPUT_ATTRS = {
    "file": "--file",
    "source": "--from",
    "tuning": "--tuning",
    "hosts": "--hosts",
    "profile": "--profile",
    "measured": "--measured",
}
OUTPUT_ATTRS = {
    "output": "-o",
    "out": "-o",
    "timeline": "--timeline",
    "plot": "--plot",
    "stats": "--stats",
}
_NOISE_FILE = re.compile(r"^\s*file\(\s*([^,)]+?)\s*(?:,[^)]*)?\)\s*$")


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False  # one of them does not exist (yet): not the same file


def refuse_output_over_input(args: argparse.Namespace) -> None:
    """An error if a file the command writes is one of the files it reads (the same file by
    device and inode, whatever the path says): writing it would destroy the input."""
    inputs: list[tuple[str, str]] = []
    for attr, flag in INPUT_ATTRS.items():
        v = getattr(args, attr, None)
        if isinstance(v, (str, os.PathLike)):
            inputs.append((flag, os.fspath(v)))
    for v in getattr(args, "rows", None) or []:
        if isinstance(v, str):
            inputs.append(("ROWS", v))
    noise = getattr(args, "noise", None)
    m = _NOISE_FILE.match(noise) if isinstance(noise, str) else None
    if m:
        inputs.append(("--noise", m.group(1)))
    for attr, oflag in OUTPUT_ATTRS.items():
        out = getattr(args, attr, None)
        if not isinstance(out, (str, os.PathLike)) or os.fspath(out) in ("", "-"):
            continue
        for iflag, path in inputs:
            if _same_file(os.fspath(out), path):
                raise InvalidArgumentError(
                    f"{oflag} {os.fspath(out)} is the file {iflag} reads ({path}): writing it "
                    "would destroy the input; give another output path"
                )


def plot_format_error(path: str, what: str) -> str | None:
    """Why matplotlib could not write a picture at `path` (an extension it has no writer for),
    or None: said before the work, not after it."""
    from matplotlib.backend_bases import FigureCanvasBase

    kinds = FigureCanvasBase.get_supported_filetypes()
    ext = Path(path).suffix.lower().lstrip(".")
    if ext and ext not in kinds:
        return (
            f"{what} {path}: a picture is written as {', '.join('.' + k for k in sorted(kinds))}"
            f"{'' if ext else ' (the name has no extension)'}"
        )
    return None


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


def console(stderr: bool = False) -> Console:
    """Where the commands print: no highlighter (it crawls over long texts), no emoji codes (an
    algorithm name's ":ring:" in "allreduce:ring: ..." is text, not a ring); when stdout is not a
    terminal, plain text as wide as it needs (a pipe gets whole names, not 80-column folds).
    `stderr`: the same on stderr (progress beside --json output)."""
    from rich.console import Console

    class _Console(Console):
        """rich's Console, but a reader that goes away (`| head`) is BrokenPipeError for main()
        to answer (exit 141), not rich's SystemExit(1), which reads as "verification failed"."""

        def on_broken_pipe(self) -> None:
            raise BrokenPipeError

    if (sys.stderr if stderr else sys.stdout).isatty():
        return _Console(highlight=False, emoji=False, stderr=stderr)
    return _Console(
        highlight=False, emoji=False, width=100_000, no_color=True, soft_wrap=True, stderr=stderr
    )


def add_json_argument(p: argparse.ArgumentParser, what: str = "") -> None:
    """--json: the command's table or result as JSON lines on stdout (one object a line; messages
    stay on stderr). Result rows are printed in the one row schema, with the row files' keys."""
    p.add_argument(
        "--json",
        action="store_true",
        help="print JSON lines instead of the table: "
        + (
            what
            or "one result row a line, with the row files' keys (docs/mpi.md, 'The row schema')"
        ),
    )


def print_json_lines(items: Iterable[Any]) -> None:
    """Each item as one line of JSON on stdout: a result Row in the one row schema (as in the
    row files: NaN as null), anything else through json.dumps (NaN as null too)."""
    import json

    from collkit.results import Row, row_to_json

    def clean(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return None if math.isnan(x) else str(x)
        if isinstance(x, dict):
            return {str(k): clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x

    for item in items:
        line = row_to_json(item) if isinstance(item, Row) else json.dumps(clean(item))
        print(line, flush=True)
