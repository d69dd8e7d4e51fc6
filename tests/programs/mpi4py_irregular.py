"""The irregular collectives of collkit.mpi against mpi4py's own calls, under mpiexec.

argv: a JSON list of algorithm names, a seed. Each algorithm runs several random cases: count
vectors with zeros, displacements with gaps (left at a sentinel that both calls must keep),
MPI.IN_PLACE where MPI allows it, and (scan, exscan, reduce_scatter) a non-commutative user op.
Rank 0 prints a FAIL line per failing case, "SUMMARY P=<P> cases=<n> failures=<f>" and
"DECLINED <n> [...]": the calls collkit declined unexpectedly (they ran as mpi4py's own)."""

from __future__ import annotations

import json
import random
import sys

import numpy as np
from mpi4py import MPI

import collkit
import collkit.mpi as ck
import collkit.mpi.face as face

# A declined call goes to mpi4py's own silently: counted here, so that a pass is collkit's run
# (what the registry's limits refuse, a commutative-only algorithm's non-commutative op: expected).
declined: list[str] = []
expect_decline = False
_call = face._call


def _recording(fn: str, fallback: object, *args: object) -> object:
    def fell_back() -> object:
        if not expect_decline:
            declined.append(fn)
        return fallback()  # type: ignore[operator]

    return _call(fn, fell_back, *args)


face._call = _recording  # type: ignore[assignment]

comm = MPI.COMM_WORLD
P, rank = comm.Get_size(), comm.Get_rank()
algos: list[str] = json.loads(sys.argv[1])
rng = random.Random(int(sys.argv[2]))  # the same draws on every rank
SENTINEL = -7


def layout(counts: list[int]) -> tuple[list[int], int]:
    """Displacements with random gaps between the blocks, in a shuffled order, and the size."""
    order = list(range(len(counts)))
    rng.shuffle(order)
    displs, at = [0] * len(counts), 0
    for b in order:
        at += rng.randrange(3)
        displs[b] = at
        at += counts[b]
    return displs, at + rng.randrange(2)


PRIME = 2147483647  # 2^31 - 1


def affine_op(a: object, b: object, dt: object) -> None:
    """Composition of affine maps x -> m x + c (mod PRIME), each packed in an int64 as
    m * 2^32 + c: associative and not commutative, so the operand order shows in the result."""
    x = np.frombuffer(a, dtype=np.int64)
    y = np.frombuffer(b, dtype=np.int64)
    m1, c1 = x >> 32, x & 0xFFFFFFFF
    m2, c2 = y >> 32, y & 0xFFFFFFFF
    y[:] = ((m1 * m2) % PRIME << 32) | ((m2 * c1 + c2) % PRIME)


NONCOMM = MPI.Op.Create(affine_op, commute=False)
failures = cases = 0


def check(label: str, ok: bool) -> None:
    global failures, cases
    cases += 1
    good = comm.allreduce(1 if ok else 0, op=MPI.MIN)
    if not good:
        failures += 1
        if rank == 0:
            print(f"FAIL {label}", flush=True)


def draw_counts(n: int) -> list[int]:
    kind = rng.randrange(4)
    if kind == 0:
        return [0] * n
    if kind == 1:
        return [rng.choice([0, rng.randrange(1, 9)]) for _ in range(n)]
    if kind == 2:
        one = rng.randrange(n)
        return [5 if i == one else 0 for i in range(n)]
    return [rng.randrange(0, 13) for _ in range(n)]


