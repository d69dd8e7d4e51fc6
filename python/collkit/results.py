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
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from collkit.errors import InvalidArgumentError
from collkit.strictjson import unique_keys

SOURCES = ("measured", "simulated")

# Statistics over the per-iteration times (microseconds); for measured rows an iteration's time
# is the maximum over ranks, as OSU / IMB / ReproMPI report it.
STAT_FIELDS = ("min", "q1", "median", "q3", "mean", "p99", "max")


@dataclass
class Row:
    collective: str  # allreduce, reduce, bcast, alltoall, barrier
    algorithm: str  # collkit name (allreduce:rd), "native", or a forced MPI one (mpich:ring)
    P: int
    bytes: int  # per rank (per block: collectives.PER_BLOCK)
    datatype: str = "double"
    count: int = 0  # elements per rank (per block: collectives.PER_BLOCK)
    source: str = "measured"  # measured | simulated
    mpi: str = ""  # MPI implementation and version, e.g. "MPICH 5.0.2"; the model if simulated
    machine: str = ""  # host name and CPU
    allocation: str = ""  # how ranks sit on the machine: "1 node x 4 ranks (oversubscribed)"
    settings: str = ""  # environment that changes timings (throttle CVARs, forced algorithms)
    date: str = ""  # ISO 8601, UTC
    min: float = math.nan
    q1: float = math.nan
    median: float = math.nan
    q3: float = math.nan
    mean: float = math.nan
    p99: float = math.nan
    max: float = math.nan
    iterations: int = 0
    warmup: int = 0
    block: int = 1  # operations per timed block
    sync: str = "barrier"  # barrier | window
    valid: bool | None = None  # result checked against the MPI's own call (None: not checked)
    error: str = ""  # why there are no statistics
    samples: list[float] = field(default_factory=list)  # per-iteration times, on request
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
            self.sync,
            self.block,
            self.interleaved,
            self.attempt,
        )

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise InvalidArgumentError(f"row source '{self.source}' must be one of {SOURCES}")
        if self.P < 1:
            raise InvalidArgumentError(f"row P = {self.P} must be >= 1")
        if self.bytes < 0:
            raise InvalidArgumentError(f"row bytes = {self.bytes} must be >= 0")


FIELDS = tuple(f.name for f in fields(Row))
# Fields that hold one list of numbers: in the JSON lines only, not in the CSV.
LIST_FIELDS = (
    "samples",
    "round_median_us",
    "round_native_before_us",
    "round_native_after_us",
    "round_probe_rtt_ns_min",
    "round_probe_rtt_ns_max",
)
CSV_FIELDS = tuple(f for f in FIELDS if f not in LIST_FIELDS)
_INT_FIELDS = {"P", "bytes", "count", "iterations", "warmup", "block", "attempt"}
_FLOAT_FIELDS = {*STAT_FIELDS, "load_avg_1m", "probe_rtt_ns_before", "probe_rtt_ns_after"}
_BOOL_FIELDS = {"interleaved"}


def row_from_dict(d: dict[str, Any]) -> Row:
    """A Row from a dict of the schema's names: unknown names are errors, missing ones default."""
    unknown = set(d) - set(FIELDS)
    if unknown:
        raise InvalidArgumentError(f"unknown result fields: {', '.join(sorted(unknown))}")
    for name in ("collective", "algorithm", "P", "bytes"):
        if name not in d:
            raise InvalidArgumentError(f"result row without '{name}'")
    kw: dict[str, Any] = {}
    try:
        for k, v in d.items():
            if k in _INT_FIELDS:
                kw[k] = int(v)
            elif k in _FLOAT_FIELDS:
                kw[k] = math.nan if v in ("", None) else float(v)
            elif k == "valid":
                kw[k] = None if v in ("", None) else (v if isinstance(v, bool) else v == "True")
            elif k in _BOOL_FIELDS:
                kw[k] = v if isinstance(v, bool) else v == "True"
            elif k in LIST_FIELDS:
                kw[k] = [math.nan if x is None else float(x) for x in (v or [])]
            else:
                kw[k] = "" if v is None else str(v)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"bad value in result row: {e}") from None
    return Row(**kw)


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


def read_jsonl(path: str | os.PathLike[str], strict: bool = False) -> list[Row]:
    """Rows of a JSON-lines file. A last line cut short by an interruption is skipped (an error
    with strict=True, for readers that do not resume: fit)."""
    rows: list[Row] = []
    p = Path(path)
    if not p.exists():
        return rows
    lines = p.read_text().splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            d = json.loads(line, object_pairs_hook=unique_keys(InvalidArgumentError))
        except json.JSONDecodeError:
            if i == len(lines) - 1 and not strict:
                break  # the write that was interrupted
            raise InvalidArgumentError(
                f"{p}:{i + 1}: not a JSON object"
                + (" (the last line: cut short by an interruption?)" if i == len(lines) - 1 else "")
            ) from None
        except InvalidArgumentError as e:
            raise InvalidArgumentError(f"{p}:{i + 1}: {e}") from None
        if not isinstance(d, dict):
            raise InvalidArgumentError(f"{p}:{i + 1}: not a JSON object")
        for k in _FLOAT_FIELDS:
            if d.get(k) is None and k in d:
                d[k] = math.nan
        rows.append(row_from_dict(d))
    return rows


def read_csv(path: str | os.PathLike[str]) -> list[Row]:
    with open(path, newline="") as f:
        return [row_from_dict(dict(r)) for r in csv.DictReader(f)]


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
        self.rows = read_jsonl(self.jsonl)
        self._keys = {r.key() for r in self.rows}
        # Drop a half-written last line so appends start on a fresh line.
        if self.jsonl.exists():
            text = self.jsonl.read_text()
            if text and not text.endswith("\n"):
                self.jsonl.write_text(text[: text.rfind("\n") + 1])

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
        self.jsonl.parent.mkdir(parents=True, exist_ok=True)
        with open(self.jsonl, "a") as f:
            f.write(row_to_json(row) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.rows.append(row)
        self._keys.add(row.key())
        return True

    def write_csv(self) -> None:
        write_csv(self.csv, self.rows)
