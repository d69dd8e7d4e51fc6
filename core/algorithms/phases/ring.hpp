// The ring reduce-scatter and allgather (ring.cpp).
//
// Every phase writes ops of one rank into a RankBuilder and returns the ops that later phases
// must wait on; no phase keeps state between ranks, so one rank's program is generated alone.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "blocks.hpp"
#include "collkit/schedule.hpp"

namespace collkit::phases {

// Ring phases over all P ranks, block q of the vector cut into P blocks, each message cut into
// segments of at most `seg` elements (0: one segment) so that reducing one segment overlaps with
// receiving the next. The ring needs a commutative op: block q is combined in the order
// q, q+1, ..., P-1, 0, ..., q-1.
struct RingResult {
  // The sends of the steps that moved data (steps[i] ascending): sends[step_begin[i] ..
  // step_begin[i+1]). Only those steps are listed, so a rank's result is O(its ops), not O(P).
  std::vector<OpId> sends;
  std::vector<int64_t> steps;
  std::vector<size_t> step_begin;
  std::vector<OpId> final_ready;  // per segment, the reduce that completed the final block
  // Segment g's send at step s (kNoOp if that step sent nothing).
  OpId send_at(int64_t s, int64_t g) const;
};

// The ring steps s in [0, P-2] at which position v sends or receives a block with elements, in
// order: all of them when no block is empty, else the n + 1 around v (blocks [0, n) hold one
// element each when n < P). Skipping the others changes no op and makes a small message's ring
// O(n) per rank instead of O(P) (2^20 ranks: seconds, not hours).
std::vector<int64_t> ring_steps(const Blocks& blk, int64_t v);
// Reduce-scatter ring: at step s (0 .. P-2) rank r sends block r - s of `out` and receives
// block r - s - 1 from r - 1 into `tmp` (one block long), then out = tmp (+) out on it (the
// partial of the ranks before in ring order on the left). `out` holds the rank's input (copied
// by `out_ready`): in-place safe (MPI_IN_PLACE: `in` is `out`). Rank r ends with block r + 1.
RingResult reduce_scatter_ring(RankBuilder& b, const Blocks& blk, int64_t seg, OpId out_ready,
                               BufId tmp, uint16_t stage0);
// The same over positions v = r - origin of the vector in `vec`: rank r ends with block
// r - origin + 1 (reduce_scatter_block:ring's phase, origin 1: its own block).
RingResult reduce_scatter_ring(RankBuilder& b, const Blocks& blk, BufId vec, int64_t origin,
                               int64_t seg, OpId out_ready, BufId tmp, uint16_t stage0);
// Allgather ring after reduce_scatter_ring: at step s rank r sends block r + 1 - s and receives
// block r - s from r - 1 (ring_allgather with origin -1). Returns the ops that wrote `out` last.
std::vector<OpId> allgather_ring(RankBuilder& b, const Blocks& blk, int64_t seg,
                                 const RingResult& rs, uint16_t stage0);

// The ring allgather, allgather:ring's phase: P positions, position v at rank (v + origin) mod P
// holding block v of `buf` (blocks of `blk`, P = blk.nb). At step s (0 .. P-2) it sends block
// v - s to position v + 1 and receives block v - s - 1 from v - 1, each block cut into segments of
// at most `seg` elements (0: whole). `have[g]`: the op that wrote segment g of block v (a single
// entry stands for every segment); `free(u, g)`: the op that must complete before segment g of
// block u is overwritten (may be empty: none). Empty blocks are not sent. Stages are labelled
// from `stage0` on. Returns `have` and every receive.
using BlockFree = std::function<OpId(int64_t block, int64_t segment)>;
std::vector<OpId> ring_allgather(RankBuilder& b, const Blocks& blk, BufId buf, int64_t origin,
                                 int64_t seg, const std::vector<OpId>& have, const BlockFree& free,
                                 uint16_t stage0);

}  // namespace collkit::phases
