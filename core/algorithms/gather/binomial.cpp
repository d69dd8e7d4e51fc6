// gather:binomial: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms gather:binomial` prints them).
// Phases:       every rank receives the blocks of its children's subtrees (nearest child first)
//               into scratch, then sends its whole subtree's blocks to its parent in one message;
//               the root receives straight into out. A subtree's blocks crossing
//               rank P - 1 go as two messages so that each is contiguous in rank order.
// Restrictions: none (any P, any root, any count)
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
    // Cost: (n: bytes per block; root 0)
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
