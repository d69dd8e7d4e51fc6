// collkit_conformance: every collective of the C API against the MPI's own call, on random data.
// Run under mpiexec with any number of ranks; rank 0 prints one FAIL line per failing case (the
// first 30), SKIP lines for cases the MPI itself refuses, and a SUMMARY line; exit status 1 when
// anything failed.
//
//   collkit_conformance --algos "allreduce:rd;bcast:pipeline(seg=16);..." [--level quick|full]
//                       [--counts 0,1,P-1,13,1000] [--seed 1] [--errors] [--nonblocking]
//                       [--blocking-reference alltoall,...] [--persistent]
//
// What one case is: an algorithm x a communicator (world, dup, split in halves, reversed) x a
// root (every root of a rooted collective) x a count x a datatype x (reductions) an op x
// MPI_IN_PLACE or not (on the ranks where the standard allows it). Buffer sizes, roots, whose
// output is specified and what it must be come from the collective's CollectiveSpec; only the
// MPI signature is per collective (../src/calls.hpp). collkit's result must equal the MPI's own
// call on the same input:
// - copies (bcast, alltoall, ...): every byte of the user's buffer, the gaps of the datatype
//   included (both start from the same sentinel), with each rank describing the *same type
//   signature* its own way, differently for sending and receiving (MPI_INT runs, contiguous,
//   vector and indexed with gaps and reordered blocks, hindexed, struct, resized with a huge
//   extent or a negative lower bound, dup'ed, and absolute addresses on MPI_BOTTOM);
// - reductions (allreduce, reduce, ...): every predefined op on the types it applies to
//   (MINLOC / MAXLOC on pair types), predefined ops on derived types, user commutative and
//   non-commutative ops (the latter must equal the rank-ordered product of the input element the
//   postcondition names, computed here from everyone's input; a commutative-only algorithm must
//   decline it, alike on every rank). Integers are compared exactly, floating point within a
//   tolerance (the reduction order of the two trees differs) and, where every rank holds the
//   same result, bitwise across ranks.
// - barrier: completes, and orders: no rank leaves before every rank has entered.
// The reference is whatever the MPI runs: the tests also force each of its own algorithms
// (MPIR_CVAR_..._INTRA_ALGORITHM, OMPI_MCA_coll_tuned_...), and COLLKIT_MAX_CHUNK=5 takes the
// path of counts past 2^31 with small buffers. --errors checks the C API's error messages.
//
// collkit_conformance_pmpi is the same program built against the interposition library
// (libcollkit_pmpi): "collkit's call" is then the MPI call itself, MPI_X, which the library routes
// by its tuning table, one rule (every P, every size) naming the algorithm under test, set before
// each algorithm through the library's reader (collkit_pmpi_use_table); the reference is the
// MPI's own PMPI_X. Where the algorithm cannot take a call (P, the op, the element size), the
// library declines it alike on every rank and the MPI's own call runs: the results must still
// be equal. A line "ROUTE algorithm ran=N declined=M" per algorithm (world rank 0's calls) says
// which happened.
// collkit_conformance prints "CAPI algorithm ran=N declined=M" the same way for the C API.
//
// --nonblocking checks the non-blocking forms the same way (ck_i<coll>, or MPI_I<coll> through the
// interposition library, against the MPI's own MPI_I<coll>), each call overlapped with random
// compute, point-to-point traffic and a second collective in flight on the same communicator,
// and completed by a random mix of MPI_Wait / MPI_Test / MPI_Waitall / MPI_Waitany / MPI_Testall.
// Then the irregular copies of the run (gatherv, scatterv, alltoallv, allgatherv) are started one
// after another on one communicator, one rank late, and completed in reverse order (a line
// "OUTSTANDING algorithms ran=N declined=M"); with the C API a gatherv, scatterv or alltoallv
// whose ranks' counts disagree must fail alike on every rank ("DISAGREE algorithm failed alike"),
// and so must one whose counts agree but break a limit only the exchanged vector shows (a block
// past 2^48 bytes, a buffer of P blocks past it, the same with a datatype with gaps: "LIMIT
// algorithm block|total|gaps failed alike").
//
// --persistent checks the persistent forms the same way: each call under test is ck_<coll>_init
// (or MPI_<Coll>_init through the interposition library, MPI 4 only), started with MPI_Start and
// completed as above, started and completed a second time where the call is not in place (the
// same input must give the same output: the handle's state is reused), then freed; the reference
// is the MPI's own MPI_<Coll>_init (MPI 4) or its blocking call. A check per algorithm starts two
// handles (MPI_Startall or MPI_Start) round after round with new data each time, beside a
// non-blocking allreduce and point-to-point messages, completed by MPI_Waitall / MPI_Testany /
// MPI_Waitsome / MPI_Test mixes over the mixed array, each round against the MPI's blocking call.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "../src/bench_common.hpp"
#include "../src/calls.hpp"
#include "collkit.h"
#include "collkit/collective.hpp"
#ifdef COLLKIT_VIA_PMPI
#include <unistd.h>

#include "collkit_pmpi.h"
#endif

using namespace collkit;
using collkit::mpi::Args;
using collkit::mpi::call_collkit;
using collkit::mpi::call_mpi;
using collkit::mpi::CallArgs;
using collkit::mpi::InPlace;
using collkit::mpi::mpi_in_place;
using collkit::mpi::split;

namespace {

int g_failures = 0, g_cases = 0, g_skipped = 0, g_declined = 0, g_world_rank = 0;
// The MPI's own MPI_SUM on MPI_UNSIGNED_CHAR saturates instead of wrapping (Open MPI 4.1's vector
// op does, on 16 bytes or more): then unsigned char sums are kept below 256.
bool g_uchar_sum_saturates = false;
bool g_full = false;

#ifdef COLLKIT_VIA_PMPI
constexpr bool kViaPmpi = true;
#else
constexpr bool kViaPmpi = false;
#endif

// --nonblocking: every call under test is the non-blocking form (ck_i<coll>, or MPI_I<coll>
// through the interposition library), overlapped with random work before it is completed, and the
// reference is the MPI's own non-blocking call.
bool g_nonblocking = false;
bool g_persistent = false;         // --persistent (implies the overlap of --nonblocking)
uint64_t g_seed = 1, g_calls = 0;  // g_calls: the same on every rank (all make the same calls)

void busy(std::chrono::microseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

// What a non-blocking call overlaps with, chosen alike on every rank of `comm` (the generator is
// seeded by the call's number): compute, point-to-point traffic with both neighbours on the same
// communicator, a second collkit collective in flight on it (an allreduce whose sum is checked),
// and then a completion call: MPI_Wait, an MPI_Test loop, MPI_Waitall / MPI_Waitany / an
// MPI_Testall loop / MPI_Testsome loop over the mixed array. The first error code is returned.
int overlap_and_complete(MPI_Comm comm, MPI_Request call, const std::string& algo) {
  std::mt19937_64 pick(g_seed * 7919 + g_calls);
  int P = 1, rank = 0;
  MPI_Comm_size(comm, &P);
  MPI_Comm_rank(comm, &rank);
  std::vector<MPI_Request> reqs = {call};
  int sent = rank * 1000 + 7, got = -1, mine = rank + 1, sum = -1;
  const bool p2p = pick() % 2 == 0, second = pick() % 3 == 0;
  const unsigned compute_us = static_cast<unsigned>(pick() % 4) * 50;
  if (p2p) {
    MPI_Request r[2];
    MPI_Irecv(&got, 1, MPI_INT, (rank + P - 1) % P, 4242, comm, &r[0]);
    MPI_Isend(&sent, 1, MPI_INT, (rank + 1) % P, 4242, comm, &r[1]);
    reqs.insert(reqs.end(), r, r + 2);
  }
  if (second) {
    MPI_Request r;
    int rc = kViaPmpi ? MPI_Iallreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, comm, &r)
                      : ck_iallreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, comm, &r, "allreduce:rd");
    if (rc != MPI_SUCCESS) return rc;
    reqs.push_back(r);
  }
  busy(std::chrono::microseconds(compute_us));
  int rc = MPI_SUCCESS, flag = 0;
  const int n = static_cast<int>(reqs.size());
  switch (pick() % 5) {
    case 0:
      for (MPI_Request& r : reqs)
        if (int e = MPI_Wait(&r, MPI_STATUS_IGNORE); e != MPI_SUCCESS && rc == MPI_SUCCESS) rc = e;
      break;
    case 1:
      for (MPI_Request& r : reqs) do {
          rc = MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
        } while (rc == MPI_SUCCESS && !flag);
      break;
    case 2:
      rc = MPI_Waitall(n, reqs.data(), MPI_STATUSES_IGNORE);
      break;
    case 3:
      for (int k = 0; k < n && rc == MPI_SUCCESS; ++k) {
        int index = MPI_UNDEFINED;
        rc = MPI_Waitany(n, reqs.data(), &index, MPI_STATUS_IGNORE);
      }
      break;
    default:
      if (g_persistent && kViaPmpi) {
        // A declined MPI_<Coll>_init leaves the MPI's own persistent request here, and MPICH
        // 5.0.2's MPI_Testall returns MPI_ERR_IN_STATUS (every status MPI_SUCCESS) on an array
        // holding one of those while it is active: an MPI_Testsome loop instead.
        int outcount = 0;
        std::vector<int> indices(reqs.size());
        do {
          rc = MPI_Testsome(n, reqs.data(), &outcount, indices.data(), MPI_STATUSES_IGNORE);
        } while (rc == MPI_SUCCESS && outcount != MPI_UNDEFINED);
        break;
      }
      do {
        rc = MPI_Testall(n, reqs.data(), &flag, MPI_STATUSES_IGNORE);
      } while (rc == MPI_SUCCESS && !flag);
      break;
  }
  if (rc != MPI_SUCCESS) return rc;
  if (p2p && got != ((rank + P - 1) % P) * 1000 + 7)
    std::fprintf(stderr, "world rank %d: %s: point-to-point beside it got %d\n", g_world_rank,
                 algo.c_str(), got);
  if (p2p && got != ((rank + P - 1) % P) * 1000 + 7) return MPI_ERR_OTHER;
  if (second && sum != P * (P + 1) / 2) {
    std::fprintf(stderr, "world rank %d: %s: the allreduce beside it gave %d\n", g_world_rank,
                 algo.c_str(), sum);
    return MPI_ERR_OTHER;
  }
  return MPI_SUCCESS;
}

// The call under test: collkit's C API by name, or (built against the interposition library)
// the MPI call that the library routes by its table.
// The persistent form of the call under test: init, one start (two where the call is not in place),
// each overlapped and completed as a non-blocking call is, then MPI_Request_free.
int persistent_call(Collective c, const CallArgs& a, const std::string& algo) {
  MPI_Request h = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  if constexpr (kViaPmpi) {
#if MPI_VERSION >= 4
    rc = collkit::mpi::call_mpi_init(c, a, &h);
#else
    rc = MPI_ERR_UNSUPPORTED_OPERATION;  // main refuses --persistent here
#endif
  } else {
    rc = collkit::mpi::call_collkit_init(c, a, algo.c_str(), &h);
  }
  if (rc != MPI_SUCCESS) return rc;
  // Two starts unless some rank is in place (then a second start would read its own output);
  // every rank must make the same number of starts.
  const int again = a.sendbuf != MPI_IN_PLACE && a.recvbuf != MPI_IN_PLACE;
  int all_again = 0;
  PMPI_Allreduce(&again, &all_again, 1, MPI_INT, MPI_MIN, a.comm);
  const int starts = all_again ? 2 : 1;
  for (int k = 0; k < starts && rc == MPI_SUCCESS; ++k) {
    if (k > 0) ++g_calls;
    rc = MPI_Start(&h);
    if (rc == MPI_SUCCESS) rc = overlap_and_complete(a.comm, h, algo);
  }
  if (int e = MPI_Request_free(&h); e != MPI_SUCCESS && rc == MPI_SUCCESS) rc = e;
  if (rc == MPI_SUCCESS && h != MPI_REQUEST_NULL) rc = MPI_ERR_REQUEST;
  return rc;
}

// The C API's calls under test on world rank 0 that ran and that declined (a line "CAPI
// algorithm ran=N declined=M" per algorithm; through the interposition library its own counts
// make the ROUTE line instead).
long long g_capi_ran = 0, g_capi_declined = 0;

int collkit_call_once(Collective c, const CallArgs& a, const std::string& algo) {
  if (g_persistent) return persistent_call(c, a, algo);
  if (!g_nonblocking) {
    if constexpr (kViaPmpi) return call_mpi(c, a);
    return call_collkit(c, a, algo.c_str());
  }
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = kViaPmpi ? collkit::mpi::call_mpi_nb(c, a, &r)
                          : collkit::mpi::call_collkit_nb(c, a, algo.c_str(), &r);
  if (rc != MPI_SUCCESS) return rc;
  return overlap_and_complete(a.comm, r, algo);
}

