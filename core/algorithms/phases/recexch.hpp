// MPICH's recursive exchange groups (recexch.cpp): which ranks fold into which before the
// exchange, the k - 1 neighbours of each exchange phase, and the block ranges a rank stands for.
// Shared by allreduce:recexch, barrier:recexch and allgather:recexch.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "collkit/registry.hpp"
#include "collkit/schedule.hpp"

namespace collkit::phases {

// MPICH's MPII_Recexchalgo_get_neighbors for one rank. k is lowered to max(P, 2) when P < k;
// pofk = k^nphases is the largest power of k <= P, rem = P - pofk ranks sit out the exchange.
// Of the first T = rem k / (k - 1) ranks, each run of k consecutive ranks folds into its last
// one (a short last run into rank T); ranks >= T take part alone. Step-2 ranks keep the real
// ranks' order, so the groups of a phase are in rank order too.
struct Recexch {
  int64_t P = 1, k = 2, pofk = 1, nphases = 0, rem = 0, T = 0;
  int64_t rank = 0;
  int64_t sendto = -1;            // a rank folded away: the rank it folds into
  std::vector<int64_t> recvfrom;  // a rank folded into: its senders, highest first
  std::vector<int64_t> nbrs_;     // nphases x (k - 1), each phase's ascending

  Recexch(int64_t P, int64_t k, int64_t rank);
  bool in_step2() const { return sendto < 0; }
  // The k - 1 neighbours of phase `phase` (0 = the lowest base-k digit of the step-2 rank).
  std::span<const int64_t> nbrs(int64_t phase) const {
    return std::span<const int64_t>(nbrs_).subspan(static_cast<size_t>(phase * (k - 1)),
                                                   static_cast<size_t>(k - 1));
  }
  int64_t step2rank(int64_t r) const { return r < T ? r / k : r - rem; }
  int64_t origrank(int64_t s) const { return s < rem / (k - 1) ? s * k + k - 1 : s + rem; }
  // MPII_Recexchalgo_get_count_and_offset: the (first rank, number of ranks) of the real
  // ranks whose data the step-2 rank of `r` holds before phase `phase`.
  std::pair<int64_t, int64_t> range(int64_t r, int64_t phase) const;
  // The same range as (first step-2 rank, number of step-2 ranks).
  std::pair<int64_t, int64_t> step2_range(int64_t r, int64_t phase) const;
  // MPII_Recexchalgo_reverse_digits_step2: the real rank of r's step-2 rank, its nphases
  // base-k digits reversed.
  int64_t reverse_digits(int64_t r) const;
};

// The radix k (MPICH's MPIR_CVAR_<COLL>_RECEXCH_KVAL, default 2).
inline ParamSpec recexch_k_param() {
  return ParamSpec{"k",
                   ParamType::integer,
                   "2",
                   2,
                   64,
                   "radix: each phase exchanges with the k - 1 ranks that differ in one base-k "
                   "digit (lowered to P when P < k)",
                   {"2", "3", "4", "5"}};
}
// MPICH's MPIR_CVAR_<COLL>_RECEXCH_SINGLE_PHASE_RECV (default false).
inline ParamSpec single_phase_recv_param() {
  return ParamSpec{"single_phase_recv",
                   ParamType::integer,
                   "0",
                   0,
                   1,
                   "1: post each phase's receives alone; 0 (MPICH's default): post the next "
                   "phase's receives with the current one's",
                   {"0", "1"}};
}

// MPICH's MPIR_Allreduce_intra_recexch on one rank, after `out` holds the rank's vector (written
// by `ready`): fold in, the exchange phases, fold out. `n` elements; `data` false is its barrier
// (no data: each reduction is a join of the messages it waited on). Every phase's receives are
// posted before its sends, and with single_phase_recv false those of the next phase too;
// reductions run in rank order (MPICH's order for floating-point and non-commutative ops).
void recexch_allreduce(RankBuilder& b, const Recexch& g, bool single_phase_recv, int64_t n,
                       bool data, OpId ready);

// The exchange phases of MPICH's recexch allgather (after `ready`), on a step-2 rank: in phase
// j, the group of k^j step-2 ranks a rank stands for, blocks(whose, j), goes to each neighbour
// (halving: the phases from the highest digit down, `whose` the digit-reversed rank). Returns
// the op after which every block is in place.
OpId recexch_gather(RankBuilder& b, const Recexch& g, bool halving, bool single_phase_recv,
                    const std::function<Region(int64_t whose, int64_t phase)>& blocks, OpId ready,
                    uint16_t stage0);

// MPICH's MPIR_Allgather_intra_recexch on one rank, n elements per block: fold in, (distance
// halving: swap with the digit-reversed rank) the exchange phases, fold out.
void recexch_allgather(RankBuilder& b, const Recexch& g, bool halving, bool single_phase_recv,
                       int64_t n);

// The bytes and messages along allgather:recexch's critical path (n bytes per block), at most.
Cost recexch_allgather_cost(int64_t P, int64_t k, bool halving, double n);

}  // namespace collkit::phases
