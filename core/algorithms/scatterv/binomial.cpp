// scatterv:binomial: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms scatterv:binomial` prints them).
// Phases:       the root sends each child its subtree's blocks (largest subtree first), packed
// through scratch where they do not lie in order in in; every rank keeps its own block and forwards
// the rest down. Restrictions: every rank reads its subtree's counts (Restrictions::all_counts: an
// MPI caller
//               gathers them first); any P, any root, any count vector, any displacements
#include "../phases/costs.hpp"
#include "../phases/vtrees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_binomial(const GenArgs& a, RankBuilder& b) {
  phases::scatterv_from_root(a, b, phases::Tree{phases::TreeShape::knomial, 2});
}

Cost cost_binomial(const CostArgs& a) {
  return phases::cost::tree_blocks(a.P, a.bytes, 2);
}

const Registrar reg{{
    .collective = Collective::scatterv,
    .name = "binomial",
    .summary =
        "binomial tree relative to the root forwarding each subtree's blocks packed in one message",
    .phases = "the root sends each child its subtree's blocks (largest subtree first), packed "
              "through scratch where they do not lie in order in in; every rank keeps its own "
              "block and forwards the rest down",
    .cost = "ceil(lg P) alpha + (P - 1) n beta at the root (n: bytes of the largest block; a rank "
            "forwards its subtree's blocks)",
    .reference = "Open MPI coll_base scatter binomial (mca_coll_base_scatter_intra_binomial) "
                 "carried to per-rank counts; Thakur, Rabenseifner, Gropp, IJHPCA 19(1) 2005",
    .params = {},
    .restrictions = {.all_counts = true},
    .prepare = {},
    .generate = generate_binomial,
    .model = cost_binomial,
}};

}  // namespace
}  // namespace collkit
