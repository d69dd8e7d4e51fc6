// bcast:knomial: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms bcast:knomial` prints them).
// Phases:       like binomial in base k: each rank receives from its parent and sends to up to k -
//               1 children per level, farthest first
// Restrictions: none (any P, any root)
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_knomial(const GenArgs& a, RankBuilder& b) {
  const int64_t seg =
      phases::segment_elems(a.params->integer("seg"), a.header.elem_size, a.header.count);
  phases::bcast_down(b, phases::Tree{phases::TreeShape::knomial, a.params->integer("k")},
                     a.header.root, a.header.count, seg);
}

// Its ranks' programs up to relabelling: the simulator generates one rank per key.
int64_t class_knomial(const GenArgs& a, int64_t rank) {
  return phases::bcast_down_class(phases::Tree{phases::TreeShape::knomial, a.params->integer("k")},
                                  a.header.P, a.header.root, a.header.count, rank);
}

const Registrar reg{{
    .collective = Collective::bcast,
    .name = "knomial",
    .summary = "k-nomial tree relative to the root (radix k)",
    .phases = "like binomial in base k: each rank receives from its parent and sends to up to k - "
              "1 children per level, farthest first",
    .cost = "ceil(log_k P)(k - 1)(alpha + n beta) at worst, unsegmented",
    .reference = "MPICH bcast k-nomial (MPIR_Bcast_intra_tree, tree_type knomial)",
    .mpi_equivalents = {"ompi:knomial", "impi:knomial"},
    .params = {radix_param("4"), segment_param("0")},
    .restrictions = {},
    .prepare = {},
    .generate = generate_knomial,
    .program_class = class_knomial,
}};

}  // namespace
}  // namespace collkit
