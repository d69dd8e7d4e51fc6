"""collkit's tuning table: which algorithm to run per (collective, P range, byte range).

The file (schema "collkit-tuning", version 1; docs/tuning.md) is what `collkit tune` writes and
what the interposition library (libcollkit_pmpi.so) reads from COLLKIT_TUNING:

    {"format": "collkit-tuning", "version": 1, "mpi": "MPICH 5.0.2", "machine": "...",
     "date": "...", "rules": [
        {"collective": "allreduce", "P": [4, 4], "bytes": [8, 15], "algorithm": "allreduce:rd",
         "source": "measured", "median_us": 3.1, "native_median_us": 4.2, "speedup": 1.35,
         "p_value": 1e-9, "ci95": [1.2, 1.5]}, ...]}

`bytes` is count x type size per rank (per block: collectives.PER_BLOCK); both ranges are
inclusive. The first rule that covers a call wins; a call no rule covers, and a rule whose
algorithm is "native", go to the MPI's own collective.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from collkit import files
from collkit.algorithms import Algorithm
from collkit.collectives import COLLECTIVES
from collkit.errors import CollkitError, InvalidArgumentError

FORMAT = "collkit-tuning"
VERSION = 1

SOURCES = ("measured", "simulated")


@dataclass
class Rule:
    collective: str
    P: tuple[int, int]
    bytes: tuple[int, int]
    algorithm: str  # a collkit name, or "native"
    source: str = "measured"
    median_us: float = math.nan  # the winner's median at the range's first size
    native_median_us: float = math.nan
    speedup: float = math.nan  # native median / winner median
    p_value: float = math.nan  # one-sided Mann-Whitney U: winner faster than native
    ci95: tuple[float, float] = (math.nan, math.nan)  # bootstrap CI of the speedup


@dataclass
class Table:
    rules: list[Rule] = field(default_factory=list)
    mpi: str = ""
    machine: str = ""
    date: str = ""

    def lookup(self, collective: str, P: int, nbytes: int) -> str:
        """The algorithm the interposition library runs for this call ("native" if none)."""
        for r in self.rules:
            if (
                r.collective == collective
                and r.P[0] <= P <= r.P[1]
                and r.bytes[0] <= nbytes <= r.bytes[1]
            ):
                return r.algorithm
        return "native"


def _num(x: float) -> float | None:
    return None if isinstance(x, float) and math.isnan(x) else x


def to_dict(t: Table) -> dict[str, Any]:
    rules = []
    for r in t.rules:
        d = asdict(r)
        d["P"], d["bytes"] = list(r.P), list(r.bytes)
        d["ci95"] = [_num(x) for x in r.ci95]
        for k in ("median_us", "native_median_us", "speedup", "p_value"):
            d[k] = _num(d[k])
        rules.append(d)
    return {
        "format": FORMAT,
        "version": VERSION,
        "mpi": t.mpi,
        "machine": t.machine,
        "date": t.date,
        "rules": rules,
    }


def save(t: Table, path: str | os.PathLike[str]) -> None:
    validate(to_dict(t))
    Path(path).write_text(json.dumps(to_dict(t), indent=1) + "\n")


def _range(where: str, name: str, v: Any, lo_min: int) -> tuple[int, int]:
    if (
        not isinstance(v, list)
        or len(v) != 2
        or not all(isinstance(x, int) and not isinstance(x, bool) for x in v)
    ):
        raise InvalidArgumentError(f'{where}: "{name}" must be [lo, hi], two integers')
    lo, hi = v
    if lo < lo_min or hi < lo:
        raise InvalidArgumentError(f'{where}: "{name}" [{lo}, {hi}] needs {lo_min} <= lo <= hi')
    return lo, hi


def _float(where: str, name: str, v: Any) -> float:
    if v is None:
        return math.nan
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise InvalidArgumentError(f'{where}: "{name}" must be a number or null')
    return float(v)


def validate(d: Any) -> Table:
    """The table in a parsed JSON document; InvalidArgumentError says what is wrong and where."""
    if not isinstance(d, dict):
        raise InvalidArgumentError("a tuning table is a JSON object")
    if d.get("format") != FORMAT:
        raise InvalidArgumentError(f'"format" is not "{FORMAT}": not a collkit tuning table')
    if d.get("version") != VERSION:
        raise InvalidArgumentError(
            f'"version" is {d.get("version")!r}; this collkit reads version {VERSION}'
        )
    unknown = set(d) - {"format", "version", "mpi", "machine", "date", "rules"}
    if unknown:
        raise InvalidArgumentError(f"unknown keys: {', '.join(sorted(unknown))}")
    for k in ("mpi", "machine", "date"):
        if not isinstance(d.get(k, ""), str):
            raise InvalidArgumentError(f'"{k}" must be a string')
    rules = d.get("rules")
    if not isinstance(rules, list):
        raise InvalidArgumentError('"rules" must be a list')
    t = Table(mpi=d.get("mpi", ""), machine=d.get("machine", ""), date=d.get("date", ""))
    fields = set(Rule.__dataclass_fields__)
    for i, r in enumerate(rules):
        where = f"rule {i}"
        if not isinstance(r, dict):
            raise InvalidArgumentError(f"{where}: not an object")
        unknown = set(r) - fields
        if unknown:
            raise InvalidArgumentError(f"{where}: unknown keys: {', '.join(sorted(unknown))}")
        coll = r.get("collective")
        if coll not in COLLECTIVES:
            raise InvalidArgumentError(
                f'{where}: "collective" {coll!r} must be one of {", ".join(COLLECTIVES)}'
            )
        algo = r.get("algorithm")
        if not isinstance(algo, str) or not algo:
            raise InvalidArgumentError(f'{where}: "algorithm" must be a name or "native"')
        if algo not in ("native", f"{coll}:native"):
            try:
                a = Algorithm(algo)
            except CollkitError as e:
                raise InvalidArgumentError(f"{where}: {e}") from None
            if a.collective != coll:
                raise InvalidArgumentError(f"{where}: '{algo}' is not a {coll} algorithm")
        source = r.get("source", "measured")
        if source not in SOURCES:
            raise InvalidArgumentError(f'{where}: "source" must be measured or simulated')
        ci = r.get("ci95", [None, None])
        if not isinstance(ci, list) or len(ci) != 2:
            raise InvalidArgumentError(f'{where}: "ci95" must be [lo, hi]')
        t.rules.append(
            Rule(
                collective=coll,
                P=_range(where, "P", r.get("P"), 1),
                bytes=_range(where, "bytes", r.get("bytes"), 0),
                algorithm=algo,
                source=source,
                median_us=_float(where, "median_us", r.get("median_us")),
                native_median_us=_float(where, "native_median_us", r.get("native_median_us")),
                speedup=_float(where, "speedup", r.get("speedup")),
                p_value=_float(where, "p_value", r.get("p_value")),
                ci95=(_float(where, "ci95", ci[0]), _float(where, "ci95", ci[1])),
            )
        )
    return t


def load(path: str | os.PathLike[str]) -> Table:
    """Reads and validates a table; errors name the file."""
    p = Path(path)
    text = files.read_text(p, "tuning table", limit=1 << 26)  # regular files only, <= 64 MiB
    try:
        d = json.loads(text)
    except RecursionError:
        raise InvalidArgumentError(f"{p}: JSON nested too deep for a tuning table") from None
    except ValueError as e:  # JSONDecodeError, an integer of more than 4300 digits
        raise InvalidArgumentError(f"{p}: not valid JSON: {e}") from None
    try:
        return validate(d)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"{p}: {e}") from None
