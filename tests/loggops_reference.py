"""A small reference simulator of the LogGOPS model, written from the rules of LogGOPSim's paper
(T. Hoefler, T. Schneider, A. Lumsdaine, "LogGOPSim - Simulating Large-Scale Applications in the
LogGOPS Model", LSAP/HPDC 2010), used only by the tests to derive expected makespans
independently of collkit's engine. Slow and plain on purpose: one priority queue, one dict per
rank, no sharing of programs.

The rules (one CPU and one NIC per rank; times in ns; n is a message's size in bytes):

- Every op waits in one queue ordered by (time, insertion number). An op gets its insertion
  number when it becomes executable (all its deps done); a retry keeps it. Ops of a rank that
  become executable together enter the queue sends first, then receives, then local ops, each in
  op order; ranks in increasing order. The ops executable at the start enter at time 0.
- An op enters the queue at the time its rank can run it: a send at max(CPU free, send gap
  free), a receive or local op at CPU free.
- A local op taken from the queue runs if the CPU is free (else it goes back at that time): the
  CPU is busy for its length; it is done.
- A send taken from the queue starts if the CPU and the send gap are free (else it goes back at
  the later of the two): the CPU is busy o + (n-1) O, the next send may start g + (n-1) G later,
  and the message enters the queue (a new entry) at start + o + L. An eager send (n <= S) is done
  at once; a rendezvous send when its message matches a receive.
- A message taken from the queue is processed if the receiver's CPU and receive gap are free
  (else it goes back at the later of the two): the CPU is busy o + max((n-1) O, (n-1) G), the
  next message may be received g + (n-1) G later. If its receive is posted it is matched and the
  receive is done; else it waits in the unexpected queue.
- A receive taken from the queue is posted: if its message waits in the unexpected queue they
  match and the receive is done, else it waits for the message.
- At a rendezvous match the sender's CPU and send gap are pushed to at least the match time and
  the send is done.
- The makespan is the latest time a CPU is busy until. (n - 1) is 0 for n = 0 (the model as
  published; LogGOPSim's unsigned arithmetic makes it -1 there, see docs/simulator.md).

Messages between a pair of ranks match in program order (the k-th send of q to r with the k-th
receive of r from q), as collkit's GOAL export tags them.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SEND, RECV, LOCAL = 0, 1, 2  # the order in which ops made executable together enter the queue


@dataclass
class Params:
    L: float = 500
    o: float = 100
    g: float = 100
    G: float = 0
    O: float = 0  # noqa: E741
    S: float = math.inf
    gamma: float = 0
    reduce_base: float = 0
    copy_beta: float = 0


@dataclass
class _Rank:
    kind: list[int] = field(default_factory=list)  # SEND / RECV / LOCAL
    peer: list[int] = field(default_factory=list)
    size: list[float] = field(default_factory=list)  # bytes, or ns for local ops
    succ: list[list[int]] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)
    cpu: float = 0.0
    gs: float = 0.0
    gr: float = 0.0


def simulate(arrays: dict[str, Any], P: int, elem_size: int, p: Params) -> float:
    """The makespan (ns) of a schedule given as collkit's op arrays (Schedule.arrays())."""
    ranks = [_Rank() for _ in range(P)]
    kinds, peers, lens = arrays["kind"], arrays["peer"], arrays["len"]
    rank_of, dep_begin, deps = arrays["rank"], arrays["dep_begin"], arrays["deps"]
    first = np.searchsorted(rank_of, np.arange(P + 1))
    for r in range(P):
        rk = ranks[r]
        b, e = int(first[r]), int(first[r + 1])
        for i in range(b, e):
            k, n = int(kinds[i]), float(lens[i]) * elem_size
            if k == 0 or k == 1:
                rk.kind.append(SEND if k == 0 else RECV)
                rk.peer.append(int(peers[i]))
                rk.size.append(n)
            else:
                rk.kind.append(LOCAL)
                rk.peer.append(-1)
                cost = {2: p.reduce_base + p.gamma * n, 3: p.copy_beta * n}.get(k, float(lens[i]))
                rk.size.append(cost)
            rk.succ.append([])
            rk.pending.append(int(dep_begin[i + 1] - dep_begin[i]))
        for i in range(b, e):
            for d in deps[int(dep_begin[i]) : int(dep_begin[i + 1])]:
                rk.succ[int(d)].append(i - b)
    # Messages paired in program order: send (q, k) <-> recv (r, j).
    nth_send: dict[tuple[int, int, int], int] = {}  # (q, r, s): the op of q's s-th send to r
    recv_of: dict[tuple[int, int], tuple[int, int]] = {}
    send_of: dict[tuple[int, int], tuple[int, int]] = {}
    for q in range(P):
        seq: dict[int, int] = {}
        for k, (kd, pr) in enumerate(zip(ranks[q].kind, ranks[q].peer, strict=True)):
            if kd == SEND:
                nth_send[(q, pr, seq.get(pr, 0))] = k
                seq[pr] = seq.get(pr, 0) + 1
    for r in range(P):
        seq = {}
        for j, (kd, pr) in enumerate(zip(ranks[r].kind, ranks[r].peer, strict=True)):
            if kd == RECV:
                k = nth_send[(pr, r, seq.get(pr, 0))]
                seq[pr] = seq.get(pr, 0) + 1
                recv_of[(pr, k)] = (r, j)
                send_of[(r, j)] = (pr, k)

    queue: list[tuple[float, int, int, int, int]] = []  # time, number, what, rank, op
    counter = 0
    OP, MSG = 0, 1
    posted: set[tuple[int, int]] = set()
    unexpected: set[tuple[int, int]] = set()  # receives whose message was processed
    rdv_pending: set[tuple[int, int]] = set()  # rendezvous sends not yet done

    def push_new(t: float, what: int, r: int, i: int) -> None:
        nonlocal counter
        heapq.heappush(queue, (t, counter, what, r, i))
        counter += 1

    def enter(freed: list[tuple[int, int]]) -> None:
        # ranks in order; in a rank sends, receives, local ops; each in op order
        for r, i in sorted(freed, key=lambda x: (x[0], ranks[x[0]].kind[x[1]], x[1])):
            rk = ranks[r]
            t = max(rk.cpu, rk.gs) if rk.kind[i] == SEND else rk.cpu
            push_new(t, OP, r, i)

    def done(r: int, i: int, freed: list[tuple[int, int]]) -> None:
        for j in ranks[r].succ[i]:
            ranks[r].pending[j] -= 1
            if ranks[r].pending[j] == 0:
                freed.append((r, j))

    def matched(r: int, j: int, t: float, freed: list[tuple[int, int]]) -> None:
        q, k = send_of[(r, j)]
        if (q, k) in rdv_pending:
            rdv_pending.discard((q, k))
            ranks[q].cpu = max(ranks[q].cpu, t)
            ranks[q].gs = max(ranks[q].gs, t)
            done(q, k, freed)
        done(r, j, freed)

    enter([(r, i) for r in range(P) for i in range(len(ranks[r].kind)) if ranks[r].pending[i] == 0])
    while queue:
        t, num, what, r, i = heapq.heappop(queue)
        rk = ranks[r]
        freed: list[tuple[int, int]] = []
        if what == MSG:  # the message of send (r, i) at its receiver
            dst, j = recv_of[(r, i)]
            d = ranks[dst]
            n1 = max(rk.size[i] - 1, 0)
            if max(d.cpu, d.gr) > t:
                heapq.heappush(queue, (max(d.cpu, d.gr), num, what, r, i))
                continue
            d.cpu = t + p.o + max(n1 * p.O, n1 * p.G)
            d.gr = t + p.g + n1 * p.G
            if (dst, j) in posted:
                posted.discard((dst, j))
                matched(dst, j, t, freed)
            else:
                unexpected.add((dst, j))
        elif rk.kind[i] == LOCAL:
            if rk.cpu > t:
                heapq.heappush(queue, (rk.cpu, num, what, r, i))
                continue
            rk.cpu = t + rk.size[i]
            done(r, i, freed)
        elif rk.kind[i] == SEND:
            if max(rk.cpu, rk.gs) > t:
                heapq.heappush(queue, (max(rk.cpu, rk.gs), num, what, r, i))
                continue
            n1 = max(rk.size[i] - 1, 0)
            rk.cpu = t + p.o + n1 * p.O
            rk.gs = t + p.g + n1 * p.G
            push_new(t + p.o + p.L, MSG, r, i)
            if rk.size[i] <= p.S:
                done(r, i, freed)
            else:
                rdv_pending.add((r, i))
        else:  # a receive is posted
            if (r, i) in unexpected:
                unexpected.discard((r, i))
                matched(r, i, t, freed)
            else:
                posted.add((r, i))
        enter(freed)
    if posted or unexpected or rdv_pending or any(any(rk.pending) for rk in ranks):
        raise AssertionError("the reference simulation did not finish")
    return max(rk.cpu for rk in ranks)