int collkit_call(Collective c, const CallArgs& a, const std::string& algo) {
  ++g_calls;
  const int rc = collkit_call_once(c, a, algo);
  if (rc != MPI_SUCCESS && ck_declined(rc))
    ++g_capi_declined;
  else
    ++g_capi_ran;
  return rc;
}

// --blocking-reference alltoall,...: the collectives whose non-blocking reference is the MPI's
// blocking call (where the MPI's own non-blocking one is wrong: tests/test_mpi_nonblocking.py).
std::vector<std::string> g_blocking_reference;

// The reference: the MPI's own call (with --nonblocking its non-blocking one, then MPI_Wait).
int reference_call(Collective c, const CallArgs& a) {
#if MPI_VERSION >= 4
  if (g_persistent && std::find(g_blocking_reference.begin(), g_blocking_reference.end(),
                                std::string(to_string(c))) == g_blocking_reference.end()) {
    MPI_Request r = MPI_REQUEST_NULL;
    if (int rc = collkit::mpi::call_mpi_init(c, a, &r, kViaPmpi); rc != MPI_SUCCESS) return rc;
    int rc = MPI_Start(&r);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Request_free(&r);
    return rc;
  }
#endif
  if (!g_nonblocking || g_persistent ||
      std::find(g_blocking_reference.begin(), g_blocking_reference.end(),
                std::string(to_string(c))) != g_blocking_reference.end())
    return call_mpi(c, a, kViaPmpi);
  MPI_Request r = MPI_REQUEST_NULL;
  if (int rc = collkit::mpi::call_mpi_nb(c, a, &r, kViaPmpi); rc != MPI_SUCCESS) return rc;
  return MPI_Wait(&r, MPI_STATUS_IGNORE);
}

void fail(const std::string& what) {
  ++g_failures;
  if (g_failures <= 30) std::printf("FAIL %s\n", what.c_str());
}

// Agrees on a case's outcome across `comm` and reports it once (from the communicator's rank 0).
void settle(MPI_Comm comm, const std::string& label, const std::string& why, bool skip = false) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  int mine[2] = {!why.empty() && !skip, skip ? 1 : 0}, all[2] = {0, 0};
  MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, comm);
  if (all[1]) {
    ++g_skipped;
    if (rank == 0 && g_skipped <= 10) std::printf("SKIP %s: %s\n", label.c_str(), why.c_str());
    return;
  }
  ++g_cases;
  if (mine[0])
    std::fprintf(stderr, "world rank %d: %s: %s\n", g_world_rank, label.c_str(), why.c_str());
  if (all[0] && rank == 0) fail(label + (mine[0] ? ": " + why : ": failed on another rank"));
}

std::string describe_error(int rc) {
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, s, &len);
  return std::string(ck_error_message()) + " | " + std::string(s, static_cast<size_t>(len));
}

// ---------------------------------------------------------------------------------------------
// Buffers described by a datatype: memory with a sentinel, the pointer passed to MPI (possibly
// MPI_BOTTOM) and the datatype and count. Built from the packed data they should hold.

struct Buffer {
  std::vector<unsigned char> mem;
  void* base = nullptr;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Count count = 0;
  bool own_type = false;
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (own_type) MPI_Type_free(&type);
  }
};

constexpr unsigned char kSentinel = 0xAB;
constexpr int kUnitInts = 6;  // the signature of the "int" family is a multiple of 6 MPI_INTs

// One way of describing n units (6 ints each) of memory. Returns the element type (owned when
// derived) and the ints per element.
struct Description {
  const char* name;
  // Builds the type for a buffer whose memory starts at `mem` (absolute types need it).
  std::function<MPI_Datatype(unsigned char* mem)> make;
  int ints_per_elem;
  bool bottom = false;  // buffer passed as MPI_BOTTOM, the type holds absolute addresses
  bool huge = false;    // 2 MiB extent: only small counts
};

MPI_Datatype committed(MPI_Datatype t) {
  MPI_Type_commit(&t);
  return t;
}

std::vector<Description> int_descriptions() {
  std::vector<Description> d;
  d.push_back({"MPI_INT", [](unsigned char*) { return MPI_INT; }, 1});
  d.push_back({"contiguous(6,int)",
               [](unsigned char*) {
                 MPI_Datatype t;
                 MPI_Type_contiguous(6, MPI_INT, &t);
                 return committed(t);
               },
               6});
  d.push_back({"vector(3,1,2,int)",  // ints at 0, 2, 4 of 5 slots: gaps
               [](unsigned char*) {
                 MPI_Datatype t;
                 MPI_Type_vector(3, 1, 2, MPI_INT, &t);
                 return committed(t);
               },
               3});
  d.push_back({"indexed({2,1},{3,0})",  // ints at 3, 4, then 0: gaps and reordered
               [](unsigned char*) {
                 MPI_Datatype t;
                 int len[2] = {2, 1}, disp[2] = {3, 0};
                 MPI_Type_indexed(2, len, disp, MPI_INT, &t);
                 return committed(t);
               },
               3});
  d.push_back({"hindexed({1,1},{8,0})",  // dense but reversed: not a plain byte copy
               [](unsigned char*) {
                 MPI_Datatype t;
                 int len[2] = {1, 1};
                 MPI_Aint disp[2] = {8, 0};
                 MPI_Datatype h;
                 MPI_Type_create_hindexed(2, len, disp, MPI_INT, &h);
                 MPI_Type_create_resized(h, 0, 12, &t);  // a gap of 4 bytes after the pair
                 MPI_Type_free(&h);
                 return committed(t);
               },
               2});
  d.push_back({"struct{int[2]@0,int@16}",
               [](unsigned char*) {
                 MPI_Datatype t;
                 int len[2] = {2, 1};
                 MPI_Aint disp[2] = {0, 16};
                 MPI_Datatype types[2] = {MPI_INT, MPI_INT};
                 MPI_Type_create_struct(2, len, disp, types, &t);
                 return committed(t);
               },
               3});
  d.push_back({"resized(contiguous(2,int),lb=-64,extent=2MiB)",
               [](unsigned char*) {
                 MPI_Datatype c, t;
                 MPI_Type_contiguous(2, MPI_INT, &c);
                 MPI_Type_create_resized(c, -64, 2 << 20, &t);
                 MPI_Type_free(&c);
                 return committed(t);
               },
               2, false, true});
  d.push_back({"resized(int,lb=-4,extent=-8)",  // negative extent: elements run downwards
               [](unsigned char*) {
                 MPI_Datatype t;
                 MPI_Type_create_resized(MPI_INT, -4, -8, &t);
                 return committed(t);
               },
               1});
  d.push_back({"dup(vector(3,1,2,int))",
               [](unsigned char*) {
                 MPI_Datatype v, t;
                 MPI_Type_vector(3, 1, 2, MPI_INT, &v);
                 MPI_Type_dup(v, &t);
                 MPI_Type_free(&v);
                 return committed(t);
               },
               3});
  d.push_back({"contiguous(3,int) dense",
               [](unsigned char*) {
                 MPI_Datatype t;
                 MPI_Type_contiguous(3, MPI_INT, &t);
                 return committed(t);
               },
               3});
  // Absolute addresses on MPI_BOTTOM: element i at address(mem) + i * 24.
  d.push_back({"MPI_BOTTOM+hindexed(abs)",
               [](unsigned char* mem) {
                 MPI_Aint a;
                 MPI_Get_address(mem, &a);
                 int len = 6;
                 MPI_Datatype h, t;
                 MPI_Type_create_hindexed(1, &len, &a, MPI_INT, &h);
                 MPI_Type_create_resized(h, a, 24, &t);
                 MPI_Type_free(&h);
                 return committed(t);
               },
               6, true});
  d.push_back({"MPI_BOTTOM+hindexed(abs,halves swapped)",
               [](unsigned char* mem) {
                 MPI_Aint a;
                 MPI_Get_address(mem, &a);
                 int len[2] = {3, 3};
                 MPI_Aint disp[2] = {a + 12, a};
                 MPI_Datatype h, t;
                 MPI_Type_create_hindexed(2, len, disp, MPI_INT, &h);
                 MPI_Type_create_resized(h, a, 24, &t);
                 MPI_Type_free(&h);
                 return committed(t);
               },
               6, true});
  return d;
}

// Lays out `elems` elements of a type made by `d`, fills the memory with the sentinel and
// unpacks `packed` (elems * ints_per_elem ints) into it.
void make_buffer(const Description& d, MPI_Count elems, const std::vector<int>& packed, Buffer& b) {
  // A first type to learn the extent (absolute types depend on the address: made again below).
  std::vector<unsigned char> probe(8);
  MPI_Datatype t0 = d.make(probe.data());
  MPI_Aint lb, extent, tlb, textent;
  MPI_Type_get_extent(t0, &lb, &extent);
  MPI_Type_get_true_extent(t0, &tlb, &textent);
  if (t0 != MPI_INT) MPI_Type_free(&t0);
  if (d.bottom) {
    b.mem.assign(static_cast<size_t>(elems * 24) + 64, kSentinel);
    b.type = d.make(b.mem.data() + 32);
    b.base = MPI_BOTTOM;
  } else {
    const int64_t step = extent < 0 ? -extent : extent;
    const int64_t lowest = (extent < 0 && elems > 0 ? (elems - 1) * extent : 0) + tlb;
    const int64_t span = elems > 0 ? (elems - 1) * step + textent : 0;
    b.mem.assign(static_cast<size_t>(span) + 64, kSentinel);
    b.type = d.make(b.mem.data());
    b.base = b.mem.data() + 32 - lowest;
  }
  b.own_type = b.type != MPI_INT;
  b.count = elems;
  if (elems > 0) {
    int pos = 0;
    MPI_Unpack(packed.data(), static_cast<int>(packed.size() * sizeof(int)), &pos, b.base,
               static_cast<int>(elems), b.type, MPI_COMM_SELF);
  }
}

std::vector<int> random_ints(size_t n, std::mt19937_64& rng) {
  std::vector<int> v(n);
  for (int& x : v) x = static_cast<int>(rng());
  return v;
}

std::string first_difference(const Buffer& got, const Buffer& want) {
  if (got.mem.size() != want.mem.size()) return "buffer sizes differ";
  for (size_t i = 0; i < got.mem.size(); ++i)
    if (got.mem[i] != want.mem[i]) {
      const bool gap = want.mem[i] == kSentinel && got.mem[i] != kSentinel;
      return "byte " + std::to_string(i) +
             (gap ? " (a gap or outside the data) was written" : " differs from the MPI's result");
    }
  return "";
}

struct CommCase {
  const char* name;
  MPI_Comm comm;
};

// ---------------------------------------------------------------------------------------------
// Copies (bcast, alltoall, ...): the same type signature described differently on each rank, the
// buffers sized by the collective's spec, MPI_IN_PLACE on the ranks where the standard allows it.

