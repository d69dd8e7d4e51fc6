// alltoallv:scattered: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms alltoallv:scattered` prints them).
// Phases:       distances i = 0 .. P-1 in rounds of `bound` (0: one round of all P): each round
//               posts its receives from r + i, then its sends to r - i, straight between the
//               user's buffers, and waits for all of them before the next round (MPICH's
//               waitall per round); distance 0 is a local copy. At most `bound` receives and
//               `bound` sends in flight; an empty block is no message.
// Restrictions: none (any P, any count matrix, any displacements)
#include <algorithm>
#include <vector>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_scattered(const GenArgs& a, RankBuilder& b) {
  const ScheduleHeader& h = a.header;
  const int64_t P = h.P, r = b.rank();
  const int64_t bound =
      a.params->integer("bound") == 0 ? P : std::min(a.params->integer("bound"), P);
  const BlockLayout in(h, Io::in, r), out(h, Io::out, r);
  std::vector<OpId> round;
  OpId prev = kNoOp;  // the previous round's end: a zero-time join of its ops
  for (int64_t first = 0; first < P; first += bound) {
    const int64_t last = std::min(first + bound, P);
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(first / bound, UINT16_MAX)));
    round.clear();
    for (int64_t i = first; i < last; ++i) {
      const int64_t q = (r + i) % P;
      if (i == 0)
        round.push_back(
            b.copy({kOut, out.offset(r), out.len(r)}, {kIn, in.offset(r), in.len(r)}, {prev}));
      else if (out.len(q) > 0)
        round.push_back(b.recv(q, {kOut, out.offset(q), out.len(q)}, {prev}));
    }
    for (int64_t i = std::max<int64_t>(first, 1); i < last; ++i) {
      const int64_t q = (r - i + P) % P;
      if (in.len(q) > 0) round.push_back(b.send(q, {kIn, in.offset(q), in.len(q)}, {prev}));
    }
    if (last < P && !round.empty()) prev = b.compute(0, round);
  }
}

Cost cost_scattered(const CostArgs& a) {
  const double m = static_cast<double>(a.P - 1);
  return {m, m * a.bytes, 0};
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
