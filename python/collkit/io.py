"""Schedule formats: the text form, JSON and GOAL (LogGOPSim), each way, and files.

>>> import collkit
>>> from collkit import io
>>> s = collkit.generate("allreduce:rd", P=3, count=4)
>>> io.from_text(io.to_text(s)) == s and io.from_json(io.to_json(s)) == s
True
>>> io.from_goal(io.to_goal(s)) == s
True

Text (``.txt``) is the readable, diffable form (grammar in docs/schedule-formats.md); GOAL
(``.goal``) is what LogGOPSim reads, with collkit's extra facts in ``// collkit:`` comments; JSON
(``.json``) is for other programs. All three read back into an identical Schedule.

JSON schema (version 1). One object; per-op fields are parallel arrays (columns), so that a
schedule of millions of ops loads and saves quickly:

.. code-block:: text

    {
      "format": "collkit-schedule",   # required, exactly this
      "version": 1,                   # required, exactly 1
      "collective": "allreduce",      # one of collkit.collectives.COLLECTIVES
      "algorithm": "allreduce:rd",    # any string ("" for none)
      "P": 3,                         # ranks, 1 <= P <= 2^31
      "count": 4,                     # elements per rank (per block: collectives.PER_BLOCK), >= 0
      "elem_size": 8,                 # bytes per element, 1 <= elem_size < 2^31
      "root": 0,                      # 0 <= root < P
      "placement": {"rpn": 16, "order": "contiguous"},   # optional: ranks on nodes
      "op_kinds": ["send", "recv", "reduce", "copy", "compute", "sleep"],   # legend of "kind"
      "reduce_sides": ["src_first", "dst_first"],                           # legend of "side"
      "ops": {                        # one entry per op, all ranks, sorted by rank
        "rank":    [...],             # owning rank, non-decreasing
        "kind":    [...],             # index into op_kinds
        "peer":    [...],             # send / recv: the other rank (int32); recv: -1 = any
        "buf":     [...],             # 0 = in, 1 = out, 2 + k = scratch buffer s<k> (uint8)
        "off":     [...],             # region start in elements (int64)
        "src":     [...],             # reduce / copy: source buffer (uint8)
        "src_off": [...],             # reduce / copy: source region start
        "len":     [...],             # elements; compute / sleep: nanoseconds (>= 0)
        "side":    [...],             # reduce: index into reduce_sides
        "stage":   [...],             # label for pictures (uint16)
        "cpu":     [...],             # optional (0 if absent): the host CPU it runs on (0..15)
        "nic":     [...]              # optional (0 if absent): the host NIC it uses (0..7)
      },
      "dep_begin": [...],             # ops + 1 entries: op i waits on the ops
      "deps": [...],                  #   deps[dep_begin[i]:dep_begin[i+1]] of its own rank (uint32)
      "scratch_begin": [...],         # P + 1 entries: rank r's scratch sizes are
      "scratch": [...]                #   scratch[scratch_begin[r]:scratch_begin[r+1]] (elements)
    }

Fields that an op kind does not use (the peer of a reduce, say) are kept as they are, so a
JSON file is an exact copy of ``Schedule.arrays()``. Anything else (wrong types, missing keys,
numbers out of range, NaN, nesting) raises ScheduleFormatError; so does everything the text
parser rejects (peers outside [0, P), buffers a rank does not have, negative lengths,
dependencies on ops a rank does not have).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import numpy as np

from collkit import _core, files
from collkit.errors import ArgumentTypeError, InvalidArgumentError, ScheduleFormatError
from collkit.placement import Placement, core_args
from collkit.schedule import RankProgram, Schedule, as_schedule, count_vector

__all__ = [
    "FORMATS",
    "dumps",
    "format_for_path",
    "from_goal",
    "from_json",
    "from_text",
    "header_text",
    "load",
    "loads",
    "rank_to_text",
    "save",
    "sniff_format",
    "to_goal",
    "to_json",
    "to_text",
]

Format = Literal["text", "json", "goal"]
FORMATS: tuple[Format, ...] = ("text", "json", "goal")
_EXTENSIONS: dict[str, Format] = {".txt": "text", ".json": "json", ".goal": "goal"}


def _utf8(text: str | bytes | bytearray, what: str) -> bytes:
    if isinstance(text, (bytes, bytearray)):
        data = bytes(text)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ScheduleFormatError(f"{what} is not valid UTF-8: {e}") from None
        return data
    if not isinstance(text, str):
        raise ArgumentTypeError(f"{what} must be str or bytes, not {type(text).__name__}")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ScheduleFormatError(f"{what} cannot be encoded as UTF-8: {e}") from None


# ---- text -------------------------------------------------------------------------------------


def to_text(schedule: Schedule) -> str:
    """The text form: readable, diffable, and exact (``from_text(to_text(s)) == s``)."""
    return str(_core.to_text(as_schedule(schedule).core))


def from_text(text: str | bytes) -> Schedule:
    """Parse the text form; ScheduleFormatError says 'line L, column C: expected ..., found ...'."""
    return Schedule(_core.from_text(_utf8(text, "schedule text")))


def header_text(
    algorithm: str,
    P: int,
    count: int,
    elem_size: int = 8,
    root: int = 0,
    collective: str | None = None,
    placement: Placement | None = None,
    counts: object = None,
    in_displs: object = None,
    out_displs: object = None,
) -> str:
    """The header lines of the text form (``# collkit schedule v1`` to ``root R``, and the
    placement and an irregular collective's vectors if given), for callers that print ranks one
    by one (``collkit show``). The collective defaults to the part of the algorithm name before
    ':'."""
    if collective is None:
        collective = algorithm.partition(":")[0]
    vectors = (
        count_vector(counts, "counts"),
        count_vector(in_displs, "in_displs"),
        count_vector(out_displs, "out_displs"),
    )
    return str(
        _core.header_text(
            collective, algorithm, P, count, elem_size, root, *core_args(placement), *vectors
        )
    )


def rank_to_text(
    schedule_or_program: Schedule | RankProgram,
    rank: int | None = None,
    *,
    count: int | None = None,
    P: int | None = None,
    elem_size: int | None = None,
    collective: str | None = None,
    root: int | None = None,
) -> str:
    """One rank's block of the text form (what ``collkit show`` prints): header_text followed
    by the blocks of ranks 0 .. P-1 is exactly to_text.

    For a Schedule, ``rank`` picks the rank (required); a RankProgram is its own rank. The
    header keywords are accepted from callers that have them; the block does not depend on them.
    """
    del count, P, elem_size, collective, root
    if isinstance(schedule_or_program, RankProgram):
        if rank is not None and rank != schedule_or_program.rank:
            raise InvalidArgumentError(
                f"this program is rank {schedule_or_program.rank}, not rank {rank}"
            )
        return str(_core.rank_program_to_text(schedule_or_program.core))
    if isinstance(schedule_or_program, Schedule):
        if rank is None:
            raise InvalidArgumentError("rank_to_text(schedule, rank): give the rank to show")
        return str(_core.rank_to_text(schedule_or_program.core, rank))
    raise ArgumentTypeError(
        f"expected a Schedule or RankProgram, not {type(schedule_or_program).__name__}"
    )


# ---- GOAL -------------------------------------------------------------------------------------


def to_goal(
    schedule: Schedule, *, reduce_ns_per_byte: float = 0.0, copy_ns_per_byte: float = 0.0
) -> str:
    """GOAL for LogGOPSim. Reduce and copy ops become ``calc`` costing ``*_ns_per_byte`` times
    their bytes (default 0); collkit's own facts ride in ``// collkit:`` comments, so
    ``from_goal(to_goal(s)) == s``."""
    costs = {"reduce_ns_per_byte": reduce_ns_per_byte, "copy_ns_per_byte": copy_ns_per_byte}
    for name, v in costs.items():
        if isinstance(v, bool) or not (isinstance(v, (int, float)) and np.isfinite(v) and v >= 0):
            raise InvalidArgumentError(f"{name} must be a finite number >= 0, got {v!r}")
    core = as_schedule(schedule).core
    return str(_core.to_goal(core, float(reduce_ns_per_byte), float(copy_ns_per_byte)))


def from_goal(text: str | bytes) -> Schedule:
    """Read GOAL: collkit's own files exactly; plain GOAL as a barrier-like schedule (see
    docs/schedule-formats.md for the mapping). Wildcards (``from -1``, ``tag -1``) are rejected."""
    return Schedule(_core.from_goal(_utf8(text, "GOAL text")))


# ---- JSON -------------------------------------------------------------------------------------


def to_json(schedule: Schedule) -> str:
    """JSON as the module docstring describes: one key per line, arrays on one line each (the
    core's writer, which ``collkit export`` streams to a file or stdout)."""
    return str(_core.to_json(as_schedule(schedule).core))


def from_json(text: str | bytes) -> Schedule:
    """Read the JSON that to_json writes, by the core's reader (the one the simulator streams
    files with: one reader of JSON schedules). Anything malformed raises ScheduleFormatError."""
    return Schedule(_core.from_json(_utf8(text, "JSON text")))


# ---- files ------------------------------------------------------------------------------------


def format_for_path(path: str | os.PathLike[str]) -> Format | None:
    """The format an extension names (.txt, .json, .goal), or None."""
    return _EXTENSIONS.get(Path(path).suffix.lower())


def sniff_format(text: str) -> Format:
    """Guess the format of a schedule's content: JSON starts with '{', GOAL has a
    'num_ranks' line, anything else is taken for the text form."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return "json"
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("num_ranks") or s.startswith("// collkit: schedule"):
            return "goal"
        if s.startswith("collective") or s.startswith("# collkit schedule"):
            return "text"
    return "text"


def dumps(schedule: Schedule, format: Format = "text", **goal_options: float) -> str:
    """The schedule in one of FORMATS; goal_options go to to_goal."""
    as_schedule(schedule)
    if format == "text":
        return to_text(schedule)
    if format == "json":
        return to_json(schedule)
    if format == "goal":
        return to_goal(schedule, **goal_options)
    raise InvalidArgumentError(f"unknown format {format!r} (known: {', '.join(FORMATS)})")


def loads(text: str | bytes, format: Format | None = None) -> Schedule:
    """Parse a schedule in `format`, or in the format sniffed from the content."""
    if format is None:
        s = text if isinstance(text, str) else bytes(text).decode("utf-8", errors="replace")
        format = sniff_format(s)
    if format == "text":
        return from_text(text)
    if format == "json":
        return from_json(text)
    if format == "goal":
        return from_goal(text)
    raise InvalidArgumentError(f"unknown format {format!r} (known: {', '.join(FORMATS)})")


def save(
    schedule: Schedule,
    path: str | os.PathLike[str],
    format: Format | None = None,
    **goal_options: float,
) -> None:
    """Write a schedule; the format comes from `format`, else the extension, else text."""
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidArgumentError(f"path must be a str or os.PathLike, not {type(path).__name__}")
    fmt = format or format_for_path(path) or "text"
    Path(path).write_text(dumps(schedule, fmt, **goal_options), encoding="utf-8")


def load(path: str | os.PathLike[str], format: Format | None = None) -> Schedule:
    """Read a schedule; the format comes from `format`, else the extension, else the content."""
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidArgumentError(f"path must be a str or os.PathLike, not {type(path).__name__}")
    data = files.read_bytes(path, "schedule file")  # regular files only: /dev/zero has no end
    return loads(data, format or format_for_path(path))
