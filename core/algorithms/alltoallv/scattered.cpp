// alltoallv:scattered: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms alltoallv:scattered` prints them).
// Phases:       (phases::scattered_exchange) distances i = 0 .. P-1 in rounds of `bound` (0: one
//               round of all P): each round posts its receives from r + i, then its sends to r - i,
//               straight between the user's buffers, and waits for all of them before the next
//               round (MPICH's waitall per round); distance 0 is a local copy. At most `bound`
//               receives and `bound` sends in flight; an empty block is no message.
// Restrictions: none (any P, any count matrix, any displacements)
#include "../phases/scattered.hpp"

#include "../phases/costs.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_scattered(const GenArgs& a, RankBuilder& b) {
  phases::scattered_exchange(b, a.header, a.params->integer("bound"), /*skip_empty=*/true);
}

Cost cost_scattered(const CostArgs& a) {
  return phases::cost::flat(a.P, a.bytes);
}

const Registrar reg{{
    .collective = Collective::alltoallv,
    .name = "scattered",
    .summary = "spread-out in rounds of `bound` distances, waiting for each round",
    .phases = "distances 0..P-1 in rounds of bound; each round posts receives from r + i and "
              "sends to r - i, then waits for all of them; distance 0 is a local copy",
    // Cost: (n: bytes of the largest block)
    .cost = "(P - 1)(alpha + n beta) at most, ceil(P / bound) rounds one after another",
    .reference = "MPICH MPIR_Alltoallv_intra_scattered (MPIR_CVAR_ALLTOALL_THROTTLE = bound)",
    .mpi_equivalents = {"mpich:scattered"},
    .params = {{"bound",
                ParamType::integer,
                "32",
                0,
                INT64_MAX,
                "distances per round: receives (and sends) in flight at most; "
                "0: all P in one round",
                {"32", "1", "3", "0"}}},
    .restrictions = {},
    .prepare = {},
    .generate = generate_scattered,
    .model = cost_scattered,
}};

}  // namespace
}  // namespace collkit
