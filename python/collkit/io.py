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

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np

from collkit import _core, files
from collkit.collectives import COLLECTIVES
from collkit.errors import ArgumentTypeError, InvalidArgumentError, ScheduleFormatError
from collkit.placement import ORDERS, Placement, core_args
from collkit.schedule import ARRAY_DTYPES, RankProgram, Schedule, as_schedule
from collkit.strictjson import unique_keys

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

JSON_FORMAT = "collkit-schedule"
JSON_VERSION = 1
OP_KINDS = ["send", "recv", "reduce", "copy", "compute", "sleep"]
REDUCE_SIDES = ["src_first", "dst_first"]
# Per-op columns and their dtypes: schedule.ARRAY_DTYPES, the one list; GOAL's cpu N / nic N are
# optional here, written only when some op sets them.
_UNIT_FIELDS: dict[str, type[np.integer[Any]]] = {k: ARRAY_DTYPES[k] for k in ("cpu", "nic")}
_PER_OP = list(ARRAY_DTYPES)[: list(ARRAY_DTYPES).index("stage") + 1]  # then the DAG and scratch
_OP_FIELDS: dict[str, type[np.integer[Any]]] = {
    k: ARRAY_DTYPES[k] for k in _PER_OP if k not in _UNIT_FIELDS
}
_INT64_MAX = 2**63 - 1


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
) -> str:
    """The header lines of the text form (``# collkit schedule v1`` to ``root R``, and the
    placement if given), for callers that print ranks one by one (``collkit show``). The
    collective defaults to the part of the algorithm name before ':'."""
    if collective is None:
        collective = algorithm.partition(":")[0]
    return str(
        _core.header_text(collective, algorithm, P, count, elem_size, root, *core_args(placement))
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


def _placement_field(doc: dict[str, Any]) -> tuple[int, str]:
    """The optional "placement": {"rpn": N, "order": "contiguous"}; absent: (0, contiguous)."""
    if "placement" not in doc:
        return 0, "contiguous"
    p = doc["placement"]
    if not isinstance(p, dict) or set(p) != {"rpn", "order"}:
        raise ScheduleFormatError(
            '"placement" must be {"rpn": N, "order": "contiguous" or "round_robin"}'
        )
    rpn = _int_field(p, "rpn", 1, 2**31)
    if p["order"] not in ORDERS:
        raise ScheduleFormatError(f'"placement" order must be one of {", ".join(ORDERS)}')
    return rpn, str(p["order"])


def to_json(schedule: Schedule) -> str:
    """JSON as the module docstring describes: one key per line, arrays on one line each (the
    core's writer, which ``collkit export`` streams to a file or stdout)."""
    return str(_core.to_json(as_schedule(schedule).core))


def _reject_constant(name: str) -> Any:
    raise ScheduleFormatError(f"JSON holds {name}, which is not a number a schedule can use")


def _int_field(doc: Mapping[str, Any], key: str, lo: int, hi: int) -> int:
    if key not in doc:
        raise ScheduleFormatError(f"JSON schedule has no {key!r}")
    v = doc[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise ScheduleFormatError(f"{key!r} must be an integer, not {type(v).__name__}")
    if not lo <= v <= hi:
        raise ScheduleFormatError(f"{key!r} = {v} is not in [{lo}, {hi}]")
    return v


def _str_field(doc: Mapping[str, Any], key: str) -> str:
    if key not in doc:
        raise ScheduleFormatError(f"JSON schedule has no {key!r}")
    v = doc[key]
    if not isinstance(v, str):
        raise ScheduleFormatError(f"{key!r} must be a string, not {type(v).__name__}")
    return v


def _array(doc: Mapping[str, Any], key: str, dtype: type[np.integer[Any]], where: str = "") -> Any:
    name = f"{where}{key!r}"
    if key not in doc:
        raise ScheduleFormatError(f"JSON schedule has no {name}")
    v = doc[key]
    if not isinstance(v, list):
        raise ScheduleFormatError(f"{name} must be a list of integers, not {type(v).__name__}")
    if not v:
        return np.zeros(0, dtype=dtype)
    try:
        arr = np.asarray(v)
    except (ValueError, TypeError, OverflowError):
        raise ScheduleFormatError(f"{name} must be a flat list of integers") from None
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ScheduleFormatError(f"{name} must be a flat list of integers")
    info = np.iinfo(dtype)
    lo, hi = int(arr.min()), int(arr.max())
    if lo < info.min or hi > info.max:
        bad = lo if lo < info.min else hi
        raise ScheduleFormatError(
            f"{name} holds {bad}, outside the range of {np.dtype(dtype).name} "
            f"[{info.min}, {info.max}]"
        )
    return np.ascontiguousarray(arr.astype(dtype))


def from_json(text: str | bytes) -> Schedule:
    """Read the JSON that to_json writes. Anything malformed raises ScheduleFormatError."""
    data = _utf8(text, "JSON text")
    try:
        doc = json.loads(
            data,
            parse_constant=_reject_constant,
            object_pairs_hook=unique_keys(ScheduleFormatError),
        )
    except ScheduleFormatError:
        raise
    except (ValueError, RecursionError, TypeError, OverflowError) as e:
        raise ScheduleFormatError(f"not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise ScheduleFormatError(f"a JSON schedule is an object, not {type(doc).__name__}")
    if doc.get("format") != JSON_FORMAT:
        raise ScheduleFormatError(f'not a collkit schedule: "format" must be "{JSON_FORMAT}"')
    version = doc.get("version")
    if isinstance(version, bool) or version != JSON_VERSION:
        raise ScheduleFormatError(
            f"unsupported JSON schedule version {version!r} (this collkit reads {JSON_VERSION})"
        )
    for key, legend in (("op_kinds", OP_KINDS), ("reduce_sides", REDUCE_SIDES)):
        if key in doc and doc[key] != legend:
            raise ScheduleFormatError(f"{key!r} must be {legend} (the codes of this version)")
    collective = _str_field(doc, "collective")
    if collective not in COLLECTIVES:
        raise ScheduleFormatError(
            f"unknown collective {collective[:40]!r} (known: {', '.join(COLLECTIVES)})"
        )
    algorithm = _str_field(doc, "algorithm")
    P = _int_field(doc, "P", 1, 2**31)
    count = _int_field(doc, "count", 0, _INT64_MAX)
    elem_size = _int_field(doc, "elem_size", 1, 2**31 - 1)
    root = _int_field(doc, "root", 0, P - 1)
    rpn, order = _placement_field(doc)
    ops = doc.get("ops")
    if not isinstance(ops, dict):
        raise ScheduleFormatError('JSON schedule needs an "ops" object of per-op arrays')
    arrays = {k: _array(ops, k, dt, "ops.") for k, dt in _OP_FIELDS.items()}
    for k, dt in _UNIT_FIELDS.items():
        arrays[k] = _array(ops, k, dt, "ops.") if k in ops else np.zeros(0, dtype=dt)
    arrays["dep_begin"] = _array(doc, "dep_begin", np.int64)
    arrays["deps"] = _array(doc, "deps", np.uint32)
    arrays["scratch_begin"] = _array(doc, "scratch_begin", np.int64)
    arrays["scratch"] = _array(doc, "scratch", np.int64)
    n = len(arrays["rank"])
    for k, dt in _UNIT_FIELDS.items():
        if k not in ops:
            arrays[k] = np.zeros(n, dtype=dt)
    for k in (*_OP_FIELDS, *_UNIT_FIELDS):
        if len(arrays[k]) != n:
            raise ScheduleFormatError(f"ops.{k!r} has {len(arrays[k])} entries, ops.'rank' {n}")
    if len(arrays["dep_begin"]) != n + 1:
        raise ScheduleFormatError(f"'dep_begin' needs {n + 1} entries (ops + 1)")
    if len(arrays["scratch_begin"]) != P + 1:
        raise ScheduleFormatError(f"'scratch_begin' needs {P + 1} entries (P + 1)")
    totals = {"dep_begin": len(arrays["deps"]), "scratch_begin": len(arrays["scratch"])}
    for key, total in totals.items():
        b = arrays[key]
        if b[0] != 0 or b[-1] != total or np.any(np.diff(b) < 0):
            raise ScheduleFormatError(
                f"{key!r} must rise from 0 to {total} (the length of the array it indexes)"
            )
    rank = arrays["rank"]
    if n and (rank[0] < 0 or rank[-1] >= P or np.any(np.diff(rank) < 0)):
        raise ScheduleFormatError("ops.'rank' must be sorted and hold ranks in [0, P)")
    schedule = Schedule.from_arrays(
        arrays,
        collective=collective,
        P=P,
        count=count,
        elem_size=elem_size,
        root=root,
        algorithm=algorithm,
        rpn=rpn,
        order=order,
    )
    _core.check_fields(schedule.core)
    return schedule


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
