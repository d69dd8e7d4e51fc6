// bcast:linear: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms bcast:linear` prints them).
// Phases:       the root sends out[0:n] to ranks root+1, root+2, ... (mod P), all sends started at
//               once
// Restrictions: none (any P, any root)
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_linear(const GenArgs& a, RankBuilder& b) {
  const int64_t seg = phases::segment_elems(0, a.header.elem_size, a.header.count);
  phases::bcast_down(b, phases::Tree{phases::TreeShape::flat, 2}, a.header.root, a.header.count,
                     seg);
}

const Registrar reg{{
    .collective = Collective::bcast,
    .name = "linear",
    .summary = "flat tree: the root sends the whole message to every other rank",
    .phases =
        "the root sends out[0:n] to ranks root+1, root+2, ... (mod P), all sends started at once",
    .cost = "(P - 1)(alpha + n beta) at the root",
    .reference = "the latency-model slides (flat tree / linear); Open MPI coll_tuned bcast linear",
    .mpi_equivalents = {"ompi:basic_linear"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_linear,
}};

}  // namespace
}  // namespace collkit
