"""THE row schema of collkit's results: one row per (collective, algorithm, P, size, setting),
the same for measured and simulated rows, so fitting, tuning and plotting read either alike.

Rows are stored as JSON lines (complete: raw samples included when there are any) and as CSV
(the same fields, without samples). A campaign appends each row the moment it is measured, and a
rerun skips every row whose key is already in the file, so an interrupted campaign resumes
without measuring anything twice and without losing what was measured.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from collkit import files, units
from collkit.errors import InvalidArgumentError
from collkit.strictjson import unique_keys

SOURCES = ("measured", "simulated")

# Statistics over the per-iteration times, in microseconds as their names say; for measured rows
# an iteration's time is the maximum over ranks, as OSU / IMB / ReproMPI report it.
STAT_FIELDS = ("min_us", "q1_us", "median_us", "q3_us", "mean_us", "p99_us", "max_us")
# Row files written before the statistics' names carried their unit (collkit 0.1.0 until the
# rename) are read alike: each old name is read as its new one (docs/mpi.md, "The row schema").
OLD_NAMES = {name.removesuffix("_us"): name for name in STAT_FIELDS}
# How the calls of a measured row were made (collkit_bench --pattern; docs/tuning.md,
# "Patterns"): back to back on one buffer set (the default, and every row written before rows
# said it), a barrier before each call, a rotating root, another buffer set each call, caches
# evicted before each call.
PATTERNS = ("back_to_back", "barrier", "rotate_root", "buffers", "evict")


@dataclass
class Row:
    collective: str  # allreduce, reduce, bcast, alltoall, barrier
    algorithm: str  # collkit name (allreduce:rd), "native", or a forced MPI one (mpich:ring)
    P: int
    bytes: int  # per rank (per block: collectives.PER_BLOCK); irregular: the call's total
    datatype: str = "double"
    count: int = 0  # elements per rank (per block: collectives.PER_BLOCK); irregular: total
    # The irregular collectives (allgatherv, alltoallv, gatherv, scatterv, reduce_scatter): the
    # --counts form the count vector was drawn from ("random(1,64)", "equal(8)"); their `bytes`
    # is then the sum of the vector (alltoallv: of the P x P matrix) times the type size. ""
    # for every other collective, and for rows written before rows said it.
    counts: str = ""
    source: str = "measured"  # measured | simulated
    mpi: str = ""  # MPI implementation and version, e.g. "MPICH 5.0.2"; the model if simulated
    machine: str = ""  # host name and CPU
    allocation: str = ""  # how ranks sit on the machine: "1 node x 4 ranks (oversubscribed)"
    settings: str = ""  # environment that changes timings (throttle CVARs, forced algorithms)
    # How collkit moved the messages (ck_transport): "shm" (shared memory on the node) or "p2p
    # (why)" (MPI point-to-point only); "" for the MPI's own calls and simulated rows.
    transport: str = ""
    date: str = ""  # ISO 8601, UTC
    min_us: float = math.nan
    q1_us: float = math.nan
    median_us: float = math.nan
    q3_us: float = math.nan
    mean_us: float = math.nan
    p99_us: float = math.nan
    max_us: float = math.nan
    iterations: int = 0
    warmup: int = 0
    block: int = 1  # operations per timed block
    sync: str = "barrier"  # barrier | window
    pattern: str = "back_to_back"  # how the calls were made: one of PATTERNS
    # The barrier before each call of the patterns barrier and evict: "" the MPI's own, or the
    # collkit barrier algorithm a table routes MPI_Barrier to (a collkit candidate's rows only).
    barrier: str = ""
    valid: bool | None = None  # result checked against the MPI's own call (None: not checked)
    error: str = ""  # why there are no statistics
    samples: list[float] = field(default_factory=list)  # per-iteration times, on request
    # The per-iteration means over ranks (IMB's t_avg, OSU's average; a rank leaving a call
    # early counts for its own time): their median, and on request the samples. nan / []: rows
    # measured before rows said it, and simulated rows.
    rank_mean_median_us: float = math.nan
    rank_mean_samples: list[float] = field(default_factory=list)
    # Drift (docs/tuning.md, "Measuring on a drifting machine"): rows measured interleaved with
    # the native call, in rounds, each block between two core-to-core probes.
    interleaved: bool = False  # measured in rounds alternating with native in one job
    load_avg_1m: float = math.nan  # os.getloadavg()[0] when the row was measured
    probe_rtt_ns_before: float = math.nan  # core-to-core round trip before the row's first block
    probe_rtt_ns_after: float = math.nan  # ... and after its last block
    suspect: str = ""  # why the row's comparison with native is not trusted ("": trusted)
    attempt: int = 0  # 0: first measurement; n: the n-th re-measurement of a suspect row
    # Per round: this row's block median, native's block medians just before and after it, and
    # the smallest and largest probe around those three blocks (the native row: its own blocks).
    round_median_us: list[float] = field(default_factory=list)
    round_native_before_us: list[float] = field(default_factory=list)
    round_native_after_us: list[float] = field(default_factory=list)
    round_probe_rtt_ns_min: list[float] = field(default_factory=list)
    round_probe_rtt_ns_max: list[float] = field(default_factory=list)

    def key(self) -> tuple[Any, ...]:
        """What makes two rows the same measurement (a rerun skips a row with a known key)."""
        return (
            self.source,
            self.collective,
            self.algorithm,
            self.P,
            self.bytes,
            self.datatype,
            self.mpi,
            self.machine,
            self.allocation,
            self.settings,
            self.transport,
            self.sync,
            self.block,
            self.pattern,
            self.barrier,
            self.interleaved,
            self.counts,
            self.attempt,  # last: collkit.tune.select.latest drops it
        )

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise InvalidArgumentError(f"row source '{self.source}' must be one of {SOURCES}")
        if self.P < 1:
            raise InvalidArgumentError(f"row P = {self.P} must be >= 1")
        if self.bytes < 0:
            raise InvalidArgumentError(f"row bytes = {self.bytes} must be >= 0")
        if self.pattern not in PATTERNS:
            raise InvalidArgumentError(
                f"row pattern {self.pattern[:40]!r} must be one of {', '.join(PATTERNS)}"
            )


FIELDS = tuple(f.name for f in fields(Row))
# Fields that hold one list of numbers: in the JSON lines only, not in the CSV.
LIST_FIELDS = (
    "samples",
    "rank_mean_samples",
    "round_median_us",
    "round_native_before_us",
    "round_native_after_us",
    "round_probe_rtt_ns_min",
    "round_probe_rtt_ns_max",
)
CSV_FIELDS = tuple(f for f in FIELDS if f not in LIST_FIELDS)
_INT_FIELDS = {"P", "bytes", "count", "iterations", "warmup", "block", "attempt"}
_FLOAT_FIELDS = {
    *STAT_FIELDS,
    "rank_mean_median_us",
    "load_avg_1m",
    "probe_rtt_ns_before",
    "probe_rtt_ns_after",
}
_BOOL_FIELDS = {"interleaved"}


_MAX_INT = (1 << 63) - 1
_CSV_INT = re.compile(r"^\s*[+-]?[0-9]{1,19}\s*$", re.ASCII)  # \d: any script's digits


def _int_value(k: str, v: Any) -> int:
    """An integer field: a JSON integer, a float that is one (64.0), or CSV digits; never a
    bool (true is not 1), a fraction (64.9 is not 64), Infinity or a number past 2^63."""
    if isinstance(v, bool):
        raise InvalidArgumentError(f"'{k}' must be an integer, not {str(v).lower()}")
    if isinstance(v, float):
        if not math.isfinite(v) or not v.is_integer():
            raise InvalidArgumentError(f"'{k}' must be an integer, not {v}")
        v = int(v)
    elif isinstance(v, str):
        if not _CSV_INT.match(v):
            raise InvalidArgumentError(f"'{k}' must be an integer, not {v[:40]!r}")
        v = int(v)
    elif not isinstance(v, int):
        raise InvalidArgumentError(f"'{k}' must be an integer, not {type(v).__name__}")
    n = int(v)
    if not -_MAX_INT <= n <= _MAX_INT:
        raise InvalidArgumentError(f"'{k}' = {str(n)[:40]}... is past 2^63")
    return n


def _stat_value(k: str, v: Any) -> float:
    """A statistic in microseconds: a finite number, or empty / null for none (NaN)."""
    if v in ("", None):
        return math.nan
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise InvalidArgumentError(f"'{k}' must be a number, not {type(v).__name__}")
    if isinstance(v, str) and v.strip().lower() not in ("nan", "inf", "+inf", "-inf"):
        # units' ASCII grammar: float() would take '٣', '８' and '1_0'
        v = units.parse_float(v, f"'{k}'")
    try:
        x = float(v)
    except (ValueError, OverflowError):
        raise InvalidArgumentError(f"'{k}' must be a number, not {str(v)[:40]!r}") from None
    if math.isnan(x):
        return x
    if math.isinf(x):
        raise InvalidArgumentError(f"'{k}' is {x}: a time must be finite")
    if x < 0:  # no clock, model or load gives one; a fit would take it without a word
        raise InvalidArgumentError(f"'{k}' is {x:g}: a time (or a load) cannot be negative")
    return x


def _str_value(k: str, v: Any) -> str:
    """A text field: no control characters (an ANSI escape or a newline in a name printed to a
    terminal could fake output lines)."""
    if v is None:
        return ""
    if not isinstance(v, str):
        raise InvalidArgumentError(f"'{k}' must be a string, not {type(v).__name__}")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in v):
        raise InvalidArgumentError(f"'{k}' holds a control character: {v[:40]!r}")
    return v


def _new_names(d: dict[str, Any]) -> dict[str, Any]:
    """`d` with the statistics' old names (median) read as the new ones (median_us); a row that
    gives both names of one statistic is an error."""
    if not any(k in OLD_NAMES for k in d):
        return d
    out: dict[str, Any] = {}
    for k, v in d.items():
        new = OLD_NAMES.get(k, k) if isinstance(k, str) else k
        if new in out or (new != k and new in d):
            raise InvalidArgumentError(f"'{new}' is given twice (as '{k}', its old name, too)")
        out[new] = v
    return out


def row_from_dict(d: dict[str, Any]) -> Row:
    """A Row from a dict of the schema's names: unknown names are errors, missing ones default;
    each value is checked against its field's type (see _int_value, _stat_value). The
    statistics' old names (median for median_us: OLD_NAMES) are read as the new ones."""
    if None in d:  # csv.DictReader puts a row's extra columns under None
        raise InvalidArgumentError("a row with more columns than the header")
    d = _new_names(d)
    unknown = set(d) - set(FIELDS)
    if unknown:
        raise InvalidArgumentError(f"unknown result fields: {', '.join(sorted(map(str, unknown)))}")
    for name in ("collective", "algorithm", "P", "bytes"):
        if name not in d:
            raise InvalidArgumentError(f"result row without '{name}'")
    return Row(**{k: field_value(k, v) for k, v in d.items()})


