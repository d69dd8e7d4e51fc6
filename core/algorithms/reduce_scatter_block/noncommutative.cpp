// reduce_scatter_block:noncommutative: its summary, phases in brief, cost and reference are said
// once, in its Registrar at the end of this file (`collkit algorithms
// reduce_scatter_block:noncommutative` prints them). Algorithm:
// reduce_scatter_block:noncommutative, recursive halving in rank order on
//               bit-reversed blocks (MPICH's algorithm for non-commutative ops)
// Phases:       1. copy the P input blocks into scratch, block i at position bitrev(i);
//               2. recursive halving, partner at distance 1 first (Rabenseifner's reduce-scatter
//                  phase unchanged: the lower group's partial on the left, so every element is
//                  combined in rank order with the tree of allreduce:rd); rank v ends with
//                  position bitrev(v), which holds block v;
//               3. copy it to out.
// Restrictions: P a power of two (as MPICH's); any op, commutative or not.
#include <bit>

#include "../phases/costs.hpp"
#include "../phases/halving.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

int64_t bitrev(int64_t i, int lg) {
  int64_t out = 0;
  for (int k = 0; k < lg; ++k) out |= ((i >> k) & 1) << (lg - 1 - k);
  return out;
}

void generate_noncommutative(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, r = b.rank();
  b.set_stage(0);
  if (P == 1) {
    b.copy({kOut, 0, n}, {kIn, 0, n});
    return;
  }
  const phases::Pof2Fold fold(P);  // P = 2^k: no rank folds away
  const int lg = fold.lg();
  const phases::Blocks blk{P * n, P};
  const BufId vec = b.scratch(P * n);
  OpId ready = kNoOp;
  for (int64_t i = 0; i < P; ++i)  // one chain: the halving waits for the last copy
    ready = b.copy(blk.region(vec, bitrev(i, lg), bitrev(i, lg) + 1), {kIn, i * n, n}, {ready});
  const phases::Halving halving(fold, r);
  const Region kept = blk.region(vec, halving.stages[0].keep_lo, halving.stages[0].keep_hi);
  const BufId tmp = b.scratch(kept.len);
  const phases::ScatterResult rs =
      phases::reduce_scatter_halving(b, fold, r, blk, vec, ready, tmp, kept.off, kNoOp, 1);
  b.set_stage(static_cast<uint16_t>(lg + 1));
  b.copy({kOut, 0, n}, blk.region(vec, bitrev(r, lg), bitrev(r, lg) + 1), {rs.ready});
}

Cost cost_noncommutative(const CostArgs& a) {
  const double p = static_cast<double>(a.P);
  return {phases::cost::lg_pof2(a.P), (p - 1) * a.bytes, (p - 1) * a.bytes};
}

const Registrar reg{{
    .collective = Collective::reduce_scatter_block,
    .name = "noncommutative",
    .summary = "recursive halving in rank order on bit-reversed blocks (MPICH's, any op, P = 2^k)",
    .phases = "copy the blocks in bit-reversed order; recursive halving at distances 1, 2, ..., "
              "P/2, lower partial on the left; rank v ends with block v",
    // Cost: (n: bytes per block)
    .cost = "lg P alpha + (P - 1) n (beta + gamma)",
    .reference = "MPICH MPIR_Reduce_scatter_block_intra_noncommutative; Thakur, Rabenseifner, "
                 "Gropp, IJHPCA 19(1) 2005",
    .params = {},
    .restrictions = {.commutative_op = false, .power_of_two = true, .min_P = 1},
    .prepare = {},
    .generate = generate_noncommutative,
    .model = cost_noncommutative,
}};

}  // namespace
}  // namespace collkit
