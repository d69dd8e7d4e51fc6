// allreduce:recexch: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allreduce:recexch` prints them).
// Phases:       MPICH's MPIR_Allreduce_intra_recexch (phases/recexch.hpp for the groups):
//               1. copy in to out; a rank outside the pofk = k^m exchanging ranks sends its
//                  vector to the last rank of its run of k and waits for the result (3);
//                  that rank receives all its senders' vectors, then reduces them in;
//               2. m phases on the pofk ranks: in phase i, the k - 1 ranks whose step-2 rank
//                  differs only in base-k digit i; each rank receives their vectors (into
//                  scratch: with single_phase_recv = 0, the next phase's receives are posted
//                  with this phase's), sends its own to each, and reduces the k vectors in
//                  rank order (left to right, as MPICH's do_reduce does for floating-point
//                  and non-commutative ops);
//               3. each rank that folded others in sends them the result.
// Restrictions: none (any P, count; non-commutative ops: runs of consecutive ranks fold, and
//               every phase's group is combined in rank order, so all ranks build one tree).
#include "../phases/recexch.hpp"

#include <algorithm>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_recexch(const GenArgs& a, RankBuilder& b) {
  const int64_t n = a.header.count;
  b.set_stage(0);
  const OpId ready = b.copy({kOut, 0, n}, {kIn, 0, n});
  if (a.header.P == 1) return;
  const phases::Recexch g(a.header.P, a.params->integer("k"), b.rank());
  phases::recexch_allreduce(b, g, a.params->integer("single_phase_recv") != 0, n, true, ready);
}

// Along the critical path (one port): m = log_k pofk phases of k - 1 messages and reductions;
// where P != k^m the rank folded into receives, and later sends, up to k - 1 vectors.
Cost cost_recexch(const CostArgs& a) {
  if (a.P <= 1) return {};
  const phases::Recexch g(a.P, a.params->integer("k"), 0);
  const auto m = static_cast<double>(g.nphases), w = static_cast<double>(g.k - 1);
  const auto f = static_cast<double>(std::min(g.k - 1, g.rem));
  return Cost{m * w, m * w * a.bytes, m * w * a.bytes} + Cost{2 * f, 2 * f * a.bytes, f * a.bytes};
}

const Registrar reg{{
    .collective = Collective::allreduce,
    .name = "recexch",
    .summary = "MPICH's recursive exchange: log_k P phases of exchanges with k - 1 peers each, "
               "runs of k ranks folded in where P != k^m",
    .phases = "fold the ranks past pofk = k^floor(log_k P) into the last of each run of k; "
              "log_k pofk phases: send the vector to the k - 1 peers differing in one base-k "
              "digit, receive theirs, reduce in rank order; send the result back to the folded",
    .cost = "m (k - 1)(alpha + n beta + n gamma) + f (2 alpha + 2 n beta + n gamma), m = "
            "floor(log_k P), f = min(k - 1, P - k^m) (one port: a phase's k - 1 messages in "
            "turn)",
    .reference = "MPICH MPIR_Allreduce_intra_recexch and MPII_Recexchalgo_get_neighbors "
                 "(src/mpi/coll/allreduce/allreduce_intra_recexch.c, "
                 "src/mpi/coll/algorithms/recexchalgo/recexchalgo.c); recursive doubling of "
                 "Thakur, Rabenseifner, Gropp, IJHPCA 19(1) 2005 for radix k",
    .mpi_equivalents = {"mpich:recexch"},
    .params = {phases::recexch_k_param(), phases::single_phase_recv_param()},
    .restrictions = {},
    .prepare = {},
    .generate = generate_recexch,
    .model = cost_recexch,
}};

}  // namespace
}  // namespace collkit