void check_copy(Collective coll, const CommCase& cc, const std::string& algo, int64_t units,
                int root, bool in_place, size_t case_no, std::mt19937_64& rng,
                const std::vector<Description>& descs) {
  const CollectiveSpec& spec = spec_of(coll);
  int rank, P;
  MPI_Comm_rank(cc.comm, &rank);
  MPI_Comm_size(cc.comm, &P);
  // Every rank picks its own descriptions of the same signature.
  const Description& ds = descs[(static_cast<size_t>(rank) + case_no) % descs.size()];
  const Description& dr = descs[(static_cast<size_t>(rank) * 7 + case_no + 1) % descs.size()];
  const size_t ints = static_cast<size_t>(units) * kUnitInts;  // per block
  const int64_t in_blocks = buffer_elems(spec.in, P, 1, root, rank);
  const int64_t out_blocks = buffer_elems(spec.out, P, 1, root, rank);
  const InPlace ip = mpi_in_place(coll);
  const bool here_in_place = in_place && applies_to(ip.ranks, root, rank);
  const MPI_Count selems = static_cast<MPI_Count>(ints) * in_blocks / ds.ints_per_elem;
  const MPI_Count relems = static_cast<MPI_Count>(ints) * out_blocks / dr.ints_per_elem;
  // The huge-extent description needs 2 MiB per element: a few elements only.
  int huge = (ds.huge && selems > 6) || (dr.huge && relems > 6), skip = 0;
  MPI_Allreduce(&huge, &skip, 1, MPI_INT, MPI_MAX, cc.comm);
  if (skip) return;
  std::vector<int> send = random_ints(ints * static_cast<size_t>(in_blocks), rng);
  std::vector<int> old = random_ints(ints * static_cast<size_t>(out_blocks), rng);
  Buffer sb, mine, ref;
  make_buffer(ds, selems, send, sb);
  make_buffer(dr, relems, old, mine);  // in place, `old` is the input where MPI says it lies
  make_buffer(dr, relems, old, ref);
  CallArgs a;
  a.root = root;
  a.comm = cc.comm;
  // A side with no blocks on this rank is not significant there: nothing is passed.
  if (in_blocks > 0) {
    a.sendbuf = sb.base;
    a.sendcount = static_cast<MPI_Count>(ints) / ds.ints_per_elem;
    a.sendtype = sb.type;
  }
  if (out_blocks > 0) {
    a.recvbuf = mine.base;
    a.recvcount = static_cast<MPI_Count>(ints) / dr.ints_per_elem;
    a.recvtype = mine.type;
  }
  if (here_in_place && ip.as_recvbuf) {
    a.recvbuf = MPI_IN_PLACE;
    a.recvcount = 0;
    a.recvtype = MPI_DATATYPE_NULL;
  } else if (here_in_place) {
    a.sendbuf = MPI_IN_PLACE;
    a.sendcount = 0;
    a.sendtype = MPI_DATATYPE_NULL;
  }
  const std::string label = std::string(cc.name) + " P=" + std::to_string(P) + " " + algo +
                            (spec.rooted ? " root=" + std::to_string(root) : "") +
                            " units=" + std::to_string(units) + " case=" + std::to_string(case_no) +
                            (in_place ? " IN_PLACE" : "");
  std::string why;
  const std::vector<unsigned char> sent = sb.mem;
  int rc = collkit_call(coll, a, algo);
  if (rc != MPI_SUCCESS) why = "error: " + describe_error(rc);
  if (why.empty() && sb.mem != sent) why = "the send buffer was written";
  if (out_blocks > 0 && a.recvbuf != MPI_IN_PLACE) {
    a.recvbuf = ref.base;
    a.recvtype = ref.type;  // absolute addresses: each buffer has its own type
  }
  if (reference_call(coll, a) != MPI_SUCCESS) {
    settle(cc.comm, label, std::string("the MPI's own ") + std::string(spec.mpi) + " refused it",
           true);
    return;
  }
  if (why.empty()) why = first_difference(mine, ref);
  if (!why.empty())
    why += std::string(" [this rank sends ") + ds.name + ", receives " + dr.name + "]";
  settle(cc.comm, label, why);
}

// The irregular copies (allgatherv, alltoallv, gatherv, scatterv): a count vector alike on every
// rank, drawn from `shared` (zeros included: all, some, all but one), in units of 6 ints per
// block; each rank describes its own blocks with its own datatypes and lays them out at its own
// displacements, in a shuffled order with gaps (element slots no block uses). The gaps must stay
// as they were: the whole memory of each buffer is compared with the MPI's own call's.
std::vector<int64_t> draw_units(size_t n, int64_t most, std::mt19937_64& shared) {
  std::vector<int64_t> u(n, 0);
  const int kind = static_cast<int>(shared() % 4);
  const size_t one = static_cast<size_t>(shared() % n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x =
        most > 0 ? static_cast<int64_t>(shared() % static_cast<uint64_t>(most + 1)) : 0;
    u[i] = kind == 0   ? 0
           : kind == 1 ? (shared() % 2 ? x : 0)
           : kind == 2 ? (i == one ? most : 0)
                       : x;
  }
  return u;
}

// Displacements (in elements) for blocks of these element counts: shuffled, with gaps.
std::vector<MPI_Aint> scattered_displs(const std::vector<MPI_Count>& n, std::mt19937_64& rng,
                                       MPI_Count& total) {
  std::vector<size_t> order(n.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<MPI_Aint> d(n.size(), 0);
  MPI_Aint at = 0;
  for (size_t b : order) {
    at += static_cast<MPI_Aint>(rng() % 3);
    d[b] = at;
    at += static_cast<MPI_Aint>(n[b]);
  }
  total = at + static_cast<MPI_Aint>(rng() % 2);
  return d;
}

// An irregular call's vectors for the checks of the non-blocking and persistent machinery: `n`
// elements per block, packed (the regular call's layout).
void regular_vectors(CallArgs& a, const CollectiveSpec& spec, int P, MPI_Count n) {
  if (spec.counts == Counts::none) return;
  const size_t blocks = static_cast<size_t>(P);
  a.sendcounts.assign(blocks, n);
  a.recvcounts.assign(blocks, n);
  a.sdispls.resize(blocks);
  a.rdispls.resize(blocks);
  for (size_t b = 0; b < blocks; ++b) a.sdispls[b] = a.rdispls[b] = static_cast<MPI_Aint>(b) * n;
}

void check_copy_v(Collective coll, const CommCase& cc, const std::string& algo, int64_t most,
                  int root, bool in_place, size_t case_no, std::mt19937_64& rng,
                  const std::vector<Description>& all_descs) {
  const CollectiveSpec& spec = spec_of(coll);
  int rank, P;
  MPI_Comm_rank(cc.comm, &rank);
  MPI_Comm_size(cc.comm, &P);
  // Descriptions whose elements can lie at any displacement (no absolute addresses, no 2 MiB
  // extents).
  std::vector<const Description*> descs;
  for (const Description& d : all_descs)
    if (!d.bottom && !d.huge) descs.push_back(&d);
  const Description& ds = *descs[(static_cast<size_t>(rank) + case_no) % descs.size()];
  const Description& dr = *descs[(static_cast<size_t>(rank) * 7 + case_no + 1) % descs.size()];
  std::mt19937_64 shared(g_seed * 7919 + case_no);  // the same draws on every rank
  const bool pairs = spec.counts == Counts::per_pair;
  const size_t Pz = static_cast<size_t>(P);
  std::vector<int64_t> u = draw_units(pairs ? Pz * Pz : Pz, most, shared);
  const InPlace ip = mpi_in_place(coll);
  const bool here_in_place = in_place && applies_to(ip.ranks, root, rank);
  if (pairs && in_place)  // MPI: an in-place alltoallv sends what it receives
    for (size_t r = 0; r < Pz; ++r)
      for (size_t q = 0; q < r; ++q) u[r * Pz + q] = u[q * Pz + r];
  // Units of block b of this rank's `in` and `out`.
  const auto in_units = [&](size_t b) {
    return pairs ? u[static_cast<size_t>(rank) * Pz + b] : u[b];
  };
  const auto out_units = [&](size_t b) {
    return pairs ? u[b * Pz + static_cast<size_t>(rank)] : u[b];
  };
  const int64_t in_blocks = buffer_elems(spec.in, P, 1, root, rank);
  const int64_t out_blocks = buffer_elems(spec.out, P, 1, root, rank);
  CallArgs a;
  a.root = root;
  a.comm = cc.comm;
  // One side: a P-block buffer at shuffled displacements, or this rank's one block.
  struct SideBufs {
    Buffer mine, ref;
    std::vector<MPI_Count> counts;
    std::vector<MPI_Aint> displs;
    MPI_Count count = 0;
  };
  // Whether this rank's side holds P blocks (a vector) or one: from the spec, not from the
  // number of blocks, which is 1 either way at P = 1.
  const auto holds_p = [&](const BufferShape& shape) {
    return (spec.rooted && rank == root ? shape.at_root : shape.elsewhere) == Blocks::P;
  };
  const auto make_side = [&](const Description& d, int64_t blocks, bool vector,
                             const auto& units_of, SideBufs& s) {
    MPI_Count elems = 0;
    if (blocks > 0 && vector) {
      for (size_t b = 0; b < Pz; ++b) s.counts.push_back(units_of(b) * kUnitInts / d.ints_per_elem);
      s.displs = scattered_displs(s.counts, rng, elems);
    } else if (blocks == 1) {
      s.count = units_of(static_cast<size_t>(rank)) * kUnitInts / d.ints_per_elem;
      elems = s.count;
    }
    const std::vector<int> data =
        random_ints(static_cast<size_t>(elems) * static_cast<size_t>(d.ints_per_elem), rng);
    make_buffer(d, elems, data, s.mine);
    make_buffer(d, elems, data, s.ref);
  };
  SideBufs sb, rb;
  make_side(ds, in_blocks, holds_p(spec.in), in_units, sb);
  make_side(dr, out_blocks, holds_p(spec.out), out_units, rb);
  if (in_blocks > 0) {
    a.sendbuf = sb.mine.base;
    a.sendtype = sb.mine.type;
    a.sendcount = sb.count;
    a.sendcounts = sb.counts;
    a.sdispls = sb.displs;
  }
  if (out_blocks > 0) {
    a.recvbuf = rb.mine.base;
    a.recvtype = rb.mine.type;
    a.recvcount = rb.count;
    a.recvcounts = rb.counts;
    a.rdispls = rb.displs;
  }
  if (here_in_place && ip.as_recvbuf) {
    a.recvbuf = MPI_IN_PLACE;
    a.recvcount = 0;
    a.recvtype = MPI_DATATYPE_NULL;
  } else if (here_in_place) {
    a.sendbuf = MPI_IN_PLACE;
    a.sendcount = 0;
    a.sendtype = MPI_DATATYPE_NULL;
    a.sendcounts.clear();
    a.sdispls.clear();
  }
  std::string vec;
  for (size_t i = 0; i < u.size() && i < 16; ++i) vec += (i ? "," : "") + std::to_string(u[i]);
  const std::string label = std::string(cc.name) + " P=" + std::to_string(P) + " " + algo +
                            (spec.rooted ? " root=" + std::to_string(root) : "") + " units=[" +
                            vec + (u.size() > 16 ? ",..." : "") +
                            "] case=" + std::to_string(case_no) + (in_place ? " IN_PLACE" : "");
  std::string why;
  const std::vector<unsigned char> sent = sb.mine.mem;
  int rc = collkit_call(coll, a, algo);
  if (rc != MPI_SUCCESS) why = "error: " + describe_error(rc);
  if (why.empty() && a.sendbuf != MPI_IN_PLACE && sb.mine.mem != sent)
    why = "the send buffer was written";
  if (a.sendbuf != MPI_IN_PLACE && in_blocks > 0) a.sendbuf = sb.ref.base;
  if (a.recvbuf != MPI_IN_PLACE && out_blocks > 0) a.recvbuf = rb.ref.base;
  if (reference_call(coll, a) != MPI_SUCCESS) {
    settle(cc.comm, label, std::string("the MPI's own ") + std::string(spec.mpi) + " refused it",
           true);
    return;
  }
  if (why.empty() && out_blocks > 0) why = first_difference(rb.mine, rb.ref);
  if (why.empty() && in_blocks > 0) why = first_difference(sb.mine, sb.ref);
  if (!why.empty())
    why += std::string(" [this rank sends ") + ds.name + ", receives " + dr.name + "]";
  settle(cc.comm, label, why);
}

// ---------------------------------------------------------------------------------------------
// Reductions: the datatype and op are the same on every rank (the standard says so).

enum class Cmp { exact, real32, real64, complex };

struct RedType {
  const char* name;
  std::function<MPI_Datatype()> make;
  size_t bytes_per_elem;  // of the packed element
  Cmp cmp;
  // Fills one packed element from rng (values chosen so that products and sums stay exact where
  // the comparison is exact).
  std::function<void(unsigned char*, std::mt19937_64&, MPI_Op)> fill;
  std::vector<std::pair<const char*, MPI_Op>> ops;
  bool noncommutative = false;  // the op is the rank-ordered matrix product
};

// 2x2 matrices of uint32 multiplied mod 2^32: associative, not commutative.
void matmul_op(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<uint32_t*>(in);
  auto* b = static_cast<uint32_t*>(inout);
  for (int i = 0; i < *len; ++i, a += 4, b += 4) {
    uint32_t c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                     a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
    std::memcpy(b, c, sizeof c);
  }
}

// A commutative user op on the vector(3,1,2,int) type: sums the three ints, leaves gaps alone.
void vec_sum_op(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<int*>(in);
  auto* b = static_cast<int*>(inout);
  for (int i = 0; i < *len; ++i, a += 5, b += 5)
    for (int k = 0; k < 5; k += 2)
      b[k] = static_cast<int>(static_cast<unsigned>(a[k]) + static_cast<unsigned>(b[k]));
}

int small_int(std::mt19937_64& rng, MPI_Op op) {
  if (op == MPI_PROD) return static_cast<int>(rng() % 5) - 2;
  if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR) return static_cast<int>(rng() % 3 == 0);
  if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) return static_cast<int>(rng());
  return static_cast<int>(rng() % 2001) - 1000;
}

