"""An ordinary mpi4py script (it knows nothing of collkit): numpy-buffer collectives of several
sizes, a pickled-object allreduce, a split communicator. Each rank prints one line per call with
a hash of its result, and rank 0 the time of a loop of small allreduces, so a run under
libcollkit_pmpi.so can be compared line by line with a run without it.

    mpiexec -n 4 python mpi4py_app.py OUT      (rank r writes OUT.r)
"""

import hashlib
import sys
import time

import numpy as np
from mpi4py import MPI


def h(a: object) -> str:
    data = a.tobytes() if isinstance(a, np.ndarray) else repr(a).encode()
    return hashlib.sha256(data).hexdigest()[:16]


OUT = sys.stdout
if len(sys.argv) > 1:  # kept open for the whole run, closed at exit
    OUT = open(f"{sys.argv[1]}.{MPI.COMM_WORLD.Get_rank()}", "w")  # noqa: SIM115


def say(line: str) -> None:
    print(line, file=OUT, flush=True)


def calls(comm: MPI.Comm, name: str) -> None:
    r, p = comm.Get_rank(), comm.Get_size()
    for n in (1, 7, 1000, 40000):
        # Small integers in doubles: every correct reduction order gives the same bits.
        x = ((np.arange(n) * 7 + r * 3) % 11).astype(np.float64)
        y = np.empty_like(x)
        comm.Allreduce(x, y, op=MPI.SUM)
        say(f"rank {r} {name} Allreduce n={n} {h(y)}")
        z = np.empty_like(x) if r == 0 else None
        comm.Reduce(x, z, op=MPI.SUM, root=0)
        say(f"rank {r} {name} Reduce n={n} {h(z) if r == 0 else ''}")
        b = np.arange(n, dtype=np.int64) if r == 0 else np.zeros(n, dtype=np.int64)
        comm.Bcast(b, root=0)
        say(f"rank {r} {name} Bcast n={n} {h(b)}")
        s = (np.arange(n * p, dtype=np.int32) + 1000 * r).astype(np.int32)
        t = np.empty_like(s)
        comm.Alltoall(s, t)
        say(f"rank {r} {name} Alltoall n={n} {h(t)}")
        g = np.empty(n * p, dtype=np.float64)
        comm.Allgather(x, g)
        say(f"rank {r} {name} Allgather n={n} {h(g)}")
        blocks = ((np.arange(n * p) * 5 + r) % 13).astype(np.float64)
        comm.Reduce_scatter_block(blocks, y, op=MPI.SUM)
        say(f"rank {r} {name} Reduce_scatter_block n={n} {h(y)}")
        gat = np.empty(n * p, dtype=np.float64) if r == p - 1 else None
        comm.Gather(x, gat, root=p - 1)
        say(f"rank {r} {name} Gather n={n} {h(gat) if r == p - 1 else ''}")
        sc = np.arange(n * p, dtype=np.int32) if r == 0 else None
        part = np.empty(n, dtype=np.int32)
        comm.Scatter(sc, part, root=0)
        say(f"rank {r} {name} Scatter n={n} {h(part)}")
    say(f"rank {r} {name} allreduce(object) {comm.allreduce(r * r)}")
    comm.Barrier()


def main() -> None:
    world = MPI.COMM_WORLD
    calls(world, "world")
    half = world.Split(world.Get_rank() % 2, world.Get_rank())
    calls(half, "half")
    half.Free()
    x, y = np.ones(1), np.empty(1)
    world.Barrier()
    t0 = time.perf_counter()
    for _ in range(2000):
        world.Allreduce(x, y)
    dt = (time.perf_counter() - t0) / 2000 * 1e6
    if world.Get_rank() == 0:
        print(f"timing: 8-byte Allreduce {dt:.2f} us per call", file=sys.stderr)


if __name__ == "__main__":
    main()
