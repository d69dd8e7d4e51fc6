"""Build and edit schedules op by op through the array form, for tests that need schedules no
generator makes (broken ones above all)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

import collkit

KIND = {"send": 0, "recv": 1, "reduce": 2, "copy": 3, "compute": 4, "sleep": 5}
BUF = {"in": 0, "out": 1}


def buf_id(name: str) -> int:
    return BUF[name] if name in BUF else 2 + int(name[1:])


@dataclass
class Ops:
    """Editable per-op records of a whole schedule."""

    collective: str
    P: int
    count: int
    elem_size: int = 8
    root: int = 0
    algorithm: str = ""
    ranks: list[list[dict[str, Any]]] = field(default_factory=list)
    scratch: list[list[int]] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)  # irregular collectives' vectors
    in_displs: list[int] = field(default_factory=list)
    out_displs: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, s: collkit.Schedule) -> Ops:
        a = s.arrays()
        ops = cls(s.collective, s.P, s.count, s.elem_size, s.root, s.algorithm)
        ops.counts, ops.in_displs, ops.out_displs = s.counts, s.in_displs, s.out_displs
        ops.ranks = [[] for _ in range(s.P)]
        for g in range(len(a["rank"])):
            r = int(a["rank"][g])
            rec = {
                k: int(a[k][g])
                for k in ("kind", "peer", "buf", "off", "src", "src_off", "len", "side", "stage")
            }
            rec["deps"] = [int(d) for d in a["deps"][a["dep_begin"][g] : a["dep_begin"][g + 1]]]
            ops.ranks[r].append(rec)
        sb = a["scratch_begin"]
        ops.scratch = [[int(x) for x in a["scratch"][sb[r] : sb[r + 1]]] for r in range(s.P)]
        return ops

    def find(self, rank: int, kind: str, nth: int = 0) -> int:
        """Index of the nth op of `kind` on `rank`."""
        hits = [i for i, o in enumerate(self.ranks[rank]) if o["kind"] == KIND[kind]]
        return hits[nth]

    def build(self) -> collkit.Schedule:
        recs = [(r, o) for r in range(self.P) for o in self.ranks[r]]
        n = len(recs)
        arr: dict[str, Any] = {
            "rank": np.array([r for r, _ in recs], dtype=np.int64),
            "kind": np.array([o["kind"] for _, o in recs], dtype=np.uint8),
            "peer": np.array([o["peer"] for _, o in recs], dtype=np.int32),
            "buf": np.array([o["buf"] for _, o in recs], dtype=np.uint8),
            "off": np.array([o["off"] for _, o in recs], dtype=np.int64),
            "src": np.array([o["src"] for _, o in recs], dtype=np.uint8),
            "src_off": np.array([o["src_off"] for _, o in recs], dtype=np.int64),
            "len": np.array([o["len"] for _, o in recs], dtype=np.int64),
            "side": np.array([o["side"] for _, o in recs], dtype=np.uint8),
            "stage": np.array([o["stage"] for _, o in recs], dtype=np.uint16),
        }
        dep_begin = np.zeros(n + 1, dtype=np.int64)
        deps: list[int] = []
        for g, (_, o) in enumerate(recs):
            dep_begin[g] = len(deps)
            deps.extend(o["deps"])
        dep_begin[n] = len(deps)
        arr["dep_begin"] = dep_begin
        arr["deps"] = np.array(deps, dtype=np.uint32)
        sc = self.scratch or [[] for _ in range(self.P)]
        arr["scratch_begin"] = np.cumsum([0] + [len(x) for x in sc]).astype(np.int64)
        arr["scratch"] = np.array([v for x in sc for v in x], dtype=np.int64)
        return collkit.Schedule.from_arrays(
            arr,
            collective=self.collective,
            P=self.P,
            count=self.count,
            elem_size=self.elem_size,
            root=self.root,
            algorithm=self.algorithm,
            check_ops=False,  # broken schedules are the point: the verifier must refuse them
            counts=self.counts,
            in_displs=self.in_displs,
            out_displs=self.out_displs,
        )


class RankWriter:
    """Append ops to one rank of an `Ops` by name: w.send(1, "out", 0, 4, deps=[0])."""

    def __init__(self, ops: Ops, rank: int) -> None:
        while len(ops.ranks) <= rank:
            ops.ranks.append([])
        while len(ops.scratch) <= rank:
            ops.scratch.append([])
        self.ops, self.rank = ops, rank

    def _add(self, **kw: Any) -> int:
        rec = {
            "kind": 0,
            "peer": -1,
            "buf": 1,
            "off": 0,
            "src": 0,
            "src_off": 0,
            "len": 0,
            "side": 0,
            "stage": 0,
            "deps": [],
        }
        rec.update(kw)
        self.ops.ranks[self.rank].append(rec)
        return len(self.ops.ranks[self.rank]) - 1

    def scratch(self, n: int) -> str:
        self.ops.scratch[self.rank].append(n)
        return f"s{len(self.ops.scratch[self.rank]) - 1}"

    def send(self, peer: int, buf: str, off: int, n: int, deps: list[int] | None = None) -> int:
        return self._add(kind=0, peer=peer, buf=buf_id(buf), off=off, len=n, deps=deps or [])

    def recv(self, peer: int, buf: str, off: int, n: int, deps: list[int] | None = None) -> int:
        return self._add(kind=1, peer=peer, buf=buf_id(buf), off=off, len=n, deps=deps or [])

    def reduce(
        self,
        dst: str,
        doff: int,
        src: str,
        soff: int,
        n: int,
        src_first: bool,
        deps: list[int] | None = None,
    ) -> int:
        return self._add(
            kind=2,
            buf=buf_id(dst),
            off=doff,
            src=buf_id(src),
            src_off=soff,
            len=n,
            side=0 if src_first else 1,
            deps=deps or [],
        )

    def copy(
        self, dst: str, doff: int, src: str, soff: int, n: int, deps: list[int] | None = None
    ) -> int:
        return self._add(
            kind=3, buf=buf_id(dst), off=doff, src=buf_id(src), src_off=soff, len=n, deps=deps or []
        )


def empty(collective: str, P: int, count: int, root: int = 0) -> Ops:
    ops = Ops(collective, P, count, root=root)
    ops.ranks = [[] for _ in range(P)]
    ops.scratch = [[] for _ in range(P)]
    return ops
