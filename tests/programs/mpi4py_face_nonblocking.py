"""collkit.mpi's non-blocking collectives (Iallreduce ... Iscatter) against mpi4py's own, on
random data. Run under mpiexec at any P:

    mpiexec -n 4 python mpi4py_face_nonblocking.py ALGORITHMS_JSON SEED

ALGORITHMS_JSON maps each collective to the collkit algorithms to check. Each call's request is
completed in turn by its own Wait, by Test in a loop, and several at once by mpi4py's
Request.Waitall / Waitany / Testall mixed with mpi4py's own requests. Prints one line
"SUMMARY P=.. cases=.. failures=.." (rank 0) and exits 1 on a failure."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from mpi4py import MPI

import collkit.mpi as ckm

comm = MPI.COMM_WORLD
P, rank = comm.Get_size(), comm.Get_rank()
algos: dict[str, list[str]] = json.loads(sys.argv[1])
seed = int(sys.argv[2])
rng = np.random.default_rng([seed, rank])
TYPES = ["i", "l", "d"]
cases = failures = 0
mode = 0  # how the next request is completed: cycles through the ways


def data(t: str, n: int) -> np.ndarray:
    # Integer values: every order of summation gives the same bits.
    return rng.integers(-50, 50, size=n).astype(t)


def check(what: str, got: np.ndarray | None, want: np.ndarray | None) -> None:
    global cases, failures
    cases += 1
    if got is None or want is None:
        return
    if got.shape != want.shape or not np.array_equal(got, want):
        failures += 1
        if failures <= 10:
            print(f"FAIL rank {rank} {what}: got {got[:8]} want {want[:8]}", flush=True)


def complete(req: Any) -> None:
    """Completes collkit's request one of four ways, each beside an mpi4py request of its own."""
    global mode, failures
    mode += 1
    own = comm.Ibarrier()  # mpi4py's own request, in the same arrays
    way = mode % 4
    if way == 0:
        req.Wait()
        own.Wait()
    elif way == 1:
        while not req.Test():
            pass
        own.Wait()
    elif way == 2:
        MPI.Request.Waitall([own, req])
    else:
        reqs = [req, own]
        done = 0
        while done < 2:
            i = MPI.Request.Waitany(reqs)
            if i == MPI.UNDEFINED:
                break
            done += 1
        if not MPI.Request.Testall(reqs):
            failures += 1
            print(f"FAIL rank {rank}: Testall after Waitany is false", flush=True)


def run(
    what: str, start: Callable[..., Any], args: tuple[Any, ...], algo: str, want: Any, got: Any
) -> None:
    """start(*args, algorithm=algo), completed, and `got` compared with `want`."""
    req = start(*args, algorithm=algo)
    complete(req)
    if MPI._handleof(req) != MPI._handleof(MPI.REQUEST_NULL):
        global failures
        failures += 1
        print(f"FAIL rank {rank} {what}: request not null after completion", flush=True)
    check(what, got if got is None else np.asarray(got), want)


for algo in algos.get("allreduce", []):
    for t in TYPES:
        for op in (MPI.SUM, MPI.MAX):
            n = int(rng.integers(0, 40))
            n = comm.bcast(n)
            x = data(t, n)
            ref, mine = np.empty(n, t), np.full(n, -7, t)
            comm.Allreduce(x, ref, op)
            run(f"Iallreduce {algo} {t}", ckm.Iallreduce, (comm, x, mine, op), algo, ref, mine)
            inplace = x.copy()
            run(
                f"Iallreduce IN_PLACE {algo} {t}",
                ckm.Iallreduce,
                (comm, MPI.IN_PLACE, inplace, op),
                algo,
                ref,
                inplace,
            )

for algo in algos.get("reduce", []):
    for t in TYPES:
        root = comm.bcast(int(rng.integers(0, P)))
        n = comm.bcast(int(rng.integers(1, 30)))
        x = data(t, n)
        ref = np.empty(n, t) if rank == root else None
        mine = np.full(n, -7, t) if rank == root else None
        comm.Reduce(x, ref, MPI.SUM, root)
        run(
            f"Ireduce {algo} {t} root={root}",
            ckm.Ireduce,
            (comm, x, mine, MPI.SUM, root),
            algo,
            ref,
            mine,
        )

