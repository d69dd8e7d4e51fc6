"""Two count vectors of the same total, alternating call by call on the same buffers, through
collkit.mpi's alltoallv and allgatherv against mpi4py's own calls, under mpiexec.

argv: a JSON list of algorithm names. A cache keyed by anything less than the whole vector (its
total, the buffers, the rank's own row) would run the other vector's plan on every second call.
Rank 0 prints a FAIL line per failing call and "SUMMARY P=<P> cases=<n> failures=<f>"."""

from __future__ import annotations

import json
import sys

import numpy as np
from mpi4py import MPI

import collkit.mpi as ck

comm = MPI.COMM_WORLD
P, rank = comm.Get_size(), comm.Get_rank()
algos: list[str] = json.loads(sys.argv[1])
SENTINEL = -7
failures = cases = 0


def displs_of(counts: list[int]) -> list[int]:
    return [sum(counts[:b]) for b in range(len(counts))]


def check(label: str, ok: bool) -> None:
    global failures, cases
    cases += 1
    if not comm.allreduce(1 if ok else 0, op=MPI.MIN):
        failures += 1
        if rank == 0:
            print(f"FAIL {label}", flush=True)


# alltoallv: row r of B is row r of A reversed (the same total per rank and in all), so the
# send buffer's size is the same and the receive side's columns differ.
A = [[(r + q) % 3 + 1 + (q == 0) for q in range(P)] for r in range(P)]
B = [list(reversed(row)) for row in A]
# allgatherv: 1..P and its reverse.
V = [[b + 1 for b in range(P)], [P - b for b in range(P)]]
rows = sum(A[rank])
cols = max(sum(m[q][rank] for q in range(P)) for m in (A, B))
src = np.zeros(rows, dtype=np.int64)
outs = [np.zeros(max(cols, sum(V[0])), dtype=np.int64) for _ in range(2)]
mine = np.zeros(P, dtype=np.int64)

for algo in algos:
    coll = algo.split(":")[0]
    for call in range(8):
        which = call % 2
        src[:] = np.arange(rows) + 1000 * rank + 100000 * call
        for k, use_ck in enumerate((True, False)):
            out = outs[k]
            out[:] = SENTINEL
            if coll == "alltoallv":
                m = (A, B)[which]
                sc, rc = m[rank], [m[q][rank] for q in range(P)]
                send = [src, sc, displs_of(sc), MPI.INT64_T]
                recv = [out, rc, displs_of(rc), MPI.INT64_T]
                if use_ck:
                    ck.Alltoallv(comm, send, recv, algorithm=algo)
                else:
                    comm.Alltoallv(send, recv)
            else:
                counts = V[which]
                block = [src[: counts[rank]], MPI.INT64_T]
                recv = [out, counts, displs_of(counts), MPI.INT64_T]
                if use_ck:
                    ck.Allgatherv(comm, block, recv, algorithm=algo)
                else:
                    comm.Allgatherv(block, recv)
        check(f"{algo} call={call} vector={'AB'[which]}", bool(np.array_equal(outs[0], outs[1])))

if rank == 0:
    print(f"SUMMARY P={P} cases={cases} failures={failures}", flush=True)
