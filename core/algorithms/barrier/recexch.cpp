// barrier:recexch: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms barrier:recexch` prints them).
// Phases:       MPICH's MPIR_Barrier_intra_recexch is its recursive-exchange allreduce of
//               zero bytes (allreduce:recexch's messages, each zero-length; each reduction
//               a join of the messages it waited on): fold in, log_k pofk exchange phases
//               with k - 1 peers, fold out.
// Restrictions: none (any P; no data)
#include "../phases/recexch.hpp"

#include <algorithm>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_recexch(const GenArgs& a, RankBuilder& b) {
  if (a.header.P == 1) return;
  const phases::Recexch g(a.header.P, a.params->integer("k"), b.rank());
  phases::recexch_allreduce(b, g, a.params->integer("single_phase_recv") != 0, 0, false, kNoOp);
}

// Along the critical path (one port): m phases of k - 1 messages, and a fold in and out.
Cost cost_recexch(const CostArgs& a) {
  if (a.P <= 1) return {};
  const phases::Recexch g(a.P, a.params->integer("k"), 0);
  const auto f = static_cast<double>(std::min(g.k - 1, g.rem));
  return Cost{static_cast<double>(g.nphases * (g.k - 1)) + 2 * f, 0, 0};
}

const Registrar reg{{
    .collective = Collective::barrier,
    .name = "recexch",
    .summary = "MPICH's recursive-exchange barrier: allreduce:recexch's messages, zero-length",
    .phases = "fold the ranks past k^floor(log_k P) into the last of each run of k; log_k P "
              "phases of zero-length exchanges with the k - 1 peers differing in one base-k "
              "digit; release the folded ranks",
    .cost = "(m (k - 1) + 2 f) alpha, m = floor(log_k P), f = min(k - 1, P - k^m) (one port)",
    .reference = "MPICH MPIR_Barrier_intra_recexch (src/mpi/coll/barrier/barrier_intra_recexch.c: "
                 "MPIR_Allreduce_intra_recexch of 0 bytes)",
    .mpi_equivalents = {"mpich:recexch"},
    .params = {phases::recexch_k_param(), phases::single_phase_recv_param()},
    .restrictions = {},
    .prepare = {},
    .generate = generate_recexch,
    .model = cost_recexch,
}};

}  // namespace
}  // namespace collkit