void put_ints(unsigned char* e, int n, std::mt19937_64& rng, MPI_Op op) {
  for (int k = 0; k < n; ++k) {
    int v = small_int(rng, op);
    std::memcpy(e + 4 * k, &v, 4);
  }
}

struct RedOps {
  MPI_Op vec_sum = MPI_OP_NULL, matmul = MPI_OP_NULL;
};

std::vector<RedType> reduction_types(const RedOps& user) {
  const std::vector<std::pair<const char*, MPI_Op>> int_ops = {
      {"SUM", MPI_SUM},   {"PROD", MPI_PROD}, {"MAX", MPI_MAX},   {"MIN", MPI_MIN},
      {"LAND", MPI_LAND}, {"LOR", MPI_LOR},   {"LXOR", MPI_LXOR}, {"BAND", MPI_BAND},
      {"BOR", MPI_BOR},   {"BXOR", MPI_BXOR}};
  auto ints = [](int n) {
    return [n](unsigned char* e, std::mt19937_64& rng, MPI_Op op) { put_ints(e, n, rng, op); };
  };
  auto derived = [](std::function<void(MPI_Datatype*)> f) {
    return [f] {
      MPI_Datatype t;
      f(&t);
      return committed(t);
    };
  };
  std::vector<RedType> v;
  v.push_back({"int", [] { return MPI_INT; }, 4, Cmp::exact, ints(1), int_ops});
  v.push_back({"unsigned char",
               [] { return MPI_UNSIGNED_CHAR; },
               1,
               Cmp::exact,
               [](unsigned char* e, std::mt19937_64& rng, MPI_Op op) {
                 *e = static_cast<unsigned char>(op == MPI_PROD ? rng() % 3
                                                 : op == MPI_SUM && g_uchar_sum_saturates
                                                     ? rng() % 16
                                                     : rng());
               },
               {{"SUM", MPI_SUM}, {"MAX", MPI_MAX}, {"BXOR", MPI_BXOR}, {"BOR", MPI_BOR}}});
  v.push_back({"long long",
               [] { return MPI_LONG_LONG; },
               8,
               Cmp::exact,
               [](unsigned char* e, std::mt19937_64& rng, MPI_Op op) {
                 long long x = op == MPI_PROD ? static_cast<long long>(rng() % 7) - 3
                                              : static_cast<long long>(rng() >> 4);
                 std::memcpy(e, &x, 8);
               },
               {{"SUM", MPI_SUM}, {"PROD", MPI_PROD}, {"MIN", MPI_MIN}, {"BAND", MPI_BAND}}});
  v.push_back({"float",
               [] { return MPI_FLOAT; },
               4,
               Cmp::real32,
               [](unsigned char* e, std::mt19937_64& rng, MPI_Op op) {
                 std::uniform_real_distribution<float> u(-1, 1), p(0.5f, 1.5f);
                 float x = op == MPI_PROD ? p(rng) : u(rng);
                 std::memcpy(e, &x, 4);
               },
               {{"SUM", MPI_SUM}, {"MAX", MPI_MAX}, {"PROD", MPI_PROD}}});
  v.push_back({"double",
               [] { return MPI_DOUBLE; },
               8,
               Cmp::real64,
               [](unsigned char* e, std::mt19937_64& rng, MPI_Op op) {
                 std::uniform_real_distribution<double> u(-1, 1), p(0.5, 1.5);
                 double x = op == MPI_PROD ? p(rng) : u(rng);
                 std::memcpy(e, &x, 8);
               },
               {{"SUM", MPI_SUM}, {"MIN", MPI_MIN}, {"PROD", MPI_PROD}}});
  v.push_back({"double complex",
               [] { return MPI_C_DOUBLE_COMPLEX; },
               16,
               Cmp::complex,
               [](unsigned char* e, std::mt19937_64& rng, MPI_Op) {
                 std::uniform_real_distribution<double> p(0.5, 1.5);
                 std::complex<double> x(p(rng), p(rng) - 1.0);
                 std::memcpy(e, &x, 16);
               },
               {{"SUM", MPI_SUM}, {"PROD", MPI_PROD}}});
  // Pair types: MINLOC / MAXLOC (ties go to the smaller index, as the standard says).
  v.push_back({"double_int",
               [] { return MPI_DOUBLE_INT; },
               12,
               Cmp::exact,
               [](unsigned char* e, std::mt19937_64& rng, MPI_Op) {
                 double x = static_cast<double>(rng() % 4);
                 int i = static_cast<int>(rng() % 100);
                 std::memcpy(e, &x, 8);
                 std::memcpy(e + 8, &i, 4);
               },
               {{"MINLOC", MPI_MINLOC}, {"MAXLOC", MPI_MAXLOC}}});
  v.push_back({"2int",
               [] { return MPI_2INT; },
               8,
               Cmp::exact,
               [](unsigned char* e, std::mt19937_64& rng, MPI_Op) {
                 int x[2] = {static_cast<int>(rng() % 4), static_cast<int>(rng() % 100)};
                 std::memcpy(e, x, 8);
               },
               {{"MINLOC", MPI_MINLOC}, {"MAXLOC", MPI_MAXLOC}}});
  // Derived types with predefined ops (all of one predefined type, as the standard requires).
  v.push_back({"contiguous(6,int)",
               derived([](MPI_Datatype* t) { MPI_Type_contiguous(6, MPI_INT, t); }),
               24,
               Cmp::exact,
               ints(6),
               {{"SUM", MPI_SUM}, {"BXOR", MPI_BXOR}}});
  v.push_back({"vector(3,1,2,int)",
               derived([](MPI_Datatype* t) { MPI_Type_vector(3, 1, 2, MPI_INT, t); }),
               12,
               Cmp::exact,
               ints(3),
               {{"SUM", MPI_SUM}, {"MAX", MPI_MAX}, {"user-sum", user.vec_sum}}});
  v.push_back({"indexed({2,1},{3,0})",
               derived([](MPI_Datatype* t) {
                 int len[2] = {2, 1}, disp[2] = {3, 0};
                 MPI_Type_indexed(2, len, disp, MPI_INT, t);
               }),
               12,
               Cmp::exact,
               ints(3),
               {{"BXOR", MPI_BXOR}, {"MIN", MPI_MIN}}});
  v.push_back({"resized(double,lb=-8,extent=24)",
               derived([](MPI_Datatype* t) { MPI_Type_create_resized(MPI_DOUBLE, -8, 24, t); }),
               8,
               Cmp::real64,
               [](unsigned char* e, std::mt19937_64& rng, MPI_Op) {
                 std::uniform_real_distribution<double> u(-1, 1);
                 double x = u(rng);
                 std::memcpy(e, &x, 8);
               },
               {{"SUM", MPI_SUM}}});
  v.push_back({"dup(int)",
               derived([](MPI_Datatype* t) { MPI_Type_dup(MPI_INT, t); }),
               4,
               Cmp::exact,
               ints(1),
               {{"SUM", MPI_SUM}, {"MAX", MPI_MAX}}});
  v.push_back({"matrix(contiguous(4,uint32))",
               derived([](MPI_Datatype* t) { MPI_Type_contiguous(4, MPI_UINT32_T, t); }),
               16,
               Cmp::exact,
               [](unsigned char* e, std::mt19937_64& rng, MPI_Op) {
                 for (int s = 0; s < 4; ++s) {
                   uint32_t x = static_cast<uint32_t>(rng());
                   std::memcpy(e + 4 * s, &x, 4);
                 }
               },
               {{"noncommutative", user.matmul}},
               true});
  return v;
}

void free_if_derived(MPI_Datatype& t) {
  int ni, na, nd, combiner;
  MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
  if (combiner != MPI_COMBINER_NAMED) MPI_Type_free(&t);
}

bool close(const unsigned char* g, const unsigned char* w, Cmp cmp, int P) {
  switch (cmp) {
    case Cmp::exact:
      return false;  // compared bytewise by the caller
    case Cmp::real32: {
      float a, b;
      std::memcpy(&a, g, 4);
      std::memcpy(&b, w, 4);
      return std::fabs(a - b) <= 1e-5f * static_cast<float>(P) * (std::fabs(b) + 1.0f);
    }
    case Cmp::real64: {
      double a, b;
      std::memcpy(&a, g, 8);
      std::memcpy(&b, w, 8);
      return std::fabs(a - b) <= 1e-13 * P * (std::fabs(b) + 1.0);
    }
    case Cmp::complex: {
      std::complex<double> a, b;
      std::memcpy(&a, g, 16);
      std::memcpy(&b, w, 16);
      return std::abs(a - b) <= 1e-12 * P * (std::abs(b) + 1.0);
    }
  }
  return false;
}

// A reduction buffer: `count` elements of the type, with a sentinel in its gaps, optionally on
// MPI_BOTTOM (the type is then resized around absolute addresses: made per buffer).
struct RedBuffer {
  std::vector<unsigned char> mem;
  void* base = nullptr;
};

void red_buffer(MPI_Datatype t, MPI_Count count, const std::vector<unsigned char>& packed,
                RedBuffer& b) {
  MPI_Aint lb, extent, tlb, textent;
  MPI_Type_get_extent(t, &lb, &extent);
  MPI_Type_get_true_extent(t, &tlb, &textent);
  const int64_t span = count > 0 ? (count - 1) * extent + textent : 0;
  b.mem.assign(static_cast<size_t>(span) + 64, kSentinel);
  b.base = b.mem.data() + 32 - tlb;
  if (count > 0) {
    int pos = 0;
    MPI_Unpack(packed.data(), static_cast<int>(packed.size()), &pos, b.base,
               static_cast<int>(count), t, MPI_COMM_SELF);
  }
}

std::vector<unsigned char> packed_of(const void* base, MPI_Datatype t, MPI_Count count,
                                     size_t bytes) {
  std::vector<unsigned char> out(bytes);
  int pos = 0;
  if (count > 0)
    MPI_Pack(base, static_cast<int>(count), t, out.data(), static_cast<int>(bytes), &pos,
             MPI_COMM_SELF);
  return out;
}

