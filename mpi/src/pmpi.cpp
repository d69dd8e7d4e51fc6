// libcollkit_pmpi: the MPI profiling-interface library that makes unmodified programs use a
// tuning table. LD_PRELOAD it (or link it before the MPI) and set COLLKIT_TUNING=table.json:
// MPI_Allreduce, MPI_Reduce, MPI_Bcast, MPI_Alltoall, MPI_Barrier, MPI_Allgather,
// MPI_Reduce_scatter_block, MPI_Gather and MPI_Scatter (and the MPI-4 `_c` forms) go to the table's
// algorithm for (communicator size, bytes); everything else goes to PMPI_. What a collective
// reads (root, op, which side's count is significant on a rank) comes from its CollectiveSpec.
//
// Every rank must take the same decision, so it reads only what MPI makes equal on all ranks of
// the communicator: its size and kind (intra / inter), count x type-signature size, the op and
// its commutativity, the root; never a rank's datatype layout or buffers. What the executor
// itself refuses before any communication comes back as ck_declined (alike on all ranks), and
// then goes to PMPI_ as well. Nothing here aborts: a table that does not load is reported once
// and every call goes to the MPI; a collkit error after communication began is reported once and
// returned as the MPI error code, as MPI_ERRORS_RETURN would.
//
// COLLKIT_VERBOSE=1 logs each decision once per (collective, P, size class, route) on the
// communicator's rank 0, and prints at MPI_Finalize how many calls went where and their time;
// COLLKIT_STATS=calls.jsonl writes the same as collkit result rows (from world rank 0).
#include <mpi.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "collkit.h"
#include "collkit/collective.hpp"
#include "collkit/error.hpp"
#include "collkit/registry.hpp"
#include "pmpi_table.hpp"

