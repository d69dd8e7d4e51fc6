// alltoallv:linear: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms alltoallv:linear` prints them).
// Phases:       (phases::scattered_exchange in one round) the own block is a local copy; every
//               receive (from r + i) and every send (to r - i), i = 1..P-1, is posted at once,
//               straight between the user's buffers at their displacements (spread-out: each rank
//               starts with a different peer); an empty block is no message.
// Restrictions: none (any P, any count matrix, any displacements)
#include "../phases/costs.hpp"
#include "../phases/scattered.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

// Every receive and send at once: the scattered exchange in one round of all P distances.
void generate_linear(const GenArgs& a, RankBuilder& b) {
  phases::scattered_exchange(b, a.header, /*bound=*/0, /*skip_empty=*/true);
}

Cost cost_linear(const CostArgs& a) {
  return phases::cost::flat(a.P, a.bytes);
}

const Registrar reg{{
    .collective = Collective::alltoallv,
    .name = "linear",
    .summary = "spread-out: every receive and send posted at once, each rank from its own start",
    .phases = "the own block is a local copy; receives from r + i and sends to r - i, i = 1..P-1, "
              "all posted at once between the user's buffers",
    // Cost: (n: bytes of the largest block)
    .cost = "(P - 1)(alpha + n beta) at most (the start-ups overlap where the network allows)",
    .reference = "Open MPI coll_base alltoallv basic linear (mca_coll_basic_alltoallv_intra); "
                 "the spread-out exchange of Fan et al., HPDC 2022",
    .mpi_equivalents = {"ompi:basic_linear"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_linear,
    .model = cost_linear,
}};

}  // namespace
}  // namespace collkit
