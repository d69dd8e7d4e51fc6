// allgather:rd: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allgather:rd` prints them).
// Phases:       1. copy the own input into out block r (nothing under MPI_IN_PLACE);
//               2. P = 2^k: allreduce:rabenseifner's allgather phase (phases::allgather_doubling)
//                  with the distances reversed, 1, 2, ..., P/2; otherwise MPICH's steps:
//                  steps i = 0 .. ceil(lg P)-1, mask 2^i: exchange the blocks of the aligned
//                  group of `mask` ranks held (clipped at P) with rank r ^ mask, if it exists;
//                  where the partner's group is cut short by P, the ranks of this group whose
//                  partner existed pass what they got on down a binomial tree inside the group
//                  (MPICH's "nprocs_completed" steps), so that after step i every rank holds its
//                  aligned group of 2^(i+1) ranks.
// Restrictions: none (any P, any count)
#include <algorithm>
#include <bit>
#include <vector>

#include "../phases/halving.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

// What one rank does at step i (mask 2^i): calls exchange(peer, send_lo, send_hi, recv_lo,
// recv_hi) and, for the fix-up, give(peer, lo, hi) / take(peer, lo, hi), in blocks.
template <class Exchange, class Give, class Take>
void rd_steps(int64_t P, int64_t r, Exchange&& exchange, Give&& give, Take&& take) {
  for (int64_t mask = 1, i = 0; mask < P; mask <<= 1, ++i) {
    const int64_t dst = r ^ mask;
    const int64_t my_root = r >> i << i, dst_root = dst >> i << i;
    if (dst < P)
      exchange(i, dst, my_root, std::min(my_root + mask, P), dst_root,
               std::min(dst_root + mask, P));
    if (dst_root + mask <= P) continue;
    const int64_t completed = P - my_root - mask;  // ranks of the partner group that exist
    if (completed <= 0) continue;
    const int64_t lo = my_root + mask, hi = P;
    int k = static_cast<int>(i);
    for (int64_t m = mask >> 1; m > 0; m >>= 1, --k) {
      const int64_t peer = r ^ m, tree_root = r >> k << k;
      if (peer > r && r < tree_root + completed && peer >= tree_root + completed)
        give(i, peer, lo, hi);
      else if (peer < r && peer < tree_root + completed && r >= tree_root + completed)
        take(i, peer, lo, hi);
    }
  }
}

void generate_rd(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, r = b.rank();
  b.set_stage(0);
  std::vector<OpId> writers{b.copy({kOut, r * n, n}, {kIn, 0, n})};
  if (std::has_single_bit(static_cast<uint64_t>(P))) {
    // Rabenseifner's allgather phase, the distances reversed so that rank v starts from block v.
    phases::ScatterResult own;
    own.ready = writers[0];
    own.sent.fill(kNoOp);
    phases::allgather_doubling(b, phases::Pof2Fold(P), r, phases::Blocks{P * n, P}, kOut, own, 1,
                               true);
    return;
  }
  const auto blocks = [&](int64_t lo, int64_t hi) { return Region{kOut, lo * n, (hi - lo) * n}; };
  const auto stage = [&](int64_t i) {
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(i + 1, UINT16_MAX)));
  };
  rd_steps(
      P, r,
      [&](int64_t i, int64_t peer, int64_t slo, int64_t shi, int64_t rlo, int64_t rhi) {
        stage(i);
        b.send(peer, blocks(slo, shi), writers);
        writers.push_back(b.recv(peer, blocks(rlo, rhi)));
      },
      [&](int64_t i, int64_t peer, int64_t lo, int64_t hi) {
        stage(i);
        b.send(peer, blocks(lo, hi), writers);
      },
      [&](int64_t i, int64_t peer, int64_t lo, int64_t hi) {
        stage(i);
        writers.push_back(b.recv(peer, blocks(lo, hi)));
      });
}

// The messages and blocks a rank receives, one after the other: the critical path is taken as
// the busiest of a few ranks (the last, and those around the largest power of two).
Cost cost_rd(const CostArgs& a) {
  const int64_t P = a.P, pof2 = int64_t{1} << (std::bit_width(static_cast<uint64_t>(P)) - 1);
  Cost worst;
  for (int64_t r : {int64_t{0}, P - 1, pof2 - 1, std::min(pof2, P - 1), P / 2}) {
    Cost c;
    const auto got = [&](int64_t lo, int64_t hi) {
      c = c + Cost{1, static_cast<double>(hi - lo) * a.bytes, 0};
    };
    rd_steps(
        P, r, [&](int64_t, int64_t, int64_t, int64_t, int64_t lo, int64_t hi) { got(lo, hi); },
        [&](int64_t, int64_t, int64_t, int64_t) {},
        [&](int64_t, int64_t, int64_t lo, int64_t hi) { got(lo, hi); });
    if (c.alpha + c.beta > worst.alpha + worst.beta) worst = c;
  }
  return worst;
}

const Registrar reg{{
    .collective = Collective::allgather,
    .name = "rd",
    .summary = "recursive doubling, MPICH's extra steps when P is not a power of two",
    .phases = "step i exchanges the aligned group of 2^i blocks held with rank ^ 2^i; where that "
              "rank does not exist, the group's ranks that got the data pass it on inside the "
              "group along a binomial tree",
    // Cost: (P = 2^k; n: bytes per block); otherwise up to lg P more messages for the fix-up steps
    .cost = "lg P alpha + (P - 1) n beta",
    .reference = "MPICH MPIR_Allgather_intra_recursive_doubling; Thakur, Rabenseifner, Gropp, "
                 "IJHPCA 19(1) 2005",
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