namespace {

using collkit::Collective;
using collkit::CollectiveSpec;
using collkit::pmpi::kNumCollectives;

struct Entry {
  collkit::pmpi::Rule rule;
  bool native = false;
  bool needs_commutative = false;
  bool needs_power_of_two = false;
  int64_t min_P = 1;
};

struct Counter {
  long long calls = 0;
  double total = 0, min = 1e300, max = 0;  // seconds
};

struct State {
  std::vector<Entry> rules[kNumCollectives];  // by the core's enum order (pmpi_table.hpp)
  bool covered[kNumCollectives] = {};         // any rule (other than native) for the collective
  bool verbose = false;
  bool timing = false;  // verbose or COLLKIT_STATS: time and count every call
  std::string stats_path, table_path;
  std::mutex lock;  // guards the log and the counters (only touched when timing)
  std::set<std::tuple<int, int, int, std::string>> logged;
  std::map<std::tuple<int, std::string, int, int64_t>, Counter> counters;
  std::set<std::string> errors_reported;
};

int world_rank() {
  int init = 0, fin = 0, rank = 0;
  PMPI_Initialized(&init);
  PMPI_Finalized(&fin);
  if (init && !fin) PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

void load(State& s) {
  const char* v = std::getenv("COLLKIT_VERBOSE");
  s.verbose = v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  const char* st = std::getenv("COLLKIT_STATS");
  if (st != nullptr) s.stats_path = st;
  s.timing = s.verbose || !s.stats_path.empty();
  const char* path = std::getenv("COLLKIT_TUNING");
  if (path == nullptr || *path == '\0') {
    if (s.verbose && world_rank() == 0)
      std::fprintf(stderr, "collkit: COLLKIT_TUNING is not set: every call goes to the MPI\n");
    return;
  }
  s.table_path = path;
  collkit::pmpi::Table t = collkit::pmpi::load_table(path);
  // The table's collective numbers are the core's enum order.
  for (int i = 0; t.error.empty() && i < kNumCollectives; ++i)
    if (collkit::to_string(static_cast<Collective>(i)) != collkit::pmpi::kCollectives[i])
      t.error = "internal: the table's collectives are not in the core's order";
  std::vector<Entry> entries;
  for (size_t i = 0; t.error.empty() && i < t.rules.size(); ++i) {
    Entry e;
    e.rule = t.rules[i];
    const std::string& name = e.rule.algorithm;
    const std::string coll = collkit::pmpi::kCollectives[e.rule.collective];
    if (name == "native" || name == coll + ":native") {
      e.native = true;
    } else {
      try {
        const collkit::Algorithm a(name);
        if (std::string(collkit::to_string(a.collective())) != coll) {
          t.error =
              "rule " + std::to_string(i) + ": '" + name + "' is not a " + coll + " algorithm";
          break;
        }
        e.rule.algorithm = a.canonical();
        e.needs_commutative = a.spec().restrictions.commutative_op;
        e.needs_power_of_two = a.spec().restrictions.power_of_two;
        e.min_P = a.spec().restrictions.min_P;
      } catch (const std::exception& ex) {
        const std::string what = ex.what();  // its first line: the caret line needs the name above
        t.error = "rule " + std::to_string(i) + ": " + what.substr(0, what.find('\n'));
        break;
      }
    }
    entries.push_back(std::move(e));
  }
  if (!t.error.empty()) {
    if (world_rank() == 0)
      std::fprintf(stderr, "collkit: tuning table %s not used (%s): every call goes to the MPI\n",
                   path, t.error.c_str());
    return;
  }
  for (Entry& e : entries) {
    if (!e.native) s.covered[e.rule.collective] = true;
    s.rules[e.rule.collective].push_back(std::move(e));
  }
  if (s.verbose && world_rank() == 0)
    std::fprintf(stderr, "collkit: tuning table %s: %zu rules\n", path, entries.size());
}

State& state() {
  static State* s = [] {
    auto* st = new State;  // never freed: MPI_Finalize and atexit order must not matter
    load(*st);
    return st;
  }();
  return *s;
}

struct Decision {
  const Entry* entry = nullptr;  // null: the MPI's own call
  const char* why = "";
  int P = 0;
  int64_t bytes = 0;
};

// One side of a call (count and datatype): the bytes of a block are count x type size.
struct Side {
  MPI_Count count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  bool in_place = false;  // MPI_IN_PLACE was passed as this side's buffer
};

// Which rule covers the call, from what is equal on every rank of `comm` only: its size, the
// bytes of a block (from a side significant on this rank, the spec says which), the op, the root.
Decision decide(const State& s, Collective c, MPI_Comm comm, const Side& send, const Side& recv,
                MPI_Op op, int root) {
  const CollectiveSpec& spec = collkit::spec_of(c);
  const int ci = static_cast<int>(c);
  Decision d;
  if (comm == MPI_COMM_NULL) return d;
  int inter = 0, rank = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return d;
  if (PMPI_Comm_size(comm, &d.P) != MPI_SUCCESS) return d;
  if (inter) {
    d.why = "intercommunicator";
    return d;
  }
  if (spec.rooted && (root < 0 || root >= d.P)) {
    d.why = "root out of range";  // the MPI reports it
    return d;
  }
  if (spec.post.kind != collkit::Postcondition::Kind::synchronized) {
    // The receive side where this rank has an output the postcondition speaks of (the root of a
    // gather, every rank of an allgather), else the send side (a gather's other ranks).
    if (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS) return d;
    const bool recv_counts = collkit::buffer_elems(spec.out, d.P, 1, root, rank) > 0 &&
                             !recv.in_place && collkit::applies_to(spec.post.ranks, root, rank);
    const Side& side = recv_counts ? recv : send;
    MPI_Count size = 0;
    if (side.type == MPI_DATATYPE_NULL || side.count < 0 ||
        PMPI_Type_size_x(side.type, &size) != MPI_SUCCESS || size == MPI_UNDEFINED || size < 0) {
      d.why = "datatype";
      return d;
    }
    if (size != 0 && side.count > INT64_MAX / size) return d;
    d.bytes = static_cast<int64_t>(side.count * size);
  }
  const Entry* hit = nullptr;
  for (const Entry& e : s.rules[ci])
    if (d.P >= e.rule.p_lo && d.P <= e.rule.p_hi && d.bytes >= e.rule.bytes_lo &&
        d.bytes <= e.rule.bytes_hi) {
      hit = &e;
      break;
    }
  if (hit == nullptr) {
    d.why = "not in the table";
    return d;
  }
  if (hit->native) {
    d.why = "table: native";
    return d;
  }
  if (spec.reduction()) {
    int commute = 1;
    if (op == MPI_OP_NULL || PMPI_Op_commutative(op, &commute) != MPI_SUCCESS) {
      d.why = "op";
      return d;
    }
    if (!commute && hit->needs_commutative) {
      d.why = "non-commutative op";
      return d;
    }
  }
  if (d.P < hit->min_P || (hit->needs_power_of_two && (d.P & (d.P - 1)) != 0)) {
    d.why = "P not supported by the algorithm";
    return d;
  }
  d.entry = hit;
  return d;
}

int size_class(int64_t bytes) {
  int k = 0;
  while (bytes > 1) {
    bytes >>= 1;
    ++k;
  }
  return k;
}

void note(State& s, Collective c, MPI_Comm comm, const Decision& d, const std::string& route,
          const std::string& why, double seconds) {
  std::lock_guard<std::mutex> g(s.lock);
  if (s.verbose) {
    const auto key = std::make_tuple(static_cast<int>(c), d.P, size_class(d.bytes), route);
    if (s.logged.insert(key).second) {
      int rank = 0;
      if (comm != MPI_COMM_NULL) PMPI_Comm_rank(comm, &rank);
      if (rank == 0) {
        const int k = size_class(d.bytes);
        std::fprintf(stderr, "collkit: %s P=%d %lld B (class %lld..%lld B) -> %s%s%s%s\n",
                     collkit::pmpi::kCollectives[static_cast<int>(c)], d.P,
                     static_cast<long long>(d.bytes), d.bytes == 0 ? 0LL : 1LL << k,
                     d.bytes == 0 ? 0LL : (2LL << k) - 1, route.c_str(), why.empty() ? "" : " (",
                     why.c_str(), why.empty() ? "" : ")");
      }
    }
  }
  Counter& n = s.counters[std::make_tuple(static_cast<int>(c), route, d.P, d.bytes)];
  ++n.calls;
  n.total += seconds;
  n.min = std::min(n.min, seconds);
  n.max = std::max(n.max, seconds);
}

void report_error(State& s, const std::string& algo, int rc) {
  std::lock_guard<std::mutex> g(s.lock);
  if (!s.errors_reported.insert(algo).second) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (PMPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  std::fprintf(stderr, "collkit: %s failed: %.*s (returned as MPI error %d)\n", algo.c_str(), len,
               text, rc);
}

// Runs one call: the table's algorithm, or the MPI's own call (`native`).
template <typename Collkit, typename Native>
int route(Collective c, MPI_Comm comm, const Side& send, const Side& recv, MPI_Op op, int root,
          Collkit&& collkit, Native&& native) {
  State& s = state();
  if (!s.covered[static_cast<int>(c)] && !s.timing) return native();  // the fast fall-through
  const Decision d = decide(s, c, comm, send, recv, op, root);
  if (d.entry == nullptr && !s.timing) return native();
  const double t0 = s.timing ? PMPI_Wtime() : 0.0;
  int rc = MPI_SUCCESS;
  std::string where = "native", why = d.why;
  if (d.entry != nullptr) {
    rc = collkit(d.entry->rule.algorithm.c_str());
    if (ck_declined(rc)) {
      why = std::string("declined: ") + ck_error_message();
      rc = native();
    } else {
      where = d.entry->rule.algorithm;
      why = "table";
      if (rc != MPI_SUCCESS) report_error(s, where, rc);
    }
  } else {
    rc = native();
  }
  if (s.timing) note(s, c, comm, d, where, why, PMPI_Wtime() - t0);
  return rc;
}

void finish(State& s) {
  if (!s.timing) return;
  std::lock_guard<std::mutex> g(s.lock);
  if (world_rank() != 0) return;
  int world = 0;
  PMPI_Comm_size(MPI_COMM_WORLD, &world);
  if (s.verbose) {
    std::fprintf(stderr, "collkit: calls on world rank 0 (of %d), by route:\n", world);
    std::fprintf(stderr, "collkit: %-10s %-28s %5s %10s %8s %12s\n", "collective", "route", "P",
                 "bytes", "calls", "mean (us)");
    for (const auto& [k, n] : s.counters)
      std::fprintf(stderr, "collkit: %-10s %-28s %5d %10lld %8lld %12.3f\n",
                   collkit::pmpi::kCollectives[std::get<0>(k)], std::get<1>(k).c_str(),
                   std::get<2>(k), static_cast<long long>(std::get<3>(k)), n.calls,
                   n.total / static_cast<double>(n.calls) * 1e6);
  }
  if (s.stats_path.empty()) return;
  std::FILE* f = std::fopen(s.stats_path.c_str(), "a");
  if (f == nullptr) {
    std::fprintf(stderr, "collkit: cannot write COLLKIT_STATS=%s\n", s.stats_path.c_str());
    return;
  }
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  PMPI_Get_library_version(lib, &len);
  std::string mpi(lib, static_cast<size_t>(len));
  mpi = mpi.substr(0, mpi.find('\n'));
  std::string clean;
  for (char ch : mpi)
    if (ch != '"' && ch != '\\' && static_cast<unsigned char>(ch) >= 0x20) clean += ch;
  std::string table;
  for (char ch : s.table_path)
    if (ch != '"' && ch != '\\' && static_cast<unsigned char>(ch) >= 0x20) table += ch;
  // One collkit result row per (collective, route, P, bytes): the calls of world rank 0.
  for (const auto& [k, n] : s.counters)
    std::fprintf(f,
                 "{\"collective\": \"%s\", \"algorithm\": \"%s\", \"P\": %d, \"bytes\": %lld, "
                 "\"mpi\": \"%s\", \"settings\": \"interposed by libcollkit_pmpi, "
                 "COLLKIT_TUNING=%s, world rank 0\", \"iterations\": %lld, \"min\": %.4f, "
                 "\"mean\": %.4f, \"max\": %.4f}\n",
                 collkit::pmpi::kCollectives[std::get<0>(k)], std::get<1>(k).c_str(),
                 std::get<2>(k), static_cast<long long>(std::get<3>(k)), clean.c_str(),
                 table.c_str(), n.calls, n.min * 1e6, n.total / static_cast<double>(n.calls) * 1e6,
                 n.max * 1e6);
  std::fclose(f);
}

// Each routed call once, for both count types: MPI_X (int) and MPI 4's MPI_X_c (MPI_Count) differ
// only in the type of their counts and in the PMPI_ function that is the MPI's own call.
template <class Count, auto Native>
int allreduce(const void* sendbuf, void* recvbuf, Count count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm) {
  return route(
      Collective::allreduce, comm, {count, datatype}, {count, datatype}, op, 0,
      [&](const char* a) { return ck_allreduce(sendbuf, recvbuf, count, datatype, op, comm, a); },
      [&] { return Native(sendbuf, recvbuf, count, datatype, op, comm); });
}

template <class Count, auto Native>
int reduce(const void* sendbuf, void* recvbuf, Count count, MPI_Datatype datatype, MPI_Op op,
           int root, MPI_Comm comm) {
  return route(
      Collective::reduce, comm, {count, datatype}, {count, datatype}, op, root,
      [&](const char* a) {
        return ck_reduce(sendbuf, recvbuf, count, datatype, op, root, comm, a);
      },
      [&] { return Native(sendbuf, recvbuf, count, datatype, op, root, comm); });
}

template <class Count, auto Native>
int bcast(void* buffer, Count count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return route(
      Collective::bcast, comm, {}, {count, datatype}, MPI_OP_NULL, root,
      [&](const char* a) { return ck_bcast(buffer, count, datatype, root, comm, a); },
      [&] { return Native(buffer, count, datatype, root, comm); });
}

template <class Count, auto Native>
int alltoall(const void* sendbuf, Count sendcount, MPI_Datatype sendtype, void* recvbuf,
             Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return route(
      Collective::alltoall, comm, {sendcount, sendtype, sendbuf == MPI_IN_PLACE},
      {recvcount, recvtype}, MPI_OP_NULL, 0,
      [&](const char* a) {
        return ck_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, a);
      },
      [&] { return Native(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); });
}

template <class Count, auto Native>
int allgather(const void* sendbuf, Count sendcount, MPI_Datatype sendtype, void* recvbuf,
              Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return route(
      Collective::allgather, comm, {sendcount, sendtype, sendbuf == MPI_IN_PLACE},
      {recvcount, recvtype}, MPI_OP_NULL, 0,
      [&](const char* a) {
        return ck_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, a);
      },
      [&] { return Native(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); });
}

template <class Count, auto Native>
int reduce_scatter_block(const void* sendbuf, void* recvbuf, Count recvcount, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm) {
  return route(
      Collective::reduce_scatter_block, comm, {recvcount, datatype}, {recvcount, datatype}, op, 0,
      [&](const char* a) {
        return ck_reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, a);
      },
      [&] { return Native(sendbuf, recvbuf, recvcount, datatype, op, comm); });
}

