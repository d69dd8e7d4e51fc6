// gatherv:linear: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms gatherv:linear` prints them).
// Phases:       every rank sends its block straight to the root, which receives it at its
// displacement (the root's own block a local copy, nothing under MPI_IN_PLACE); an empty
//               block is no message.
// Restrictions: none (any P, any root, any count vector, any displacements)
#include "../phases/costs.hpp"
#include "../phases/vtrees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_linear(const GenArgs& a, RankBuilder& b) {
  phases::gatherv_to_root(a, b, phases::Tree{phases::TreeShape::flat, 2});
}

Cost cost_linear(const CostArgs& a) {
  return phases::cost::flat(a.P, a.bytes);
}

const Registrar reg{{
    .collective = Collective::gatherv,
    .name = "linear",
    .summary = "flat tree: every rank sends its block straight to the root, which receives it at "
               "its displacement",
    .phases = "every rank sends its block straight to the root, which receives it at its "
              "displacement; the root's own block is a local copy",
    // Cost: (n: bytes of the largest block)
    .cost = "(P - 1)(alpha + n beta) at the root",
    .reference = "MPICH MPIR_Gatherv_allcomm_linear; Open MPI coll_base gatherv basic linear",
    .mpi_equivalents = {"mpich:linear"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_linear,
    .model = cost_linear,
}};

}  // namespace
}  // namespace collkit
