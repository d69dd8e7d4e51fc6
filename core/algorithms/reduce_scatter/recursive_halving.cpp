// reduce_scatter:recursive_halving: its summary, phases in brief, cost and reference are said
// once, in its Registrar at the end of this file (`collkit algorithms
// reduce_scatter:recursive_halving` prints them).
// Phases:       P = p + rem with p = 2^k <= P; in is copied to scratch. 1. fold: of the first
//               2 rem ranks each even one sends its whole vector to the odd one above, which
//               adds it; the p remaining ranks are numbered v = 0..p-1 (v < rem: blocks 2v and
//               2v+1, else block v + rem). 2. lg p halvings, partner at distance p/2 first: the
//               range of blocks held is halved, the half the partner keeps sent, the other half's
//               operand received and added. 3. each odd rank of the first 2 rem sends its
//               partner's block to it. Every rank copies its block to out last.
// Restrictions: a commutative op (the halving pairs ranks across the range)
#include <vector>

#include "../phases/costs.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_halving(const GenArgs& a, RankBuilder& b) {
  const ScheduleHeader& h = a.header;
  const int64_t P = h.P, r = b.rank();
  const BlockLayout in(h, Io::in, r);
  const int64_t p = phases::cost::pof2(P), rem = P - p, total = in.elems();
  const auto off = [&](int64_t blk) { return blk < P ? in.offset(blk) : total; };
  b.set_stage(0);
  const BufId acc = b.scratch(total), tmp = b.scratch(total);
  const OpId aside = b.copy({acc, 0, total}, {kIn, 0, total});
  if (r < 2 * rem && r % 2 == 0) {  // folded away
    b.send(r + 1, {acc, 0, total}, {aside});
    b.set_stage(static_cast<uint16_t>(std::bit_width(static_cast<uint64_t>(p)) + 1));
    if (in.len(r) > 0) b.recv(r + 1, {kOut, 0, in.len(r)}, {aside});
    return;
  }
  OpId last = aside;
  std::vector<OpId> tmp_readers;
  if (r < 2 * rem) {
    const OpId got = b.recv(r - 1, {tmp, 0, total});
    last = b.reduce({acc, 0, total}, {tmp, 0, total}, Side::src_first, {got, aside});
    tmp_readers = {last};
  }
  const int64_t v = r < 2 * rem ? r / 2 : r - rem;
  const auto lo_of = [&](int64_t u) { return u < rem ? 2 * u : u + rem; };  // its first block
  const auto rank_of = [&](int64_t u) { return u < rem ? 2 * u + 1 : u + rem; };
  int64_t first = 0;  // the range of new ranks whose blocks are held: [first, first + 2 mask)
  uint16_t stage = 1;
  for (int64_t mask = p / 2; mask >= 1; mask /= 2) {
    b.set_stage(stage++);
    const int64_t w = v ^ mask, peer = rank_of(w);
    const bool low = v < w;
    const int64_t keep = low ? first : first + mask, give = low ? first + mask : first;
    const int64_t klo = off(lo_of(keep)), khi = off(lo_of(keep + mask));
    const int64_t glo = off(lo_of(give)), ghi = off(lo_of(give + mask));
    const OpId snd = ghi > glo ? b.send(peer, {acc, glo, ghi - glo}, {last}) : kNoOp;
    if (khi > klo) {
      const OpId rcv = b.recv(peer, {tmp, klo, khi - klo}, tmp_readers);
      last =
          b.reduce({acc, klo, khi - klo}, {tmp, klo, khi - klo}, Side::src_first, {rcv, last, snd});
      tmp_readers = {last};
    }
    first = keep;
  }
  b.set_stage(stage);
  if (r < 2 * rem && in.len(r - 1) > 0)
    b.send(r - 1, {acc, in.offset(r - 1), in.len(r - 1)}, {last});
  b.copy({kOut, 0, in.len(r)}, {acc, in.offset(r), in.len(r)}, {last, aside});
}

Cost cost_halving(const CostArgs& a) {
  const double fold = phases::cost::not_pof2(a.P), P = static_cast<double>(a.P);
  return phases::cost::halving(a.P, a.bytes * P) +
         Cost{2 * fold, fold * 2 * P * a.bytes, fold * P * a.bytes};
}

const Registrar reg{{
    .collective = Collective::reduce_scatter,
    .name = "recursive_halving",
    .summary = "lg p halvings of the range of blocks held, the ranks past the largest power of "
               "two folded in first",
    .phases = "fold the first 2 (P - p) ranks pairwise; lg p halvings with v ^ p/2, v ^ p/4, "
              "...: send the half the partner keeps, add the operand of the other; unfold",
    // Cost: (N: bytes of the whole vector; p = 2^floor(lg P))
    .cost = "lg p alpha + (p - 1)/p N (beta + gamma), plus 2 alpha + 2 N beta + N gamma where "
            "P != 2^k",
    .reference = "MPICH MPIR_Reduce_scatter_intra_recursive_halving; Thakur, Rabenseifner, "
                 "Gropp, IJHPCA 19(1) 2005",
    .mpi_equivalents = {"mpich:recursive_halving"},
    .params = {},
    .restrictions = {.commutative_op = true},
    .prepare = {},
    .generate = generate_halving,
    .model = cost_halving,
}};

}  // namespace
}  // namespace collkit
