// gather:knomial: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms gather:knomial` prints them).
// Phases:       as gather:binomial in base k: a rank has up to k - 1 children per level, each
//               sending its whole subtree's blocks in one message (two where it crosses rank P - 1)
// Restrictions: none (any P, any root, any count)
#include "../phases/costs.hpp"
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_knomial(const GenArgs& a, RankBuilder& b) {
  phases::gather_to_root(b, phases::Tree{phases::TreeShape::knomial, a.params->integer("k")},
                         a.header.root, a.header.count);
}

Cost cost_knomial(const CostArgs& a) {
  return phases::cost::tree_blocks(a.P, a.bytes, a.params->integer("k"));
}

const Registrar reg{{
    .collective = Collective::gather,
    .name = "knomial",
    .summary = "k-nomial tree relative to the root (radix k), a subtree's blocks in one message",
    .phases = "as gather:binomial in base k: up to k - 1 children per level",
    // Cost: (n: bytes per block)
    .cost = "ceil(log_k P) (k - 1) alpha + (P - 1) n beta at worst",
    .reference = "MPICH k-nomial trees (MPIR_Treealgo_tree_create_knomial); Open MPI coll_base "
                 "gather k-nomial",
    .params = {radix_param("4")},
    .restrictions = {},
    .prepare = {},
    .generate = generate_knomial,
    .model = cost_knomial,
}};

}  // namespace
}  // namespace collkit
