// reduce:knomial: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms reduce:knomial` prints them).
// Phases:       partial results flow up k-nomial trees; each rank combines up to k - 1 children per
//               level with its own in rank order
// Restrictions: none (any P, any root; non-commutative ops: the ranks are split at the root so that
//               every subtree is a contiguous rank range and operands combine in rank order)
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_knomial(const GenArgs& a, RankBuilder& b) {
  const int64_t seg =
      phases::segment_elems(a.params->integer("seg"), a.header.elem_size, a.header.count);
  phases::reduce_to_root(b, phases::Tree{phases::TreeShape::knomial, a.params->integer("k")},
                         a.header.root, a.header.count, seg);
}

const Registrar reg{{
    .collective = Collective::reduce,
    .name = "knomial",
    .summary = "k-nomial trees on each side of the root (radix k)",
    .phases = "partial results flow up k-nomial trees; each rank combines up to k - 1 children per "
              "level with its own in rank order",
    .cost = "ceil(log_k P)(k - 1)(alpha + n beta + n gamma) at worst for root 0, unsegmented",
    .reference = "MPICH reduce k-nomial (MPIR_Reduce_intra_tree)",
    .mpi_equivalents = {"impi:knomial"},
    .params = {radix_param("4"), segment_param("0")},
    .restrictions = {},
    .prepare = {},
    .generate = generate_knomial,
}};

}  // namespace
}  // namespace collkit
