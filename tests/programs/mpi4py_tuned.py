"""collkit.mpi's errors, declines and tuned() blocks, under mpiexec at any P:

    mpiexec -n 3 python mpi4py_tuned.py TABLE.json

Prints "OK P=.. routed=.." on rank 0 when every check holds; raises (exit 1) otherwise."""

from __future__ import annotations

import sys

import numpy as np
from mpi4py import MPI

import collkit.mpi as ckm
from collkit.errors import AlgorithmNameError, CollkitError

comm = MPI.COMM_WORLD
P, rank = comm.Get_size(), comm.Get_rank()
x = np.arange(5, dtype="d") + rank
y = np.empty_like(x)

# A collkit error is a Python exception with collkit's message, on every rank alike.
# A malformed name is refused before any call (AlgorithmNameError, with a caret); the rest by
# the C API, whose message becomes a CollkitMPIError.
for name, words, kind in [
    ("allreduce:nope", "unknown algorithm", ckm.CollkitMPIError),
    ("bcast:binomial", "bcast", ckm.CollkitMPIError),
    ("allreduce:rm(", "expected", AlgorithmNameError),
]:
    try:
        ckm.Allreduce(comm, x, y, MPI.SUM, algorithm=name)
    except CollkitError as e:
        assert isinstance(e, kind), (name, type(e))
        assert words in str(e), str(e)
    else:
        raise AssertionError(f"{name}: no error")
try:
    ckm.Allreduce(comm, x, y, MPI.SUM, algorithm="mpich:ring")
except ckm.CollkitMPIError as e:
    assert "forced through the environment" in str(e)
else:
    raise AssertionError("mpich:ring per call: no error")


# A call collkit declines (the ring needs a commutative op) is mpi4py's call instead.
def first(a: memoryview, b: memoryview, dt: MPI.Datatype) -> None:
    """A non-commutative op: b = a (the lower rank's value wins)."""
    np.frombuffer(b, dtype="d")[:] = np.frombuffer(a, dtype="d")


op = MPI.Op.Create(first, commute=False)
mine, ref = np.empty_like(x), np.empty_like(x)
ckm.Allreduce(comm, x, mine, op, algorithm="allreduce:ring")
comm.Allreduce(x, ref, op)
assert np.array_equal(mine, ref) and np.array_equal(ref, np.arange(5.0)), (mine, ref)
op.Free()


# A block of unmodified mpi4py code, routed by a tuning table.
def app(world: MPI.Intracomm) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.arange(4, dtype="d") * (world.Get_rank() + 1)
    s = np.empty_like(a)
    world.Allreduce(a, s, MPI.SUM)
    b = np.arange(3, dtype="i") if world.Get_rank() == 0 else np.zeros(3, dtype="i")
    world.Bcast(b, 0)
    sub = world.Split(world.Get_rank() % 2, world.Get_rank())
    t = np.empty_like(a)
    sub.Allreduce(a, t, MPI.SUM)
    sub.Free()
    world.Barrier()
    return s, b, t


plain = app(MPI.COMM_WORLD)
routed_allreduce = type(comm).Allreduce
with ckm.tuned(sys.argv[1]) as routed:
    assert MPI.COMM_WORLD is routed and routed is comm and isinstance(routed, MPI.Intracomm)
    under = app(MPI.COMM_WORLD)
    # The communicator taken before the block (this module's `comm`) is routed as well, and so
    # are the non-blocking forms, whose requests mpi4py's own Wait / Waitall complete.
    taken_before = app(comm)
    a = np.arange(6, dtype="d") + rank
    s, ref = np.empty_like(a), np.empty_like(a)
    req = comm.Iallreduce(a, s, MPI.SUM)
    MPI.Request.Waitall([req, comm.Ibarrier()])
calls_in_block = ckm.routed_calls()
comm.Allreduce(a, ref, MPI.SUM)
assert np.array_equal(s, ref), (s, ref)
assert type(MPI.COMM_WORLD) is MPI.Intracomm  # restored
assert type(comm).Allreduce is routed_allreduce  # mpi4py's own method again
for u, t, p in zip(under, taken_before, plain, strict=True):
    assert np.array_equal(u, p) and np.array_equal(t, p), (u, t, p)
calls = ckm.routed_calls()
assert calls == calls_in_block, (calls, calls_in_block)  # nothing routed after the block
# The table sends allreduce to allreduce:rd and leaves bcast and barrier native: the world's and
# the split communicators' allreduce (twice: looked up in the block, and taken before it) and
# the Iallreduce went through collkit.
assert calls.get(("allreduce", "allreduce:rd"), 0) == 5, calls
assert calls.get(("bcast", "native"), 0) == 2, calls
assert calls.get(("barrier", "native"), 0) == 3, calls  # two Barrier, one Ibarrier
if rank == 0:
    print(f"OK P={P} routed={sorted(calls.items())}", flush=True)
