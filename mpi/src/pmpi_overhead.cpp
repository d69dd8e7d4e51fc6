// What libcollkit_pmpi adds to a call it does not take: run one rank with the library preloaded
// and a table that does not cover the calls; MPI_Allreduce (through the library) and
// PMPI_Allreduce (straight to the MPI) alternate in blocks, so drift and noise hit both alike.
// Prints one JSON line: the median over blocks of each and of their paired difference, in
// nanoseconds per call.
//   LD_PRELOAD=libcollkit_pmpi.so COLLKIT_TUNING=t.json mpiexec -n 1 collkit_pmpi_overhead
//       [--calls 2000] [--blocks 200] [--collective allreduce|barrier|bcast] [--direct ALGO]
//       [--count N] [--alternate]
//   mpiexec -n 2 collkit_pmpi_overhead --collective alltoallv|allgatherv --bytes N [...]
// alltoallv and allgatherv: N chars per pair (alltoallv) or per rank (allgatherv), packed
// displacements, on any number of ranks (P = 2: one rank under callgrind, the other plain).
// --direct ALGO: the direct side is collkit's C API (ck_<collective>(..., ALGO), found in the
// preloaded library) instead of PMPI_: with a table that routes the call to ALGO, the difference
// is what the routing (the decision and the table) adds to collkit's own call.
// --count N: no clock; after the warm-up, N calls through the library (interposed_calls) and N
// direct (direct_calls), in `counted`: under valgrind --tool=callgrind --collect-atstart=no
// --toggle-collect='*counted*', the inclusive instructions of the two functions over N are each
// side's per call, whatever the machine's load.
// --alternate: allreduce and bcast calls alternate between 1 and 2 elements, two calls that
// differ as a rotating root's or two interleaved loops' do (the decision remembered for the one
// before does not answer).
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

using Allreduce = int (*)(const void*, void*, MPI_Count, MPI_Datatype, MPI_Op, MPI_Comm,
                          const char*);
using Bcast = int (*)(void*, MPI_Count, MPI_Datatype, int, MPI_Comm, const char*);
using Barrier = int (*)(MPI_Comm, const char*);
using Alltoallv = int (*)(const void*, const MPI_Count*, const MPI_Aint*, MPI_Datatype, void*,
                          const MPI_Count*, const MPI_Aint*, MPI_Datatype, MPI_Comm, const char*);
using Allgatherv = int (*)(const void*, MPI_Count, MPI_Datatype, void*, const MPI_Count*,
                           const MPI_Aint*, MPI_Datatype, MPI_Comm, const char*);

// What a call is: the collective, and collkit's C API function where --direct names one.
struct Call {
  std::string coll = "allreduce", algo;
  void* ck = nullptr;
  // The collective as the loops test it: one switch, alike on both sides (no string compared
  // in a loop, whose cost would differ between the two).
  enum class Kind { allreduce, bcast, barrier, irregular } kind = Kind::allreduce;
  double in[2] = {1, 1}, out[2] = {0, 0};
  bool alternate = false;
  int count(long k) const { return alternate ? 1 + static_cast<int>(k % 2) : 1; }
  // The irregular calls: `bytes` chars per pair or per rank, every count and displacement as the
  // MPI's int arrays (the application's call) and as the C API's MPI_Count / MPI_Aint ones.
  int bytes = 8;
  std::vector<char> send, recv;
  std::vector<int> counts, displs;
  std::vector<MPI_Count> wide_counts;
  std::vector<MPI_Aint> wide_displs;
  void set_up(int P) {
    send.assign(static_cast<size_t>(P) * bytes, 'x');
    recv.assign(send.size(), 0);
    counts.assign(static_cast<size_t>(P), bytes);
    for (int b = 0; b < P; ++b) displs.push_back(b * bytes);
    wide_counts.assign(counts.begin(), counts.end());
    wide_displs.assign(displs.begin(), displs.end());
  }
};

// An irregular call through MPI_ (the library, where preloaded) or PMPI_ (the MPI).
template <bool Profiled>
void irregular(Call& c) {
  constexpr auto a2av = Profiled ? PMPI_Alltoallv : MPI_Alltoallv;
  constexpr auto agv = Profiled ? PMPI_Allgatherv : MPI_Allgatherv;
  if (c.coll == "alltoallv")
    a2av(c.send.data(), c.counts.data(), c.displs.data(), MPI_CHAR, c.recv.data(), c.counts.data(),
         c.displs.data(), MPI_CHAR, MPI_COMM_WORLD);
  else
    agv(c.send.data(), c.bytes, MPI_CHAR, c.recv.data(), c.counts.data(), c.displs.data(), MPI_CHAR,
        MPI_COMM_WORLD);
}

// collkit's C API with the irregular call's arguments.
void irregular_ck(Call& c, const char* a) {
  if (c.coll == "alltoallv")
    reinterpret_cast<Alltoallv>(c.ck)(c.send.data(), c.wide_counts.data(), c.wide_displs.data(),
                                      MPI_CHAR, c.recv.data(), c.wide_counts.data(),
                                      c.wide_displs.data(), MPI_CHAR, MPI_COMM_WORLD, a);
  else
    reinterpret_cast<Allgatherv>(c.ck)(c.send.data(), c.bytes, MPI_CHAR, c.recv.data(),
                                       c.wide_counts.data(), c.wide_displs.data(), MPI_CHAR,
                                       MPI_COMM_WORLD, a);
}

