// collkit_overlap: how much of a non-blocking collective hides behind computation, measured as
// OSU's osu_iallreduce does (Panda et al., OSU Micro-Benchmarks), and what a persistent call's
// start costs against the blocking and non-blocking calls.
//
//   collkit_overlap --collective allreduce --algos "allreduce:rd;allreduce:ring;native"
//                   [--bytes 8,65536] [--iters 100] [--rounds 5] [--probes 0,8] [--cost]
//
// Overlap, per (algorithm, bytes, probes), rounds interleaved (every algorithm once per round):
//   t_pure   the collective alone: start (ck_i<coll>, or the MPI's own MPI_I<coll> for "native"),
//            then MPI_Wait at once; mean per call
//   t_cpu    compute alone for t_pure (a busy loop that does not enter MPI)
//   t_total  start, the same compute (split in probes + 1 pieces with an MPI_Test between them:
//            probes = 0 is OSU's default), then MPI_Wait
//   overlap  max(0, 100 (1 - (t_total - t_cpu) / t_pure))
// each a mean over the iterations of a round, then the median over rounds, per rank; the line
// gives the mean over ranks of each (OSU averages over ranks too).
//
// --cost: per-call time (mean over the iterations of a round, median over rounds, the maximum
// over ranks) of the blocking call, the non-blocking call then MPI_Wait, and MPI_Start then
// MPI_Wait on a persistent handle made once (ck_<coll>_init; for "native" the MPI's own
// MPI_<Coll>_init, or before MPI 4 collkit's handle over MPI_I<coll>).
//
// One line per result on rank 0:
//   OVERLAP algo bytes probes t_pure_us t_cpu_us t_total_us overlap_pct
//   COST algo bytes blocking_us nonblocking_us persistent_us
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "bench_common.hpp"
#include "calls.hpp"
#include "collkit.h"
#include "collkit/collective.hpp"

using namespace collkit;
using collkit::mpi::Args;
using collkit::mpi::CallArgs;
using collkit::mpi::split;