// MPI_Reduce_scatter: `count` is the most elements of a block, the vector drawn alike on every
// rank (zeros included), block b of the input counts[b] elements.
void check_reduction(Collective coll, const CommCase& cc, const std::string& algo,
                     const RedType& rt, const std::pair<const char*, MPI_Op>& op, MPI_Count count,
                     int root, bool in_place, std::mt19937_64& rng, size_t case_no = 0) {
  const CollectiveSpec& spec = spec_of(coll);
  int rank, P;
  MPI_Comm_rank(cc.comm, &rank);
  MPI_Comm_size(cc.comm, &P);
  MPI_Datatype t = rt.make();
  const int64_t in_blocks = buffer_elems(spec.in, P, 1, root, rank);
  const int64_t out_blocks = buffer_elems(spec.out, P, 1, root, rank);
  MPI_Count in_elems = count * in_blocks, out_elems = count * out_blocks;
  std::vector<MPI_Count> vcounts;  // the count vector; empty: the regular form
  MPI_Count before = 0;            // elements of the blocks before this rank's
  if (spec.counts == Counts::per_rank) {
    std::mt19937_64 shared(g_seed * 7919 + case_no);
    for (int64_t u : draw_units(static_cast<size_t>(P), count, shared)) vcounts.push_back(u);
    in_elems = 0;
    for (int b = 0; b < P; ++b) {
      if (b < rank) before += vcounts[static_cast<size_t>(b)];
      in_elems += vcounts[static_cast<size_t>(b)];
    }
    out_elems = vcounts[static_cast<size_t>(rank)];
  }
  const size_t eb = rt.bytes_per_elem;
  const size_t in_bytes = static_cast<size_t>(in_elems) * eb;
  const size_t out_bytes = static_cast<size_t>(out_elems) * eb;
  std::vector<unsigned char> in(in_bytes), junk(out_bytes);
  for (size_t i = 0; i < in_bytes; i += eb) rt.fill(in.data() + i, rng, op.second);
  for (size_t i = 0; i < out_bytes; i += eb) rt.fill(junk.data() + i, rng, op.second);
  // Whose output is specified (not exscan's rank 0).
  const bool out_here =
      applies_to(spec.post.ranks, root, rank) &&
      expected_out(spec, P, count, root, rank, 0).kind != Expected::Kind::unspecified;
  const bool here_in_place = in_place && applies_to(mpi_in_place(coll).ranks, root, rank);
  // In place, the input lies in recvbuf (all of it: reduce_scatter_block's P blocks).
  RedBuffer send, mine, ref;
  red_buffer(t, in_elems, in, send);
  red_buffer(t, here_in_place ? in_elems : out_elems, here_in_place ? in : junk, mine);
  red_buffer(t, here_in_place ? in_elems : out_elems, here_in_place ? in : junk, ref);
  CallArgs a;
  a.sendbuf = here_in_place ? MPI_IN_PLACE : send.base;
  a.sendcount = a.recvcount = count;
  a.sendtype = a.recvtype = t;
  a.recvbuf = mine.base;
  a.op = op.second;
  a.root = root;
  a.comm = cc.comm;
  a.recvcounts = vcounts;
  std::string vec;
  for (size_t i = 0; i < vcounts.size() && i < 16; ++i)
    vec += (i ? "," : "") + std::to_string(vcounts[i]);
  const std::string label = std::string(cc.name) + " P=" + std::to_string(P) + " " + algo + " " +
                            rt.name + " " + op.first + " count=" + std::to_string(count) +
                            (vcounts.empty() ? "" : " counts=[" + vec + "]") +
                            (spec.rooted ? " root=" + std::to_string(root) : "") +
                            (in_place ? " IN_PLACE" : "");
  std::string why;
  int rc = collkit_call(coll, a, algo);
  const bool declined = rc != MPI_SUCCESS && ck_declined(rc);
  // A commutative-only algorithm declines a non-commutative op; one that needs an op exact under
  // any grouping (allreduce:swing_lat) declines floating point, MINLOC / MAXLOC and user ops.
  const bool may_decline =
      rt.noncommutative ||
      (declined && std::strstr(ck_error_message(), "needs an op exact") != nullptr);
  if (rc != MPI_SUCCESS && !(declined && may_decline)) why = "error: " + describe_error(rc);
  if (declined && may_decline && rank == 0 && ++g_declined <= 3)
    std::printf("DECLINED %s: %s\n", label.c_str(), ck_error_message());
  a.recvbuf = ref.base;
  int nbad = reference_call(coll, a) != MPI_SUCCESS, nany = 0;
  MPI_Allreduce(&nbad, &nany, 1, MPI_INT, MPI_MAX, cc.comm);
  if (nany) {
    settle(cc.comm, label, "the MPI's own call refused it", true);
    free_if_derived(t);
    return;
  }
  if (declined && may_decline) {
    // A commutative-only algorithm must decline a non-commutative op, on every rank alike (and
    // an exact-op-only one an inexact op).
    settle(cc.comm, label, "");
    free_if_derived(t);
    return;
  }
  if (rt.noncommutative) {
    // The answer is the rank-ordered product x0 x1 ... x(P-1) of the input element the spec's
    // postcondition names, whatever the MPI does.
    std::vector<unsigned char> everyone(in_bytes * static_cast<size_t>(P));
    MPI_Allgather(in.data(), static_cast<int>(in_bytes), MPI_BYTE, everyone.data(),
                  static_cast<int>(in_bytes), MPI_BYTE, cc.comm);
    if (out_here && out_elems > 0) {
      std::vector<unsigned char> product(out_bytes);
      for (MPI_Count i = 0; i < out_elems; ++i) {
        const Expected e = expected_out(spec, P, count, root, rank, i);
        // The input element: the regular formula, or after the blocks before this rank's.
        const int64_t index = vcounts.empty() ? e.index : before + i;
        unsigned char* x = product.data() + static_cast<size_t>(i) * eb;
        auto of = [&](int64_t q) {
          return everyone.data() + in_bytes * static_cast<size_t>(q) +
                 static_cast<size_t>(index) * eb;
        };
        // Ranks first..last (all of them, or a prefix for scan and exscan), in rank order.
        std::memcpy(x, of(e.last), eb);
        int one = 1;
        for (int64_t q = e.last - 1; q >= e.first; --q) matmul_op(of(q), x, &one, &t);
      }
      int pos = 0;
      MPI_Unpack(product.data(), static_cast<int>(out_bytes), &pos, ref.base,
                 static_cast<int>(out_elems), t, MPI_COMM_SELF);
    }
  }
  if (why.empty() && out_here) {
    // Exact types: every byte of the buffer, gaps included; beyond the output of an in-place
    // reduce_scatter_block the standard says nothing, so there only the output is compared.
    const bool whole = rt.cmp == Cmp::exact && !(here_in_place && in_elems != out_elems);
    if (whole) {
      for (size_t i = 0; i < mine.mem.size() && why.empty(); ++i)
        if (mine.mem[i] != ref.mem[i])
          why = "byte " + std::to_string(i) + " differs from the MPI's result";
    } else {
      const auto g = packed_of(mine.base, t, out_elems, out_bytes),
                 w = packed_of(ref.base, t, out_elems, out_bytes);
      for (size_t i = 0; i < out_bytes && why.empty(); i += eb) {
        const bool same = rt.cmp == Cmp::exact ? std::memcmp(g.data() + i, w.data() + i, eb) == 0
                                               : close(g.data() + i, w.data() + i, rt.cmp, P);
        if (!same) why = "element " + std::to_string(i / eb) + " differs beyond tolerance";
      }
      // The memory around the data must be untouched.
      for (size_t i = 0; i < 32 && why.empty(); ++i)
        if (mine.mem[i] != kSentinel || mine.mem[mine.mem.size() - 1 - i] != kSentinel)
          why = "memory outside the buffer was written";
    }
  }
  if (spec.post.ranks == Ranks::every_rank && spec.post.index == SourceIndex::same &&
      !spec.prefix()) {
    // Every rank holds the same result: bitwise identical to rank 0's.
    std::vector<unsigned char> first = packed_of(mine.base, t, out_elems, out_bytes);
    std::vector<unsigned char> r0 = first;
    MPI_Bcast(r0.data(), static_cast<int>(out_bytes), MPI_BYTE, 0, cc.comm);
    if (why.empty() && r0 != first) why = "result differs from rank 0's (not bitwise identical)";
  }
  settle(cc.comm, label, why);
  free_if_derived(t);
}

// MPI_BOTTOM for a reduction: an absolute-address type around one buffer of doubles.
void check_reduction_bottom(Collective coll, const CommCase& cc, const std::string& algo,
                            MPI_Count count, int root, std::mt19937_64& rng) {
  int rank, P;
  MPI_Comm_rank(cc.comm, &rank);
  MPI_Comm_size(cc.comm, &P);
  const bool all = spec_of(coll).post.ranks == Ranks::every_rank;
  const size_t n = static_cast<size_t>(count);
  std::vector<long long> in(n + 1), mine(n + 1, -1), ref(n + 1, -1);  // +1: never empty
  for (auto& x : in) x = static_cast<long long>(rng() % 1000);
  auto abs_type = [&](void* p) {
    MPI_Aint a;
    MPI_Get_address(p, &a);
    int len = 1;
    MPI_Datatype h, t;
    MPI_Type_create_hindexed(1, &len, &a, MPI_LONG_LONG, &h);
    MPI_Type_create_resized(h, a, 8, &t);
    MPI_Type_free(&h);
    return committed(t);
  };
  // One type per receive buffer (collkit's, the MPI's), holding its absolute address.
  MPI_Datatype tm = abs_type(mine.data()), tr = abs_type(ref.data());
  const std::string label = std::string(cc.name) + " P=" + std::to_string(P) + " " + algo +
                            " MPI_BOTTOM IN_PLACE long long SUM count=" + std::to_string(count) +
                            (all ? "" : " root=" + std::to_string(root));
  // In place on MPI_BOTTOM (as Fortran codes with absolute addresses do): the root (every rank
  // of an allreduce) passes MPI_IN_PLACE; the others of a reduce send from MPI_BOTTOM.
  for (size_t i = 0; i < n; ++i) mine[i] = ref[i] = in[i];
  const bool here = all || rank == root;
  std::string why;
  CallArgs a;
  a.sendbuf = here ? MPI_IN_PLACE : MPI_BOTTOM;
  a.recvbuf = here ? MPI_BOTTOM : nullptr;
  a.sendcount = a.recvcount = count;
  a.sendtype = a.recvtype = tm;
  a.op = MPI_SUM;
  a.root = root;
  a.comm = cc.comm;
  int rc = collkit_call(coll, a, algo);
  if (rc != MPI_SUCCESS) why = "error: " + describe_error(rc);
  // The reference: the MPI's own call on a plain copy (MPICH 4's own allreduce / reduce give
  // wrong results in place on MPI_BOTTOM: noted once, when seen).
  std::vector<long long> plain(in.begin(), in.end());
  CallArgs p = a;  // the same call on a plain buffer
  p.sendbuf = here ? MPI_IN_PLACE : in.data();
  p.recvbuf = here ? plain.data() : nullptr;
  p.sendtype = p.recvtype = MPI_LONG_LONG;
  reference_call(coll, p);
  a.sendtype = a.recvtype = tr;  // and on MPI_BOTTOM
  const int ref_rc = reference_call(coll, a);
  // Through the interposition library a declined call is the MPI's own: where the MPI refuses
  // this call itself (MPICH: a predefined op on a derived type), so does the routed call.
  int refused = kViaPmpi && rc != MPI_SUCCESS && ref_rc != MPI_SUCCESS, any_refused = 0;
  MPI_Allreduce(&refused, &any_refused, 1, MPI_INT, MPI_MAX, cc.comm);
  if (any_refused) {
    settle(cc.comm, label, "the MPI's own call refused it", true);
    MPI_Type_free(&tm);
    MPI_Type_free(&tr);
    return;
  }
  static bool noted = false;
  if (here && !noted && count > 0 &&
      !std::equal(plain.begin(), plain.begin() + count, ref.begin())) {
    noted = true;
    std::printf(
        "NOTE world rank %d: the MPI's own %s in place on MPI_BOTTOM differs from the same "
        "call on a plain buffer\n",
        g_world_rank, std::string(spec_of(coll).mpi).c_str());
  }
  std::copy(plain.begin(), plain.begin() + count, ref.begin());
  // exscan's rank 0 ends with nothing the standard specifies.
  const bool specified =
      expected_out(spec_of(coll), P, count, root, rank, 0).kind != Expected::Kind::unspecified;
  if (why.empty() && (all || rank == root) && specified && mine != ref)
    for (size_t i = 0; i < n && why.empty(); ++i)
      if (mine[i] != ref[i])
        why = "element " + std::to_string(i) + ": " + std::to_string(mine[i]) + " vs the MPI's " +
              std::to_string(ref[i]);
  settle(cc.comm, label, why);
  MPI_Type_free(&tm);
  MPI_Type_free(&tr);
}

// ---------------------------------------------------------------------------------------------

void check_barrier(const CommCase& cc, const std::string& algo) {
  int rank, P;
  MPI_Comm_rank(cc.comm, &rank);
  MPI_Comm_size(cc.comm, &P);
  // Order: the last rank sleeps before entering; nobody may leave before it has entered. Times
  // are CLOCK_MONOTONIC (steady_clock), one clock for every process of this machine: Open MPI's
  // MPI_Wtime counts from each process's own MPI_Init.
  auto now = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  double entered = 0;
  if (rank == P - 1) {
    const double t0 = now();
    while (now() - t0 < 0.02) {
    }
  }
  double t_enter = now();
  CallArgs a;
  a.comm = cc.comm;
  int rc = collkit_call(Collective::barrier, a, algo);
  double t_leave = now();
  std::string why;
  if (rc != MPI_SUCCESS) why = "error: " + describe_error(rc);
  MPI_Allreduce(&t_enter, &entered, 1, MPI_DOUBLE, MPI_MAX, cc.comm);
  if (why.empty() && t_leave < entered) why = "left the barrier before the last rank entered it";
  settle(cc.comm, std::string(cc.name) + " P=" + std::to_string(P) + " " + algo, why);
}

