// Algorithm:    scatter:binomial, binomial tree relative to the root
// Phases:       every rank receives its subtree's blocks from its parent in one message
//               (into scratch if it has children) and passes each child its subtree's blocks,
//               largest subtree first; the root sends straight from in. A subtree's blocks crossing
//               rank P - 1 go as two messages so that each is contiguous in rank order.
// Cost:         ceil(lg P) alpha + (P - 1) n beta   (n: bytes per block; root 0)
// Restrictions: none (any P, any root, any count)
// Reference:    MPICH MPIR_Scatter_intra_binomial; Thakur, Rabenseifner, Gropp, IJHPCA 19(1) 2005
#include "../phases/costs.hpp"
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_binomial(const GenArgs& a, RankBuilder& b) {
  phases::scatter_from_root(b, phases::Tree{phases::TreeShape::knomial, 2}, a.header.root,
                            a.header.count);
}

Cost cost_binomial(const CostArgs& a) {
  return phases::cost::tree_blocks(a.P, a.bytes, 2);
}

const Registrar reg{{
    .collective = Collective::scatter,
    .name = "binomial",
    .summary = "binomial tree relative to the root, a subtree's blocks in one message",
    .phases = "every rank receives its subtree's blocks from its parent and passes each child its "
              "subtree's blocks, largest first",
    .cost = "ceil(lg P) alpha + (P - 1) n beta",
    .reference =
        "MPICH MPIR_Scatter_intra_binomial; Thakur, Rabenseifner, Gropp, IJHPCA 19(1) 2005",
    .mpi_equivalents = {"mpich:binomial", "ompi:binomial", "impi:binomial"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_binomial,
    .model = cost_binomial,
}};

}  // namespace
}  // namespace collkit
