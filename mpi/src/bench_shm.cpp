// The shared-memory transport against the MPI, in one job (issue 20; benchmarks/bench_shm.py):
//
// 1. The physical limit: an 8-byte exchange between two ranks through the transport's slots
//    (each rank publishes 8 bytes to the other and waits for the other's), ns per exchange,
//    beside the MPI's MPI_Sendrecv of 8 bytes and its native MPI_Allreduce of one double.
// 2. Per collective and size: the MPI's native call, collkit with shared memory, and collkit
//    without (a communicator set up while COLLKIT_SHM=0), interleaved round by round (the order
//    rotated each round), each round a block of back-to-back calls as OSU measures, the per-call
//    time of a block being the maximum over ranks.
//
//   collkit_bench_shm [--sizes 8,64,1024] [--rounds 15] [--block 200]
//                     [--collectives allreduce,reduce,bcast,barrier,allgather,alltoall]
//                     [--algos allreduce:rd,reduce:binomial,...] [--limit-iters 100000]
// One JSON object per line on rank 0: {"kind":"limit",...} and {"kind":"row",...}.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "collkit.h"
#include "shm.hpp"

using namespace collkit::mpi;

namespace {

double now_ns() {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count());
}

double max_over_ranks(double x, MPI_Comm comm) {
  double m = 0;
  MPI_Allreduce(&x, &m, 1, MPI_DOUBLE, MPI_MAX, comm);
  return m;
}

// ns per 8-byte exchange through the transport's slots (ranks 0 and 1).
double shm_exchange_ns(ShmTransport& t, int rank, long iters) {
  const int peer = 1 - rank;
  double v = 1.0, got = 0;
  uint64_t q = 0;
  const double t0 = now_ns();
  for (long i = 0; i < iters; ++i, ++q) {
    std::byte* s = nullptr;
    while ((s = t.send_slot(peer, q)) == nullptr) {
    }
    std::memcpy(s, &v, 8);
    t.publish(peer, q);
    const std::byte* r = nullptr;
    while ((r = t.recv_slot(peer, q)) == nullptr) {
    }
    std::memcpy(&got, r, 8);
    t.release(peer, q);
    v += got * 0;
  }
  return (now_ns() - t0) / static_cast<double>(iters);
}

struct Call {
  std::string coll;
  int64_t bytes;
  std::vector<char> sb, rb;
  void run(MPI_Comm comm, const char* algo) {
    const auto n = static_cast<MPI_Count>(bytes);
    const MPI_Count doubles = std::max<int64_t>(bytes / 8, 1);
    if (coll == "allreduce")
      ck_allreduce(sb.data(), rb.data(), doubles, MPI_DOUBLE, MPI_SUM, comm, algo);
    else if (coll == "reduce")
      ck_reduce(sb.data(), rb.data(), doubles, MPI_DOUBLE, MPI_SUM, 0, comm, algo);
    else if (coll == "bcast")
      ck_bcast(rb.data(), n, MPI_BYTE, 0, comm, algo);
    else if (coll == "barrier")
      ck_barrier(comm, algo);
    else if (coll == "allgather")
      ck_allgather(sb.data(), n, MPI_BYTE, rb.data(), n, MPI_BYTE, comm, algo);
    else if (coll == "alltoall")
      ck_alltoall(sb.data(), n, MPI_BYTE, rb.data(), n, MPI_BYTE, comm, algo);
  }
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Args args(argc, argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long rounds = args.num("rounds", 15), block = args.num("block", 200);
  const long limit_iters = args.num("limit-iters", 100000);
  const auto colls =
      split(args.get("collectives", "allreduce,reduce,bcast,barrier,allgather,alltoall"), ',');
  std::map<std::string, std::string> algo = {
      {"allreduce", "allreduce:rd"}, {"reduce", "reduce:binomial"},
      {"bcast", "bcast:binomial"},   {"barrier", "barrier:dissemination"},
      {"allgather", "allgather:rd"}, {"alltoall", "alltoall:pairwise"}};
  for (const auto& a : split(args.get("algos", ""), ',')) algo[a.substr(0, a.find(':'))] = a;
  std::vector<int64_t> sizes;
  for (const auto& s : split(args.get("sizes", "8,64,1024,4096,65536"), ','))
    sizes.push_back(std::strtoll(s.c_str(), nullptr, 10));

  // Two communicators: one set up with shared memory, one while COLLKIT_SHM=0 (the transport is
  // chosen once per communicator, on its first collkit call).
  MPI_Comm with = MPI_COMM_NULL, without = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &with);
  MPI_Comm_dup(MPI_COMM_WORLD, &without);
  ck_barrier(with, "barrier:dissemination");
  const char* old = std::getenv("COLLKIT_SHM");
  const std::string saved = old ? old : "";
  setenv("COLLKIT_SHM", "0", 1);
  ck_barrier(without, "barrier:dissemination");
  if (old) {
    setenv("COLLKIT_SHM", saved.c_str(), 1);
  } else {
    unsetenv("COLLKIT_SHM");
  }
  if (rank == 0) {
    std::printf("{\"kind\":\"transport\",\"with\":\"%s\",\"without\":\"%s\"}\n",
                json_escape(ck_transport(with)).c_str(),
                json_escape(ck_transport(without)).c_str());
  }

