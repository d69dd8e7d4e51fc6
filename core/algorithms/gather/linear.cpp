// Algorithm:    gather:linear, flat tree: every rank sends its block to the root
// Phases:       the root copies its own block into out[root n] (nothing under MPI_IN_PLACE) and
//               receives block q of every other rank q directly into out[q n]
// Cost:         (P - 1)(alpha + n beta) at the root   (n: bytes per block)
// Restrictions: none (any P, any root, any count)
// Reference:    MPICH MPIR_Gather_intra_linear (flat); Open MPI coll_base gather basic linear
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_linear(const GenArgs& a, RankBuilder& b) {
  phases::gather_to_root(b, phases::Tree{phases::TreeShape::flat, 2}, a.header.root,
                         a.header.count);
}

Cost cost_linear(const CostArgs& a) {
  const auto steps = static_cast<double>(a.P - 1);
  return {steps, steps * a.bytes, 0};
}

const Registrar reg{{
    .collective = Collective::gather,
    .name = "linear",
    .summary = "flat tree: every rank sends its block straight to the root",
    .phases = "the root copies its own block into place and receives every other rank's block "
              "into out at the sender's position",
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
