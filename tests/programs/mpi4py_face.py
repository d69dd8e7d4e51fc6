"""collkit.mpi's nine collectives against mpi4py's own, in the patterns of mpi4py's test suite
(test/test_cco_buf.py: every typecode, counts 0..P+1, SUM / PROD / MAX / MIN, every root,
MPI.IN_PLACE, [buf, count, datatype] specs). Run under mpiexec at any P:

    mpiexec -n 4 python mpi4py_face.py ALGORITHMS_JSON

ALGORITHMS_JSON maps each collective to the collkit algorithms to check. Prints one line
"SUMMARY P=.. cases=.. failures=.." (rank 0) and exits 1 on a failure."""

from __future__ import annotations

import json
import sys

import numpy as np
from mpi4py import MPI

import collkit.mpi as ckm

comm = MPI.COMM_WORLD
P, rank = comm.Get_size(), comm.Get_rank()
algos: dict[str, list[str]] = json.loads(sys.argv[1])
# mpi4py's test suite's typecodes (arrayimpl.TypeMap), as numpy types; integer-valued data so
# that every op is exact and any summation order gives the same bits.
TYPES = ["b", "h", "i", "l", "f", "d"]
OPS = [MPI.SUM, MPI.PROD, MPI.MAX, MPI.MIN]
cases = failures = 0


