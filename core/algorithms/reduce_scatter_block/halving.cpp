// reduce_scatter_block:halving: its summary, phases in brief, cost and reference are said once, in
// its Registrar at the end of this file (`collkit algorithms reduce_scatter_block:halving` prints
// them). Phases:       1. fold to pof2 = 2^floor(lg P) ranks (MPICH pre-step): of the first 2 rem
//                  ranks, each even rank sends its P input blocks to the odd one, which combines
//                  them and stands for both (its virtual block: the pair's two blocks);
//               2. recursive halving over the pof2 virtual blocks, partner at distance pof2/2
//                  first (Rabenseifner's reduce-scatter phase with the distances reversed), so
//                  that virtual rank v ends with virtual block v;
//               3. each odd rank of a pair sends the even one its block; copy the own block out.
// Restrictions: commutative op: at distance pof2/2 first, an element's operands meet out of
//               rank order.
#include "../phases/halving.hpp"

#include "../phases/costs.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_halving(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, r = b.rank();
  b.set_stage(0);
  if (P == 1) {
    b.copy({kOut, 0, n}, {kIn, 0, n});
    return;
  }
  const phases::Pof2Fold fold(P);
  const int lg = fold.lg();
  const auto unfold_stage = static_cast<uint16_t>(lg + 1);
  const int64_t vrank = fold.vrank(r);
  if (vrank < 0) {  // folded away: hand the input over, get the own block back
    const OpId sent = phases::fold_away(b, fold, {kIn, 0, P * n}, kNoOp);
    b.set_stage(unfold_stage);
    phases::unfold(b, fold, {kOut, 0, n}, {}, sent);
    return;
  }
  const phases::Blocks blk{P * n, fold.pof2, n, fold.rem};
  const BufId vec = b.scratch(P * n);
  OpId ready = b.copy({vec, 0, P * n}, {kIn, 0, P * n});
  BufId tmp;
  int64_t tmp_base = 0;
  OpId tmp_free = kNoOp;
  if (fold.partner(r) >= 0) {
    tmp = b.scratch(P * n);
    ready = tmp_free = phases::fold_in(b, fold, {vec, 0, P * n}, ready, {tmp, 0, P * n});
  } else {
    const phases::Halving first(fold, vrank, true);
    const Region kept = blk.region(vec, first.stages[0].keep_lo, first.stages[0].keep_hi);
    tmp = b.scratch(kept.len);
    tmp_base = kept.off;
  }
  const phases::ScatterResult rs = phases::reduce_scatter_halving(b, fold, vrank, blk, vec, ready,
                                                                  tmp, tmp_base, tmp_free, 1, true);
  b.set_stage(unfold_stage);
  // Virtual block v: blocks r - 1 and r of a pair's kept (odd) rank r, else block r alone.
  phases::unfold(b, fold, {vec, (r - 1) * n, n}, {rs.ready}, kNoOp);
  b.copy({kOut, 0, n}, {vec, r * n, n}, {rs.ready});
}

Cost cost_halving(const CostArgs& a) {
  const double p = static_cast<double>(a.P), n = a.bytes;
  const double extra = phases::cost::not_pof2(a.P);
  return Cost{phases::cost::lg_pof2(a.P), (p - 1) * n, (p - 1) * n} +
         Cost{2, (p + 1) * n, p * n} * extra;
}

const Registrar reg{{
    .collective = Collective::reduce_scatter_block,
    .name = "halving",
    .summary = "recursive halving, partner at distance P/2 first (MPICH's); commutative ops only",
    .phases = "fold to pof2 ranks (MPICH pre-step); recursive halving over the pof2 virtual "
              "blocks, distances P/2, P/4, ..., 1; the pairs' even ranks get their block back",
    // Cost: (P = 2^k; n: bytes per block); otherwise + 2 alpha + (P + 1) n beta + P n gamma for the
    //   fold and the unfold.
    .cost = "lg P alpha + (P - 1) n (beta + gamma)",
    .reference = "MPICH MPIR_Reduce_scatter_block_intra_recursive_halving; Thakur, "
                 "Rabenseifner, Gropp, IJHPCA 19(1) 2005",
    .mpi_equivalents = {"mpich:recursive_halving", "ompi:recursive_halving",
                        "impi:recursive_halving"},
    .params = {},
    .restrictions = {.commutative_op = true, .power_of_two = false, .min_P = 1},
    .prepare = {},
    .generate = generate_halving,
    .model = cost_halving,
}};

}  // namespace
}  // namespace collkit
