"""An ordinary mpi4py script using the non-blocking collectives (it knows nothing of collkit):
comm.Iallreduce, comm.Ibcast and comm.Ibarrier, several in flight at once on one communicator,
overlapped with compute and point-to-point messages, completed by Wait, Test loops, Waitall and
Waitany. Each rank writes one line per result with its hash, so a run under libcollkit_pmpi.so
can be compared line by line with a run without it.

    mpiexec -n 3 python mpi4py_nonblocking.py OUT      (rank r writes OUT.r)
"""

import hashlib
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
r, p = comm.Get_rank(), comm.Get_size()
out = open(f"{sys.argv[1]}.{r}", "w")  # noqa: SIM115


def h(a: np.ndarray) -> str:
    return hashlib.sha256(a.tobytes()).hexdigest()[:16]


for n in (1, 7, 1000, 40000):
    x = ((np.arange(n) * 7 + r * 3) % 11).astype(np.float64)
    y = np.empty_like(x)
    req = comm.Iallreduce(x, y, op=MPI.SUM)
    s = float(np.sum(np.sqrt(np.arange(20000.0))))  # compute while it runs
    req.Wait()
    out.write(f"Iallreduce n={n} {h(y)} {s:.3f}\n")

    b = np.arange(n, dtype=np.int64) if r == 0 else np.zeros(n, dtype=np.int64)
    req = comm.Ibcast(b, root=0)
    while not req.Test():
        pass
    out.write(f"Ibcast n={n} {h(b)}\n")

    # Three collectives in flight on one communicator, a message ring beside them.
    y2 = np.empty_like(x)
    b2 = np.full(n, r, dtype=np.int32)
    ring_in = np.empty(1, dtype=np.int64)
    reqs = [
        comm.Iallreduce(x, y2, op=MPI.MAX),
        comm.Ibcast(b2, root=p - 1),
        comm.Ibarrier(),
        comm.Irecv(ring_in, source=(r - 1) % p, tag=7),
        comm.Isend(np.array([r * 100], dtype=np.int64), dest=(r + 1) % p, tag=7),
    ]
    if n % 2:
        MPI.Request.Waitall(reqs)
    else:
        for _ in reqs:
            MPI.Request.Waitany(reqs)
    out.write(f"mixed n={n} {h(y2)} {h(b2)} {int(ring_in[0])}\n")

req = comm.Ibarrier()
req.Wait()
out.write("done\n")
out.close()
