// The MPICH fold of P ranks onto a power of two, and its unfold (fold.cpp).
//
// Every phase writes ops of one rank into a RankBuilder and returns the ops that later phases
// must wait on; no phase keeps state between ranks, so one rank's program is generated alone.
#pragma once
#include <cstdint>

#include "collkit/schedule.hpp"

namespace collkit::phases {

// The MPICH fold of P ranks onto pof2 = 2^floor(lg P) virtual ranks: of the first 2*rem ranks
// (rem = P - pof2), the pair (2v, 2v+1) combines into virtual rank v, kept by one of the two;
// rank r >= 2*rem is virtual rank r - rem. The kept rank of a pair is `keep` where the pair holds
// it (a reduce's root stays active), else the odd rank (MPICH's allreduce, allreduce:rd).
// Virtual ranks keep the real ranks' order, so combining by virtual rank keeps rank order.
// `onto(P, V)` is the same fold onto any V in [ceil(P/2), P] (rem = P - V pairs; lg() then
// means nothing): allreduce:swing(nonpof2=direct) folds an odd size onto the even one below.
struct Pof2Fold {
  int64_t P = 1, pof2 = 1, rem = 0, keep = -1;
  explicit Pof2Fold(int64_t P, int64_t keep = -1);
  static Pof2Fold onto(int64_t P, int64_t V);
  int64_t real(int64_t v) const;         // the rank that stands for virtual rank v
  int64_t vrank(int64_t rank) const;     // -1 for a rank folded away
  int64_t partner(int64_t rank) const {  // the other rank of rank's pair; -1 outside the pairs
    return rank < 2 * rem ? rank ^ 1 : -1;
  }
  int lg() const;  // lg(pof2)
};

// Fold, on a rank that folds away: send the vector to the partner.
OpId fold_away(RankBuilder& b, const Pof2Fold& f, Region vec, OpId vec_ready);
// Fold, on the kept rank of a pair: receive the partner's vector into `tmp` and combine the two
// in rank order into `vec`. Returns the reduce (it wrote `vec` and read `tmp`).
OpId fold_in(RankBuilder& b, const Pof2Fold& f, Region vec, OpId vec_ready, Region tmp);
// Unfold: the kept rank of a pair sends the result back (after `ready`), the rank folded away
// receives it into `vec` (after its fold send `sent`). Returns the op; kNoOp outside the pairs.
OpId unfold(RankBuilder& b, const Pof2Fold& f, Region vec, Deps ready, OpId sent);

}  // namespace collkit::phases
