// gatherv:binomial: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms gatherv:binomial` prints them).
// Phases:       every rank gathers its children's subtrees (nearest first) into scratch, packed,
// and sends its whole subtree to its parent in one message; the root receives each subtree into out
// where its blocks lie there in order. Restrictions: every rank reads its subtree's counts
// (Restrictions::all_counts: an MPI caller
//               gathers them first); any P, any root, any count vector, any displacements
#include "../phases/costs.hpp"
#include "../phases/vtrees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_binomial(const GenArgs& a, RankBuilder& b) {
  phases::gatherv_to_root(a, b, phases::Tree{phases::TreeShape::knomial, 2});
}

Cost cost_binomial(const CostArgs& a) {
  return phases::cost::tree_blocks(a.P, a.bytes, 2);
}

const Registrar reg{{
    .collective = Collective::gatherv,
    .name = "binomial",
    .summary =
        "binomial tree relative to the root forwarding each subtree's blocks packed in one message",
    .phases = "every rank gathers its children's subtrees (nearest first) into scratch, packed, "
              "and sends its whole subtree to its parent in one message; the root receives each "
              "subtree into out where its blocks lie there in order",
    .cost = "ceil(lg P) alpha + (P - 1) n beta at the root (n: bytes of the largest block; a rank "
            "forwards its subtree's blocks)",
    .reference = "Open MPI coll_base gather binomial (mca_coll_base_gather_intra_binomial) carried "
                 "to per-rank counts; Thakur, Rabenseifner, Gropp, IJHPCA 19(1) 2005",
    .params = {},
    .restrictions = {.all_counts = true},
    .prepare = {},
    .generate = generate_binomial,
    .model = cost_binomial,
}};

}  // namespace
}  // namespace collkit
