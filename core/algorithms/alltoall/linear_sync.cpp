// alltoall:linear_sync: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms alltoall:linear_sync` prints them).
// Phases:       1. copy the own block in[rank] -> out[rank];
//               2. receives from rank+1, rank+2, ... and sends to rank-1, rank-2, ..., at most
//                  K = bound of each kind in flight (0 or more than P-1: all P-1): the first K
//                  receives and K sends are posted at once, and the j-th receive (send) after
//                  them waits for the (j-K)-th receive (send) to complete. Open MPI replaces
//                  whichever request of that kind completes first (a wait-any); a schedule has
//                  no wait-any, so the window slides in posting order, which is the order the
//                  messages complete in when no rank is slower than another.
// Restrictions: none (every P >= 1, every count >= 0).
#include <algorithm>
#include <vector>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_linear_sync(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, rank = b.rank(), m = P - 1;
  const int64_t bound = a.params->integer("bound");
  const int64_t K = bound == 0 || bound > m ? m : bound;
  b.set_stage(0);
  b.copy({kOut, rank * n, n}, {kIn, rank * n, n});
  b.set_stage(1);
  std::vector<OpId> recvs, sends;
  recvs.reserve(static_cast<size_t>(m));
  sends.reserve(static_cast<size_t>(m));
  auto recv = [&](int64_t j) {
    const int64_t src = (rank + 1 + j) % P;
    const OpId dep = j >= K ? recvs[static_cast<size_t>(j - K)] : kNoOp;
    recvs.push_back(b.recv(src, {kOut, src * n, n}, {dep}));
  };
  auto send = [&](int64_t j) {
    const int64_t dst = ((rank - 1 - j) % P + P) % P;
    const OpId dep = j >= K ? sends[static_cast<size_t>(j - K)] : kNoOp;
    sends.push_back(b.send(dst, {kIn, dst * n, n}, {dep}));
  };
  // Posted as Open MPI posts them: the first window of receives, that of sends, then the rest.
  for (int64_t j = 0; j < K; ++j) recv(j);
  for (int64_t j = 0; j < K; ++j) send(j);
  for (int64_t j = K; j < m; ++j) {
    recv(j);
    send(j);
  }
}

Cost cost_linear_sync(const CostArgs& a) {
  const double m = static_cast<double>(a.P - 1);
  return {m, m * a.bytes, 0};
}

const Registrar reg{{
    .collective = Collective::alltoall,
    .name = "linear_sync",
    .summary = "linear with at most `bound` receives and `bound` sends in flight, each new one "
               "posted as an earlier one completes",
    .phases = "copy the own block; post receives from rank+1, rank+2, ... and sends to rank-1, "
              "rank-2, ..., a sliding window of bound of each kind",
    .cost = "(P-1) (alpha + N beta) (N: bytes per block; up to bound start-ups overlap on a "
            "network with enough injection bandwidth)",
    .reference = "Open MPI ompi_coll_base_alltoall_intra_linear_sync (coll/base; "
                 "coll_tuned_alltoall_algorithm_max_requests = bound)",
    .mpi_equivalents = {"ompi:linear_sync"},
    .params = {{"bound",
                ParamType::integer,
                "0",
                0,
                INT64_MAX,
                "receives (and sends) in flight at most; 0: all P-1 at once",
                {"0", "1", "3"}}},
    .restrictions = {},
    .prepare = {},
    .generate = generate_linear_sync,
    .model = cost_linear_sync,
}};

}  // namespace
}  // namespace collkit