namespace {

double now() {
  return MPI_Wtime();
}

// Computes for `seconds` without entering MPI, except `probes` MPI_Test calls on `req` spread
// evenly over it (none when req is null).
void compute(double seconds, int probes, MPI_Request* req) {
  const int pieces = probes + 1;
  for (int k = 0; k < pieces; ++k) {
    const double end = now() + seconds / pieces;
    volatile double x = 1.0;
    while (now() < end)
      for (int i = 0; i < 64; ++i) x = x * 1.0000001 + 1e-9;
    if (req != nullptr && k + 1 < pieces) {
      int flag = 0;
      MPI_Test(req, &flag, MPI_STATUS_IGNORE);
    }
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

struct Buffers {
  std::vector<double> in, out;
  CallArgs a;
};

// Buffers for `bytes` per block of the collective on this rank (doubles; reductions: MPI_SUM).
Buffers buffers(Collective c, int64_t bytes, int P, int rank) {
  const CollectiveSpec& spec = spec_of(c);
  const bool no_data = spec.post.kind == Postcondition::Kind::synchronized;
  const int64_t n = std::max<int64_t>(bytes / 8, no_data ? 0 : 1);
  Buffers b;
  b.in.assign(static_cast<size_t>(std::max<int64_t>(buffer_elems(spec.in, P, n, 0, rank), 1)),
              1.0 + rank);
  b.out.assign(static_cast<size_t>(std::max<int64_t>(buffer_elems(spec.out, P, n, 0, rank), 1)),
               0.0);
  b.a.sendbuf = spec.root_input_in_out ? nullptr : b.in.data();
  b.a.recvbuf = b.out.data();
  b.a.sendcount = b.a.recvcount = n;
  b.a.sendtype = b.a.recvtype = MPI_DOUBLE;
  b.a.op = MPI_SUM;
  b.a.root = 0;
  b.a.comm = MPI_COMM_WORLD;
  return b;
}

int check(int rc, const std::string& what) {
  if (rc != MPI_SUCCESS) {
    std::fprintf(stderr, "collkit_overlap: %s failed: %s\n", what.c_str(), ck_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return rc;
}

int start(Collective c, const CallArgs& a, const std::string& algo, MPI_Request* r) {
  return collkit::mpi::call_collkit_nb(c, a, algo.c_str(), r);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Args args(argc, argv);
  int P = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const Collective c = collective_from_string(args.get("collective", "allreduce"));
  const auto algos = split(args.get("algos", "native"), ';');
  std::vector<int64_t> sizes;
  for (const auto& s : split(args.get("bytes", "8,65536"), ','))
    sizes.push_back(std::atoll(s.c_str()));
  std::vector<int> probes;
  for (const auto& s : split(args.get("probes", "0,8"), ','))
    probes.push_back(std::atoi(s.c_str()));
  const int iters = static_cast<int>(args.num("iters", 100));
  const int rounds = static_cast<int>(args.num("rounds", 5));
  const bool cost = args.flag("cost");

  for (int64_t bytes : sizes) {
    Buffers b = buffers(c, bytes, P, rank);
    // Per (algo, probes): the per-round means.
    std::map<std::string, std::vector<double>> pure;
    std::map<std::tuple<std::string, int>, std::vector<double>> cpu, total;
    std::map<std::string, std::vector<double>> blocking, nonblocking, persistent;
    std::map<std::string, MPI_Request> handles;
    if (cost)
      for (const auto& algo : algos) {
        MPI_Request h = MPI_REQUEST_NULL;
        check(collkit::mpi::call_collkit_init(c, b.a, algo.c_str(), &h), algo + " init");
        handles[algo] = h;
      }
    for (int round = -1; round < rounds; ++round) {  // round -1: warm-up (plans, connections)
      for (const auto& algo : algos) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        for (int i = 0; i < iters; ++i) {
          MPI_Request r;
          check(start(c, b.a, algo, &r), algo);
          check(MPI_Wait(&r, MPI_STATUS_IGNORE), algo + " wait");
        }
        const double t_pure = (now() - t0) / iters;
        if (round >= 0) pure[algo].push_back(t_pure);
        for (int pr : probes) {
          MPI_Barrier(MPI_COMM_WORLD);
          t0 = now();
          for (int i = 0; i < iters; ++i) compute(t_pure, pr, nullptr);
          const double t_cpu = (now() - t0) / iters;
          MPI_Barrier(MPI_COMM_WORLD);
          t0 = now();
          for (int i = 0; i < iters; ++i) {
            MPI_Request r;
            check(start(c, b.a, algo, &r), algo);
            compute(t_pure, pr, &r);
            check(MPI_Wait(&r, MPI_STATUS_IGNORE), algo + " wait");
          }
          const double t_total = (now() - t0) / iters;
          if (round >= 0) {
            cpu[{algo, pr}].push_back(t_cpu);
            total[{algo, pr}].push_back(t_total);
          }
        }
        if (!cost) continue;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now();
        for (int i = 0; i < iters; ++i)
          check(collkit::mpi::call_collkit(c, b.a, algo.c_str()), algo);
        const double t_b = (now() - t0) / iters;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now();
        for (int i = 0; i < iters; ++i) {
          MPI_Request r;
          check(start(c, b.a, algo, &r), algo);
          check(MPI_Wait(&r, MPI_STATUS_IGNORE), algo + " wait");
        }
        const double t_nb = (now() - t0) / iters;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now();
        for (int i = 0; i < iters; ++i) {
          check(MPI_Start(&handles[algo]), algo + " start");
          check(MPI_Wait(&handles[algo], MPI_STATUS_IGNORE), algo + " wait");
        }
        const double t_p = (now() - t0) / iters;
        if (round >= 0) {
          blocking[algo].push_back(t_b);
          nonblocking[algo].push_back(t_nb);
          persistent[algo].push_back(t_p);
        }
      }
    }
    for (auto& [algo, h] : handles) MPI_Request_free(&h);
    // Per rank: medians over rounds; then the mean over ranks (overlap) or the maximum (cost).
    for (const auto& algo : algos)
      for (int pr : probes) {
        const double tp = median(pure[algo]), tc = median(cpu[{algo, pr}]),
                     tt = median(total[{algo, pr}]);
        double mine[4] = {tp, tc, tt, std::max(0.0, 100.0 * (1.0 - (tt - tc) / tp))}, sum[4];
        MPI_Reduce(mine, sum, 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0)
          std::printf("OVERLAP %s %lld %d %.3f %.3f %.3f %.1f\n", algo.c_str(),
                      static_cast<long long>(bytes), pr, sum[0] / P * 1e6, sum[1] / P * 1e6,
                      sum[2] / P * 1e6, sum[3] / P);
      }
    if (cost)
      for (const auto& algo : algos) {
        double mine[3] = {median(blocking[algo]), median(nonblocking[algo]),
                          median(persistent[algo])},
               most[3];
        MPI_Reduce(mine, most, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0)
          std::printf("COST %s %lld %.3f %.3f %.3f\n", algo.c_str(), static_cast<long long>(bytes),
                      most[0] * 1e6, most[1] * 1e6, most[2] * 1e6);
      }
    std::fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