def field_value(k: str, v: Any) -> Any:
    """The value of the schema's field `k` read from `v` (JSON or CSV text), checked against the
    field's type: the one check of a row's fields, for row files and for collkit.fit's rows."""
    if k in _INT_FIELDS:
        return _int_value(k, v)
    if k in _FLOAT_FIELDS:
        return _stat_value(k, v)
    if k == "valid":
        if v in ("", None) or isinstance(v, bool):
            return None if v in ("", None) else v
        if v in ("True", "False"):
            return v == "True"
        raise InvalidArgumentError(f"'valid' must be true, false or empty, not {v!r}")
    if k in _BOOL_FIELDS:
        if isinstance(v, bool) or v in ("True", "False"):
            return v if isinstance(v, bool) else v == "True"
        raise InvalidArgumentError(f"'{k}' must be true or false, not {v!r}")
    if k == "pattern" and v in ("", None):
        return "back_to_back"  # an empty CSV cell: the default, as a row without the field
    if k in LIST_FIELDS:
        if not isinstance(v, (list, type(None))):
            raise InvalidArgumentError(f"'{k}' must be a list, not {type(v).__name__}")
        return [_stat_value(k, x) for x in (v or [])]
    return _str_value(k, v)


def _json_default(x: float) -> Any:
    return None if isinstance(x, float) and math.isnan(x) else x


