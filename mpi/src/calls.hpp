// The MPI signature of each collective, said once for the programs that make the same call
// through collkit's C API and through the MPI itself (the benchmark driver, the conformance
// check): which arguments a call takes, and where MPI_IN_PLACE may go. Buffer sizes, roots and
// reductions are the collective's CollectiveSpec (collective.hpp); only what differs per C
// function is here.
#pragma once
#include <mpi.h>

#include "collkit.h"
#include "collkit/collective.hpp"

namespace collkit::mpi {

// Every argument any collective takes; each call reads the ones its signature has. Counts are per
// block (per rank for bcast and the reductions), as MPI's are.
struct CallArgs {
  const void* sendbuf = nullptr;
  MPI_Count sendcount = 0;
  MPI_Datatype sendtype = MPI_DATATYPE_NULL;
  void* recvbuf = nullptr;                    // bcast's one buffer
  MPI_Count recvcount = 0;                    // the count of bcast and the reductions
  MPI_Datatype recvtype = MPI_DATATYPE_NULL;  // the datatype of bcast and the reductions
  MPI_Op op = MPI_OP_NULL;
  int root = 0;
  MPI_Comm comm = MPI_COMM_WORLD;
};

// Where MPI_IN_PLACE goes in the MPI call, and on which ranks the standard allows it (not the
// spec's in-place rule: alltoall allows it, and the C API copies the input first).
struct InPlace {
  Ranks ranks = Ranks::none;
  bool as_recvbuf = false;  // MPI_Scatter's root passes it as recvbuf, every other call as sendbuf
};

inline InPlace mpi_in_place(Collective c) {
  switch (c) {
    case Collective::allreduce:
    case Collective::alltoall:
    case Collective::allgather:
    case Collective::reduce_scatter_block:
      return {Ranks::every_rank, false};
    case Collective::reduce:
    case Collective::gather:
      return {Ranks::root, false};
    case Collective::scatter:
      return {Ranks::root, true};
    case Collective::bcast:
    case Collective::barrier:
      return {};
  }
  return {};
}

// The call through collkit's C API, by algorithm name.
inline int call_collkit(Collective c, const CallArgs& a, const char* algorithm) {
  switch (c) {
    case Collective::allreduce:
      return ck_allreduce(a.sendbuf, a.recvbuf, a.recvcount, a.recvtype, a.op, a.comm, algorithm);
    case Collective::reduce:
      return ck_reduce(a.sendbuf, a.recvbuf, a.recvcount, a.recvtype, a.op, a.root, a.comm,
                       algorithm);
    case Collective::bcast:
      return ck_bcast(a.recvbuf, a.recvcount, a.recvtype, a.root, a.comm, algorithm);
    case Collective::alltoall:
      return ck_alltoall(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcount, a.recvtype,
                         a.comm, algorithm);
    case Collective::barrier:
      return ck_barrier(a.comm, algorithm);
    case Collective::allgather:
      return ck_allgather(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcount, a.recvtype,
                          a.comm, algorithm);
    case Collective::reduce_scatter_block:
      return ck_reduce_scatter_block(a.sendbuf, a.recvbuf, a.recvcount, a.recvtype, a.op, a.comm,
                                     algorithm);
    case Collective::gather:
      return ck_gather(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcount, a.recvtype,
                       a.root, a.comm, algorithm);
    case Collective::scatter:
      return ck_scatter(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcount, a.recvtype,
                        a.root, a.comm, algorithm);
  }
  return MPI_ERR_INTERN;
}

// The MPI call (int counts: the callers keep counts small): MPI_X, or with `profiling` PMPI_X,
// the MPI's own collective even where an interposition library (libcollkit_pmpi) is MPI_X.
inline int call_mpi(Collective c, const CallArgs& a, bool profiling = false) {
  const int sn = static_cast<int>(a.sendcount), rn = static_cast<int>(a.recvcount);
#define CK_MPI(f, ...) (profiling ? P##f(__VA_ARGS__) : f(__VA_ARGS__))
  switch (c) {
    case Collective::allreduce:
      return CK_MPI(MPI_Allreduce, a.sendbuf, a.recvbuf, rn, a.recvtype, a.op, a.comm);
    case Collective::reduce:
      return CK_MPI(MPI_Reduce, a.sendbuf, a.recvbuf, rn, a.recvtype, a.op, a.root, a.comm);
    case Collective::bcast:
      return CK_MPI(MPI_Bcast, a.recvbuf, rn, a.recvtype, a.root, a.comm);
    case Collective::alltoall:
      return CK_MPI(MPI_Alltoall, a.sendbuf, sn, a.sendtype, a.recvbuf, rn, a.recvtype, a.comm);
    case Collective::barrier:
      return CK_MPI(MPI_Barrier, a.comm);
    case Collective::allgather:
      return CK_MPI(MPI_Allgather, a.sendbuf, sn, a.sendtype, a.recvbuf, rn, a.recvtype, a.comm);
    case Collective::reduce_scatter_block:
      return CK_MPI(MPI_Reduce_scatter_block, a.sendbuf, a.recvbuf, rn, a.recvtype, a.op, a.comm);
    case Collective::gather:
      return CK_MPI(MPI_Gather, a.sendbuf, sn, a.sendtype, a.recvbuf, rn, a.recvtype, a.root,
                    a.comm);
    case Collective::scatter:
      return CK_MPI(MPI_Scatter, a.sendbuf, sn, a.sendtype, a.recvbuf, rn, a.recvtype, a.root,
                    a.comm);
  }
#undef CK_MPI
  return MPI_ERR_INTERN;
}

}  // namespace collkit::mpi