  // 1. The physical limit, then the MPI's own 8-byte exchange and allreduce, same job.
  if (size == 2) {
    std::string why;
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    auto t = ShmTransport::create(c, why);
    for (int rep = 0; rep < 3; ++rep) {
      double shm_ns = -1;
      if (t) {
        MPI_Barrier(c);
        shm_exchange_ns(*t, rank, limit_iters / 10);  // warm-up
        MPI_Barrier(c);
        shm_ns = max_over_ranks(shm_exchange_ns(*t, rank, limit_iters), c);
      }
      double a = 1, b = 0;
      MPI_Barrier(c);
      double t0 = now_ns();
      for (long i = 0; i < limit_iters; ++i)
        MPI_Sendrecv(&a, 1, MPI_DOUBLE, 1 - rank, 0, &b, 1, MPI_DOUBLE, 1 - rank, 0, c,
                     MPI_STATUS_IGNORE);
      const double sr = max_over_ranks((now_ns() - t0) / static_cast<double>(limit_iters), c);
      MPI_Barrier(c);
      t0 = now_ns();
      for (long i = 0; i < limit_iters; ++i) MPI_Allreduce(&a, &b, 1, MPI_DOUBLE, MPI_SUM, c);
      const double ar = max_over_ranks((now_ns() - t0) / static_cast<double>(limit_iters), c);
      if (rank == 0)
        std::printf(
            "{\"kind\":\"limit\",\"repeat\":%d,\"shm_exchange_ns\":%.1f,\"mpi_sendrecv_8B_ns\":%."
            "1f,"
            "\"mpi_allreduce_8B_ns\":%.1f%s}\n",
            rep, shm_ns, sr, ar, t ? "" : (",\"shm\":\"" + json_escape(why) + "\"").c_str());
    }
    t.reset();
    MPI_Comm_free(&c);
  }

  // 2. native / collkit with shm / collkit without, interleaved.
  const char* variants[3] = {"native", "shm", "p2p"};
  for (const auto& coll : colls) {
    for (int64_t bytes : sizes) {
      if (coll == "barrier" && bytes != sizes.front()) continue;
      const int64_t b = coll == "barrier" ? 0 : bytes;
      Call call{coll, b, {}, {}};
      const size_t cap = static_cast<size_t>(std::max<int64_t>(b, 8)) * static_cast<size_t>(size);
      call.sb.assign(cap, 1);
      call.rb.assign(cap, 0);
      std::vector<double> t[3];
      const std::string& name = algo[coll];
      for (long r = 0; r < rounds + 1; ++r) {  // round 0 warms up
        for (int k = 0; k < 3; ++k) {
          const int v = static_cast<int>((k + r) % 3);
          MPI_Comm comm = v == 2 ? without : with;
          const char* a = v == 0 ? "native" : name.c_str();
          call.run(comm, a);
          MPI_Barrier(comm);
          const double t0 = now_ns();
          for (long i = 0; i < block; ++i) call.run(comm, a);
          const double per = max_over_ranks((now_ns() - t0) / static_cast<double>(block), comm);
          if (r > 0) t[v].push_back(per);
        }
      }
      if (rank == 0) {
        std::vector<double> shm_vs_native, p2p_vs_native, shm_vs_p2p;
        for (size_t r = 0; r < t[0].size(); ++r) {
          shm_vs_native.push_back(t[1][r] / t[0][r]);
          p2p_vs_native.push_back(t[2][r] / t[0][r]);
          shm_vs_p2p.push_back(t[1][r] / t[2][r]);
        }
        std::printf(
            "{\"kind\":\"row\",\"collective\":\"%s\",\"algorithm\":\"%s\",\"bytes\":%lld,"
            "\"P\":%d,\"%s_ns\":%.1f,\"%s_ns\":%.1f,\"%s_ns\":%.1f,\"shm_vs_native\":%.3f,"
            "\"p2p_vs_native\":%.3f,\"shm_vs_p2p\":%.3f,\"rounds\":%ld,\"block\":%ld,"
            "\"native_min_ns\":%.1f,\"shm_min_ns\":%.1f,\"p2p_min_ns\":%.1f}\n",
            coll.c_str(), name.c_str(), static_cast<long long>(b), size, variants[0],
            summarize(t[0]).median, variants[1], summarize(t[1]).median, variants[2],
            summarize(t[2]).median, summarize(shm_vs_native).median,
            summarize(p2p_vs_native).median, summarize(shm_vs_p2p).median, rounds, block,
            summarize(t[0]).min, summarize(t[1]).min, summarize(t[2]).min);
        std::fflush(stdout);
      }
    }
  }
  MPI_Comm_free(&with);
  MPI_Comm_free(&without);
  MPI_Finalize();
  return 0;
}
