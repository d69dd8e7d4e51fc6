// What libcollkit_pmpi adds to a call it does not take: run one rank with the library preloaded
// and a table that does not cover the calls; MPI_Allreduce (through the library) and
// PMPI_Allreduce (straight to the MPI) alternate in blocks, so drift and noise hit both alike.
// Prints one JSON line: the median over blocks of each and of their paired difference, in
// nanoseconds per call.
//   LD_PRELOAD=libcollkit_pmpi.so COLLKIT_TUNING=t.json mpiexec -n 1 collkit_pmpi_overhead
//       [--calls 2000] [--blocks 200] [--collective allreduce|barrier|bcast] [--direct ALGO]
// --direct ALGO: the direct side is collkit's C API (ck_<collective>(..., ALGO), found in the
// preloaded library) instead of PMPI_: with a table that routes the call to ALGO, the difference
// is what the routing (the decision and the table) adds to collkit's own call.
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

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  long calls = 2000, blocks = 200;
  std::string coll = "allreduce", algo;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::atol(argv[i + 1]);
    if (std::strcmp(argv[i], "--blocks") == 0) blocks = std::atol(argv[i + 1]);
    if (std::strcmp(argv[i], "--collective") == 0) coll = argv[i + 1];
    if (std::strcmp(argv[i], "--direct") == 0) algo = argv[i + 1];
  }
  using Allreduce =
      int (*)(const void*, void*, MPI_Count, MPI_Datatype, MPI_Op, MPI_Comm, const char*);
  using Bcast = int (*)(void*, MPI_Count, MPI_Datatype, int, MPI_Comm, const char*);
  using Barrier = int (*)(MPI_Comm, const char*);
  void* ck = nullptr;
  if (!algo.empty()) {
    ck = dlsym(RTLD_DEFAULT, ("ck_" + coll).c_str());
    if (ck == nullptr) {
      std::fprintf(stderr, "--direct: ck_%s not found (preload libcollkit_pmpi.so)\n",
                   coll.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  calls = std::max(1L, calls);
  blocks = std::max(1L, blocks);
  double in = 1, out = 0;
  auto via = [&](bool profiled) {
    if (profiled && ck != nullptr) {
      if (coll == "barrier") return reinterpret_cast<Barrier>(ck)(MPI_COMM_WORLD, algo.c_str());
      if (coll == "bcast")
        return reinterpret_cast<Bcast>(ck)(&in, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD, algo.c_str());
      return reinterpret_cast<Allreduce>(ck)(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                                             algo.c_str());
    }
    if (coll == "barrier")
      return profiled ? PMPI_Barrier(MPI_COMM_WORLD) : MPI_Barrier(MPI_COMM_WORLD);
    if (coll == "bcast")
      return profiled ? PMPI_Bcast(&in, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD)
                      : MPI_Bcast(&in, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return profiled ? PMPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD)
                    : MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  };
  std::vector<double> lib, direct, diff;
  for (long w = 0; w < calls; ++w) via(false), via(true);  // warm up both paths
  for (long b = 0; b < blocks; ++b) {
    for (int which = 0; which < 2; ++which) {
      const bool profiled = (which == 1) == (b % 2 == 0);  // alternate which goes first
      const double t0 = MPI_Wtime();
      for (long k = 0; k < calls; ++k) via(profiled);
      const double ns = (MPI_Wtime() - t0) / static_cast<double>(calls) * 1e9;
      (profiled ? direct : lib).push_back(ns);
    }
    diff.push_back(lib.back() - direct.back());  // paired: the two blocks ran back to back
  }
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank == 0)
    std::printf(
        "{\"collective\": \"%s\", \"P\": %d, \"calls_per_block\": %ld, \"blocks\": %ld, "
        "\"interposed_ns\": %.2f, \"direct_ns\": %.2f, \"overhead_ns\": %.2f}\n",
        coll.c_str(), size, calls, blocks, median(lib), median(direct), median(diff));
  MPI_Finalize();
  return 0;
}