// The C API's errors (wrong collective, unknown or malformed name, bad count, NULL name): each
// must come back as an error code whose message (ck_error_message and MPI_Error_string alike)
// says what is wrong; printed as ERROR lines for the test to read. And the native path of every
// collective through the C API, against the MPI's own call.
void check_errors(MPI_Comm comm) {
  int rank, P;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &P);
  double x = 1, y = 0;
  auto expect_error = [&](const std::string& label, int rc) {
    ++g_cases;
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, s, &len);
    if (rc == MPI_SUCCESS) {
      if (rank == 0) fail(label + ": expected an error, got MPI_SUCCESS");
    } else if (rank == 0) {
      // One line per error: the caret diagram's newlines become " / ".
      auto one_line = [](std::string m) {
        for (size_t at; (at = m.find('\n')) != std::string::npos;) m.replace(at, 1, " / ");
        return m;
      };
      std::printf("ERROR %s: %s | %s\n", label.c_str(), one_line(ck_error_message()).c_str(),
                  one_line(std::string(s, static_cast<size_t>(len))).c_str());
    }
  };
  expect_error("reduce-with-allreduce-name",
               ck_reduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, 0, comm, "allreduce:rd"));
  expect_error("allreduce-malformed",
               ck_allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, comm, "allreduce:rd("));
  expect_error("allreduce-negative-count",
               ck_allreduce(&x, &y, -1, MPI_DOUBLE, MPI_SUM, comm, "allreduce:rd"));
  expect_error("allreduce-null-name", ck_allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, comm, nullptr));
  std::vector<int> big(static_cast<size_t>(P) * 3 + 3);
  for (const CollectiveSpec& spec : all_collectives()) {
    // An unknown algorithm of each collective, and the native path against the MPI's own call.
    CallArgs a;
    a.sendbuf = &x;
    a.recvbuf = &y;
    a.sendcount = a.recvcount = 1;
    a.sendtype = a.recvtype = MPI_DOUBLE;
    a.op = MPI_SUM;
    a.root = P - 1;
    a.comm = comm;
    regular_vectors(a, spec, P, 1);  // the irregular collectives' count vectors (and displs)
    const std::string name(spec.name);
    expect_error(name + "-unknown", call_collkit(spec.id, a, (name + ":no_such").c_str()));
    std::vector<int> in(big.size()), mine(big.size(), -1), ref(big.size(), -1);
    for (size_t i = 0; i < in.size(); ++i) in[i] = rank * 1000 + static_cast<int>(i);
    if (spec.root_input_in_out) mine = ref = in;
    a.sendbuf = in.data();
    a.recvbuf = mine.data();
    a.sendcount = a.recvcount = 3;
    a.sendtype = a.recvtype = MPI_INT;
    regular_vectors(a, spec, P, 3);
    const int rc = call_collkit(spec.id, a, (name + ":native").c_str());
    a.recvbuf = ref.data();
    call_mpi(spec.id, a);
    ++g_cases;
    if (rc != MPI_SUCCESS || mine != ref) fail(name + " native through the C API");
  }
}

// --nonblocking: the start returns before the call can complete. Rank 0 starts the call, then
// sends rank 1 a message that rank 1 waits for before it starts its own: a start that blocked
// until the collective completed would wait for rank 1 forever (caught by a deadline here).
void check_start_does_not_block(const std::string& algo) {
  int P = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (P < 2) return;
  const Collective coll = collective_from_string(algo.substr(0, algo.find(':')));
  std::vector<int> in(static_cast<size_t>(P), rank + 1), out(static_cast<size_t>(P), 0);
  CallArgs a;
  a.sendbuf = in.data();
  a.recvbuf = out.data();
  a.sendcount = a.recvcount = 1;
  a.sendtype = a.recvtype = MPI_INT;
  a.op = MPI_SUM;
  a.comm = MPI_COMM_WORLD;
  regular_vectors(a, spec_of(coll), P, 1);
  int token = 42, rc = MPI_SUCCESS;
  std::string why;
  MPI_Request r = MPI_REQUEST_NULL;
  auto start = [&] {
    ++g_calls;
    return kViaPmpi ? collkit::mpi::call_mpi_nb(coll, a, &r)
                    : collkit::mpi::call_collkit_nb(coll, a, algo.c_str(), &r);
  };
  if (rank == 0) {
    rc = start();
    MPI_Send(&token, 1, MPI_INT, 1, 77, MPI_COMM_WORLD);
  } else if (rank == 1) {
    MPI_Request t;
    int got = 0, flag = 0;
    MPI_Irecv(&got, 1, MPI_INT, 0, 77, MPI_COMM_WORLD, &t);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!flag && std::chrono::steady_clock::now() < deadline)
      MPI_Test(&t, &flag, MPI_STATUS_IGNORE);
    if (!flag) {
      std::printf("FAIL %s: rank 0's non-blocking start did not return before rank 1 started\n",
                  algo.c_str());
      std::fflush(stdout);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    rc = start();
  } else {
    rc = start();
  }
  if (rc != MPI_SUCCESS && ck_declined(rc))
    ++g_capi_declined;
  else
    ++g_capi_ran;
  if (rc == MPI_SUCCESS) rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS && !ck_declined(rc)) why = "error: " + describe_error(rc);
  settle(MPI_COMM_WORLD, "world P=" + std::to_string(P) + " " + algo + " start does not block",
         why);
}

// --nonblocking: the irregular copies of the run (gatherv, scatterv, alltoallv, allgatherv) all
// started one after another on the world, each with its own count vector (zeros included, drawn
// alike on every rank), every rank its own displacements with gaps and, on some ranks, a datatype
// with gaps (MPI_INT resized to two ints), in place on the ranks MPI allows it in the last round;
// one rank sleeps before its starts, and the calls are completed in reverse order (MPI_Wait each,
// MPI_Waitall, an MPI_Test loop). Calls in flight together must match in call order (their counts
// exchanges too), a late rank must not hold the others' starts, and every result must equal the
// MPI's own call's (as every case's reference), the gaps untouched. Returns the names, with how
// many starts ran and declined (world rank 0's).
std::string check_outstanding(const std::vector<std::string>& algos, long long& ran,
                              long long& declined) {
  int P = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<std::string> names;
  for (const std::string& algo : algos) {
    const CollectiveSpec& spec = spec_of(collective_from_string(algo.substr(0, algo.find(':'))));
    if (spec.counts != Counts::none && !spec.reduction()) names.push_back(algo);
  }
  std::string joined;
  for (const std::string& n : names) joined += (joined.empty() ? "" : ";") + n;
  if (names.empty()) return joined;
  MPI_Datatype gappy;  // an int, then a gap of one int
  MPI_Type_create_resized(MPI_INT, 0, 2 * static_cast<MPI_Aint>(sizeof(int)), &gappy);
  MPI_Type_commit(&gappy);
  const size_t Pz = static_cast<size_t>(P);
  std::string why;
  for (int round = 0; round < 3 && why.empty(); ++round) {
    // One call: its arguments, collkit's buffers and the reference's (the same memory before).
    struct One {
      Collective coll = Collective::gatherv;
      CallArgs a, ref;
      std::vector<int> in, out, in_ref, out_ref;
      MPI_Request r = MPI_REQUEST_NULL;
    };
    // Sized once: the MPI reads each call's arrays (CallArgs) until its request completes.
    std::vector<One> calls(names.size());
    std::mt19937_64 shared(g_seed * 7919 + 1000 + static_cast<uint64_t>(round));
    std::mt19937_64 own(g_seed * 104729 + static_cast<uint64_t>(round * 1000 + rank));
    for (size_t k = 0; k < names.size(); ++k) {
      One& o = calls[k];
      o.coll = collective_from_string(names[k].substr(0, names[k].find(':')));
      const CollectiveSpec& spec = spec_of(o.coll);
      const int root = spec.rooted ? static_cast<int>((static_cast<size_t>(round) + k) % Pz) : 0;
      const bool pairs = spec.counts == Counts::per_pair;
      const std::vector<int64_t> u = draw_units(pairs ? Pz * Pz : Pz, 5, shared);
      const InPlace ip = mpi_in_place(o.coll);
      const bool in_place = round == 2 && !pairs && applies_to(ip.ranks, root, rank);
      const int64_t in_blocks = buffer_elems(spec.in, P, 1, root, rank);
      const int64_t out_blocks = buffer_elems(spec.out, P, 1, root, rank);
      const auto holds_p = [&](const BufferShape& shape) {
        return (spec.rooted && rank == root ? shape.at_root : shape.elsewhere) == Blocks::P;
      };
      // One side: P blocks at shuffled displacements, or this rank's one block; `gaps`: the
      // resized type, an int in every other slot of the memory.
      const auto make_side = [&](int64_t blocks, bool vector, bool gaps, const auto& units_of,
                                 std::vector<MPI_Count>& counts, std::vector<MPI_Aint>& displs,
                                 MPI_Count& count, std::vector<int>& mem) {
        MPI_Count elems = 0;
        if (blocks > 0 && vector) {
          for (size_t b = 0; b < Pz; ++b) counts.push_back(units_of(b));
          displs = scattered_displs(counts, own, elems);
        } else if (blocks == 1) {
          count = units_of(static_cast<size_t>(rank));
          elems = count;
        }
        mem = random_ints(static_cast<size_t>(elems) * (gaps ? 2 : 1) + 1, own);
      };
      o.a.root = root;
      o.a.comm = MPI_COMM_WORLD;
      const bool send_gaps = (rank + static_cast<int>(k) + round) % 2 == 1;
      const bool recv_gaps = (rank + static_cast<int>(k)) % 3 == 1;
      const auto in_units = [&](size_t b) {
        return pairs ? u[Pz * static_cast<size_t>(rank) + b] : u[b];
      };
      const auto out_units = [&](size_t b) {
        return pairs ? u[b * Pz + static_cast<size_t>(rank)] : u[b];
      };
      make_side(in_blocks, holds_p(spec.in), send_gaps, in_units, o.a.sendcounts, o.a.sdispls,
                o.a.sendcount, o.in);
      make_side(out_blocks, holds_p(spec.out), recv_gaps, out_units, o.a.recvcounts, o.a.rdispls,
                o.a.recvcount, o.out);
      o.a.sendtype = send_gaps ? gappy : MPI_INT;
      o.a.recvtype = recv_gaps ? gappy : MPI_INT;
      if (in_blocks == 0) o.a.sendtype = MPI_DATATYPE_NULL;
      if (out_blocks == 0) o.a.recvtype = MPI_DATATYPE_NULL;
      o.in_ref = o.in;
      o.out_ref = o.out;
      o.a.sendbuf = in_blocks > 0 ? o.in.data() : nullptr;
      o.a.recvbuf = out_blocks > 0 ? o.out.data() : nullptr;
      if (in_place && ip.as_recvbuf) {
        o.a.recvbuf = MPI_IN_PLACE;
        o.a.recvcount = 0;
        o.a.recvtype = MPI_DATATYPE_NULL;
      } else if (in_place) {
        o.a.sendbuf = MPI_IN_PLACE;
        o.a.sendcount = 0;
        o.a.sendtype = MPI_DATATYPE_NULL;
        o.a.sendcounts.clear();
        o.a.sdispls.clear();
      }
      o.ref = o.a;
      if (o.a.sendbuf != MPI_IN_PLACE && o.a.sendbuf != nullptr) o.ref.sendbuf = o.in_ref.data();
      if (o.a.recvbuf != MPI_IN_PLACE && o.a.recvbuf != nullptr) o.ref.recvbuf = o.out_ref.data();
    }
    // The late rank: every other rank has started (and is waiting) before it starts.
    if (rank == (round * 7 + 1) % P) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (size_t k = 0; k < calls.size(); ++k) {
      One& o = calls[k];
      ++g_calls;
      const int rc = kViaPmpi ? collkit::mpi::call_mpi_nb(o.coll, o.a, &o.r)
                              : collkit::mpi::call_collkit_nb(o.coll, o.a, names[k].c_str(), &o.r);
      if (rc != MPI_SUCCESS && ck_declined(rc))
        ++declined;
      else
        ++ran;
      if (rc != MPI_SUCCESS && why.empty()) why = names[k] + " start: " + describe_error(rc);
    }
    std::vector<MPI_Request> reversed;
    for (size_t k = calls.size(); k-- > 0;) reversed.push_back(calls[k].r);
    int rc = MPI_SUCCESS, flag = 0;
    switch (round) {
      case 0:
        for (MPI_Request& q : reversed)
          if (int e = MPI_Wait(&q, MPI_STATUS_IGNORE); e != MPI_SUCCESS && rc == MPI_SUCCESS)
            rc = e;
        break;
      case 1:
        rc = MPI_Waitall(static_cast<int>(reversed.size()), reversed.data(), MPI_STATUSES_IGNORE);
        break;
      default:
        for (MPI_Request& q : reversed) do {
            rc = MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
          } while (rc == MPI_SUCCESS && !flag);
        break;
    }
    if (rc != MPI_SUCCESS && why.empty())
      why = "round " + std::to_string(round) + ": " + describe_error(rc);
    for (size_t k = 0; k < calls.size(); ++k) {
      One& o = calls[k];
      if (int e = reference_call(o.coll, o.ref); e != MPI_SUCCESS) {
        if (why.empty()) why = names[k] + " reference: " + describe_error(e);
        continue;
      }
      for (const auto& [got, want, what] :
           {std::tuple{&o.out, &o.out_ref, "recvbuf"}, std::tuple{&o.in, &o.in_ref, "sendbuf"}})
        for (size_t i = 0; i < got->size() && why.empty(); ++i)
          if ((*got)[i] != (*want)[i])
            why = "round " + std::to_string(round) + " " + names[k] + " " + what + " int " +
                  std::to_string(i) + ": " + std::to_string((*got)[i]) + " vs the MPI's " +
                  std::to_string((*want)[i]);
    }
  }
  MPI_Type_free(&gappy);
  settle(MPI_COMM_WORLD, "world P=" + std::to_string(P) + " " + joined + " outstanding at once",
         why);
  return joined;
}

