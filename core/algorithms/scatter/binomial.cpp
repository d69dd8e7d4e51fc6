// scatter:binomial: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms scatter:binomial` prints them).
// Phases:       every rank receives its subtree's blocks from its parent in one message
//               (into scratch if it has children) and passes each child its subtree's blocks,
//               largest subtree first; the root sends straight from in. A subtree's blocks crossing
//               rank P - 1 go as two messages so that each is contiguous in rank order.
// Restrictions: none (any P, any root, any count)
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
    // Cost: (n: bytes per block; root 0)
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
