// The one table of collkit's MPI calls: one line per collective, from which the C API's ck_*
// functions (capi.cpp), the switches of calls.hpp and the interposition library's MPI_X / MPI_X_c
// wrappers (pmpi.cpp) are generated. MPICH generates its bindings from coll_api.txt the same way.
// collkit.h stays written by hand for its readers; tests/core/test_collectives.py checks that it
// declares every collective of this table with the same parameters (and C++ refuses an extern "C"
// ck_* whose definition here differs from its declaration there).
//
// A line:  X(name, Name, counted, params, args, send, recv, op, root, in_place)
//   name      the core's Collective (collective.hpp) and the C API's ck_<name>
//   Name      the MPI call MPI_<Name> (and PMPI_<Name>, MPI_<Name>_c)
//   counted   1 where MPI 4 has the large-count MPI_<Name>_c form (every call with a count)
//   params    the MPI signature, with `Count` for the count type (int, MPI_Count, a template's)
//   args      the same parameters, as the call passes them on
//   send      the send side (buffer, count, datatype) or (): the IR's `in`; an irregular call's
//             (buffer, counts, displs, datatype), P entries each (nullptr: no displacements,
//             MPI_Reduce_scatter's blocks packed)
//   recv      the receive side: the IR's `out` (bcast's one buffer: the root's input lies there)
//   op, root  the call's op (MPI_OP_NULL without a reduction) and root (0 unless rooted)
//   in_place  where the MPI standard allows MPI_IN_PLACE (calls.hpp's InPlace): on which ranks,
//             and whether as recvbuf (MPI_Scatter's root) rather than sendbuf
//
// Parameter names are MPI's own vocabulary (buffer, count, datatype, sendbuf, sendcount, sendtype,
// recvbuf, recvcount, recvtype, op, root, comm; sendcounts, recvcounts, displs, sdispls, rdispls
// for the irregular calls): CK_BIND_CALL_ARGS below binds every one of them
// from a CallArgs, so that any line's `args` can be passed from one.
//
// A new collective is its CollectiveSpec (collective.hpp), one line here, its declaration in
// collkit.h and its algorithms.
#pragma once

// Open MPI before MPI 4 (4.1) has the persistent collectives as MPIX_<Coll>_init (its mpi-ext.h,
// the pcollreq extension): where it does, CK_MPIX_INIT is 1 and collkit routes those names as it
// routes MPI 4's MPI_<Coll>_init.
#if MPI_VERSION < 4 && defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#if MPI_VERSION < 4 && defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define CK_MPIX_INIT 1
#else
#define CK_MPIX_INIT 0
#endif

// The displacements of the irregular calls beside counts of type Count: int arrays beside int
// counts, MPI_Aint beside MPI 4's MPI_Count (its `_c` forms).
#include <type_traits>

#include "collkit/collective.hpp"

namespace collkit::mpi {
template <class Count>
using DisplOf = std::conditional_t<std::is_same_v<Count, int>, int, MPI_Aint>;

// Whether every rank of an irregular call has its whole count vector: a buffer of P blocks on
// every rank holds it (MPI_Allgatherv's recvcounts, MPI_Reduce_scatter's). MPI gives it only to
// the root of a gatherv or scatterv, and each alltoallv rank only its own row and column.
inline bool whole_vector(const CollectiveSpec& spec) {
  const auto everywhere = [](const BufferShape& b) {
    return b.at_root == Blocks::P && b.elsewhere == Blocks::P;
  };
  return spec.counts == Counts::per_rank && (everywhere(spec.in) || everywhere(spec.out));
}
}  // namespace collkit::mpi
#define CK_DISPL(Count) collkit::mpi::DisplOf<Count>

