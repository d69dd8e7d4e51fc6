"""allgatherv calls alternating two count vectors of different totals (16 B and 4 KiB on P = 2)
on the same buffers, rank 0's own block the same in both (so its every argument but the vector's
entries is the same): under the interposition library a table may route one total to collkit and
the other to the MPI. argv: rounds. Checks each call's result and prints "ok" on rank 0."""

from __future__ import annotations

import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
P, rank = comm.Get_size(), comm.Get_rank()
rounds = int(sys.argv[1])
BIG = (4096 - 8) // max(P - 1, 1)
out = np.zeros(8 + BIG * P, dtype=np.uint8)
src = np.zeros(BIG + 8, dtype=np.uint8)
ok = True
for call in range(2 * rounds):
    counts = [8] + [8 if call % 2 == 0 else BIG] * (P - 1)
    displs = [sum(counts[:b]) for b in range(P)]
    n = counts[rank]
    src[:n] = (rank + call) % 251
    comm.Allgatherv([src[:n], MPI.BYTE], [out, counts, displs, MPI.BYTE])
    want = np.concatenate([np.full(counts[r], (r + call) % 251) for r in range(P)])
    ok = ok and bool(np.array_equal(out[: sum(counts)], want.astype(np.uint8)))
if comm.allreduce(1 if ok else 0, op=MPI.MIN) and rank == 0:
    print("ok", flush=True)