def row_to_json(row: Row) -> str:
    d = asdict(row)
    for k in _FLOAT_FIELDS:
        if math.isnan(d[k]):
            d[k] = None
    for k in LIST_FIELDS:
        d[k] = [None if math.isnan(x) else x for x in d[k]]
    return json.dumps(d, default=_json_default)


@dataclass(frozen=True)
class Rejected:
    """A line of a row file that is not a row: where, why, and the line as it was."""

    path: str
    line: int
    reason: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


_MAX_ROW_LINE = 1 << 24  # 16 MiB: a row with every raw sample is far less


def _parse_row_line(line: str) -> Row:
    if len(line) > _MAX_ROW_LINE:
        raise InvalidArgumentError(f"a line of {len(line):,} characters is not a row")
    try:
        d = json.loads(line, object_pairs_hook=unique_keys(InvalidArgumentError))
    except InvalidArgumentError:  # a key given twice: its own message
        raise
    except (RecursionError, ValueError):  # JSONDecodeError, an int of more than 4300 digits
        raise InvalidArgumentError("not a JSON object") from None
    if not isinstance(d, dict):
        raise InvalidArgumentError("not a JSON object")
    d = _new_names(d)
    for k in _FLOAT_FIELDS:
        if d.get(k) is None and k in d:
            d[k] = math.nan
    return row_from_dict(d)


def read_jsonl(path: str | os.PathLike[str], rejected: list[Rejected] | None = None) -> list[Row]:
    """Rows of a JSON-lines file (none if it does not exist). A line that is not a row (cut
    short by an interruption, edited, corrupt) raises InvalidArgumentError naming the file and
    line; with a `rejected` list it is added there instead and reading goes on."""
    rows: list[Row] = []
    p = Path(path)
    if not p.exists():
        return rows
    text = files.read_text(p, "results file")
    for i, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            rows.append(_parse_row_line(line))
        except InvalidArgumentError as e:
            bad = Rejected(str(p), i + 1, str(e), line)
            if rejected is None:
                raise InvalidArgumentError(str(bad)) from None
            rejected.append(bad)
    return rows