#define CK_COLLECTIVES(X, Count)                                                                  \
  X(allreduce, Allreduce, 1,                                                                      \
    (const void* sendbuf, void* recvbuf, Count count, MPI_Datatype datatype, MPI_Op op,           \
     MPI_Comm comm),                                                                              \
    (sendbuf, recvbuf, count, datatype, op, comm), (sendbuf, count, datatype),                    \
    (recvbuf, count, datatype), op, 0, (every_rank, false))                                       \
  X(reduce, Reduce, 1,                                                                            \
    (const void* sendbuf, void* recvbuf, Count count, MPI_Datatype datatype, MPI_Op op, int root, \
     MPI_Comm comm),                                                                              \
    (sendbuf, recvbuf, count, datatype, op, root, comm), (sendbuf, count, datatype),              \
    (recvbuf, count, datatype), op, root, (root, false))                                          \
  X(bcast, Bcast, 1, (void* buffer, Count count, MPI_Datatype datatype, int root, MPI_Comm comm), \
    (buffer, count, datatype, root, comm), (), (buffer, count, datatype), MPI_OP_NULL, root,      \
    (none, false))                                                                                \
  X(alltoall, Alltoall, 1,                                                                        \
    (const void* sendbuf, Count sendcount, MPI_Datatype sendtype, void* recvbuf, Count recvcount, \
     MPI_Datatype recvtype, MPI_Comm comm),                                                       \
    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm),                           \
    (sendbuf, sendcount, sendtype), (recvbuf, recvcount, recvtype), MPI_OP_NULL, 0,               \
    (every_rank, false))                                                                          \
  X(barrier, Barrier, 0, (MPI_Comm comm), (comm), (), (), MPI_OP_NULL, 0, (none, false))          \
  X(allgather, Allgather, 1,                                                                      \
    (const void* sendbuf, Count sendcount, MPI_Datatype sendtype, void* recvbuf, Count recvcount, \
     MPI_Datatype recvtype, MPI_Comm comm),                                                       \
    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm),                           \
    (sendbuf, sendcount, sendtype), (recvbuf, recvcount, recvtype), MPI_OP_NULL, 0,               \
    (every_rank, false))                                                                          \
  X(reduce_scatter_block, Reduce_scatter_block, 1,                                                \
    (const void* sendbuf, void* recvbuf, Count recvcount, MPI_Datatype datatype, MPI_Op op,       \
     MPI_Comm comm),                                                                              \
    (sendbuf, recvbuf, recvcount, datatype, op, comm), (sendbuf, recvcount, datatype),            \
    (recvbuf, recvcount, datatype), op, 0, (every_rank, false))                                   \
  X(gather, Gather, 1,                                                                            \
    (const void* sendbuf, Count sendcount, MPI_Datatype sendtype, void* recvbuf, Count recvcount, \
     MPI_Datatype recvtype, int root, MPI_Comm comm),                                             \
    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm),                     \
    (sendbuf, sendcount, sendtype), (recvbuf, recvcount, recvtype), MPI_OP_NULL, root,            \
    (root, false))                                                                                \
  X(scatter, Scatter, 1,                                                                          \
    (const void* sendbuf, Count sendcount, MPI_Datatype sendtype, void* recvbuf, Count recvcount, \
     MPI_Datatype recvtype, int root, MPI_Comm comm),                                             \
    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm),                     \
    (sendbuf, sendcount, sendtype), (recvbuf, recvcount, recvtype), MPI_OP_NULL, root,            \
    (root, true))                                                                                 \
  X(allgatherv, Allgatherv, 1,                                                                    \
    (const void* sendbuf, Count sendcount, MPI_Datatype sendtype, void* recvbuf,                  \
     const Count* recvcounts, const CK_DISPL(Count) * displs, MPI_Datatype recvtype,              \
     MPI_Comm comm),                                                                              \
    (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm),                  \
    (sendbuf, sendcount, sendtype), (recvbuf, recvcounts, displs, recvtype), MPI_OP_NULL, 0,      \
    (every_rank, false))                                                                          \
  X(alltoallv, Alltoallv, 1,                                                                      \
    (const void* sendbuf, const Count* sendcounts, const CK_DISPL(Count) * sdispls,               \
     MPI_Datatype sendtype, void* recvbuf, const Count* recvcounts,                               \
     const CK_DISPL(Count) * rdispls, MPI_Datatype recvtype, MPI_Comm comm),                      \
    (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm),       \
    (sendbuf, sendcounts, sdispls, sendtype), (recvbuf, recvcounts, rdispls, recvtype),           \
    MPI_OP_NULL, 0, (every_rank, false))                                                          \
  X(gatherv, Gatherv, 1,                                                                          \
    (const void* sendbuf, Count sendcount, MPI_Datatype sendtype, void* recvbuf,                  \
     const Count* recvcounts, const CK_DISPL(Count) * displs, MPI_Datatype recvtype, int root,    \
     MPI_Comm comm),                                                                              \
    (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm),            \
    (sendbuf, sendcount, sendtype), (recvbuf, recvcounts, displs, recvtype), MPI_OP_NULL, root,   \
    (root, false))                                                                                \
  X(scatterv, Scatterv, 1,                                                                        \
    (const void* sendbuf, const Count* sendcounts, const CK_DISPL(Count) * displs,                \
     MPI_Datatype sendtype, void* recvbuf, Count recvcount, MPI_Datatype recvtype, int root,      \
     MPI_Comm comm),                                                                              \
    (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm),            \
    (sendbuf, sendcounts, displs, sendtype), (recvbuf, recvcount, recvtype), MPI_OP_NULL, root,   \
    (root, true))                                                                                 \
  X(reduce_scatter, Reduce_scatter, 1,                                                            \
    (const void* sendbuf, void* recvbuf, const Count* recvcounts, MPI_Datatype datatype,          \
     MPI_Op op, MPI_Comm comm),                                                                   \
    (sendbuf, recvbuf, recvcounts, datatype, op, comm), (sendbuf, recvcounts, nullptr, datatype), \
    (recvbuf, recvcounts, nullptr, datatype), op, 0, (every_rank, false))                         \
  X(scan, Scan, 1,                                                                                \
    (const void* sendbuf, void* recvbuf, Count count, MPI_Datatype datatype, MPI_Op op,           \
     MPI_Comm comm),                                                                              \
    (sendbuf, recvbuf, count, datatype, op, comm), (sendbuf, count, datatype),                    \
    (recvbuf, count, datatype), op, 0, (every_rank, false))                                       \
  X(exscan, Exscan, 1,                                                                            \
    (const void* sendbuf, void* recvbuf, Count count, MPI_Datatype datatype, MPI_Op op,           \
     MPI_Comm comm),                                                                              \
    (sendbuf, recvbuf, count, datatype, op, comm), (sendbuf, count, datatype),                    \
    (recvbuf, count, datatype), op, 0, (every_rank, false))