// --nonblocking, the C API: a gatherv, scatterv or alltoallv whose ranks' counts disagree (rank
// 0 says one int more than its peer expects) starts on every rank, and its request completes
// with the same error on every rank (the exchange in the run finds it; nothing is declined, as
// the MPI's own call can no longer take the call). Prints "DISAGREE algorithm failed alike".
void check_disagreeing_counts(const std::string& algo) {
  int P = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const Collective coll = collective_from_string(algo.substr(0, algo.find(':')));
  const CollectiveSpec& spec = spec_of(coll);
  if (spec.counts == Counts::none || spec.reduction() || coll == Collective::allgatherv) return;
  std::vector<int> in(static_cast<size_t>(2 * P + 2), rank), out(in.size(), -1);
  CallArgs a;
  a.sendbuf = in.data();
  a.recvbuf = out.data();
  a.sendcount = a.recvcount = 1;
  a.sendtype = a.recvtype = MPI_INT;
  a.root = P - 1;
  a.comm = MPI_COMM_WORLD;
  regular_vectors(a, spec, P, 1);
  if (rank == 0) {  // rank 0's own side, against what its peers (or the root) hold for it
    if (spec.counts == Counts::per_pair)
      a.sendcounts[static_cast<size_t>(P - 1)] = 2;
    else if (coll == Collective::gatherv)
      a.sendcount = 2;
    else
      a.recvcount = 2;
  }
  ++g_calls;
  MPI_Request r = MPI_REQUEST_NULL;
  int rc = collkit::mpi::call_collkit_nb(coll, a, algo.c_str(), &r);
  std::string why;
  if (rc != MPI_SUCCESS) {
    why = "the start failed: " + describe_error(rc);
  } else {
    rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS)
      why = "the request completed without an error";
    else if (ck_declined(rc))
      why = "declined after the start: " + describe_error(rc);
    else if (std::string(ck_error_message()).find("disagree") == std::string::npos)
      why = "not the disagreement: " + describe_error(rc);
  }
  settle(MPI_COMM_WORLD, "world P=" + std::to_string(P) + " " + algo + " disagreeing counts", why);
  int failed = why.empty() ? 0 : 1, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && !any) std::printf("DISAGREE %s failed alike\n", algo.c_str());
}

// The C API: a gatherv, scatterv or alltoallv whose counts agree but break one of collkit's
// limits, which only the exchanged vector shows. Non-blocking, the call starts on every rank and
// its request completes with the same error code on every rank (nothing is declined after the
// start, no rank hangs); blocking, every rank declines it alike once the counts are exchanged (so
// the MPI's own call can take it), or fails alike where no call can take it (a block past 2^48
// bytes). The counts are of a 4 GiB contiguous type on buffers of a few ints: the call must fail
// before any byte moves. Three limits: "block", one block past 2^48 bytes (the exchange's entry
// limit, any P); "total", every block within it but a buffer of P blocks past it (the
// algorithm's limit, P >= 2); "gaps", the total again with a 2 GiB vector type with gaps, which
// the executor would stage (allocate) if it prepared the buffers before checking the limit.
// Prints "LIMIT algorithm block|total|gaps failed alike".
void check_exchanged_limits(const std::string& algo) {
  int P = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const Collective coll = collective_from_string(algo.substr(0, algo.find(':')));
  const CollectiveSpec& spec = spec_of(coll);
  if (spec.counts == Counts::none || spec.reduction() || coll == Collective::allgatherv) return;
  MPI_Datatype huge = MPI_DATATYPE_NULL;  // 2^30 ints: 2^32 bytes, no memory behind it
  MPI_Type_contiguous(1 << 30, MPI_INT, &huge);
  MPI_Type_commit(&huge);
  MPI_Datatype gappy = MPI_DATATYPE_NULL;  // 2^29 ints, every other one: 2^31 bytes with gaps
  MPI_Type_vector(1 << 29, 1, 2, MPI_INT, &gappy);
  MPI_Type_commit(&gappy);
  const int64_t blocks_in_limit = int64_t{1} << 16;  // 2^48 bytes of 2^32-byte elements
  const std::tuple<const char*, int64_t, MPI_Datatype> limits[] = {
      {"block", blocks_in_limit + 1, huge},
      {"total", blocks_in_limit / P + 1, huge},
      {"gaps", 2 * blocks_in_limit / P + 1, gappy}};
  for (const auto& [what, n, type] : limits) {
    if (std::strcmp(what, "block") != 0 && P < 2) continue;
    std::vector<int> in(8, rank), out(8, -1);
    CallArgs a;
    a.sendbuf = in.data();
    a.recvbuf = out.data();
    a.sendcount = a.recvcount = n;
    a.sendtype = a.recvtype = type;
    a.root = P - 1;
    a.comm = MPI_COMM_WORLD;
    regular_vectors(a, spec, P, n);
    ++g_calls;
    const bool block = std::strcmp(what, "block") == 0;
    std::string why;
    int rc = MPI_SUCCESS;
    if (!g_nonblocking) {
      rc = call_collkit(coll, a, algo.c_str());
      if (rc == MPI_SUCCESS)
        why = "the call ran";
      else if (block != !ck_declined(rc))
        why = std::string(block ? "declined" : "not declined") + ": " + describe_error(rc);
      else if (block &&
               std::string(ck_error_message()).find("past 2^48 bytes") == std::string::npos)
        why = "not the limit: " + describe_error(rc);
    } else if (MPI_Request r = MPI_REQUEST_NULL;
               (rc = collkit::mpi::call_collkit_nb(coll, a, algo.c_str(), &r)) != MPI_SUCCESS) {
      why = "the start failed: " + describe_error(rc);
    } else {
      rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS)
        why = "the request completed without an error";
      else if (ck_declined(rc))
        why = "declined after the start: " + describe_error(rc);
      else if (std::string(ck_error_message())
                   .find(block ? "past 2^48 bytes" : "found once the counts were exchanged") ==
               std::string::npos)
        why = "not the limit: " + describe_error(rc);
    }
    if (in != std::vector<int>(8, rank) || out != std::vector<int>(8, -1))
      why += (why.empty() ? "" : "; ") + std::string("the buffers changed");
    const std::string label = "world P=" + std::to_string(P) + " " + algo + " " + what +
                              " limit (" + std::to_string(n) +
                              (type == huge ? " x 4 GiB)" : " x 2 GiB with gaps)");
    settle(MPI_COMM_WORLD, label, why);
    // The same error code on every rank: its minimum and maximum agree.
    int codes[2] = {rc, -rc}, extremes[2] = {0, 0};
    MPI_Allreduce(codes, extremes, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    const bool alike = extremes[0] == -extremes[1];
    if (!alike && rank == 0) fail(label + ": the ranks' error codes differ");
    int failed = why.empty() && alike ? 0 : 1, any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && !any) std::printf("LIMIT %s %s failed alike\n", algo.c_str(), what);
  }
  MPI_Type_free(&huge);
  MPI_Type_free(&gappy);
}

// --persistent: two handles of `algo` on the world, each started round after round with new data
// (MPI_Startall on both, or MPI_Start on each), beside a non-blocking allreduce and a ring of
// point-to-point messages, completed by a different mix each round (MPI_Waitall, an MPI_Testany
// loop, an MPI_Waitsome loop, MPI_Test on each) over the mixed array; every round's output equals
// the MPI's blocking call on the same input. Inactive handles answer MPI_Test and
// MPI_Request_get_status at once; both are freed at the end.
void check_persistent_restarts(const std::string& algo) {
  int P = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const Collective coll = collective_from_string(algo.substr(0, algo.find(':')));
  const CollectiveSpec& spec = spec_of(coll);
  const int root = spec.rooted ? P - 1 : 0;
  const int64_t n = 5;  // ints per block
  const auto in_len = static_cast<size_t>(buffer_elems(spec.in, P, n, root, rank));
  const auto out_len = static_cast<size_t>(buffer_elems(spec.out, P, n, root, rank));
  const bool has_output = spec.post.kind != Postcondition::Kind::synchronized && out_len > 0 &&
                          applies_to(spec.post.ranks, root, rank);
  struct Handle {
    std::vector<int> in, out, ref;
    CallArgs a;
    MPI_Request h = MPI_REQUEST_NULL;
  };
  Handle hs[2];
  std::string why;
  auto args_of = [&](Handle& x, std::vector<int>& out) {
    CallArgs a;
    a.sendbuf = spec.root_input_in_out ? nullptr : x.in.data();
    a.recvbuf = out.data();
    a.sendcount = a.recvcount = n;
    a.sendtype = a.recvtype = MPI_INT;
    a.op = MPI_SUM;
    a.root = root;
    a.comm = MPI_COMM_WORLD;
    regular_vectors(a, spec, P, n);
    return a;
  };
  for (Handle& x : hs) {
    x.in.assign(std::max<size_t>(in_len, 1), 0);
    x.out.assign(std::max<size_t>(out_len, 1), 0);
    x.ref = x.out;
    x.a = args_of(x, x.out);
    ++g_calls;
    int rc = MPI_SUCCESS;
    if constexpr (kViaPmpi) {
#if MPI_VERSION >= 4
      rc = collkit::mpi::call_mpi_init(coll, x.a, &x.h);
#endif
    } else {
      rc = collkit::mpi::call_collkit_init(coll, x.a, algo.c_str(), &x.h);
    }
    if (rc != MPI_SUCCESS && ck_declined(rc)) {
      // The algorithm cannot take this call (decided alike on every rank): nothing to restart.
      for (Handle& y : hs)
        if (y.h != MPI_REQUEST_NULL) MPI_Request_free(&y.h);
      settle(MPI_COMM_WORLD, algo + " persistent restarts", "declined at init", true);
      return;
    }
    if (rc != MPI_SUCCESS && why.empty()) why = "init: " + describe_error(rc);
  }
  const int rounds = 5;
  for (int round = 0; round < rounds && why.empty(); ++round) {
    // New data: each handle's input (bcast: the root's buffer) and a cleared output.
    for (int k = 0; k < 2; ++k) {
      Handle& x = hs[k];
      for (size_t i = 0; i < x.in.size(); ++i)
        x.in[i] = rank * 1000 + round * 100 + k * 10 + static_cast<int>(i);
      std::fill(x.out.begin(), x.out.end(), -1);
      if (spec.root_input_in_out && rank == root)
        std::copy(x.in.begin(), x.in.end(), x.out.begin());
      x.ref = x.out;
    }
    int mine = rank + round, sum = -1, sent = rank * 7 + round, got = -1;
    MPI_Request reqs[6];
    int rc = MPI_SUCCESS;
    if (round % 2 == 0) {
      MPI_Request both[2] = {hs[0].h, hs[1].h};
      rc = MPI_Startall(2, both);
      if (rc == MPI_SUCCESS && (both[0] != hs[0].h || both[1] != hs[1].h))
        why = "MPI_Startall changed a handle";
    } else {
      for (Handle& x : hs)
        if (rc == MPI_SUCCESS) rc = MPI_Start(&x.h);
    }
    if (rc != MPI_SUCCESS) {
      why = "start: " + describe_error(rc);
      break;
    }
    rc = kViaPmpi ? MPI_Iallreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[1])
                  : ck_iallreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[1],
                                  "allreduce:ring");
    MPI_Irecv(&got, 1, MPI_INT, (rank + P - 1) % P, 4343, MPI_COMM_WORLD, &reqs[3]);
    MPI_Isend(&sent, 1, MPI_INT, (rank + 1) % P, 4343, MPI_COMM_WORLD, &reqs[4]);
    reqs[0] = hs[0].h;
    reqs[2] = hs[1].h;
    reqs[5] = MPI_REQUEST_NULL;
    busy(std::chrono::microseconds(50 * (round % 3)));
    int flag = 0, index = 0, outcount = 0, indices[6];
    switch (round % 4) {
      case 0:
        if (rc == MPI_SUCCESS) rc = MPI_Waitall(6, reqs, MPI_STATUSES_IGNORE);
        break;
      case 1:
        for (int left = 5; left > 0 && rc == MPI_SUCCESS;) {
          rc = MPI_Testany(6, reqs, &index, &flag, MPI_STATUS_IGNORE);
          if (flag && index != MPI_UNDEFINED) --left;
          if (flag && index == MPI_UNDEFINED) break;  // nothing active left
        }
        break;
      case 2:
        while (rc == MPI_SUCCESS) {
          rc = MPI_Waitsome(6, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
          if (outcount == MPI_UNDEFINED) break;
        }
        break;
      default:
        for (MPI_Request& q : reqs) do {
            rc = MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
          } while (rc == MPI_SUCCESS && !flag);
        break;
    }
    if (rc != MPI_SUCCESS) {
      why = "round " + std::to_string(round) + ": " + describe_error(rc);
      break;
    }
    // The persistent handles stay (inactive); the others were freed.
    if (reqs[0] != hs[0].h || reqs[2] != hs[1].h) why = "a persistent handle was replaced";
    if (reqs[1] != MPI_REQUEST_NULL || reqs[3] != MPI_REQUEST_NULL || reqs[4] != MPI_REQUEST_NULL)
      why = "round " + std::to_string(round) + ": a request left active";
    if (sum != P * (P - 1) / 2 + P * round || got != ((rank + P - 1) % P) * 7 + round)
      why = "round " + std::to_string(round) + ": the calls beside it went wrong";
    // An inactive handle: MPI_Test and MPI_Request_get_status answer at once.
    flag = 0;
    MPI_Test(&hs[0].h, &flag, MPI_STATUS_IGNORE);
    int flag2 = 0;
    MPI_Request_get_status(hs[1].h, &flag2, MPI_STATUS_IGNORE);
    if (!flag || !flag2 || hs[0].h == MPI_REQUEST_NULL)
      why = "an inactive handle does not test complete";
    for (int k = 0; k < 2 && why.empty(); ++k) {
      Handle& x = hs[k];
      CallArgs r = args_of(x, x.ref);
      if (int e = call_mpi(coll, r, kViaPmpi); e != MPI_SUCCESS) {
        why = "reference: " + describe_error(e);
      } else if (has_output && x.out != x.ref) {
        for (size_t i = 0; i < x.out.size(); ++i)
          if (x.out[i] != x.ref[i]) {
            why = "round " + std::to_string(round) + " handle " + std::to_string(k) + " element " +
                  std::to_string(i) + ": " + std::to_string(x.out[i]) + " vs the MPI's " +
                  std::to_string(x.ref[i]);
            break;
          }
      }
    }
  }
  for (Handle& x : hs)
    if (x.h != MPI_REQUEST_NULL) {
      MPI_Request_free(&x.h);
      if (x.h != MPI_REQUEST_NULL && why.empty()) why = "MPI_Request_free left the handle";
    }
  settle(MPI_COMM_WORLD, "world P=" + std::to_string(P) + " " + algo + " persistent restarts", why);
  if (rank == 0) std::printf("RESTARTS %s rounds=%d handles=2\n", algo.c_str(), rounds);
}