template <class Count, auto Native>
int gather(const void* sendbuf, Count sendcount, MPI_Datatype sendtype, void* recvbuf,
           Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return route(
      Collective::gather, comm, {sendcount, sendtype, sendbuf == MPI_IN_PLACE},
      {recvcount, recvtype}, MPI_OP_NULL, root,
      [&](const char* a) {
        return ck_gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, a);
      },
      [&] {
        return Native(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
      });
}

template <class Count, auto Native>
int scatter(const void* sendbuf, Count sendcount, MPI_Datatype sendtype, void* recvbuf,
            Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  // The root may pass MPI_IN_PLACE as recvbuf: then its send side says the block's size.
  return route(
      Collective::scatter, comm, {sendcount, sendtype},
      {recvcount, recvtype, recvbuf == MPI_IN_PLACE}, MPI_OP_NULL, root,
      [&](const char* a) {
        return ck_scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                          a);
      },
      [&] {
        return Native(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
      });
}

}  // namespace

extern "C" {

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm) {
  return allreduce<int, PMPI_Allreduce>(sendbuf, recvbuf, count, datatype, op, comm);
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm) {
  return reduce<int, PMPI_Reduce>(sendbuf, recvbuf, count, datatype, op, root, comm);
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return bcast<int, PMPI_Bcast>(buffer, count, datatype, root, comm);
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return alltoall<int, PMPI_Alltoall>(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                      comm);
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return allgather<int, PMPI_Allgather>(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                        comm);
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return reduce_scatter_block<int, PMPI_Reduce_scatter_block>(sendbuf, recvbuf, recvcount, datatype,
                                                              op, comm);
}

