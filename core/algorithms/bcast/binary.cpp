// bcast:binary: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms bcast:binary` prints them).
// Phases:       each rank receives a segment from its parent and forwards it to its (at most two)
//               children, larger subtree first
// Restrictions: none (any P, any root)
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_binary(const GenArgs& a, RankBuilder& b) {
  const int64_t seg =
      phases::segment_elems(a.params->integer("seg"), a.header.elem_size, a.header.count);
  phases::bcast_down(b, phases::Tree{phases::TreeShape::binary, 2}, a.header.root, a.header.count,
                     seg);
}

const Registrar reg{{
    .collective = Collective::bcast,
    .name = "binary",
    .summary = "balanced binary tree relative to the root, optionally segmented",
    .phases = "each rank receives a segment from its parent and forwards it to its (at most two) "
              "children, larger subtree first",
    .cost = "2 (floor(lg P) + S - 1)(alpha + (n / S) beta), S = ceil(n / seg)",
    .reference = "the latency-model slides (binary tree); Open MPI coll_tuned bcast binary tree",
    .mpi_equivalents = {"ompi:binary_tree"},
    .params = {segment_param("0")},
    .restrictions = {},
    .prepare = {},
    .generate = generate_binary,
}};

}  // namespace
}  // namespace collkit