#ifdef COLLKIT_VIA_PMPI
// Points the interposition library at a table of one rule per algorithm: each for every call of
// its collective at P <= 64 (the library's reader checks it, as it checks COLLKIT_TUNING).
void route_through_table(const std::vector<std::string>& algos) {
  char path[] = "/tmp/collkit_conformance_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) {
    fail("cannot write a tuning table in /tmp");
    return;
  }
  std::string rules;
  for (const std::string& algo : algos) {
    std::string quoted;
    for (char ch : algo)
      quoted += ch == '"' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
    rules += (rules.empty() ? "" : ", ") + std::string("{\"collective\": \"") +
             algo.substr(0, algo.find(':')) +
             "\", \"P\": [1, 64], \"bytes\": [0, 4611686018427387904], \"algorithm\": \"" + quoted +
             "\"}";
  }
  const std::string table =
      "{\"format\": \"collkit-tuning\", \"version\": 1, \"rules\": [" + rules + "]}";
  const bool written =
      ::write(fd, table.data(), table.size()) == static_cast<ssize_t>(table.size());
  ::close(fd);
  if (!written || collkit_pmpi_use_table(path) != static_cast<int>(algos.size()))
    fail("the table for " + rules + " did not load");
  unlink(path);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Args args(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_world_rank);
  int P;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  g_full = args.get("level", "quick") == "full";
  g_persistent = args.flag("persistent");
  g_nonblocking = args.flag("nonblocking") || g_persistent;
#if MPI_VERSION < 4
  if (g_persistent && kViaPmpi) {
    if (g_world_rank == 0)
      std::fprintf(stderr, "error: --persistent through the interposition library needs MPI 4\n");
    MPI_Finalize();
    return 2;
  }
#endif
  for (const auto& c : split(args.get("blocking-reference", ""), ','))
    if (!c.empty()) g_blocking_reference.push_back(c);
  g_seed = static_cast<uint64_t>(args.num("seed", 1));
  {
    std::vector<unsigned char> a(64, 200), b(64, 200);
    MPI_Reduce_local(a.data(), b.data(), 64, MPI_UNSIGNED_CHAR, MPI_SUM);
    g_uchar_sum_saturates = b[0] != 144;
    if (g_uchar_sum_saturates && g_world_rank == 0)
      std::printf(
          "NOTE the MPI's own MPI_SUM on 64 MPI_UNSIGNED_CHARs gives 200 + 200 = %d, not 144: "
          "unsigned char sums are kept below 256\n",
          b[0]);
  }
  const auto algos = split(args.get("algos", "allreduce:rd"), ';');
  std::mt19937_64 rng(static_cast<uint64_t>(args.num("seed", 1)) * 1000003 +
                      static_cast<uint64_t>(g_world_rank));
  // Counts: 0, 1, P-1, a count no P divides evenly, and a large one.
  std::vector<int64_t> counts;
  for (const auto& c : split(args.get("counts", "0,1,P-1,13,1000"), ','))
    counts.push_back(c == "P-1" ? P - 1 : std::atoll(c.c_str()));

  MPI_Comm dup, halves, reversed;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, g_world_rank < (P + 1) / 2, g_world_rank, &halves);
  MPI_Comm_split(MPI_COMM_WORLD, 0, P - g_world_rank, &reversed);
  // The MPI's own calls report errors instead of aborting: a refusal is a skip, not a crash.
  for (MPI_Comm c : {MPI_COMM_WORLD, dup, halves, reversed})
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  std::vector<CommCase> comms = {{"world", MPI_COMM_WORLD}, {"reversed", reversed}};
  if (g_full) {
    comms.push_back({"dup", dup});
    comms.push_back({"split", halves});
  }

  RedOps user;
  MPI_Op_create(vec_sum_op, 1, &user.vec_sum);
  MPI_Op_create(matmul_op, 0, &user.matmul);
  const auto descs = int_descriptions();
  const auto rtypes = reduction_types(user);

  size_t case_no = 0;
  for (const auto& algo : algos) {
    const Collective coll = collective_from_string(algo.substr(0, algo.find(':')));
    const CollectiveSpec& spec = spec_of(coll);
    const long long capi_ran0 = g_capi_ran, capi_declined0 = g_capi_declined;
#ifdef COLLKIT_VIA_PMPI
    long long ran0 = 0, declined0 = 0;
    route_through_table({algo});
    collkit_pmpi_counts(&ran0, &declined0);
#endif
    for (size_t ci = 0; ci < comms.size(); ++ci) {
      const CommCase& cc = comms[ci];
      int cp, crank;  // descriptions are chosen by the rank in this communicator
      MPI_Comm_size(cc.comm, &cp);
      MPI_Comm_rank(cc.comm, &crank);
      // Every root on the world; roots 0 and the last elsewhere.
      std::vector<int> roots;
      for (int r = 0; r < cp; ++r)
        if (ci == 0 || r == 0 || r == cp - 1) roots.push_back(r);
      if (spec.post.kind == Postcondition::Kind::synchronized) {
        check_barrier(cc, algo);
        continue;
      }
      const bool may_in_place = mpi_in_place(coll).ranks != Ranks::none;
      for (int64_t count : counts) {
        const bool big = count > 13;
        // The quick level (CI's default) keeps every kind of case but not every combination:
        // the full sweep of descriptions, ops and roots runs at count 13 on the world; other
        // counts and communicators take a few of each. --level full runs everything.
        const bool rich = g_full || (count == 13 && ci == 0);
        if (!g_full && ci != 0 && big) continue;
        // The irregular ones draw a vector per case (zeros, one block, random): at the quick
        // level up to 13 units a block, their large counts in the full sweep.
        if (!g_full && spec.counts != Counts::none && big) continue;
        // The irregular copies mix descriptions within each case already (every rank its own):
        // four per case at the quick level.
        const size_t ndesc =
            rich ? (!g_full && spec.counts != Counts::none ? 4 : descs.size()) : (big ? 2 : 3);
        std::vector<int> some_roots = rich ? roots : std::vector<int>{0};
        if (!rich && cp > 1) some_roots.push_back(cp - 1);
        if (!spec.rooted) some_roots = {0};
        if (!spec.reduction()) {
          for (int root : some_roots)
            for (size_t k = 0; k < ndesc; ++k)
              for (bool in_place : {false, true}) {
                if (in_place && !may_in_place) continue;
                if (spec.counts != Counts::none)
                  check_copy_v(coll, cc, algo, count, root, in_place, case_no++, rng, descs);
                else
                  check_copy(coll, cc, algo, count, root, in_place, case_no++, rng, descs);
              }
          continue;
        }
        for (const auto& rt : rtypes)
          for (size_t oi = 0; oi < rt.ops.size(); ++oi) {
            if (!rich && oi > 0) continue;  // every op of every type runs at count 13
            const auto& op = rt.ops[oi];
            for (int root : !spec.rooted ? std::vector<int>{0} : (oi == 0 ? some_roots : roots))
              for (bool in_place : {false, true}) {
                if (in_place && !may_in_place) continue;
                if (spec.rooted && oi > 0 && !g_full && root != 0 && root != cp - 1) continue;
                // Large counts for a few types; in-place on every type on the world only.
                if (big && rt.bytes_per_elem != 8 && std::strcmp(rt.name, "int") != 0) continue;
                if (in_place && ci != 0 && std::strcmp(rt.name, "double") != 0) continue;
                if (in_place && !g_full && oi > 0) continue;
                check_reduction(coll, cc, algo, rt, op, count, root, in_place, rng, case_no++);
              }
          }
        // MPI_BOTTOM in place, where `in` and `out` are one block (allreduce, reduce).
        if (spec.in.at_root == Blocks::one && spec.in.elsewhere == Blocks::one)
          for (int root : some_roots) check_reduction_bottom(coll, cc, algo, count, root, rng);
      }
    }
    if (g_nonblocking && !g_persistent) check_start_does_not_block(algo);
    if (g_nonblocking && !g_persistent && !kViaPmpi) check_disagreeing_counts(algo);
    if (!g_persistent && !kViaPmpi) check_exchanged_limits(algo);
    if (g_persistent) check_persistent_restarts(algo);
    if (!kViaPmpi && g_world_rank == 0)
      std::printf("CAPI %s ran=%lld declined=%lld\n", algo.c_str(), g_capi_ran - capi_ran0,
                  g_capi_declined - capi_declined0);
#ifdef COLLKIT_VIA_PMPI
    long long ran = 0, declined = 0;
    collkit_pmpi_counts(&ran, &declined);
    if (g_world_rank == 0)
      std::printf("ROUTE %s ran=%lld declined=%lld\n", algo.c_str(), ran - ran0,
                  declined - declined0);
#endif
  }
  if (g_nonblocking && !g_persistent) {
#ifdef COLLKIT_VIA_PMPI
    long long ran0 = 0, declined0 = 0;
    route_through_table(algos);
    collkit_pmpi_counts(&ran0, &declined0);
#endif
    long long ran = 0, declined = 0;
    const std::string names = check_outstanding(algos, ran, declined);
#ifdef COLLKIT_VIA_PMPI
    collkit_pmpi_counts(&ran, &declined);
    ran -= ran0;
    declined -= declined0;
#endif
    if (!names.empty() && g_world_rank == 0)
      std::printf("OUTSTANDING %s ran=%lld declined=%lld\n", names.c_str(), ran, declined);
  }
  if (args.flag("errors")) check_errors(MPI_COMM_WORLD);

  int totals[3] = {g_failures, g_cases, g_skipped}, sums[3];
  MPI_Allreduce(totals, sums, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_world_rank == 0)
    std::printf("SUMMARY P=%d cases=%d failures=%d skipped=%d\n", P, g_cases, sums[0], g_skipped);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&halves);
  MPI_Comm_free(&reversed);
  MPI_Op_free(&user.vec_sum);
  MPI_Op_free(&user.matmul);
  MPI_Finalize();
  return sums[0] == 0 ? 0 : 1;
}