int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return gather<int, PMPI_Gather>(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                                  comm);
}

int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return scatter<int, PMPI_Scatter>(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    root, comm);
}

int MPI_Barrier(MPI_Comm comm) {
  return route(
      Collective::barrier, comm, {}, {}, MPI_OP_NULL, 0,
      [&](const char* a) { return ck_barrier(comm, a); }, [&] { return PMPI_Barrier(comm); });
}

#if MPI_VERSION >= 4
int MPI_Allreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm) {
  return allreduce<MPI_Count, PMPI_Allreduce_c>(sendbuf, recvbuf, count, datatype, op, comm);
}

int MPI_Reduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, int root, MPI_Comm comm) {
  return reduce<MPI_Count, PMPI_Reduce_c>(sendbuf, recvbuf, count, datatype, op, root, comm);
}

int MPI_Bcast_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return bcast<MPI_Count, PMPI_Bcast_c>(buffer, count, datatype, root, comm);
}

int MPI_Alltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                   MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return alltoall<MPI_Count, PMPI_Alltoall_c>(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                              recvtype, comm);
}

int MPI_Allgather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return allgather<MPI_Count, PMPI_Allgather_c>(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                                recvtype, comm);
}

int MPI_Reduce_scatter_block_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return reduce_scatter_block<MPI_Count, PMPI_Reduce_scatter_block_c>(sendbuf, recvbuf, recvcount,
                                                                      datatype, op, comm);
}

int MPI_Gather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                 MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return gather<MPI_Count, PMPI_Gather_c>(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                          recvtype, root, comm);
}

int MPI_Scatter_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                  MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return scatter<MPI_Count, PMPI_Scatter_c>(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                            recvtype, root, comm);
}
#endif

int MPI_Finalize(void) {
  finish(state());
  return PMPI_Finalize();
}

}  // extern "C"