def read_csv(path: str | os.PathLike[str], rejected: list[Rejected] | None = None) -> list[Row]:
    """Rows of a CSV file with a header line (the fields of the schema); a header naming a
    column twice is an error, a bad row as in read_jsonl."""
    p = Path(path)
    text = files.read_text(p, "results file")
    old = csv.field_size_limit()
    csv.field_size_limit(_MAX_ROW_LINE)
    try:
        reader = csv.reader(text.splitlines())
        try:
            header = next(reader, None)
        except csv.Error as e:
            raise InvalidArgumentError(f"{p}:1: not a CSV header: {e}") from None
        if header is None:
            return []
        dup = sorted({h for h in header if header.count(h) > 1})
        if dup:
            raise InvalidArgumentError(f"{p}:1: the header names {', '.join(dup)} twice")
        rows: list[Row] = []
        line = 1
        while True:
            try:
                values = next(reader)
            except StopIteration:
                break
            except csv.Error as e:
                bad = Rejected(str(p), reader.line_num, f"not a CSV row: {e}", "")
                if rejected is None:
                    raise InvalidArgumentError(str(bad)) from None
                rejected.append(bad)
                continue
            line = reader.line_num
            if not values:
                continue
            try:
                if len(values) != len(header):
                    raise InvalidArgumentError(
                        f"{len(values)} columns, the header has {len(header)}"
                    )
                rows.append(row_from_dict(dict(zip(header, values, strict=True))))
            except InvalidArgumentError as e:
                bad = Rejected(str(p), line, str(e), ",".join(values))
                if rejected is None:
                    raise InvalidArgumentError(str(bad)) from None
                rejected.append(bad)
        return rows
    finally:
        csv.field_size_limit(old)


def write_csv(path: str | os.PathLike[str], rows: Iterable[Row]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in rows:
            d = asdict(r)
            for k in LIST_FIELDS:
                d.pop(k)
            w.writerow(d)


class ResultStore:
    """A campaign's results: `NAME.jsonl` (appended row by row, flushed each time) and
    `NAME.csv` (rewritten from it on close)."""

    def __init__(self, jsonl: str | os.PathLike[str]) -> None:
        self.jsonl = Path(jsonl)
        if self.jsonl.suffix != ".jsonl":
            raise InvalidArgumentError(f"results file '{jsonl}' must end in .jsonl")
        self.csv = self.jsonl.with_suffix(".csv")
        self.rejected_path = self.jsonl.with_name(self.jsonl.name + ".rejected")
        rejected: list[Rejected] = []
        self.rows = read_jsonl(self.jsonl, rejected)
        self._keys = {r.key() for r in self.rows}
        try:
            self.jsonl.parent.mkdir(parents=True, exist_ok=True)
            if rejected:
                self._set_aside(rejected)
            elif self.jsonl.exists():  # a last line without its end: appends start afresh
                text = self.jsonl.read_text()
                if text and not text.endswith("\n"):
                    with open(self.jsonl, "a") as f:
                        f.write("\n")
            else:
                with open(self.jsonl, "a"):  # can it be written? say so before any work
                    pass
        except OSError as e:
            raise InvalidArgumentError(
                f"results file {self.jsonl}: cannot write it: {e.strerror or e}"
            ) from None

    def _set_aside(self, rejected: list[Rejected]) -> None:
        """Move the lines that are not rows to NAME.jsonl.rejected (appended, as they were) and
        rewrite NAME.jsonl with the rows alone, so a rerun resumes after them; each is said."""
        with open(self.rejected_path, "a") as f:
            for bad in rejected:
                f.write(bad.text + "\n")
        bad_lines = {bad.line for bad in rejected}
        kept = [
            line
            for i, line in enumerate(self.jsonl.read_text().splitlines(), 1)
            if i not in bad_lines and line.strip()
        ]
        tmp = self.jsonl.with_name(self.jsonl.name + ".tmp")
        tmp.write_text("".join(line + "\n" for line in kept))
        os.replace(tmp, self.jsonl)
        for bad in rejected:
            print(
                f"collkit: {bad}; the line is set aside in {self.rejected_path}",
                file=sys.stderr,
            )

    def __contains__(self, row: Row) -> bool:
        return row.key() in self._keys

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def append(self, row: Row) -> bool:
        """Adds the row unless one with its key is there; returns whether it was added."""
        if row.key() in self._keys:
            return False
        with open(self.jsonl, "a") as f:
            f.write(row_to_json(row) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.rows.append(row)
        self._keys.add(row.key())
        return True

    def write_csv(self) -> None:
        write_csv(self.csv, self.rows)
