// allreduce:rd: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allreduce:rd` prints them).
// Phases:       1. collapse: of the first 2*rem ranks (rem = P - pof2), each even rank sends its
//                  input to the odd rank above it, which reduces it and stands for both;
//               2. lg(pof2) stages on the pof2 active ranks: exchange the whole vector with the
//                  peer whose virtual rank differs in bit k, and reduce in rank order;
//               3. expand: each odd rank below 2*rem sends the result back to its even partner.
// Restrictions: none (every P >= 1, every count >= 0, non-commutative ops: operands are combined
//               in rank order, so every rank computes the same tree, e.g. for P = 13
//               {[(a+b)+(c+d)]+[(e+f)+(g+h)]}+{[(i+j)+k]+[l+m]}, as Rabenseifner 1997 requires).
#include "../phases/costs.hpp"
#include "../phases/fold.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_rd(const GenArgs& a, RankBuilder& b) {
  const int64_t n = a.header.count, rank = b.rank();
  const phases::Pof2Fold fold(a.header.P);
  const Region in{kIn, 0, n}, out{kOut, 0, n};
  const auto expand_stage = static_cast<uint16_t>(fold.lg() + 1);

  b.set_stage(0);
  OpId out_ready = b.copy(out, in);  // the last op that wrote `out`
  if (a.header.P == 1) return;

  // Phase 1: collapse to a power of two. A rank folded away hands its vector to its partner
  // and waits for the result (Phase 3 for it): it needs no scratch.
  const int64_t vrank = fold.vrank(rank);
  if (vrank < 0) {
    OpId s = phases::fold_away(b, fold, out, out_ready);
    b.set_stage(expand_stage);
    phases::unfold(b, fold, out, {}, s);
    return;
  }
  const Region t{b.scratch(n), 0, n};
  OpId tmp_free = kNoOp;  // the last op that read `t`
  if (fold.partner(rank) >= 0) out_ready = tmp_free = phases::fold_in(b, fold, out, out_ready, t);

  // Phase 2: recursive doubling among the pof2 active ranks.
  for (int k = 0; k < fold.lg(); ++k) {
    b.set_stage(static_cast<uint16_t>(k + 1));
    const int64_t peer = fold.real(vrank ^ (int64_t{1} << k));
    OpId s = b.send(peer, out, {out_ready});
    OpId r = b.recv(peer, t, {tmp_free});
    // The lower half's partial result goes on the left, so every rank builds the same tree.
    out_ready = tmp_free =
        b.reduce(out, t, peer < rank ? Side::src_first : Side::dst_first, {s, r});
  }

  // Phase 3: expand.
  b.set_stage(expand_stage);
  phases::unfold(b, fold, out, {out_ready}, kNoOp);
}

Cost cost_rd(const CostArgs& a) {
  const double lg = phases::cost::lg_pof2(a.P), f = phases::cost::not_pof2(a.P);
  return {lg + 2 * f, (lg + 2 * f) * a.bytes, (lg + f) * a.bytes};
}

const Registrar reg{{
    .collective = Collective::allreduce,
    .name = "rd",
    .summary = "recursive doubling with pairwise exchange; MPICH collapse/expand for P != 2^k",
    .phases = "collapse to pof2 ranks; lg(pof2) pairwise exchanges with reduction in rank order; "
              "expand back to the collapsed ranks",
    .cost = "(lg P + 2 [P != 2^k]) (alpha + n beta) + (lg P + [P != 2^k]) n gamma",
    .reference =
        "Ruefenacht et al. 2017 Algorithm 1 (MPICH's allreduce, Thakur, Rabenseifner, Gropp 2005)",
    .mpi_equivalents = {"mpich:recursive_doubling", "ompi:recursive_doubling",
                        "impi:recursive_doubling"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_rd,
    .model = cost_rd,
}};

}  // namespace
}  // namespace collkit