for algo in algos:
    coll = algo.split(":")[0].split("(")[0]
    for case in range(6):
        in_place = case % 2 == 1
        root = rng.randrange(P)
        label = f"{algo} case={case} in_place={in_place} root={root}"
        gen = np.random.default_rng(1000 * case + rank)
        data = gen.integers(0, 1 << 20, 64, dtype=np.int64)
        pairs = (gen.integers(1, PRIME, 64, dtype=np.int64) << 32) | gen.integers(
            0, PRIME, 64, dtype=np.int64
        )
        if coll in ("allgatherv", "gatherv"):
            counts = draw_counts(P)
            displs, size = layout(counts)
            mine = data[: counts[rank]].copy()
            outs = []
            for use_ck in (True, False):
                out = np.full(size, SENTINEL, dtype=np.int64)
                here = coll == "allgatherv" or rank == root
                if in_place and here:
                    out[displs[rank] : displs[rank] + counts[rank]] = mine
                send = MPI.IN_PLACE if in_place and here else [mine, MPI.INT64_T]
                recv = [out, counts, displs, MPI.INT64_T] if here else None
                if coll == "allgatherv":
                    if use_ck:
                        ck.Allgatherv(comm, send, recv, algorithm=algo)
                    else:
                        comm.Allgatherv(send, recv)
                else:
                    if use_ck:
                        ck.Gatherv(comm, send, recv, root, algorithm=algo)
                    else:
                        comm.Gatherv(send, recv, root)
                outs.append(out)
            check(label, bool(np.array_equal(outs[0], outs[1])))
        elif coll == "scatterv":
            counts = draw_counts(P)
            displs, size = layout(counts)
            src = np.arange(size, dtype=np.int64) + 100
            outs = []
            for use_ck in (True, False):
                out = np.full(max(counts[rank], 1), SENTINEL, dtype=np.int64)
                at_root = rank == root
                send = [src, counts, displs, MPI.INT64_T] if at_root else None
                recv = MPI.IN_PLACE if in_place and at_root else [out[: counts[rank]], MPI.INT64_T]
                if use_ck:
                    ck.Scatterv(comm, send, recv, root, algorithm=algo)
                else:
                    comm.Scatterv(send, recv, root)
                outs.append(out)
            check(label, bool(np.array_equal(outs[0], outs[1])))
        elif coll == "alltoallv":
            matrix = [draw_counts(P) for _ in range(P)]  # matrix[r][q]: r sends q
            if in_place:  # MPI: the same counts both ways
                matrix = [[matrix[min(r, q)][max(r, q)] for q in range(P)] for r in range(P)]
            sc = matrix[rank]
            rc = [matrix[q][rank] for q in range(P)]
            sd, ssize = layout(sc)
            rd, rsize = layout(rc)
            src = np.arange(ssize, dtype=np.int64) + 1000 * rank
            outs = []
            for use_ck in (True, False):
                out = np.full(rsize, SENTINEL, dtype=np.int64)
                if in_place:
                    rd = sd
                    out = np.full(ssize, SENTINEL, dtype=np.int64)
                    out[:] = src
                    send = MPI.IN_PLACE
                    recv = [out, sc, sd, MPI.INT64_T]
                else:
                    send = [src, sc, sd, MPI.INT64_T]
                    recv = [out, rc, rd, MPI.INT64_T]
                if use_ck:
                    ck.Alltoallv(comm, send, recv, algorithm=algo)
                else:
                    comm.Alltoallv(send, recv)
                outs.append(out)
            check(label, bool(np.array_equal(outs[0], outs[1])))
        else:  # scan, exscan, reduce_scatter: SUM and a non-commutative op
            op = NONCOMM if case >= 3 else MPI.SUM
            # The registry's limits (P, the op's commutativity) decline alike on every rank.
            expect_decline = bool(
                collkit.Algorithm(algo).refusal(P, commutative=op is not NONCOMM, full=False)
            )
            label += f" op={'noncommutative' if op is NONCOMM else 'sum'}"
            counts = draw_counts(P) if coll == "reduce_scatter" else [rng.randrange(0, 9)] * P
            n = sum(counts) if coll == "reduce_scatter" else counts[0]
            src = (pairs if op is NONCOMM else data)[:n].copy()
            outs = []
            for use_ck in (True, False):
                size = counts[rank] if coll == "reduce_scatter" else n
                buf = src.copy() if in_place else np.full(size, SENTINEL, dtype=np.int64)
                send = MPI.IN_PLACE if in_place else [src, MPI.INT64_T]
                recv = [buf, MPI.INT64_T]
                if coll == "reduce_scatter":
                    if use_ck:
                        ck.Reduce_scatter(comm, send, recv, counts, op, algorithm=algo)
                    else:
                        comm.Reduce_scatter(send, recv, counts, op)
                    buf = buf[: counts[rank]]
                elif coll == "scan":
                    if use_ck:
                        ck.Scan(comm, send, recv, op, algorithm=algo)
                    else:
                        comm.Scan(send, recv, op)
                else:
                    if use_ck:
                        ck.Exscan(comm, send, recv, op, algorithm=algo)
                    else:
                        comm.Exscan(send, recv, op)
                    if rank == 0:
                        buf = buf[:0]  # undefined on rank 0
                outs.append(buf)
            check(label, bool(np.array_equal(outs[0], outs[1])))

if rank == 0:
    print(f"SUMMARY P={P} cases={cases} failures={failures}", flush=True)
total = comm.allreduce(len(declined))
if rank == 0:
    print(f"DECLINED {total} {sorted(set(declined))}", flush=True)
NONCOMM.Free()
