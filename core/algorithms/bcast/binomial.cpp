// bcast:binomial: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms bcast:binomial` prints them).
// Phases:       each rank receives from its parent (its rank minus its lowest set bit, relative to
//               the root) and sends to children at distances 1, 2, 4, ... below that bit, farthest
//               first
// Restrictions: none (any P, any root)
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_binomial(const GenArgs& a, RankBuilder& b) {
  const int64_t seg =
      phases::segment_elems(a.params->integer("seg"), a.header.elem_size, a.header.count);
  phases::bcast_down(b, phases::Tree{phases::TreeShape::knomial, 2}, a.header.root, a.header.count,
                     seg);
}

// Its ranks' programs up to relabelling: the simulator generates one rank per key.
int64_t class_binomial(const GenArgs& a, int64_t rank) {
  return phases::bcast_down_class(phases::Tree{phases::TreeShape::knomial, 2}, a.header.P,
                                  a.header.root, a.header.count, rank);
}

const Registrar reg{{
    .collective = Collective::bcast,
    .name = "binomial",
    .summary = "binomial tree relative to the root",
    .phases =
        "each rank receives from its parent (its rank minus its lowest set bit, relative to the "
        "root) and sends to children at distances 1, 2, 4, ... below that bit, farthest first",
    .cost = "ceil(lg P)(alpha + n beta) unsegmented",
    .reference = "MPICH bcast binomial; Thakur, Rabenseifner, Gropp, IJHPCA 19(1) 2005",
    .mpi_equivalents = {"mpich:binomial", "ompi:binomial", "impi:binomial"},
    .params = {segment_param("0")},
    .restrictions = {},
    .prepare = {},
    .generate = generate_binomial,
    .program_class = class_binomial,
}};

}  // namespace
}  // namespace collkit
