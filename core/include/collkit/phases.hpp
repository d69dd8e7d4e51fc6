// Shared phases of the reduction algorithms, written once and composed by the generators
// (STYLE.md 5): the MPICH fold of P ranks onto a power of two and its unfold, recursive-halving
// reduce-scatter, recursive-doubling allgather, the binomial gather of the scattered blocks to a
// root, and the ring reduce-scatter / allgather.
//
// Every phase writes ops of one rank into a RankBuilder and returns the ops that later phases
// must wait on; no phase keeps state between ranks, so one rank's program is generated alone.
#pragma once
#include <any>
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "collkit/registry.hpp"
#include "collkit/schedule.hpp"

namespace collkit::phases {

// n elements cut into nb blocks, the first n % nb of them one element longer. Or, with `unit`
// set, the blocks of the fold (Pof2Fold) over P blocks of `unit` elements: virtual block i is
// the real blocks of the ranks it stands for, 2i and 2i+1 for i < rem, else i + rem
// (reduce_scatter_block:halving on P != 2^k).
struct Blocks {
  int64_t n = 0;
  int64_t nb = 1;
  int64_t unit = 0;
  int64_t rem = 0;
  int64_t begin(int64_t i) const {
    if (unit > 0) return unit * (i < rem ? 2 * i : i + rem);
    return i * (n / nb) + (i < n % nb ? i : n % nb);
  }
  // Blocks [lo, hi) of buffer `buf`, as one region.
  Region region(BufId buf, int64_t lo, int64_t hi) const {
    return Region{buf, begin(lo), begin(hi) - begin(lo)};
  }
};

// The MPICH fold of P ranks onto pof2 = 2^floor(lg P) virtual ranks: of the first 2*rem ranks
// (rem = P - pof2), the pair (2v, 2v+1) combines into virtual rank v, kept by one of the two;
// rank r >= 2*rem is virtual rank r - rem. The kept rank of a pair is `keep` where the pair holds
// it (a reduce's root stays active), else the odd rank (MPICH's allreduce, allreduce:rd).
// Virtual ranks keep the real ranks' order, so combining by virtual rank keeps rank order.
struct Pof2Fold {
  int64_t P = 1, pof2 = 1, rem = 0, keep = -1;
  explicit Pof2Fold(int64_t P, int64_t keep = -1);
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

// Ring phases over all P ranks, block q of the vector cut into P blocks, each message cut into
// segments of at most `seg` elements (0: one segment) so that reducing one segment overlaps with
// receiving the next. The ring needs a commutative op: block q is combined in the order
// q, q+1, ..., P-1, 0, ..., q-1.
struct RingResult {
  std::vector<OpId> sends;  // the sends of step s: sends[step_begin[s] .. step_begin[s+1])
  std::vector<size_t> step_begin;
  std::vector<OpId> final_ready;  // per segment, the reduce that completed the final block
};
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

// Reduce-scatter / allgather over all P ranks without the fold, eliminating one rank per odd
// group at each level (Rabenseifner and Traeff 2004): 3-2 (a triple ends as two ranks holding
// half each) or 2-1 (a rank hands its whole segment to the next one). See elimination.cpp.
enum class Elimination : uint8_t { three_two, two_one };
enum class ElimRole : uint8_t {
  pair_lower,
  pair_upper,  // an exchange of halves with one partner
  triple_0,
  triple_1,
  triple_2,     // 3-2: 0 and 1 exchange, 2 hands its halves to them
  handed_over,  // 2-1: handed the whole segment to member 1
};
struct ElimLevel {
  int64_t m = 0, index = 0;  // group size, this rank's index in it
  int64_t lo = 0, hi = 0;    // the group's blocks
  ElimRole role = ElimRole::pair_lower;
  bool upper = false;  // goes on with the upper half
};
// One rank's path through the levels: O(lg P) to build, O(lg P) per member lookup.
struct ElimPlan {
  Elimination mode;
  int levels_count = 0;  // levels taken part in; the last is the elimination if eliminated
  bool eliminated = false;
  std::array<ElimLevel, 64> levels{};
  ElimPlan(int64_t P, int64_t rank, Elimination mode);
  int64_t member(int level, int64_t index) const;  // the rank of a member of my group
  int64_t partner(int level) const;                // the pair / triple exchange partner
};
struct ElimScatter {
  OpId ready = kNoOp;
  std::array<std::array<OpId, 2>, 64> sent{};  // per level: the sends (triple_2: lower, upper)
};
// `vec`, `tmp` and `tmp2` hold n elements at the same offsets; tmp2 only for 3-2.
ElimScatter reduce_scatter_elim(RankBuilder& b, const ElimPlan& plan, const Blocks& blk, BufId vec,
                                OpId vec_ready, BufId tmp, BufId tmp2, uint16_t stage0);
std::vector<OpId> allgather_elim(RankBuilder& b, const ElimPlan& plan, const Blocks& blk, BufId vec,
                                 const ElimScatter& rs, uint16_t stage0);
// Gather after reduce_scatter_elim, the levels in reverse: in every group the upper child's
// collector sends its half to the lower child's collector. Ends at rank elim_collector(P, mode)
// (0 for 3-2). Returns every op that wrote `vec` (meaningful at the collector).
int64_t elim_collector(int64_t P, Elimination mode);

// The `nonpof2` parameter of the Rabenseifner algorithms is fold, elim or elim21; anything else
// is an Error(invalid_argument) naming the algorithm. Used as AlgorithmSpec::prepare.
std::any check_nonpof2(const GenArgs& a);
// The parameter itself (default fold); `doc` says what the variants mean for the algorithm.
ParamSpec nonpof2_param(std::string doc);
std::vector<OpId> gather_elim(RankBuilder& b, const ElimPlan& plan, int64_t P, const Blocks& blk,
                              BufId vec, const ElimScatter& rs, uint16_t stage0);

}  // namespace collkit::phases
