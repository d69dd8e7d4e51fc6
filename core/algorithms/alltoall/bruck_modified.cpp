// alltoall:bruck_modified: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms alltoall:bruck_modified` prints them).
// Algorithm:    modified radix-r Bruck all-to-all (alltoall:bruck_modified(r=R)): no final
//               rotation
// Phases:       1. reflection instead of rotation: out[(2 rank - i) mod P] = in[i], so that
//                  the block for rank - j sits at block (rank + j) mod P of `out`;
//               2. the same w = ceil(log_r P) rounds of at most r-1 one-message steps, in the
//                  opposite direction: send the blocks with digit x = z (relative to rank) to
//                  rank - z r^x, receive from rank + z r^x, straight in `out` (phases/bruck.hpp);
//               3. none: each block arrives at block (source rank) of `out`, where it belongs.
// Restrictions: none (every P >= 1, every count >= 0; r >= P acts as r = P).
#include "../phases/bruck.hpp"

namespace collkit {
namespace {

void generate_bruck_modified(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, rank = b.rank();
  BlockHazards work(P);

  // Phase 1: reflect; the own block lands at out[rank] and never moves.
  b.set_stage(0);
  for (int64_t i = 0; i < P; ++i) {
    const int64_t at = ((2 * rank - i) % P + P) % P;
    work.note_write(at, at + 1, b.copy({kOut, at * n, n}, {kIn, i * n, n}));
  }

  // Phase 2: the exchange, backwards, on `out` itself; nothing is left to do after it.
  bruck_exchange(b, n, bruck_radix(a), {kOut, rank, -1}, work);
}

const Registrar reg{{
    .collective = Collective::alltoall,
    .name = "bruck_modified",
    .summary = "modified radix-r Bruck: reflection, the same rounds sent towards rank - z r^x "
               "in the output buffer, no final rotation",
    .phases = "reflect blocks (out[2 rank - i] = in[i]); for each radix-r digit x and value z "
              "send the blocks with digit x = z as one message to rank - z r^x; each block "
              "arrives at its final place",
    .cost = "numC alpha + numD N beta + (2 numD + P) N gamma_copy: the same messages as "
            "alltoall:bruck, P block copies and one P-block scratch buffer fewer",
    .reference =
        "Fan & Kumar 2022 (\"Modified Bruck\"); Fan, Gilray, Pascucci, Huang, Micinski, Kumar, "
        "\"Optimizing the Bruck Algorithm for Non-uniform All-to-all Communication\", "
        "HPDC 2022 (the modified Bruck that drops the final rotation)",
    .mpi_equivalents = {"ompi:modified_bruck"},
    .params = {bruck_radix_param()},
    .restrictions = {},
    .prepare = bruck_prepare,
    .generate = generate_bruck_modified,
}};

}  // namespace
}  // namespace collkit
