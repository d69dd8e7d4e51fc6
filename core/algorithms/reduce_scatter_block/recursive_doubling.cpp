// reduce_scatter_block:recursive_doubling: its summary, phases in brief, cost and reference are
// said once, in its Registrar at the end of this file (`collkit algorithms
// reduce_scatter_block:recursive_doubling` prints them).
// Algorithm:    MPICH's recursive doubling (the one it runs for non-commutative ops), n elements
//               per block, P blocks. Rank r keeps a running result `res` of all P blocks (a copy
//               of its input). At step i (mask m = 2^i), r's subtree is the m ranks that share
//               r >> i, the partner's (dst = r ^ m) is the other half of the next level up.
// Phases:       per step, each op after the one before (MPICH's calls block):
//               1. if dst < P: a sendrecv with dst: send every block of res outside r's subtree
//                  (packed into one message: the blocks before it, then those after it), receive
//                  every block outside dst's subtree into a scratch `tmp`, packed the same way;
//               2. if dst's subtree is cut short by P (P != 2^k), the ranks of r's subtree that
//                  got tmp pass it on by recursive halving to those that had no partner: for
//                  tm = m/2, m/4, ..., 1, a rank with the data sends tmp to r ^ tm if that one
//                  lacks it;
//               3. if r got tmp (1 or 2), it reduces it into res, block by block, in rank order:
//                  dst's subtree below r's puts tmp on the left, above on the right;
//               4. at the end, out = res block r.
// Restrictions: none (any P, any op: every block is combined in rank order).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

// The blocks outside a subtree [root, root + m) of P blocks, as two runs (elements).
struct Outside {
  int64_t len0 = 0;  // [0, root)
  int64_t off1 = 0;  // [root + m, P), clipped to P
  int64_t len1 = 0;
  int64_t total() const { return len0 + len1; }
};
Outside outside(int64_t root, int64_t m, int64_t P, int64_t n) {
  const int64_t end = std::min(root + m, P);
  return {root * n, end * n, std::max<int64_t>(0, P - end) * n};
}

void generate_recursive_doubling(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, r = b.rank();
  if (n == 0) return;
  b.set_stage(0);
  const BufId res = b.scratch(P * n);
  OpId after = b.copy({res, 0, P * n}, {kIn, 0, P * n});
  const BufId tmp = P > 1 ? b.scratch(P * n) : res, pack = P > 1 ? b.scratch(P * n) : res;
  int64_t i = 0;
  for (int64_t mask = 1; mask < P; mask <<= 1, ++i) {
    b.set_stage(static_cast<uint16_t>(i + 1));
    const int64_t dst = r ^ mask, dst_root = (dst >> i) << i, my_root = (r >> i) << i;
    const Outside mine = outside(my_root, mask, P, n), theirs = outside(dst_root, mask, P, n);
    bool received = false;
    if (dst < P) {
      // The two runs outside r's subtree, packed as MPICH's indexed datatype sends them.
      if (mine.len0 > 0) after = b.copy({pack, 0, mine.len0}, {res, 0, mine.len0}, {after});
      if (mine.len1 > 0)
        after = b.copy({pack, mine.len0, mine.len1}, {res, mine.off1, mine.len1}, {after});
      const OpId s = mine.total() > 0 ? b.send(dst, {pack, 0, mine.total()}, {after}) : kNoOp;
      const OpId v = theirs.total() > 0 ? b.recv(dst, {tmp, 0, theirs.total()}, {after}) : kNoOp;
      if (s != kNoOp || v != kNoOp) after = b.compute(0, {s, v});
      received = true;
    }
    if (dst_root + mask > P) {
      // Pass tmp on within r's subtree, to the ranks that had no partner.
      const int64_t done = P - my_root - mask;
      int64_t k = std::bit_width(static_cast<uint64_t>(mask)) - 1;
      for (int64_t tm = mask >> 1; tm > 0; tm >>= 1, --k) {
        const int64_t peer = r ^ tm, tree_root = (r >> k) << k;
        if (peer > r && r < tree_root + done && peer >= tree_root + done) {
          if (theirs.total() > 0) after = b.send(peer, {tmp, 0, theirs.total()}, {after});
        } else if (peer < r && peer < tree_root + done && r >= tree_root + done) {
          if (theirs.total() > 0) after = b.recv(peer, {tmp, 0, theirs.total()}, {after});
          received = true;
        }
      }
    }
    if (received) {
      // Rank order: a subtree of lower ranks on the left.
      const Side side = dst_root < my_root ? Side::src_first : Side::dst_first;
      if (theirs.len0 > 0)
        after = b.reduce({res, 0, theirs.len0}, {tmp, 0, theirs.len0}, side, {after});
      if (theirs.len1 > 0)
        after = b.reduce({res, theirs.off1, theirs.len1}, {tmp, theirs.len0, theirs.len1}, side,
                         {after});
    }
  }
  b.set_stage(static_cast<uint16_t>(i + 1));
  b.copy({kOut, 0, n}, {res, r * n, n}, {after});
}

// Along the critical path: step i sends and reduces the P - 2^i blocks outside a subtree of 2^i
// ranks; where P != 2^k a step's data may be forwarded up to i more times (the bound, not the
// exact count, which depends on the rank).
Cost cost_recursive_doubling(const CostArgs& a) {
  if (a.P <= 1) return {};
  const auto P = static_cast<uint64_t>(a.P);
  const bool exact = std::has_single_bit(P);
  const int steps = std::bit_width(P - 1);  // ceil(lg P)
  Cost c;
  for (int i = 0; i < steps; ++i) {
    const double blocks = static_cast<double>(P - (uint64_t{1} << i));
    const double hops = exact ? 1.0 : 1.0 + i;
    c = c + Cost{hops, hops * blocks * a.bytes, blocks * a.bytes};
  }
  return c;
}

const Registrar reg{{
    .collective = Collective::reduce_scatter_block,
    .name = "recursive_doubling",
    .summary = "MPICH's recursive doubling: lg P exchanges of every block outside the own "
               "subtree, any op (rank order)",
    .phases = "step i: exchange with rank ^ 2^i all blocks outside the own subtree of 2^i ranks, "
              "pass them on by recursive halving to ranks without a partner (P != 2^k), reduce "
              "in rank order; out = the own block",
    .cost = "P = 2^k: lg P alpha + (P lg P - P + 1) n (beta + gamma) (n: bytes per block); "
            "otherwise ceil(lg P) exchanges and up to lg m forwarding messages at step m (the "
            "closed form counts that bound)",
    .reference = "MPICH MPIR_Reduce_scatter_block_intra_recursive_doubling; Thakur, Rabenseifner, "
                 "Gropp, IJHPCA 19(1) 2005",
    .mpi_equivalents = {"mpich:recursive_doubling"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_recursive_doubling,
    .model = cost_recursive_doubling,
}};

}  // namespace
}  // namespace collkit
