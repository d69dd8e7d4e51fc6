// allgather:recexch_doubling: its summary, phases in brief, cost and reference are said once, in
// its Registrar at the end of this file (`collkit algorithms allgather:recexch_doubling` prints
// them). Phases:       MPICH's MPIR_Allgather_intra_recexch, doubling (phases/recexch.hpp):
//               1. a rank outside the pofk = k^m exchanging ranks sends its block to the last
//                  rank of its run of k, which receives the run's blocks (and copies its own);
//               2. distance doubling: phase i exchanges with the peers differing in base-k digit i,
//               the groups of k^i ranks' blocks;
//                  each rank posts a phase's receives (with single_phase_recv = 0 the next
//                  phase's too), then its sends, and waits for its sends every two phases;
//               3. each rank that folded others in sends them the whole result.
// Restrictions: none (any P, any count).
#include "../phases/recexch.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate(const GenArgs& a, RankBuilder& b) {
  const phases::Recexch g(a.header.P, a.params->integer("k"), b.rank());
  phases::recexch_allgather(b, g, false, a.params->integer("single_phase_recv") != 0,
                            a.header.count);
}

Cost cost(const CostArgs& a) {
  return phases::recexch_allgather_cost(a.P, a.params->integer("k"), false, a.bytes);
}

const Registrar reg{{
    .collective = Collective::allgather,
    .name = "recexch_doubling",
    .summary = "MPICH's recursive exchange allgather, doubling the distance, radix k",
    .phases =
        "fold the ranks past pofk = k^floor(log_k P) into the last of each run of k; "
        "log_k pofk phases, digit 0 first: send the blocks of the own group of k^i step-2 ranks to "
        "the k - 1 peers differing in digit i, receive theirs; send the result back to the folded",
    .cost = "P = k^m: m (k - 1) alpha + (P - 1) n beta (n: bytes per block); otherwise "
            "+ f (alpha + n beta) in and f (alpha + P n beta) out, f = min(k - 1, P - k^m), "
            "and the lowest group's folded blocks at every phase (an upper bound)",
    .reference = "MPICH MPIR_Allgather_intra_recexch (src/mpi/coll/allgather/"
                 "allgather_intra_recexch.c); Thakur, Rabenseifner, Gropp, IJHPCA 19(1) 2005 "
                 "(recursive doubling), for radix k",
    .mpi_equivalents = {"mpich:recexch_doubling"},
    .params = {phases::recexch_k_param(), phases::single_phase_recv_param()},
    .restrictions = {},
    .prepare = {},
    .generate = generate,
    .model = cost,
}};

}  // namespace
}  // namespace collkit
