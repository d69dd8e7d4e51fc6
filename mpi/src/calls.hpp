// The MPI signature of each collective, said once for the programs that make the same call
// through collkit's C API and through the MPI itself (the benchmark driver, the conformance
// check): which arguments a call takes, and where MPI_IN_PLACE may go, from the one table of
// calls (call_table.hpp). Buffer sizes, roots and reductions are the collective's CollectiveSpec
// (collective.hpp).
#pragma once
#include <mpi.h>

#include <type_traits>
#include <vector>

#include "call_table.hpp"
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
  // The irregular calls' arrays, P entries each where the call reads them (empty: NULL).
  std::vector<MPI_Count> sendcounts, recvcounts;
  std::vector<MPI_Aint> sdispls, rdispls;
  // The same as int, for the MPI's int forms (refilled each call: the vectors may change).
  mutable std::vector<int> narrow[4];
};

// A vector as the array a call of count type C takes: itself, or narrowed into `narrow`.
template <class C, class V>
const C* array_as(const std::vector<V>& v, std::vector<int>& narrow) {
  if (v.empty()) return nullptr;
  if constexpr (std::is_same_v<C, V>) {
    return v.data();
  } else {
    static_assert(std::is_same_v<C, int>, "only int arrays are narrowed");
    narrow.assign(v.begin(), v.end());
    return narrow.data();
  }
}

// Where MPI_IN_PLACE goes in the MPI call, and on which ranks the standard allows it (not the
// spec's in-place rule: alltoall allows it, and the C API copies the input first).
struct InPlace {
  Ranks ranks = Ranks::none;
  bool as_recvbuf = false;  // MPI_Scatter's root passes it as recvbuf, every other call as sendbuf
};

// The switches below are generated from the one table of calls (call_table.hpp).
inline InPlace mpi_in_place(Collective c) {
#define CK_IN_PLACE_(ranks, as_recvbuf) {Ranks::ranks, as_recvbuf}
#define CK_CASE(name, Name, counted, params, args, send, recv, op, root, in_place) \
  case Collective::name:                                                           \
    return InPlace CK_IN_PLACE_ in_place;
  switch (c) { CK_COLLECTIVES(CK_CASE, MPI_Count) }
#undef CK_CASE
#undef CK_IN_PLACE_
  return {};
}

// The call through collkit's C API, by algorithm name.
inline int call_collkit(Collective c, const CallArgs& a, const char* algorithm) {
  CK_BIND_CALL_ARGS(a, MPI_Count);
#define CK_CASE(name, Name, counted, params, args, send, recv, op, root, in_place) \
  case Collective::name:                                                           \
    return ck_##name(CK_UNPAREN args, algorithm);
  switch (c) { CK_COLLECTIVES(CK_CASE, MPI_Count) }
#undef CK_CASE
  return MPI_ERR_INTERN;
}

// The MPI call (int counts: the callers keep counts small): MPI_X, or with `profiling` PMPI_X,
// the MPI's own collective even where an interposition library (libcollkit_pmpi) is MPI_X.
inline int call_mpi(Collective c, const CallArgs& a, bool profiling = false) {
  CK_BIND_CALL_ARGS(a, int);
#define CK_CASE(name, Name, counted, params, args, send, recv, op, root, in_place) \
  case Collective::name:                                                           \
    return profiling ? PMPI_##Name(CK_UNPAREN args) : MPI_##Name(CK_UNPAREN args);
  switch (c) { CK_COLLECTIVES(CK_CASE, int) }
#undef CK_CASE
  return MPI_ERR_INTERN;
}

// The non-blocking forms of the two calls above: ck_i<coll>, and MPI_I<coll> (PMPI_I<coll>).
inline int call_collkit_nb(Collective c, const CallArgs& a, const char* algorithm,
                           MPI_Request* request) {
  CK_BIND_CALL_ARGS(a, MPI_Count);
#define CK_CASE(name, Name, counted, params, args, send, recv, op, root, in_place) \
  case Collective::name:                                                           \
    return ck_i##name(CK_UNPAREN args, request, algorithm);
  switch (c) { CK_COLLECTIVES(CK_CASE, MPI_Count) }
#undef CK_CASE
  return MPI_ERR_INTERN;
}

inline int call_mpi_nb(Collective c, const CallArgs& a, MPI_Request* request,
                       bool profiling = false) {
  CK_BIND_CALL_ARGS(a, int);
#define CK_CASE(name, Name, counted, params, args, send, recv, op, root, in_place) \
  case Collective::name:                                                           \
    return profiling ? PMPI_I##name(CK_UNPAREN args, request)                      \
                     : MPI_I##name(CK_UNPAREN args, request);
  switch (c) { CK_COLLECTIVES(CK_CASE, int) }
#undef CK_CASE
  return MPI_ERR_INTERN;
}

// The persistent forms: ck_<coll>_init, and (MPI 4) MPI_<Coll>_init (PMPI_<Coll>_init).
inline int call_collkit_init(Collective c, const CallArgs& a, const char* algorithm,
                             MPI_Request* request) {
  CK_BIND_CALL_ARGS(a, MPI_Count);
#define CK_CASE(name, Name, counted, params, args, send, recv, op, root, in_place) \
  case Collective::name:                                                           \
    return ck_##name##_init(CK_UNPAREN args, MPI_INFO_NULL, request, algorithm);
  switch (c) { CK_COLLECTIVES(CK_CASE, MPI_Count) }
#undef CK_CASE
  return MPI_ERR_INTERN;
}

#if MPI_VERSION >= 4
inline int call_mpi_init(Collective c, const CallArgs& a, MPI_Request* request,
                         bool profiling = false) {
  CK_BIND_CALL_ARGS(a, int);
#define CK_CASE(name, Name, counted, params, args, send, recv, op, root, in_place) \
  case Collective::name:                                                           \
    return profiling ? PMPI_##Name##_init(CK_UNPAREN args, MPI_INFO_NULL, request) \
                     : MPI_##Name##_init(CK_UNPAREN args, MPI_INFO_NULL, request);
  switch (c) { CK_COLLECTIVES(CK_CASE, int) }
#undef CK_CASE
  return MPI_ERR_INTERN;
}
#endif

}  // namespace collkit::mpi
