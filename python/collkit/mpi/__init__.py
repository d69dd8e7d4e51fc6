"""collkit over MPI.

Two faces:
- **The MPIs themselves** (one module each: mpich.py, openmpi.py, intel.py, behind base.MPI):
  finding one (find.py), building collkit's MPI programs for it (programs.py) and launching them
  (launch.py). Every command that runs MPI goes through these.
- **collkit's algorithms on mpi4py communicators** (face.py): ``collkit.mpi.Allreduce(comm,
  sendbuf, recvbuf, op=MPI.SUM, algorithm="allreduce:rm(a4)")`` and the other eight
  collectives, their non-blocking forms (``collkit.mpi.Iallreduce(...)`` ... return a request
  to wait on), and ``collkit.mpi.tuned(table)``, which routes a block of unmodified mpi4py code
  by a tuning table. mpi4py is imported only when one of these is called.
"""

from __future__ import annotations

from collkit.mpi.base import MPI, PLACEMENTS
from collkit.mpi.face import (
    Allgather,
    Allgatherv,
    Allreduce,
    Alltoall,
    Alltoallv,
    Barrier,
    Bcast,
    CollkitMPIError,
    Exscan,
    Gather,
    Gatherv,
    Iallgather,
    Iallreduce,
    Ialltoall,
    Ibarrier,
    Ibcast,
    Igather,
    Ireduce,
    Ireduce_scatter_block,
    Iscatter,
    Reduce,
    Reduce_scatter,
    Reduce_scatter_block,
    Scan,
    Scatter,
    Scatterv,
    routed_calls,
    tuned,
)
from collkit.mpi.find import IMPLEMENTATIONS, KINDS, find_mpi, find_mpi_of_kind, implementation
from collkit.mpi.intel import IntelMpi
from collkit.mpi.launch import allocation, cores, launch_command, launch_env, placement_args
from collkit.mpi.mpich import Mpich
from collkit.mpi.openmpi import OpenMpi
from collkit.mpi.programs import PROGRAMS, MissingToolError, build, cache_root, source_dir

__all__ = [
    "IMPLEMENTATIONS",
    "KINDS",
    "MPI",
    "PLACEMENTS",
    "PROGRAMS",
    "Allgather",
    "Allgatherv",
    "Allreduce",
    "Alltoall",
    "Alltoallv",
    "Barrier",
    "Bcast",
    "CollkitMPIError",
    "Exscan",
    "Gather",
    "Gatherv",
    "Iallgather",
    "Iallreduce",
    "Ialltoall",
    "Ibarrier",
    "Ibcast",
    "Igather",
    "IntelMpi",
    "Ireduce",
    "Ireduce_scatter_block",
    "Iscatter",
    "MissingToolError",
    "Mpich",
    "OpenMpi",
    "Reduce",
    "Reduce_scatter",
    "Reduce_scatter_block",
    "Scan",
    "Scatter",
    "Scatterv",
    "allocation",
    "build",
    "cache_root",
    "cores",
    "find_mpi",
    "find_mpi_of_kind",
    "implementation",
    "launch_command",
    "launch_env",
    "placement_args",
    "routed_calls",
    "source_dir",
    "tuned",
]
