// alltoall:scattered: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms alltoall:scattered` prints them).
// Phases:       distances i = 0 .. P-1 in rounds of `bound` (0: one round of all P):
//               each round posts its receives, from rank+i, then its sends, to rank-i, straight
//               between the user's buffers, and waits for all of them before the next round
//               (MPICH's waitall per round). Distance 0, the own block, is a local copy in the
//               first round. So at most `bound` receives and `bound` sends are in flight.
// Restrictions: none (every P >= 1, every count >= 0).
#include <algorithm>
#include <vector>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

int64_t round_size(int64_t bound, int64_t P) {
  return bound == 0 ? P : std::min(bound, P);
}

void generate_scattered(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, rank = b.rank();
  const int64_t bound = round_size(a.params->integer("bound"), P);
  std::vector<OpId> round;
  OpId prev = kNoOp;  // the previous round's end: a zero-time join of its ops
  for (int64_t first = 0; first < P; first += bound) {
    const int64_t last = std::min(first + bound, P);
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(first / bound, UINT16_MAX)));
    round.clear();
    for (int64_t i = first; i < last; ++i) {
      const int64_t src = (rank + i) % P;
      round.push_back(i == 0 ? b.copy({kOut, rank * n, n}, {kIn, rank * n, n}, {prev})
                             : b.recv(src, {kOut, src * n, n}, {prev}));
    }
    for (int64_t i = std::max<int64_t>(first, 1); i < last; ++i) {
      const int64_t dst = (rank - i + P) % P;
      round.push_back(b.send(dst, {kIn, dst * n, n}, {prev}));
    }
    if (last < P) prev = b.compute(0, round);
  }
}

Cost cost_scattered(const CostArgs& a) {
  const double m = static_cast<double>(a.P - 1);
  return {m, m * a.bytes, 0};
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
