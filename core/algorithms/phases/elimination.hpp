// Reduce-scatter, allgather and gather with 3-2 or 2-1 elimination for any P (elimination.cpp).
//
// Every phase writes ops of one rank into a RankBuilder and returns the ops that later phases
// must wait on; no phase keeps state between ranks, so one rank's program is generated alone.
#pragma once
#include <any>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "blocks.hpp"
#include "collkit/registry.hpp"
#include "collkit/schedule.hpp"

namespace collkit::phases {

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
  // Whether a level puts this rank in a triple (3-2 only): reduce_scatter_elim needs its tmp2.
  bool in_triple() const {
    for (int l = 0; l < levels_count; ++l) {
      const ElimRole r = levels[static_cast<size_t>(l)].role;
      if (r == ElimRole::triple_0 || r == ElimRole::triple_1) return true;
    }
    return false;
  }
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
