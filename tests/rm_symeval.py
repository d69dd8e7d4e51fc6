"""A tiny symbolic interpreter of allreduce schedules, used by the rm tests until (and beside)
the verifier: every element is an expression string over the ranks' inputs, so equal strings
mean the same reduction tree. Sends complete at once; a receive takes the oldest message of its
ordered pair. Only for count = 1 and small P."""

from __future__ import annotations

from collections import deque

import collkit

SEND, RECV, REDUCE, COPY = 0, 1, 2, 3
SRC_FIRST = 0


def run(schedule: collkit.Schedule) -> list[str]:
    """The final `out` of every rank as an expression; raises AssertionError on deadlock."""
    a = schedule.arrays()
    P = schedule.P
    ranks = a["rank"]
    starts = [0] * (P + 1)
    for r in ranks:
        starts[int(r) + 1] += 1
    for r in range(P):
        starts[r + 1] += starts[r]
    bufs: list[dict[int, str]] = [{0: f"x{r}", 1: "?"} for r in range(P)]
    done = [False] * len(ranks)
    queues: dict[tuple[int, int], deque[str]] = {}
    remaining = len(ranks)
    progress = True
    while remaining and progress:
        progress = False
        for r in range(P):
            # ops of a rank are tried in index order: the posting order of receives
            for i in range(starts[r], starts[r + 1]):
                if done[i]:
                    continue
                deps = a["deps"][a["dep_begin"][i] : a["dep_begin"][i + 1]]
                if not all(done[starts[r] + int(d)] for d in deps):
                    continue
                kind, peer = int(a["kind"][i]), int(a["peer"][i])
                buf, src = int(a["buf"][i]), int(a["src"][i])
                b = bufs[r]
                if kind == SEND:
                    queues.setdefault((r, peer), deque()).append(b[buf])
                elif kind == RECV:
                    q = queues.get((peer, r))
                    if not q:
                        continue
                    b[buf] = q.popleft()
                elif kind == REDUCE:
                    if int(a["side"][i]) == SRC_FIRST:
                        b[buf] = f"({b[src]}+{b[buf]})"
                    else:
                        b[buf] = f"({b[buf]}+{b[src]})"
                elif kind == COPY:
                    b[buf] = b[src]
                done[i] = True
                remaining -= 1
                progress = True
    assert remaining == 0, f"deadlock: {remaining} ops never ran"
    assert all(not q for q in queues.values()), "messages left unreceived"
    return [b[1] for b in bufs]


def leaves(expr: str) -> list[int]:
    """The input ranks of an expression, left to right."""
    return [int(t[1:]) for t in expr.replace("(", " ").replace(")", " ").replace("+", " ").split()]


def check_allreduce(schedule: collkit.Schedule) -> tuple[bool, bool]:
    """(correct and bitwise consistent, in rank order). Raises AssertionError if not correct."""
    outs = run(schedule)
    P = schedule.P
    assert len(set(outs)) == 1, f"ranks differ: {outs}"
    got = leaves(outs[0])
    assert sorted(got) == list(range(P)), f"not every input exactly once: {outs[0]}"
    return True, got == list(range(P))
