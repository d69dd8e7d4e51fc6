// Algorithm:    scatter:linear, flat tree: the root sends every rank its block
// Phases:       the root copies its own block in[root n] to out (nothing under MPI_IN_PLACE: it
//               stays where it is) and sends block q of `in` to every other rank q, which
//               receives it directly into out
// Cost:         (P - 1)(alpha + n beta) at the root   (n: bytes per block)
// Restrictions: none (any P, any root, any count)
// Reference:    MPICH MPIR_Scatter_intra_linear (flat); Open MPI coll_base scatter basic linear
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_linear(const GenArgs& a, RankBuilder& b) {
  phases::scatter_from_root(b, phases::Tree{phases::TreeShape::flat, 2}, a.header.root,
                            a.header.count);
}

Cost cost_linear(const CostArgs& a) {
  const auto steps = static_cast<double>(a.P - 1);
  return {steps, steps * a.bytes, 0};
}

const Registrar reg{{
    .collective = Collective::scatter,
    .name = "linear",
    .summary = "flat tree: the root sends every rank its block straight from `in`",
    .phases = "the root copies its own block to out and sends block q of in to every other rank "
              "q, which receives it into out",
    .cost = "(P - 1)(alpha + n beta) at the root",
    .reference = "MPICH MPIR_Scatter_intra_linear (flat); Open MPI coll_base scatter basic linear",
    .mpi_equivalents = {"ompi:basic_linear"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_linear,
    .model = cost_linear,
}};

}  // namespace
}  // namespace collkit