for algo in algos.get("bcast", []):
    for t in TYPES:
        root = comm.bcast(int(rng.integers(0, P)))
        n = comm.bcast(int(rng.integers(0, 50)))
        want = comm.bcast(data(t, n), root)
        buf = want.copy() if rank == root else np.full(n, -7, t)
        run(f"Ibcast {algo} {t} root={root}", ckm.Ibcast, (comm, buf, root), algo, want, buf)

for algo in algos.get("barrier", []):
    run(f"Ibarrier {algo}", ckm.Ibarrier, (comm,), algo, None, None)

for algo in algos.get("alltoall", []):
    for t in TYPES:
        n = comm.bcast(int(rng.integers(0, 6)))
        x = data(t, n * P)
        ref, mine = np.empty(n * P, t), np.full(n * P, -7, t)
        comm.Alltoall(x, ref)
        run(f"Ialltoall {algo} {t}", ckm.Ialltoall, (comm, x, mine), algo, ref, mine)

for algo in algos.get("allgather", []):
    for t in TYPES:
        n = comm.bcast(int(rng.integers(0, 6)))
        x = data(t, n)
        ref, mine = np.empty(n * P, t), np.full(n * P, -7, t)
        comm.Allgather(x, ref)
        run(f"Iallgather {algo} {t}", ckm.Iallgather, (comm, x, mine), algo, ref, mine)

for algo in algos.get("reduce_scatter_block", []):
    for t in TYPES:
        n = comm.bcast(int(rng.integers(0, 6)))
        x = data(t, n * P)
        ref, mine = np.empty(n, t), np.full(n, -7, t)
        comm.Reduce_scatter_block(x, ref, MPI.SUM)
        run(
            f"Ireduce_scatter_block {algo} {t}",
            ckm.Ireduce_scatter_block,
            (comm, x, mine, MPI.SUM),
            algo,
            ref,
            mine,
        )

for algo in algos.get("gather", []):
    for t in TYPES:
        root = comm.bcast(int(rng.integers(0, P)))
        n = comm.bcast(int(rng.integers(1, 6)))
        x = data(t, n)
        ref = np.empty(n * P, t) if rank == root else None
        mine = np.full(n * P, -7, t) if rank == root else None
        comm.Gather(x, ref, root)
        run(f"Igather {algo} {t} root={root}", ckm.Igather, (comm, x, mine, root), algo, ref, mine)

for algo in algos.get("scatter", []):
    for t in TYPES:
        root = comm.bcast(int(rng.integers(0, P)))
        n = comm.bcast(int(rng.integers(1, 6)))
        x = data(t, n * P) if rank == root else None
        ref, mine = np.empty(n, t), np.full(n, -7, t)
        comm.Scatter(x, ref, root)
        run(
            f"Iscatter {algo} {t} root={root}", ckm.Iscatter, (comm, x, mine, root), algo, ref, mine
        )

# Several in flight at once on one communicator, completed together (matched in call order).
xs = [data("d", 17) for _ in range(4)]
outs = [np.empty(17) for _ in xs]
refs = [np.empty(17) for _ in xs]
for x, r in zip(xs, refs, strict=True):
    comm.Allreduce(x, r)
first = algos.get("allreduce", ["native"])[0]
reqs = [ckm.Iallreduce(comm, x, o, algorithm=first) for x, o in zip(xs, outs, strict=True)]
MPI.Request.Waitall(reqs)
for k, (o, r) in enumerate(zip(outs, refs, strict=True)):
    check(f"four Iallreduce in flight #{k}", o, r)

total_failures = comm.allreduce(failures)
total_cases = comm.allreduce(cases)
if rank == 0:
    print(f"SUMMARY P={P} cases={total_cases} failures={total_failures}", flush=True)
sys.exit(1 if total_failures else 0)
