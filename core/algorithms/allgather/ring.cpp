// allgather:ring: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allgather:ring` prints them).
// Phases:       1. copy the own input into out block r (nothing under MPI_IN_PLACE: it is there);
//               2. P - 1 steps: at step s rank r sends block r - s to r + 1 and receives block
//                  r - s - 1 from r - 1 (phases::ring_allgather, bcast:scatter_allgather's and
//                  allreduce:ring's allgather too).
// Restrictions: none (any P, any count)
#include "../phases/ring.hpp"

#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_ring(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, r = b.rank();
  b.set_stage(0);
  const OpId own = b.copy({kOut, r * n, n}, {kIn, 0, n});
  phases::ring_allgather(b, phases::Blocks{P * n, P}, kOut, 0, 0, {own}, {}, 1);
}

Cost cost_ring(const CostArgs& a) {
  const auto steps = static_cast<double>(a.P - 1);
  return {steps, steps * a.bytes, 0};
}

const Registrar reg{{
    .collective = Collective::allgather,
    .name = "ring",
    .summary = "P - 1 ring steps, each rank passing on the block it got last (long messages)",
    .phases = "copy the own block into place; at step s rank r sends block r - s to r + 1 and "
              "receives block r - s - 1 from r - 1",
    // Cost: (n: bytes per block)
    .cost = "(P - 1)(alpha + n beta)",
    .reference = "MPICH MPIR_Allgather_intra_ring; Thakur, Rabenseifner, Gropp, IJHPCA 19(1) 2005",
    .mpi_equivalents = {"mpich:ring", "ompi:ring", "impi:ring"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_ring,
    .model = cost_ring,
}};

}  // namespace
}  // namespace collkit
