// gather:linear: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms gather:linear` prints them).
// Phases:       the root copies its own block into out[root n] (nothing under MPI_IN_PLACE) and
//               receives block q of every other rank q directly into out[q n]
// Restrictions: none (any P, any root, any count)
#include "../phases/costs.hpp"
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_linear(const GenArgs& a, RankBuilder& b) {
  phases::gather_to_root(b, phases::Tree{phases::TreeShape::flat, 2}, a.header.root,
                         a.header.count);
}

Cost cost_linear(const CostArgs& a) {
  return phases::cost::flat(a.P, a.bytes);
}

const Registrar reg{{
    .collective = Collective::gather,
    .name = "linear",
    .summary = "flat tree: every rank sends its block straight to the root",
    .phases = "the root copies its own block into place and receives every other rank's block "
              "into out at the sender's position",
    // Cost: (n: bytes per block)
    .cost = "(P - 1)(alpha + n beta) at the root",
    .reference = "MPICH MPIR_Gather_intra_linear (flat); Open MPI coll_base gather basic linear",
    .mpi_equivalents = {"ompi:basic_linear"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_linear,
    .model = cost_linear,
}};

}  // namespace
}  // namespace collkit