// The contents of a parenthesized list: CK_UNPAREN (a, b) is a, b.
#define CK_UNPAREN(...) __VA_ARGS__
// CK_IF_COUNTED_1(x) is x, CK_IF_COUNTED_0(x) nothing: for the lines with (or without) a count.
#define CK_IF_COUNTED_1(...) __VA_ARGS__
#define CK_IF_COUNTED_0(...)
#define CK_IF_COUNTED(counted, ...) CK_IF_COUNTED_##counted(__VA_ARGS__)

// Binds every parameter name of the table's vocabulary from the CallArgs `a` (calls.hpp), counts
// as `Count`, so that a line's `args` can be passed on. A reduction's and bcast's count and
// datatype are CallArgs' receive side, as are bcast's buffer. The irregular calls' arrays are
// CallArgs' vectors (as int where Count is int); `displs` is the side that has them (scatterv's
// send side, gatherv's and allgatherv's receive side).
#define CK_BIND_CALL_ARGS(a, Count)                                                         \
  [[maybe_unused]] const void* sendbuf = (a).sendbuf;                                       \
  [[maybe_unused]] void* recvbuf = (a).recvbuf;                                             \
  [[maybe_unused]] void* buffer = (a).recvbuf;                                              \
  [[maybe_unused]] const Count sendcount = static_cast<Count>((a).sendcount);               \
  [[maybe_unused]] const Count recvcount = static_cast<Count>((a).recvcount);               \
  [[maybe_unused]] const Count count = static_cast<Count>((a).recvcount);                   \
  [[maybe_unused]] MPI_Datatype sendtype = (a).sendtype;                                    \
  [[maybe_unused]] MPI_Datatype recvtype = (a).recvtype;                                    \
  [[maybe_unused]] MPI_Datatype datatype = (a).recvtype;                                    \
  [[maybe_unused]] const Count* sendcounts =                                                \
      collkit::mpi::array_as<Count>((a).sendcounts, (a).narrow[0]);                         \
  [[maybe_unused]] const Count* recvcounts =                                                \
      collkit::mpi::array_as<Count>((a).recvcounts, (a).narrow[1]);                         \
  [[maybe_unused]] const CK_DISPL(Count)* sdispls =                                         \
      collkit::mpi::array_as<CK_DISPL(Count)>((a).sdispls, (a).narrow[2]);                  \
  [[maybe_unused]] const CK_DISPL(Count)* rdispls =                                         \
      collkit::mpi::array_as<CK_DISPL(Count)>((a).rdispls, (a).narrow[3]);                  \
  [[maybe_unused]] const CK_DISPL(Count)* displs = (a).sdispls.empty() ? rdispls : sdispls; \
  [[maybe_unused]] MPI_Op op = (a).op;                                                      \
  [[maybe_unused]] int root = (a).root;                                                     \
  [[maybe_unused]] MPI_Comm comm = (a).comm
