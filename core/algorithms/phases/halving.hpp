// Recursive-halving reduce-scatter, recursive-doubling allgather and the binomial gather of
// the scattered blocks to a root, over the fold's power of two (halving.cpp).
//
// Every phase writes ops of one rank into a RankBuilder and returns the ops that later phases
// must wait on; no phase keeps state between ranks, so one rank's program is generated alone.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "blocks.hpp"
#include "collkit/schedule.hpp"
#include "fold.hpp"

namespace collkit::phases {

// Recursive halving over the pof2 virtual ranks, MPICH's order: at stage k (k = 0 .. lg-1) the
// partner is vrank ^ 2^k, the current block range is halved and the lower virtual rank keeps the
// lower half. Every element is thus combined with the tree of recursive doubling (neighbours
// first), the lower group's partial result on the left: the tree of allreduce:rd.
// With `distance_down` (MPICH's reduce_scatter for commutative ops) the partner of stage k is
// vrank ^ 2^(lg-1-k) instead: vrank v ends with block v, but an element's operands meet out of
// rank order (commutative ops only).
struct Halving {
  struct Stage {
    int64_t keep_lo, keep_hi;  // blocks kept (and reduced into) at this stage
    int64_t send_lo, send_hi;  // blocks sent to the partner at this stage
  };
  int lg = 0;
  bool distance_down = false;
  std::array<Stage, 64> stages{};
  Halving(const Pof2Fold& f, int64_t vrank, bool distance_down = false);
  int64_t distance(int k) const { return int64_t{1} << (distance_down ? lg - 1 - k : k); }
};

struct ScatterResult {
  OpId ready = kNoOp;           // the last op that wrote this rank's final blocks of `vec`
  std::array<OpId, 64> sent{};  // the send of each stage (kNoOp: nothing sent)
  OpId tmp_free = kNoOp;        // the last op that read `tmp`
};

// The receive scratch of the halving on a rank that takes part (vrank >= 0) after the fold, set
// up alike by allreduce:rabenseifner and reduce:rabenseifner: a rank that folds a partner in
// receives the partner's whole vector (blk.n elements) there and combines it into `vec` first
// (fold_in: `ready` and `free` are that reduce); any other needs only the largest half it
// receives, the one it keeps at stage 0 (`base`: that half's offset in `vec`).
struct HalvingScratch {
  BufId tmp = kIn;
  int64_t base = 0;
  OpId free = kNoOp;   // the last op that read tmp
  OpId ready = kNoOp;  // the last op that wrote vec (vec_ready where nothing was folded in)
};
HalvingScratch halving_scratch(RankBuilder& b, const Pof2Fold& f, int64_t vrank, const Blocks& blk,
                               BufId vec, OpId vec_ready);

// Reduce-scatter by recursive halving (Rabenseifner's and reduce_scatter_block:halving's phase).
// `vec` (whole vector, blocks of `blk`) holds the rank's contribution (written by `vec_ready`);
// received halves go into `tmp` at the same offsets minus `tmp_base`. Messages with no elements are
// skipped on both sides. Stages are labelled from `stage0` on.
ScatterResult reduce_scatter_halving(RankBuilder& b, const Pof2Fold& f, int64_t vrank,
                                     const Blocks& blk, BufId vec, OpId vec_ready, BufId tmp,
                                     int64_t tmp_base, OpId tmp_free, uint16_t stage0,
                                     bool distance_down = false);

// Allgather by recursive doubling, the reverse of the halving: at stage k = lg-1 .. 0 exchange
// the blocks held with the partner vrank ^ 2^k (Rabenseifner's allgather); with
// `distance_down`, the reverse of that halving: partner vrank ^ 2^(lg-1-k), vrank v starting
// from block v (allgather:rd on 2^k ranks, MPICH's). Returns every op that wrote `vec` (for the
// unfold's send).
std::vector<OpId> allgather_doubling(RankBuilder& b, const Pof2Fold& f, int64_t vrank,
                                     const Blocks& blk, BufId vec, const ScatterResult& rs,
                                     uint16_t stage0, bool distance_down = false);

// Gather of the scattered blocks to virtual rank `vroot` along a binomial tree, the reverse of
// the halving: at stage k = lg-1 .. 0 the rank whose bit k differs from vroot's sends all it
// holds to its partner and is done. Returns every op that wrote `vec` (meaningful at vroot).
std::vector<OpId> gather_binomial(RankBuilder& b, const Pof2Fold& f, int64_t vrank, int64_t vroot,
                                  const Blocks& blk, BufId vec, const ScatterResult& rs,
                                  uint16_t stage0);

}  // namespace collkit::phases
