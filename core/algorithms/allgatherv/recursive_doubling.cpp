// allgatherv:recursive_doubling: its summary, phases in brief, cost and reference are said once,
// in its Registrar at the end of this file (`collkit algorithms allgatherv:recursive_doubling`
// prints them).
// Phases:       P = p + rem with p = 2^k <= P. 1. fold: of the first 2 rem ranks, each even one
//               sends its block to the odd one above it; the p remaining ranks are numbered
//               v = 0..p-1 (v < rem: ranks 2v and 2v+1, else rank v + rem: a contiguous range
//               of blocks each). 2. lg p exchanges with v ^ 2^j of all the blocks held so far
//               (the blocks of the 2^j ranks of v's group: one range of blocks, as few messages
//               as the two ranks' displacements allow). 3. unfold: each odd rank of the first
//               2 rem sends every block but its partner's own to it.
// Restrictions: none (any P, any count vector, any displacements)
#include <bit>
#include <vector>

#include "../phases/costs.hpp"
#include "../phases/irregular.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_rd(const GenArgs& a, RankBuilder& b) {
  const ScheduleHeader& h = a.header;
  const int64_t P = h.P, r = b.rank();
  const int64_t p = phases::cost::pof2(P), rem = P - p;
  const BlockLayout mine(h, Io::out, r);
  const auto len = [&](int64_t k) { return mine.len(k); };
  // Blocks [lo, hi) between this rank's out and `peer`'s, in the messages both post.
  const auto send_blocks = [&](int64_t peer, int64_t lo, int64_t hi, Deps deps) {
    const BlockLayout theirs(h, Io::out, peer);
    for (const phases::Piece& x : phases::pieces(
             lo, hi, [&](int64_t k) { return mine.offset(k); },
             [&](int64_t k) { return theirs.offset(k); }, len))
      b.send(peer, {kOut, x.a_off, x.len}, deps);
  };
  const auto recv_blocks = [&](int64_t peer, int64_t lo, int64_t hi, Deps deps,
                               std::vector<OpId>& into) {
    const BlockLayout theirs(h, Io::out, peer);
    for (const phases::Piece& x : phases::pieces(
             lo, hi, [&](int64_t k) { return theirs.offset(k); },
             [&](int64_t k) { return mine.offset(k); }, len))
      into.push_back(b.recv(peer, {kOut, x.b_off, x.len}, deps));
  };
  b.set_stage(0);
  std::vector<OpId> held{b.copy({kOut, mine.offset(r), mine.len(r)}, {kIn, 0, mine.len(r)})};
  const auto lo_of = [&](int64_t v) { return v < rem ? 2 * v : v + rem; };  // its first block
  const auto rank_of = [&](int64_t v) { return v < rem ? 2 * v + 1 : v + rem; };
  if (r < 2 * rem && r % 2 == 0) {  // folded away: give the block, get all the others back
    std::vector<OpId> sent;
    if (mine.len(r) > 0) sent.push_back(b.send(r + 1, {kOut, mine.offset(r), mine.len(r)}, held));
    b.set_stage(static_cast<uint16_t>(std::bit_width(static_cast<uint64_t>(p)) + 1));
    std::vector<OpId> got;
    recv_blocks(r + 1, 0, r, sent, got);
    recv_blocks(r + 1, r + 1, P, sent, got);
    return;
  }
  if (r < 2 * rem) recv_blocks(r - 1, r - 1, r, {}, held);
  const int64_t v = r < 2 * rem ? r / 2 : r - rem;
  uint16_t stage = 1;
  for (int64_t mask = 1; mask < p; mask <<= 1) {
    b.set_stage(stage++);
    const int64_t w = v ^ mask, peer = rank_of(w);
    const int64_t g = v & ~(mask - 1), gw = w & ~(mask - 1);  // the two groups' first v
    const std::vector<OpId> before = held;
    send_blocks(peer, lo_of(g), lo_of(g + mask), before);
    recv_blocks(peer, lo_of(gw), lo_of(gw + mask), {}, held);
  }
  if (r < 2 * rem) {
    b.set_stage(stage);
    send_blocks(r - 1, 0, r - 1, held);
    send_blocks(r - 1, r, P, held);
  }
}

Cost cost_rd(const CostArgs& a) {
  const double fold = phases::cost::not_pof2(a.P);
  return phases::cost::doubling(a.P, a.bytes * static_cast<double>(phases::cost::pof2(a.P))) +
         Cost{2 * fold, fold * a.bytes * static_cast<double>(a.P), 0};
}

const Registrar reg{{
    .collective = Collective::allgatherv,
    .name = "recursive_doubling",
    .summary = "lg p exchanges of the blocks held so far with rank ^ 2^k, the ranks past the "
               "largest power of two folded in first",
    .phases = "fold the first 2 (P - p) ranks pairwise; lg p exchanges of the growing range of "
              "blocks with v ^ 2^j; unfold: the odd ranks send everything back to the even ones",
    // Cost: (n: bytes of the largest block; p = 2^floor(lg P))
    .cost = "lg p alpha + (p - 1) n beta, plus 2 alpha + P n beta where P != 2^k",
    .reference = "MPICH MPIR_Allgatherv_intra_recursive_doubling (which handles P != 2^k "
                 "within the exchanges; the fold here is allreduce:rd's); Thakur, Rabenseifner, "
                 "Gropp, IJHPCA 19(1) 2005",
    .mpi_equivalents = {"mpich:recursive_doubling"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_rd,
    .model = cost_rd,
}};

}  // namespace
}  // namespace collkit
