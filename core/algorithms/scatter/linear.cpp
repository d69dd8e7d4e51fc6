// scatter:linear: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms scatter:linear` prints them).
// Phases:       the root copies its own block in[root n] to out (nothing under MPI_IN_PLACE: it
//               stays where it is) and sends block q of `in` to every other rank q, which
//               receives it directly into out
// Restrictions: none (any P, any root, any count)
#include "../phases/costs.hpp"
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_linear(const GenArgs& a, RankBuilder& b) {
  phases::scatter_from_root(b, phases::Tree{phases::TreeShape::flat, 2}, a.header.root,
                            a.header.count);
}

Cost cost_linear(const CostArgs& a) {
  return phases::cost::flat(a.P, a.bytes);
}

const Registrar reg{{
    .collective = Collective::scatter,
    .name = "linear",
    .summary = "flat tree: the root sends every rank its block straight from `in`",
    .phases = "the root copies its own block to out and sends block q of in to every other rank "
              "q, which receives it into out",
    // Cost: (n: bytes per block)
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
