// alltoall:scattered: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms alltoall:scattered` prints them).
// Phases:       (phases::scattered_exchange) distances i = 0 .. P-1 in rounds of `bound` (0: one
//               round of all P): each round posts its receives, from rank+i, then its sends, to
//               rank-i, straight between the user's buffers, and waits for all of them before the
//               next round (MPICH's waitall per round). Distance 0, the own block, is a local copy
//               in the first round. So at most `bound` receives and `bound` sends are in flight.
// Restrictions: none (every P >= 1, every count >= 0).
#include "../phases/scattered.hpp"

#include "../phases/costs.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_scattered(const GenArgs& a, RankBuilder& b) {
  phases::scattered_exchange(b, a.header, a.params->integer("bound"), /*skip_empty=*/false);
}

Cost cost_scattered(const CostArgs& a) {
  return phases::cost::flat(a.P, a.bytes);
}

const Registrar reg{{
    .collective = Collective::alltoall,
    .name = "scattered",
    .summary = "spread-out in rounds of `bound` distances: receive from rank+i, send to rank-i, "
               "wait for the round",
    .phases = "distances 0..P-1 in rounds of bound; each round posts receives from rank+i and "
              "sends to rank-i, then waits for all of them; distance 0 is a local copy",
    .cost = "(P-1) (alpha + N beta) (N: bytes per block; the start-ups of a round overlap on a "
            "network with enough injection bandwidth, ceil(P / bound) rounds one after another)",
    .reference = "MPICH MPIR_Alltoall_intra_scattered (throttled after Tony Ladd's suggestion; "
                 "MPIR_CVAR_ALLTOALL_THROTTLE = bound)",
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
