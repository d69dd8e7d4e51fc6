// allgather:bruck: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allgather:bruck` prints them).
// Phases:       1. copy the own input to the front of a scratch vector (relative block 0);
//               2. rounds x = 0, 1, ... with d = r^x < P, steps z = 1 .. r-1 with z d < P: send
//                  the d blocks held, [0, d) (clipped at P - z d), to rank - z d and receive
//                  rank + z d's into [z d, z d + d); the steps of a round are in flight together;
//               3. rotate: relative block i is rank + i's, out[(rank + i) mod P] = tmp[i].
// Restrictions: none (any P, any count; r >= P acts as r = P: one round of P - 1 steps)
#include "collkit/bruck.hpp"

#include <algorithm>
#include <vector>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_bruck(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, rank = b.rank();
  const int64_t r = a.params->integer("r");
  b.set_stage(0);
  const BufId tmp = b.scratch(P * n);
  const OpId own = b.copy({tmp, 0, n}, {kIn, 0, n});
  std::vector<OpId> held{own}, got;
  for (const BruckStep& s : bruck_steps(P, std::min(r, std::max<int64_t>(P, 2)))) {
    const int64_t d = s.dist / s.z;  // r^x: the blocks held at this round
    if (s.z == 1) {                  // a new round: its sends read what the last one received
      held.insert(held.end(), got.begin(), got.end());
      got.clear();
    }
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(s.x + 1, UINT16_MAX)));
    const int64_t cnt = std::min(d, P - s.dist);
    b.send((rank - s.dist % P + P) % P, {tmp, 0, cnt * n}, held);
    got.push_back(b.recv((rank + s.dist) % P, {tmp, s.dist * n, cnt * n}));
  }
  held.insert(held.end(), got.begin(), got.end());
  b.set_stage(static_cast<uint16_t>(
      std::min<int64_t>(bruck_rounds(P, std::max<int64_t>(r, 2)) + 1, UINT16_MAX)));
  b.copy({kOut, rank * n, (P - rank) * n}, {tmp, 0, (P - rank) * n}, held);
  if (rank > 0) b.copy({kOut, 0, rank * n}, {tmp, (P - rank) * n, rank * n}, held);
}

Cost cost_bruck(const CostArgs& a) {
  const int64_t r = std::min(a.params->integer("r"), std::max<int64_t>(a.P, 2));
  const auto steps = static_cast<double>(bruck_steps(a.P, r).size());
  return {steps, static_cast<double>(a.P - 1) * a.bytes, 0};
}

const Registrar reg{{
    .collective = Collective::allgather,
    .name = "bruck",
    .summary = "radix-r Bruck: ceil(log_r P) rounds of up to r-1 messages, then a rotation",
    .phases = "gather the blocks relative to the own rank: in round x, step z sends the r^x "
              "blocks held to rank - z r^x and receives rank + z r^x's; rotate into place",
    // Cost: (n: bytes per block), numC = w (r-1) - floor((r^w - P) / r^(w-1)) steps, w = ceil(log_r
    //   P) (the Bruck step count of alltoall:bruck); r = 2: ceil(lg P) alpha + (P - 1) n beta
    .cost = "numC alpha + (P - 1) n beta",
    .reference = "Bruck et al., IEEE TPDS 8(11) 1997; MPICH MPIR_Allgather_intra_k_brucks",
    .mpi_equivalents = {"mpich:brucks", "ompi:bruck", "impi:bruck"},
    .params = {{.name = "r",
                .type = ParamType::integer,
                .default_value = "2",
                .min = 2,
                .max = kMaxBruckRadix,
                .doc = "radix: up to r - 1 messages in flight per round (r >= P: one round)",
                .grid = {"2", "3", "4", "7"}}},
    .restrictions = {},
    .prepare = {},
    .generate = generate_bruck,
    .model = cost_bruck,
}};

}  // namespace
}  // namespace collkit