bool is_irregular(const Call& c) {
  return c.coll == "alltoallv" || c.coll == "allgatherv";
}

// `n` calls through the library's MPI_ (or, with --direct, collkit's C API). Not inlined: a
// function of its own that callgrind counts apart.
[[gnu::noinline]] void interposed_calls(Call& c, long n) {
  for (long k = 0; k < n; ++k) {
    switch (c.kind) {
      case Call::Kind::irregular:
        irregular<false>(c);
        break;
      case Call::Kind::barrier:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
      case Call::Kind::bcast:
        MPI_Bcast(c.in, c.count(k), MPI_DOUBLE, 0, MPI_COMM_WORLD);
        break;
      case Call::Kind::allreduce:
        MPI_Allreduce(c.in, c.out, c.count(k), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    }
  }
}

// `n` calls to the side it is compared with: PMPI_, or with --direct collkit's C API.
[[gnu::noinline]] void direct_calls(Call& c, long n) {
  const char* a = c.algo.c_str();
  if (c.ck != nullptr) {
    for (long k = 0; k < n; ++k) {
      switch (c.kind) {
        case Call::Kind::irregular:
          irregular_ck(c, a);
          break;
        case Call::Kind::barrier:
          reinterpret_cast<Barrier>(c.ck)(MPI_COMM_WORLD, a);
          break;
        case Call::Kind::bcast:
          reinterpret_cast<Bcast>(c.ck)(c.in, c.count(k), MPI_DOUBLE, 0, MPI_COMM_WORLD, a);
          break;
        case Call::Kind::allreduce:
          reinterpret_cast<Allreduce>(c.ck)(c.in, c.out, c.count(k), MPI_DOUBLE, MPI_SUM,
                                            MPI_COMM_WORLD, a);
          break;
      }
    }
    return;
  }
  for (long k = 0; k < n; ++k) {
    switch (c.kind) {
      case Call::Kind::irregular:
        irregular<true>(c);
        break;
      case Call::Kind::barrier:
        PMPI_Barrier(MPI_COMM_WORLD);
        break;
      case Call::Kind::bcast:
        PMPI_Bcast(c.in, c.count(k), MPI_DOUBLE, 0, MPI_COMM_WORLD);
        break;
      case Call::Kind::allreduce:
        PMPI_Allreduce(c.in, c.out, c.count(k), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    }
  }
}

// The counted calls: callgrind collects inside this function only (--toggle-collect), so that
// the warm-up (the table's loading, the first decision) is left out.
[[gnu::noinline]] void counted(Call& c, long n) {
  interposed_calls(c, n);
  direct_calls(c, n);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  long calls = 2000, blocks = 200, count = 0;
  Call c;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--alternate") {
      c.alternate = true;
      continue;
    }
    if (i + 1 >= argc) break;
    const char* value = argv[++i];
    if (arg == "--calls") calls = std::atol(value);
    if (arg == "--blocks") blocks = std::atol(value);
    if (arg == "--collective") c.coll = value;
    if (arg == "--direct") c.algo = value;
    if (arg == "--count") count = std::atol(value);
    if (arg == "--bytes") c.bytes = std::atoi(value);
  }
  c.kind = is_irregular(c)       ? Call::Kind::irregular
           : c.coll == "barrier" ? Call::Kind::barrier
           : c.coll == "bcast"   ? Call::Kind::bcast
                                 : Call::Kind::allreduce;
  if (!c.algo.empty()) {
    c.ck = dlsym(RTLD_DEFAULT, ("ck_" + c.coll).c_str());
    if (c.ck == nullptr) {
      std::fprintf(stderr, "--direct: ck_%s not found (preload libcollkit_pmpi.so)\n",
                   c.coll.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  calls = std::max(1L, calls);
  blocks = std::max(1L, blocks);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (is_irregular(c)) c.set_up(size);
  if (count > 0) {
    interposed_calls(c, calls), direct_calls(c, calls);  // warm up both paths
    counted(c, count);
    if (rank == 0)
      std::printf("{\"collective\": \"%s\", \"P\": %d, \"count\": %ld}\n", c.coll.c_str(), size,
                  count);
    MPI_Finalize();
    return 0;
  }
  std::vector<double> lib, direct, diff;
  interposed_calls(c, calls), direct_calls(c, calls);  // warm up both paths
  for (long b = 0; b < blocks; ++b) {
    for (int which = 0; which < 2; ++which) {
      const bool profiled = (which == 1) == (b % 2 == 0);  // alternate which goes first
      const double t0 = MPI_Wtime();
      if (profiled)
        direct_calls(c, calls);
      else
        interposed_calls(c, calls);
      const double ns = (MPI_Wtime() - t0) / static_cast<double>(calls) * 1e9;
      (profiled ? direct : lib).push_back(ns);
    }
    diff.push_back(lib.back() - direct.back());  // paired: the two blocks ran back to back
  }
  if (rank == 0)
    std::printf(
        "{\"collective\": \"%s\", \"P\": %d, \"calls_per_block\": %ld, \"blocks\": %ld, "
        "\"interposed_ns\": %.2f, \"direct_ns\": %.2f, \"overhead_ns\": %.2f}\n",
        c.coll.c_str(), size, calls, blocks, median(lib), median(direct), median(diff));
  MPI_Finalize();
  return 0;
}
