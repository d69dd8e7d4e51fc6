// bcast:pipeline: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms bcast:pipeline` prints them).
// Phases:       the message is cut into S = ceil(n / seg) segments; each rank receives segment i
//               from its predecessor and forwards it to its successor at once
// Restrictions: none (any P, any root)
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_pipeline(const GenArgs& a, RankBuilder& b) {
  const int64_t seg =
      phases::segment_elems(a.params->integer("seg"), a.header.elem_size, a.header.count);
  phases::bcast_down(b, phases::Tree{phases::TreeShape::chain, 2}, a.header.root, a.header.count,
                     seg);
}

// Its ranks' programs up to relabelling: the simulator generates one rank per key.
int64_t class_pipeline(const GenArgs& a, int64_t rank) {
  return phases::bcast_down_class(phases::Tree{phases::TreeShape::chain, 2}, a.header.P,
                                  a.header.root, a.header.count, rank);
}

const Registrar reg{{
    .collective = Collective::bcast,
    .name = "pipeline",
    .summary = "chain (pipeline): segments flow root -> root+1 -> ... -> root-1",
    .phases = "the message is cut into S = ceil(n / seg) segments; each rank receives segment i "
              "from its predecessor and forwards it to its successor at once",
    .cost = "(P - 2 + S)(alpha + (n / S) beta), S = ceil(n / seg)",
    .reference = "the latency-model slides (pipeline); Open MPI coll_tuned bcast pipeline",
    .mpi_equivalents = {"ompi:pipeline"},
    .params = {segment_param("8KiB")},
    .restrictions = {},
    .prepare = {},
    .generate = generate_pipeline,
    .program_class = class_pipeline,
}};

}  // namespace
}  // namespace collkit
