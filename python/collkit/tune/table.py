"""collkit's tuning table: which algorithm to run per (collective, P range, byte range, shape).

The file (schema "collkit-tuning", version 1; docs/tuning.md) is what `collkit tune` writes and
what the interposition library (libcollkit_pmpi.so) reads from COLLKIT_TUNING:

    {"format": "collkit-tuning", "version": 1, "mpi": "MPICH 5.0.2", "machine": "...",
     "date": "...", "block": 1, "rules": [
        {"collective": "allreduce", "P": [4, 4], "bytes": [8, 15], "algorithm": "allreduce:rd",
         "source": "measured", "median_us": 3.1, "native_median_us": 4.2, "speedup": 1.35,
         "p_value": 1e-9, "ci95": [1.2, 1.5],
         "speedups": {"back_to_back": 1.41, "barrier": 1.35}}, ...]}

A rule may give the communicator's shape it is for: "nodes" (how many nodes its ranks lie on)
and "ppn" (ranks on each node), each [lo, hi] like P, either or both, e.g. "nodes": [2, 2],
"ppn": [1, 1]. A rule without them (every table written before shapes) is for any shape.

`bytes` is count x type size per rank (per block: collectives.PER_BLOCK); both ranges are
inclusive. `block` (1 when absent) is how the medians were timed: 1, one call after a barrier
(the latency of an isolated call); N > 1, N back-to-back calls per sample, as OSU measures (what
a program that calls the collective in a loop sees). The library runs a table alike either way.
`speedups` (optional: none where one call pattern was measured) is the winner's speedup in each
call pattern it was measured in (docs/tuning.md, "Patterns"); `speedup` is the smallest of those
that decided, and the medians are that pattern's. Of the rules that cover a call, the first
with a shape that is the communicator's wins, else the first without a shape (a rule with "ppn"
takes no communicator whose nodes hold different numbers of ranks); a call no rule covers, and a
rule whose algorithm is "native", go to the MPI's own collective.

A table is read and checked by one reader, the core's (collkit/tuning.hpp), which the
interposition library uses too: a table `collkit run` accepts is the table the library runs, and
one it refuses the library refuses with the same message (duplicate keys, integers past the
ranges, NaN, more than 16 MiB, unknown keys, fractions where integers go, a rule whose algorithm
can run at no P of its range). A rule whose algorithm cannot run at some P of its range is kept
with a note (Table.notes): those calls go to the MPI.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from collkit import _core, files
from collkit.errors import InvalidArgumentError

FORMAT = "collkit-tuning"
VERSION = 1
MAX_BLOCK = _core.TUNING_MAX_BLOCK


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
    # The speedup per call pattern measured (results.PATTERNS); {}: one pattern, or none known.
    speedups: dict[str, float] = field(default_factory=dict)
    # The communicator's shape: its nodes and ranks per node, inclusive ranges; None: any.
    nodes: tuple[int, int] | None = None
    ppn: tuple[int, int] | None = None

    def shaped(self) -> bool:
        return self.nodes is not None or self.ppn is not None

    def covers_shape(self, nodes: int | None, ppn: int | None) -> bool:
        """Whether a communicator on `nodes` nodes of `ppn` ranks each (ppn None: the nodes hold
        different numbers; nodes None: not known) has this rule's shape (a shape-less rule: any)."""
        if self.nodes is not None and (
            nodes is None or not self.nodes[0] <= nodes <= self.nodes[1]
        ):
            return False
        return self.ppn is None or (
            nodes is not None and ppn is not None and self.ppn[0] <= ppn <= self.ppn[1]
        )


