// bcast:scatter_rd_allgather: its summary, phases in brief, cost and reference are said once, in
// its Registrar at the end of this file (`collkit algorithms bcast:scatter_rd_allgather` prints
// them).
// Blocks:       MPICH's: the vector is cut into P blocks of ceil(count / P) elements, block u
//               (position u relative to the root) at offset u * ceil(count / P), the last ones
//               short or empty (MPICH cuts bytes; here elements, the same for 1-byte types).
// Phases:       1. scatter: the blocks go down a binomial tree relative to the root, each rank
//                  receiving its subtree's blocks in one message, empty ones not sent
//                  (phases::scatter_down, scatter:binomial's phase; MPICH MPII_Scatter_for_bcast);
//               2. allgather: recursive doubling over the positions, as MPICH
//                  MPIR_Bcast_intra_scatter_recursive_doubling_allgather writes it: at step i
//                  (mask 2^i) position v exchanges the blocks of its aligned group of 2^i
//                  positions (clipped at P) with position v ^ 2^i where it exists, zero-length
//                  messages included; where the partner's group is cut short by P, the
//                  positions of the group that got the data pass it on inside the group down a
//                  binomial tree (MPICH's "nprocs_completed" steps, for any P).
//               Open MPI's ompi_coll_base_bcast_intra_scatter_allgather (coll_tuned_bcast
//               algorithm 8) posts the same messages for count >= P, but for count < P it runs
//               a linear bcast instead, so it is not named as an equivalent.
// Restrictions: none (any P, any root; count 0 or P = 1: no messages)
#include <algorithm>
#include <bit>
#include <vector>

#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_scatter_rd_allgather(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, root = a.header.root;
  if (n == 0 || P == 1) return;
  const int64_t s = (n + P - 1) / P;  // MPICH's scatter_size
  const auto blocks = [&](int64_t lo, int64_t hi) {
    const int64_t from = std::min(lo * s, n), to = std::min(hi * s, n);
    return Region{kOut, from, to - from};
  };
  const phases::Tree t{phases::TreeShape::knomial, 2};
  const phases::BlockTree bt{t, root, P, blocks};
  b.set_stage(0);
  const phases::ScatterDown sd = phases::scatter_down(b, bt);
  const int64_t v = sd.v;
  const auto rank_of = [&](int64_t u) { return (u + root) % P; };
  // What a send must wait for: every receive so far. What a receive must wait for: the scatter's
  // receives (it may rewrite their bytes with the same values) and the scatter's sends of the
  // blocks it rewrites.
  std::vector<OpId> got = sd.got;
  const auto recv = [&](int64_t peer, int64_t lo, int64_t hi) {
    std::vector<OpId> deps = sd.got;
    for (int64_t u = lo; u < hi; ++u) deps.push_back(sd.sent_by(u));
    got.push_back(b.recv(rank_of(peer), blocks(lo, hi), deps));
  };
  for (int64_t mask = 1, i = 0; mask < P; mask <<= 1, ++i) {
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(i + 1, UINT16_MAX)));
    const int64_t dst = v ^ mask, my_root = v >> i << i, dst_root = dst >> i << i;
    if (dst < P) {
      b.send(rank_of(dst), blocks(my_root, std::min(my_root + mask, P)), got);
      recv(dst, dst_root, std::min(dst_root + mask, P));
    }
    if (dst_root + mask <= P) continue;
    const int64_t completed = P - my_root - mask;  // positions of this group that got the data
    if (completed <= 0) continue;
    const int64_t lo = my_root + mask;
    int64_t k = i;
    for (int64_t m = mask >> 1; m > 0; m >>= 1, --k) {
      const int64_t peer = v ^ m, tree_root = v >> k << k;
      if (peer > v && v < tree_root + completed && peer >= tree_root + completed)
        b.send(rank_of(peer), blocks(lo, P), got);
      else if (peer < v && peer < tree_root + completed && v >= tree_root + completed)
        recv(peer, lo, P);
    }
  }
}

// 2 ceil(lg P) messages (the scatter's depth, then the exchanges) and the scatter's plus the
// allgather's (P - 1) / P n bytes: exact for P = 2^k; otherwise the fix-up steps add messages to
// the path that the model leaves out.
Cost cost_scatter_rd_allgather(const CostArgs& a) {
  const int64_t P = a.P;
  if (P <= 1) return {};
  const double lg = std::bit_width(static_cast<uint64_t>(P - 1));  // ceil(lg P)
  return Cost{2 * lg, 2 * static_cast<double>(P - 1) / static_cast<double>(P) * a.bytes, 0};
}

const Registrar reg{{
    .collective = Collective::bcast,
    .name = "scatter_rd_allgather",
    .summary = "binomial scatter of P blocks from the root, then a recursive-doubling allgather",
    .phases = "scatter the vector's P blocks (ceil(count / P) elements each) down a binomial tree "
              "relative to the root; step i exchanges the aligned group of 2^i blocks held with "
              "position ^ 2^i, and where that position does not exist the group's positions that "
              "got the data pass it on along a binomial tree",
    // Cost: P = 2^k; otherwise the fix-up steps add messages the model leaves out
    .cost = "2 lg P alpha + 2 ((P - 1) / P) n beta",
    .reference = "MPICH MPIR_Bcast_intra_scatter_recursive_doubling_allgather; Thakur, "
                 "Rabenseifner, Gropp, IJHPCA 19(1) 2005",
    .mpi_equivalents = {"mpich:scatter_recursive_doubling_allgather"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_scatter_rd_allgather,
    .model = cost_scatter_rd_allgather,
}};

}  // namespace
}  // namespace collkit
