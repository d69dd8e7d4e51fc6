// Algorithm:    Rabenseifner's reduce (reduce:rabenseifner): reduce-scatter by recursive halving,
//               then a binomial gather of the blocks to the root.
// Phases:       1. fold to pof2 = 2^floor(lg P) ranks (MPICH pre-step; in the root's pair the
//                  root stays, in the others the odd rank);
//               2. reduce-scatter by recursive halving over pof2 blocks of floor/ceil size;
//               3. gather to the root along a binomial tree, the halving's stages in reverse:
//                  messages of n/pof2, 2n/pof2, ..., n/2 elements.
// Cost:         2 lg P alpha + 2 (P-1)/P n beta + (P-1)/P n gamma  (P = 2^k);
//               otherwise + alpha + n beta + n gamma for the fold.
// Restrictions: none: every P, root and count, non-commutative ops. Each element gets the tree
//               of allreduce:rd and reduce:folded_binomial, its small-count partner.
// Reference:    seed 001 (Rabenseifner, "New optimized MPI reduce algorithm", 1997); Thakur,
//               Rabenseifner, Gropp, IJHPCA 19(1) 2005.
#include "collkit/phases.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_rabenseifner(const GenArgs& a, RankBuilder& b) {
  const int64_t n = a.header.count, rank = b.rank(), root = a.header.root;
  const phases::Pof2Fold fold(a.header.P, root);
  const phases::Blocks blk{n, fold.pof2};
  const Region in{kIn, 0, n};

  // Phase 1: fold. A rank folded away sends its input and is done.
  b.set_stage(0);
  const int64_t vrank = fold.vrank(rank);
  if (vrank < 0) {
    phases::fold_away(b, fold, in, kNoOp);
    return;
  }
  // The vector is reduced in `out` at the root, in scratch elsewhere: MPI's recvbuf is
  // significant only at the root.
  const BufId vec = rank == root ? kOut : b.scratch(n);
  OpId vec_ready = b.copy(Region{vec, 0, n}, in);
  if (a.header.P == 1) return;
  BufId tmp;
  int64_t tmp_base = 0;
  OpId tmp_free = kNoOp;
  if (fold.partner(rank) >= 0) {
    tmp = b.scratch(n);
    vec_ready = tmp_free = phases::fold_in(b, fold, Region{vec, 0, n}, vec_ready, Region{tmp, 0, n});
  } else {
    const phases::Halving halving(fold, vrank);
    const auto& first = halving.stages[0];
    const Region kept = blk.region(vec, first.keep_lo, first.keep_hi);
    tmp = b.scratch(kept.len);
    tmp_base = kept.off;
  }

  // Phases 2 and 3.
  const phases::ScatterResult rs = phases::reduce_scatter_halving(
      b, fold, vrank, blk, vec, vec_ready, tmp, tmp_base, tmp_free, 1);
  phases::gather_binomial(b, fold, vrank, fold.vrank(root), blk, vec, rs,
                          static_cast<uint16_t>(fold.lg() + 1));
}

const Registrar reg{{
    .collective = Collective::reduce,
    .name = "rabenseifner",
    .summary = "reduce-scatter by recursive halving + binomial gather to the root; the tree of "
               "reduce:folded_binomial",
    .phases = "fold to pof2 ranks (the root stays); recursive-halving reduce-scatter over pof2 "
              "blocks; binomial gather of the blocks to the root",
    .cost = "2 lg P alpha + 2 (P-1)/P n beta + (P-1)/P n gamma (P = 2^k; else + alpha + n beta "
            "+ n gamma)",
    .reference = "seed 001; Thakur, Rabenseifner, Gropp, IJHPCA 19(1) 2005",
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_rabenseifner,
}};

}  // namespace
}  // namespace collkit