def data(typecode: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(1, 3, size=n).astype(typecode)  # 1 or 2: PROD stays small


def check(what: str, got: np.ndarray, want: np.ndarray) -> None:
    global cases, failures
    cases += 1
    if got.shape != want.shape or not np.array_equal(got, want):
        failures += 1
        if failures <= 10:
            print(f"FAIL rank {rank} {what}: got {got[:8]} want {want[:8]}", flush=True)


for algo in algos.get("allreduce", []):
    for t in TYPES:
        for op in OPS:
            for n in range(P + 2):
                x = data(t, n, rank + n)
                mine, ref = np.full(n, -1, dtype=t), np.full(n, -1, dtype=t)
                ckm.Allreduce(comm, x, mine, op, algorithm=algo)
                comm.Allreduce(x, ref, op)
                check(f"Allreduce {algo} {t} n={n}", mine, ref)
                inplace = x.copy()
                ckm.Allreduce(comm, MPI.IN_PLACE, inplace, op, algorithm=algo)
                check(f"Allreduce IN_PLACE {algo} {t} n={n}", inplace, ref)
                spec = np.full(n, -1, dtype=t)
                ckm.Allreduce(comm, [x, n, MPI._typedict[t]], [spec, n, MPI._typedict[t]], op,
                              algorithm=algo)  # fmt: skip
                check(f"Allreduce [buf,count,type] {algo} {t} n={n}", spec, ref)

for algo in algos.get("reduce", []):
    for t in TYPES:
        for op in OPS:
            for root in range(P):
                n = P + 1
                x = data(t, n, rank * 7 + root)
                mine = np.full(n, -1, dtype=t) if rank == root else None
                ref = np.full(n, -1, dtype=t) if rank == root else None
                ckm.Reduce(comm, x, mine, op, root, algorithm=algo)
                comm.Reduce(x, ref, op, root)
                if rank == root:
                    assert mine is not None and ref is not None
                    check(f"Reduce {algo} {t} root={root}", mine, ref)
                    inplace = x.copy()
                    ckm.Reduce(comm, MPI.IN_PLACE, inplace, op, root, algorithm=algo)
                    check(f"Reduce IN_PLACE {algo} {t} root={root}", inplace, ref)
                else:
                    ckm.Reduce(comm, x, None, op, root, algorithm=algo)

for algo in algos.get("bcast", []):
    for t in TYPES:
        for root in range(P):
            for n in (0, 1, P + 3):
                want = data(t, n, 100 + root)
                buf = want.copy() if rank == root else np.full(n, -1, dtype=t)
                ckm.Bcast(comm, buf, root, algorithm=algo)
                check(f"Bcast {algo} {t} root={root} n={n}", buf, want)
                spec = want.copy() if rank == root else np.full(n, -1, dtype=t)
                ckm.Bcast(comm, [spec, MPI._typedict[t]], root, algorithm=algo)
                check(f"Bcast [buf,type] {algo} {t} root={root} n={n}", spec, want)

for algo in algos.get("barrier", []):
    ckm.Barrier(comm, algorithm=algo)
    cases += 1

for algo in algos.get("alltoall", []):
    for t in TYPES:
        for n in (0, 1, 3):
            x = data(t, n * P, rank)
            mine, ref = np.full(n * P, -1, dtype=t), np.full(n * P, -1, dtype=t)
            ckm.Alltoall(comm, x, mine, algorithm=algo)
            comm.Alltoall(x, ref)
            check(f"Alltoall {algo} {t} n={n}", mine, ref)

for algo in algos.get("allgather", []):
    for t in TYPES:
        for n in (0, 1, 3):
            x = data(t, n, rank)
            mine, ref = np.full(n * P, -1, dtype=t), np.full(n * P, -1, dtype=t)
            ckm.Allgather(comm, x, mine, algorithm=algo)
            comm.Allgather(x, ref)
            check(f"Allgather {algo} {t} n={n}", mine, ref)
            inplace = np.full(n * P, -1, dtype=t)
            inplace[rank * n : (rank + 1) * n] = x
            ckm.Allgather(comm, MPI.IN_PLACE, inplace, algorithm=algo)
            check(f"Allgather IN_PLACE {algo} {t} n={n}", inplace, ref)

for algo in algos.get("reduce_scatter_block", []):
    for t in TYPES:
        for op in OPS:
            for n in (0, 1, 2):
                x = data(t, n * P, rank + 3)
                mine, ref = np.full(n, -1, dtype=t), np.full(n, -1, dtype=t)
                ckm.Reduce_scatter_block(comm, x, mine, op, algorithm=algo)
                comm.Reduce_scatter_block(x, ref, op)
                check(f"Reduce_scatter_block {algo} {t} n={n}", mine, ref)
                inplace = x.copy()
                ckm.Reduce_scatter_block(comm, MPI.IN_PLACE, inplace, op, algorithm=algo)
                check(f"Reduce_scatter_block IN_PLACE {algo} {t} n={n}", inplace[:n], ref)

for algo in algos.get("gather", []):
    for t in TYPES:
        for root in range(P):
            n = 2
            x = data(t, n, rank + root)
            mine = np.full(n * P, -1, dtype=t) if rank == root else None
            ref = np.full(n * P, -1, dtype=t) if rank == root else None
            ckm.Gather(comm, x, mine, root, algorithm=algo)
            comm.Gather(x, ref, root)
            if rank == root:
                assert mine is not None and ref is not None
                check(f"Gather {algo} {t} root={root}", mine, ref)
                inplace = np.full(n * P, -1, dtype=t)
                inplace[rank * n : (rank + 1) * n] = x
                ckm.Gather(comm, MPI.IN_PLACE, inplace, root, algorithm=algo)
                check(f"Gather IN_PLACE {algo} {t} root={root}", inplace, ref)
            else:
                ckm.Gather(comm, x, None, root, algorithm=algo)

for algo in algos.get("scatter", []):
    for t in TYPES:
        for root in range(P):
            n = 2
            x = data(t, n * P, root) if rank == root else None
            mine, ref = np.full(n, -1, dtype=t), np.full(n, -1, dtype=t)
            ckm.Scatter(comm, x, mine, root, algorithm=algo)
            comm.Scatter(x, ref, root)
            check(f"Scatter {algo} {t} root={root}", mine, ref)
            if rank == root:
                assert x is not None
                ckm.Scatter(comm, x, MPI.IN_PLACE, root, algorithm=algo)
                cases += 1
            else:
                ckm.Scatter(comm, None, mine, root, algorithm=algo)

total_failures = comm.allreduce(failures)
total_cases = comm.allreduce(cases)
if rank == 0:
    print(f"SUMMARY P={P} cases={total_cases} failures={total_failures}", flush=True)
sys.exit(1 if total_failures else 0)
