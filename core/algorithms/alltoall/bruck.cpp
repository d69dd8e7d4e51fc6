// alltoall:bruck: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms alltoall:bruck` prints them).
// Phases:       1. local rotation: tmp[i] = in[(rank + i) mod P] (block i goes to rank + i);
//               2. w = ceil(log_r P) rounds x of at most r-1 steps z: send the blocks whose
//                  radix-r digit x is z, as ONE message (packed when not contiguous), to
//                  rank + z r^x; receive the same positions from rank - z r^x (phases/bruck.hpp);
//               3. inverse rotation: out[(rank - i) mod P] = tmp[i].
// Restrictions: none (every P >= 1, every count >= 0; r >= P acts as r = P).
#include "collkit/bruck.hpp"

#include "../phases/bruck.hpp"

namespace collkit {
namespace {

void generate_bruck(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, rank = b.rank();
  const int64_t r = bruck_radix(a);
  BlockHazards work(P);

  // Phase 1: rotate so that relative block i is the one for rank + i.
  b.set_stage(0);
  const BufId tmp = b.scratch(P * n);
  work.note_write(0, P - rank, b.copy({tmp, 0, (P - rank) * n}, {kIn, rank * n, (P - rank) * n}));
  if (rank > 0)
    work.note_write(P - rank, P, b.copy({tmp, (P - rank) * n, rank * n}, {kIn, 0, rank * n}));

  // Phase 2: the exchange; relative block i ends here holding the data of rank - i.
  bruck_exchange(b, n, r, {tmp, 0, +1}, work);

  // Phase 3: inverse rotation, one copy per block (the order reverses).
  b.set_stage(static_cast<uint16_t>(1 + bruck_rounds(P, r)));
  std::vector<OpId> deps;
  for (int64_t i = 0; i < P; ++i) {
    deps.clear();
    work.deps_to_read(i, i + 1, deps);
    const int64_t src = (rank - i + P) % P;
    b.copy({kOut, src * n, n}, {tmp, i * n, n}, deps);
  }
}

// numC alpha + numD N beta: a message per step, each step's blocks sent once.
Cost cost_bruck(const CostArgs& a) {
  int64_t r = parse_bruck_radix("alltoall:bruck", a.params->word("r"));
  if (r == 0) r = BruckModel{}.best_radix(a.P, static_cast<int64_t>(a.bytes));
  Cost c;
  for (const BruckStep& s : bruck_steps(a.P, r))
    c = c + Cost{1, static_cast<double>(s.blocks) * a.bytes, 0};
  return c;
}

const Registrar reg{{
    .collective = Collective::alltoall,
    .name = "bruck",
    .summary = "radix-r Bruck: rotation, ceil(log_r P) rounds of up to r-1 packed messages, "
               "inverse rotation",
    .phases = "rotate blocks by rank; for each radix-r digit x and value z send the blocks with "
              "digit x = z as one message to rank + z r^x (the r-1 steps of a round in flight "
              "together); rotate back",
    .cost =
        "numC alpha + numD N beta + (2 numD + 2P) N gamma_copy, with numC = w (r-1) - "
        "floor((r^w - P) / r^(w-1)) steps and numD (total blocks sent) = sum over rounds of "
        "the blocks with a nonzero digit (Fan & Kumar 2022; python collkit.analysis.bruck has both "
        "forms). r = 2: lg P alpha + (P/2) lg P N beta",
    .reference = "Fan & Kumar, SC22 poster (radix-r Bruck); Bruck et al., IEEE TPDS "
                 "8(11) 1997; MPICH MPIR_Alltoall_intra_k_brucks",
    .mpi_equivalents = {"mpich:brucks", "impi:bruck"},
    .params = {bruck_radix_param()},
    .restrictions = {},
    .prepare = bruck_prepare,
    .generate = generate_bruck,
    .model = cost_bruck,
}};

}  // namespace
}  // namespace collkit
