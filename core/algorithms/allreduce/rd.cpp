// Algorithm:    recursive doubling with pairwise exchange (allreduce:rd)
// Phases:       1. collapse: of the first 2*rem ranks (rem = P - pof2), each even rank sends its
//                  input to the odd rank above it, which reduces it and stands for both;
//               2. lg(pof2) stages on the pof2 active ranks: exchange the whole vector with the
//                  peer whose virtual rank differs in bit k, and reduce in rank order;
//               3. expand: each odd rank below 2*rem sends the result back to its even partner.
// Cost:         (lg P + 2 [P != 2^k]) (alpha + n beta) + (lg P + [P != 2^k]) n gamma
// Restrictions: none (every P >= 1, every count >= 0, non-commutative ops: operands are combined
//               in rank order, so every rank computes the same tree, e.g. for P = 13
//               {[(a+b)+(c+d)]+[(e+f)+(g+h)]}+{[(i+j)+k]+[l+m]}, as seed 001 requires).
// Reference:    seed 002 Algorithm 1 (MPICH's allreduce, Thakur, Rabenseifner, Gropp 2005).
#include <bit>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_rd(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, rank = b.rank();
  const int64_t pof2 = int64_t{1} << (std::bit_width(static_cast<uint64_t>(P)) - 1);
  const int64_t rem = P - pof2;
  const Region in{kIn, 0, n}, out{kOut, 0, n};

  b.set_stage(0);
  OpId out_ready = b.copy(out, in);  // the last op that wrote `out`
  if (P == 1) return;

  // Phase 1: collapse to a power of two. An even rank below 2*rem hands its vector to the odd
  // rank above it and waits for the result: it needs no scratch.
  if (rank < 2 * rem && rank % 2 == 0) {
    OpId s = b.send(rank + 1, out, {out_ready});
    b.set_stage(static_cast<uint16_t>(std::bit_width(static_cast<uint64_t>(pof2))));  // expand
    b.recv(rank + 1, out, {s});  // Phase 3 for this rank: the result comes back
    return;
  }
  const Region t{b.scratch(n), 0, n};
  int64_t vrank;
  OpId tmp_free = kNoOp;  // the last op that read `t`
  if (rank < 2 * rem) {
    OpId r = b.recv(rank - 1, t);
    out_ready = tmp_free = b.reduce(out, t, Side::src_first, {out_ready, r});
    vrank = rank / 2;
  } else {
    vrank = rank - rem;
  }

  // Phase 2: recursive doubling among the pof2 active ranks.
  uint16_t stage = 1;
  for (int64_t mask = 1; mask < pof2; mask <<= 1, ++stage) {
    b.set_stage(stage);
    const int64_t vpeer = vrank ^ mask;
    const int64_t peer = vpeer < rem ? vpeer * 2 + 1 : vpeer + rem;
    OpId s = b.send(peer, out, {out_ready});
    OpId r = b.recv(peer, t, {tmp_free});
    // The lower half's partial result goes on the left, so every rank builds the same tree.
    out_ready = tmp_free = b.reduce(out, t, peer < rank ? Side::src_first : Side::dst_first, {s, r});
  }

  // Phase 3: expand.
  if (rank < 2 * rem) {
    b.set_stage(stage);
    b.send(rank - 1, out, {out_ready});
  }
}

const Registrar reg{{
    .collective = Collective::allreduce,
    .name = "rd",
    .summary = "recursive doubling with pairwise exchange; MPICH collapse/expand for P != 2^k",
    .phases = "collapse to pof2 ranks; lg(pof2) pairwise exchanges with reduction in rank order; "
              "expand back to the collapsed ranks",
    .cost = "(lg P + 2[P != 2^k]) (alpha + n beta) + (lg P + [P != 2^k]) n gamma",
    .reference = "seed 002 Algorithm 1; Thakur, Rabenseifner, Gropp, IJHPCA 19(1) 2005",
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_rd,
}};

}  // namespace
}  // namespace collkit
