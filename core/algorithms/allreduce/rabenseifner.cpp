// allreduce:rabenseifner: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allreduce:rabenseifner` prints them).
// Algorithm:    Rabenseifner's allreduce (allreduce:rabenseifner): reduce-scatter by recursive
//               halving, then allgather by recursive doubling.
// Phases:       1. fold to pof2 = 2^floor(lg P) ranks (MPICH pre-step: the pair (2i, 2i+1) of
//                  the first 2*rem ranks combines, the odd rank goes on);
//               2. reduce-scatter by recursive halving over pof2 blocks of floor/ceil size:
//                  lg(pof2) stages, partner vrank ^ 2^k, the halves sent shrink n/2, n/4, ...
//                  (phases::reduce_scatter_halving, reduce_scatter_block:noncommutative's and,
//                  distances reversed, reduce_scatter_block:halving's phase);
//               3. allgather by recursive doubling, the halving's stages in reverse
//                  (phases::allgather_doubling; distances reversed: allgather:rd on 2^k ranks);
//               4. unfold: the odd rank of each pair sends the result to the even one.
// Restrictions: none: every P, every count (blocks may be empty: count < P sends fewer
//               messages), non-commutative ops. Each element is combined with the same tree as
//               allreduce:rd (pairs first, then recursive doubling, lower ranks on the left), so
//               switching between rd and rabenseifner at a count limit does not change a bit
//               (Rabenseifner 1997); tests/test_large_counts.py proves it with compare_trees.
#include "../phases/costs.hpp"
#include "../phases/elimination.hpp"
#include "../phases/halving.hpp"
#include "collkit/error.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

// nonpof2=elim / elim21: no fold; 3-2 or 2-1 elimination inside the halving levels.
void generate_eliminating(const GenArgs& a, RankBuilder& b, phases::Elimination mode) {
  const int64_t n = a.header.count, P = a.header.P;
  const Region in{kIn, 0, n}, out{kOut, 0, n};
  b.set_stage(0);
  const OpId out_ready = b.copy(out, in);
  if (P == 1) return;
  const phases::ElimPlan plan(P, b.rank(), mode);
  const phases::Pof2Fold fold(P);  // for pof2 (the number of blocks) and lg only
  const phases::Blocks blocks{n, fold.pof2};
  const BufId tmp = b.scratch(n);
  const BufId tmp2 = plan.in_triple() ? b.scratch(n) : tmp;
  const phases::ElimScatter rs =
      phases::reduce_scatter_elim(b, plan, blocks, kOut, out_ready, tmp, tmp2, 1);
  phases::allgather_elim(b, plan, blocks, kOut, rs, static_cast<uint16_t>(fold.lg() + 1));
}

void generate_rabenseifner(const GenArgs& a, RankBuilder& b) {
  const std::string& nonpof2 = a.params->word("nonpof2");
  if (nonpof2 == "elim") return generate_eliminating(a, b, phases::Elimination::three_two);
  if (nonpof2 == "elim21") return generate_eliminating(a, b, phases::Elimination::two_one);
  const int64_t n = a.header.count, rank = b.rank();
  const phases::Pof2Fold fold(a.header.P);
  const phases::Blocks blk{n, fold.pof2};
  const Region in{kIn, 0, n}, out{kOut, 0, n};
  const int lg = fold.lg();
  const auto unfold_stage = static_cast<uint16_t>(2 * lg + 1);

  b.set_stage(0);
  const OpId out_ready = b.copy(out, in);
  if (a.header.P == 1) return;

  // Phase 1: fold. A rank folded away waits for the result (phase 4 for it).
  const int64_t vrank = fold.vrank(rank);
  if (vrank < 0) {
    const OpId s = phases::fold_away(b, fold, out, out_ready);
    b.set_stage(unfold_stage);
    phases::unfold(b, fold, out, {}, s);
    return;
  }
  // Phases 2 and 3, after folding the partner in where there is one.
  const phases::HalvingScratch hs = phases::halving_scratch(b, fold, vrank, blk, kOut, out_ready);
  const phases::ScatterResult rs = phases::reduce_scatter_halving(
      b, fold, vrank, blk, kOut, hs.ready, hs.tmp, hs.base, hs.free, 1);
  const std::vector<OpId> written =
      phases::allgather_doubling(b, fold, vrank, blk, kOut, rs, static_cast<uint16_t>(lg + 1));

  // Phase 4: unfold.
  b.set_stage(unfold_stage);
  phases::unfold(b, fold, out, written, kNoOp);
}

Cost cost_rabenseifner(const CostArgs& a) {
  const std::string& mode = a.params->word("nonpof2");
  return phases::cost::reduce_scatter(a.P, a.bytes, mode) +
         phases::cost::allgather(a.P, a.bytes, mode);
}

const Registrar reg{{
    .collective = Collective::allreduce,
    .name = "rabenseifner",
    .summary = "reduce-scatter by recursive halving + allgather by recursive doubling; the tree "
               "of allreduce:rd",
    .phases = "fold to pof2 ranks (MPICH pre-step); recursive-halving reduce-scatter over pof2 "
              "blocks; recursive-doubling allgather; unfold",
    .cost = "2 lg P alpha + 2 (P-1)/P n beta + (P-1)/P n gamma (P = 2^k); otherwise + 2 (alpha + n "
            "beta) + n gamma for the fold and unfold",
    .reference = "Rabenseifner, \"New optimized MPI reduce algorithm\", 1997; Thakur, "
                 "Rabenseifner, Gropp, IJHPCA 19(1) 2005",
    .mpi_equivalents = {"mpich:reduce_scatter_allgather", "ompi:rabenseifner", "impi:rabenseifner"},
    .params = {phases::nonpof2_param(
        "P != 2^k: fold (MPICH pre/post step, the tree of rd), elim (3-2 "
        "elimination) or elim21 (2-1 elimination), Rabenseifner and Traeff 2004")},
    .restrictions = {},
    .prepare = phases::check_nonpof2,
    .generate = generate_rabenseifner,
    .model = cost_rabenseifner,
}};

}  // namespace
}  // namespace collkit
