// reduce:folded_binomial: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms reduce:folded_binomial` prints them).
// Algorithm:    binomial reduce over the power-of-two fold (reduce:folded_binomial), the
//               small-count partner of reduce:rabenseifner: the same tree for every element.
// Phases:       1. fold to pof2 = 2^floor(lg P) ranks (MPICH pre-step; the root stays);
//               2. lg(pof2) stages of a binomial tree on the virtual ranks, rooted at the root's
//                  virtual rank: at stage k the rank whose bit k differs from the root's sends
//                  its whole partial vector to vrank ^ 2^k and is done.
// Restrictions: none: every P, root and count, non-commutative ops. Groups are aligned blocks of
//               virtual ranks whatever the root, so every element gets the tree of allreduce:rd,
//               e.g. for P = 13 {[(a+b)+(c+d)]+[(e+f)+(g+h)]}+{[(i+j)+k]+[l+m]} (Rabenseifner
//               1997). A binomial tree on rank - root instead gives {...}+{[(i+j)+(k+l)]+m} at root
//               0.
#include "../phases/costs.hpp"
#include "../phases/fold.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_folded_binomial(const GenArgs& a, RankBuilder& b) {
  const int64_t n = a.header.count, rank = b.rank(), root = a.header.root;
  const phases::Pof2Fold fold(a.header.P, root);
  const Region in{kIn, 0, n};

  // Phase 1: fold. A rank folded away sends its input and is done.
  b.set_stage(0);
  const int64_t vrank = fold.vrank(rank);
  if (vrank < 0) {
    phases::fold_away(b, fold, in, kNoOp);
    return;
  }
  const Region vec{rank == root ? kOut : b.scratch(n), 0, n};
  OpId ready = b.copy(vec, in);
  if (a.header.P == 1) return;
  const Region t{b.scratch(n), 0, n};
  OpId tmp_free = kNoOp;
  if (fold.partner(rank) >= 0) ready = tmp_free = phases::fold_in(b, fold, vec, ready, t);

  // Phase 2: binomial tree towards the root's virtual rank.
  const int64_t vroot = fold.vrank(root);
  for (int k = 0; k < fold.lg(); ++k) {
    b.set_stage(static_cast<uint16_t>(k + 1));
    const int64_t vpeer = vrank ^ (int64_t{1} << k);
    const int64_t peer = fold.real(vpeer);
    if (((vrank ^ vroot) >> k) & 1) {
      b.send(peer, vec, {ready});
      return;
    }
    OpId r = b.recv(peer, t, {tmp_free});
    ready = tmp_free =
        b.reduce(vec, t, vpeer < vrank ? Side::src_first : Side::dst_first, {ready, r});
  }
}

Cost cost_folded_binomial(const CostArgs& a) {
  const double levels = phases::cost::lg_pof2(a.P) + phases::cost::not_pof2(a.P);
  return Cost{1, a.bytes, a.bytes} * levels;
}

const Registrar reg{{
    .collective = Collective::reduce,
    .name = "folded_binomial",
    .summary = "binomial reduce over the MPICH power-of-two fold; the small-count partner of "
               "reduce:rabenseifner (same tree)",
    .phases = "fold to pof2 ranks (the root stays); binomial tree of whole vectors on the virtual "
              "ranks towards the root",
    .cost = "(lg P + [P != 2^k]) (alpha + n beta + n gamma)",
    .reference = "Rabenseifner 1997 (the tree the small-count protocol must compute)",
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_folded_binomial,
    .model = cost_folded_binomial,
}};

}  // namespace
}  // namespace collkit
