// collkit_multicast: the multicast benchmark of [Ruefenacht 2017] §5.1. Rank 0 issues b messages of
// `bytes` bytes (b = 1..max-b) to b peers, with blocking MPI_Send or non-blocking MPI_Isend, and
// times only the issuing: the clock is read directly before the first send starts and after the
// last one returns (for MPI_Isend the Waitall comes after the clock). The pipelining postal model
// says T(b) = alpha_p + b alpha_r, so a linear regression of T on b, over the minima and over the
// medians, gives alpha_p (intercept) and alpha_r (slope), as in the seed's Table 1.
//
// Peers are ranks 1..P-1, message j going to rank 1 + j mod (P-1): with fewer than b + 1 ranks a
// peer gets several messages of one multicast (on one node that is what the sends cost anyway).
// Receivers pre-post their receives before each iteration's barrier, so no send waits on one.
//
//   collkit_multicast [--max-b 16] [--iters 1000] [--warmup 100] [--bytes 8] [--fit-max-b 8]
//   [--raw]
// Prints one JSON line per (mode, b) and a final "fit" line per mode, on rank 0.
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.hpp"

using namespace collkit::mpi;

namespace {

// Least squares y = a + b x; returns {a, b}.
std::pair<double, double> linear_fit(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  return {(sy - slope * sx) / n, slope};
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Args args(argc, argv);
  int rank = 0, P = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  if (P < 2) {
    if (rank == 0) std::fprintf(stderr, "error: the multicast benchmark needs at least 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  const int max_b = static_cast<int>(std::max(1LL, args.num("max-b", 16)));
  const int fit_max_b = static_cast<int>(std::max(2LL, args.num("fit-max-b", 8)));
  const long long iters = std::max(1LL, args.num("iters", 1000));
  const long long warmup = args.num("warmup", 100);
  const int bytes = static_cast<int>(std::max(0LL, args.num("bytes", 8)));
  const bool raw = args.flag("raw");
  std::vector<char> sbuf(static_cast<size_t>(bytes) + 1),
      rbuf((static_cast<size_t>(bytes) + 1) * max_b);
  std::vector<MPI_Request> reqs(static_cast<size_t>(max_b));

  for (int blocking = 1; blocking >= 0; --blocking) {
    const char* mode = blocking ? "blocking" : "nonblocking";
    std::vector<double> bs, mins, medians;
    for (int b = 1; b <= max_b; ++b) {
      // Messages this rank receives in one multicast of b.
      int mine = 0;
      for (int j = 0; j < b; ++j) mine += (1 + j % (P - 1)) == rank;
      std::vector<double> samples;
      for (long long it = -warmup; it < iters; ++it) {
        for (int j = 0; j < mine; ++j)
          MPI_Irecv(rbuf.data() + j * (bytes + 1), bytes, MPI_CHAR, 0, 0, MPI_COMM_WORLD,
                    &reqs[static_cast<size_t>(j)]);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
          const double t0 = MPI_Wtime();
          if (blocking) {
            for (int j = 0; j < b; ++j)
              MPI_Send(sbuf.data(), bytes, MPI_CHAR, 1 + j % (P - 1), 0, MPI_COMM_WORLD);
          } else {
            for (int j = 0; j < b; ++j)
              MPI_Isend(sbuf.data(), bytes, MPI_CHAR, 1 + j % (P - 1), 0, MPI_COMM_WORLD,
                        &reqs[static_cast<size_t>(j)]);
          }
          const double t1 = MPI_Wtime();
          if (!blocking) MPI_Waitall(b, reqs.data(), MPI_STATUSES_IGNORE);
          if (it >= 0) samples.push_back((t1 - t0) * 1e6);
        } else {
          MPI_Waitall(mine, reqs.data(), MPI_STATUSES_IGNORE);
        }
      }
      if (rank != 0) continue;
      Stats st = summarize(samples);
      if (b <= fit_max_b) {
        bs.push_back(b);
        mins.push_back(st.min);
        medians.push_back(st.median);
      }
      std::printf(
          "{\"kind\": \"multicast\", \"mode\": \"%s\", \"b\": %d, \"P\": %d, \"bytes\": %d, "
          "\"iterations\": %zu, \"min\": %.4f, \"q1\": %.4f, \"median\": %.4f, \"q3\": %.4f, "
          "\"mean\": %.4f, \"p99\": %.4f, \"max\": %.4f",
          mode, b, P, bytes, samples.size(), st.min, st.q1, st.median, st.q3, st.mean, st.p99,
          st.max);
      if (raw) {
        std::printf(", \"samples\": [");
        for (size_t i = 0; i < samples.size(); ++i)
          std::printf("%s%.4f", i ? ", " : "", samples[i]);
        std::printf("]");
      }
      std::printf("}\n");
      std::fflush(stdout);
    }
    if (rank == 0 && bs.size() >= 2) {
      auto [ap_min, ar_min] = linear_fit(bs, mins);
      auto [ap_med, ar_med] = linear_fit(bs, medians);
      std::printf(
          "{\"kind\": \"fit\", \"mode\": \"%s\", \"b_max\": %d, \"alpha_p_min\": %.4f, "
          "\"alpha_r_min\": %.4f, \"alpha_p_median\": %.4f, \"alpha_r_median\": %.4f}\n",
          mode, static_cast<int>(bs.size()), ap_min, ar_min, ap_med, ar_med);
      std::fflush(stdout);
    }
  }
  MPI_Finalize();
  return 0;
}