@dataclass
class Table:
    rules: list[Rule] = field(default_factory=list)
    mpi: str = ""
    machine: str = ""
    date: str = ""
    block: int = 1  # calls per timed sample the rules were measured with (1: single calls)
    # What the reader noted (not written to the file): "rule 2 (allreduce:rd): cannot run at
    # P = 3 (...): calls there go to the MPI".
    notes: list[str] = field(default_factory=list)

    def rule_for(
        self, collective: str, P: int, nbytes: int, nodes: int | None = None, ppn: int | None = None
    ) -> Rule | None:
        """The rule the interposition library takes for this call on a communicator of `nodes`
        nodes with `ppn` ranks each: the first covering rule of its shape, else the first
        covering rule without a shape; None if none covers it."""
        covering = [
            r
            for r in self.rules
            if r.collective == collective
            and r.P[0] <= P <= r.P[1]
            and r.bytes[0] <= nbytes <= r.bytes[1]
        ]
        shaped = next((r for r in covering if r.shaped() and r.covers_shape(nodes, ppn)), None)
        return shaped or next((r for r in covering if not r.shaped()), None)

    def lookup(
        self, collective: str, P: int, nbytes: int, nodes: int | None = None, ppn: int | None = None
    ) -> str:
        """The algorithm the interposition library runs for this call ("native" if none)."""
        r = self.rule_for(collective, P, nbytes, nodes, ppn)
        return r.algorithm if r is not None else "native"


def _num(x: float) -> float | None:
    return None if isinstance(x, float) and math.isnan(x) else x


def to_dict(t: Table) -> dict[str, Any]:
    rules = []
    for r in t.rules:
        d = asdict(r)
        d["P"], d["bytes"] = list(r.P), list(r.bytes)
        for k in ("nodes", "ppn"):
            if d[k] is None:
                del d[k]  # any shape
            else:
                d[k] = list(d[k])
        d["ci95"] = [_num(x) for x in r.ci95]
        for k in ("median_us", "native_median_us", "speedup", "p_value"):
            d[k] = _num(d[k])
        if r.speedups:
            d["speedups"] = {k: _num(v) for k, v in r.speedups.items()}
        else:
            del d["speedups"]  # as tables without patterns were written
        rules.append(d)
    return {
        "format": FORMAT,
        "version": VERSION,
        "mpi": t.mpi,
        "machine": t.machine,
        "date": t.date,
        "block": t.block,
        "rules": rules,
    }


def save(t: Table, path: str | os.PathLike[str]) -> None:
    validate(to_dict(t))
    Path(path).write_text(json.dumps(to_dict(t), indent=1) + "\n")


def parse(text: bytes) -> Table:
    """The table in a file's bytes, read and checked by the core's reader (the interposition
    library's); InvalidArgumentError says what is wrong and where."""
    d = _core.read_tuning_table(text)
    t = Table(mpi=d["mpi"], machine=d["machine"], date=d["date"], block=d["block"])
    for i, r in enumerate(d["rules"]):
        t.rules.append(
            Rule(
                collective=r["collective"],
                P=r["P"],
                bytes=r["bytes"],
                algorithm=r["algorithm"],
                source=r["source"],
                median_us=r["median_us"],
                native_median_us=r["native_median_us"],
                speedup=r["speedup"],
                p_value=r["p_value"],
                ci95=r["ci95"],
                speedups=dict(r["speedups"]),
                nodes=r["nodes"],
                ppn=r["ppn"],
            )
        )
        if r["note"]:
            t.notes.append(f"rule {i} ({r['canonical']}): {r['note']}")
    return t


def validate(d: Any) -> Table:
    """The table in a parsed JSON document (as json.loads gives it), checked by the same reader
    as a file; InvalidArgumentError says what is wrong and where."""
    try:
        text = json.dumps(d, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"not a JSON document: {e}") from None
    return parse(text.encode())


def load(path: str | os.PathLike[str]) -> Table:
    """Reads and checks a table; errors name the file."""
    p = Path(path)
    # Regular files only, bounded (a device or FIFO never ends); the reader refuses a table
    # over its own limit with its own message.
    text = files.read_bytes(p, "tuning table", limit=max(1 << 26, _core.TUNING_MAX_BYTES + 1))
    try:
        return parse(text)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"{p}: {e}") from None
