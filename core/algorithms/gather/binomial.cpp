// Algorithm:    gather:binomial, binomial tree relative to the root
// Phases:       every rank receives the blocks of its children's subtrees (nearest child first)
//               into scratch, then sends its whole subtree's blocks to its parent in one message;
//               the root receives straight into out. A subtree's blocks crossing
//               rank P - 1 go as two messages so that each is contiguous in rank order.
// Cost:         ceil(lg P) alpha + (P - 1) n beta   (n: bytes per block; root 0)
// Restrictions: none (any P, any root, any count)
// Reference:    MPICH MPIR_Gather_intra_binomial; Thakur, Rabenseifner, Gropp, IJHPCA 19(1) 2005
#include "../phases/costs.hpp"
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_binomial(const GenArgs& a, RankBuilder& b) {
  phases::gather_to_root(b, phases::Tree{phases::TreeShape::knomial, 2}, a.header.root,
                         a.header.count);
}

Cost cost_binomial(const CostArgs& a) {
  return phases::cost::tree_blocks(a.P, a.bytes, 2);
}

const Registrar reg{{
    .collective = Collective::gather,
    .name = "binomial",
    .summary = "binomial tree relative to the root, a subtree's blocks in one message",
    .phases = "every rank gathers its children's subtrees, nearest first, then sends its whole "
              "subtree to its parent",
    .cost = "ceil(lg P) alpha + (P - 1) n beta",
    .reference = "MPICH MPIR_Gather_intra_binomial; Thakur, Rabenseifner, Gropp, IJHPCA 19(1) 2005",
    .mpi_equivalents = {"mpich:binomial", "ompi:binomial", "impi:binomial"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_binomial,
    .model = cost_binomial,
}};

}  // namespace
}  // namespace collkit
