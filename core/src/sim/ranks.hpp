// The engine's per-rank state during a trial: when each rank's CPUs and NIC gaps are free, its
// pending counters (one per op, held only while the rank runs: from when the simulation reaches
// it to when it finishes) and, for ranks with wildcard receives, their matching queues.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collkit/error.hpp"
#include "programs.hpp"

namespace collkit::sim::detail {

constexpr uint16_t kMsgBit16 = 0x8000u;  // kMsgBit in a narrow (16-bit) counter
// LogGOPS: in a recv's pending count, it is not posted yet (a message processed meanwhile is
// unexpected).
constexpr uint32_t kUnposted = 0x40000000u;
constexpr uint16_t kUnposted16 = 0x4000u;
constexpr uint32_t kDepMask = 0x3fffffffu;

// Per rank, during a trial: 48 bytes that an event of the rank touches together.
struct RankState {
  double cpu_free, port_free, recv_free, finish;
  uint8_t* pend;  // its pending counters (uint16_t, or uint32_t for a wide program); null: none
  uint32_t done;  // ops completed
  uint8_t started;
};

// Timelines of a host's CPUs and NICs beyond the first (GOAL's cpu N / nic N): CPU c >= 1 at
// [c - 1], the send gap of NIC n >= 1 at [15 + n - 1], its receive gap at [22 + n - 1].
struct Units {
  double t[kMaxCpu + 2 * kMaxNic] = {};
};

// A rank with wildcard receives matches its messages as LogGOPSim does: a message takes the
// first posted receive that fits, else waits in the unexpected queue; a receive being posted
// takes the first unexpected message that fits, else joins the posted queue.
struct Matching {
  std::vector<uint32_t> posted;                           // receive ops, in posting order
  std::vector<std::pair<uint32_t, uint32_t>> unexpected;  // sends (rank, op), in arrival order
};

// Where ranks' pending counters live: chunks that never move (a growing array would copy, and
// for a moment hold, everything twice), so a block is a plain pointer.
class CounterPool {
 public:
  static constexpr size_t kChunk = size_t{16} << 20;
  uint8_t* allocate(size_t bytes) {
    bytes = (bytes + 7) & ~size_t{7};
    if (bytes > kChunk) {  // a program larger than a chunk gets its own
      big_.emplace_back(new uint8_t[bytes]);
      return big_.back().get();
    }
    if (chunks_.empty() || used_ + bytes > kChunk) {
      if (++current_ >= chunks_.size()) chunks_.emplace_back(new uint8_t[kChunk]);
      used_ = 0;
    }
    uint8_t* p = chunks_[current_].get() + used_;
    used_ += bytes;
    return p;
  }
  void reset() {  // keeps the chunks for the next trial
    current_ = SIZE_MAX;
    used_ = kChunk;
    big_.clear();
  }
  size_t memory_bytes() const { return chunks_.size() * kChunk; }

 private:
  std::vector<std::unique_ptr<uint8_t[]>> chunks_, big_;
  size_t current_ = SIZE_MAX, used_ = kChunk;
};

class Ranks {
 public:
  Ranks(const ProgramStore& store, int64_t P, bool unposted)
      : store_(store), unposted_(unposted), rank_(static_cast<size_t>(P)) {}

  RankState& operator[](uint32_t r) { return rank_[r]; }
  const RankState& operator[](uint32_t r) const { return rank_[r]; }
  const std::vector<RankState>& all() const { return rank_; }
  void prefetch_state(uint32_t r) const { __builtin_prefetch(&rank_[r]); }
  void prefetch_counters(uint32_t r) const {
    if (rank_[r].pend != nullptr) __builtin_prefetch(rank_[r].pend);
  }

  // A new trial: every rank idle, at time 0, holding nothing.
  void reset() {
    for (RankState& s : rank_) s = RankState{0, 0, 0, 0, nullptr, 0, 0};
    pool_.reset();
    free_[0].clear();
    free_[1].clear();
    held_ = 0;
    units_.clear();
    matching_.clear();
  }

  // The free times of rank r's CPU c, and of NIC n's send and receive gaps.
  double& cpu_free(uint32_t r, uint32_t c) {
    return c == 0 ? rank_[r].cpu_free : units_[r].t[c - 1];
  }
  double& send_free(uint32_t r, uint32_t n) {
    return n == 0 ? rank_[r].port_free : units_[r].t[kMaxCpu + n - 1];
  }
  double& recv_free(uint32_t r, uint32_t n) {
    return n == 0 ? rank_[r].recv_free : units_[r].t[kMaxCpu + kMaxNic + n - 1];
  }

  // Rank r (program p) is reached: its counters are set up (recvs not yet posted where the
  // rules post them).
  void hold(uint32_t r, const Program& p) {
    RankState& s = rank_[r];
    auto& free = free_[p.wide][p.n];
    if (!free.empty()) {
      s.pend = free.back();
      free.pop_back();
    } else {
      s.pend = pool_.allocate(size_t{p.n} * (p.wide ? 4 : 2));
    }
    const TOp* o = store_.ops(p);
    if (p.wide) {
      uint32_t* c = reinterpret_cast<uint32_t*>(s.pend);
      for (uint32_t i = 0; i < p.n; ++i)
        c[i] = o[i].pending | (unposted_ && (o[i].pending & kMsgBit) ? kUnposted : 0);
    } else {
      uint16_t* c = reinterpret_cast<uint16_t*>(s.pend);
      const uint16_t unposted = unposted_ ? kUnposted16 : 0;
      for (uint32_t i = 0; i < p.n; ++i)
        c[i] = static_cast<uint16_t>((o[i].pending & kMaxNarrowDeps) |
                                     (o[i].pending & kMsgBit ? kMsgBit16 | unposted : 0));
    }
    peak_held_ = std::max(peak_held_, ++held_);
  }
  // Rank r has finished: its counters go back to the pool.
  void release(uint32_t r, const Program& p) {
    if (p.dynamic) {
      auto it = matching_.find(r);
      if (it != matching_.end()) {
        if (!it->second.unexpected.empty()) {
          const auto [q, k] = it->second.unexpected.front();
          fail(ErrorKind::invalid_argument,
               "unmatched send: rank " + std::to_string(r) + " finished with the message of rank " +
                   std::to_string(q) + " op " + std::to_string(k) + " taken by no receive");
        }
        matching_.erase(it);
      }
    }
    free_[p.wide][p.n].push_back(rank_[r].pend);
    rank_[r].pend = nullptr;
    --held_;
  }

  // Op i's pending count (deps | kMsgBit | kUnposted), and its changes, returning the new count.
  uint32_t pending(uint32_t r, const Program& p, uint32_t i) const {
    if (p.wide) return reinterpret_cast<const uint32_t*>(rank_[r].pend)[i];
    return widen(reinterpret_cast<const uint16_t*>(rank_[r].pend)[i]);
  }
  uint32_t decrement(uint32_t r, const Program& p, uint32_t i) {
    if (p.wide) return --reinterpret_cast<uint32_t*>(rank_[r].pend)[i];
    return widen(--reinterpret_cast<uint16_t*>(rank_[r].pend)[i]);
  }
  // The same tests on the counter as stored, without widening it (once per op and message).
  bool deps_done(uint32_t r, const Program& p, uint32_t i) const {  // no dep left to wait for
    if (p.wide) return (reinterpret_cast<const uint32_t*>(rank_[r].pend)[i] & kDepMask) == 0;
    return (reinterpret_cast<const uint16_t*>(rank_[r].pend)[i] & kMaxNarrowDeps) == 0;
  }
  bool release_dep(uint32_t r, const Program& p, uint32_t i) {  // one dep fewer: none left?
    if (p.wide) return (--reinterpret_cast<uint32_t*>(rank_[r].pend)[i] & kDepMask) == 0;
    return (--reinterpret_cast<uint16_t*>(rank_[r].pend)[i] & kMaxNarrowDeps) == 0;
  }
  bool msg_missing(uint32_t r, const Program& p, uint32_t i) const {
    if (p.wide) return reinterpret_cast<const uint32_t*>(rank_[r].pend)[i] & kMsgBit;
    return reinterpret_cast<const uint16_t*>(rank_[r].pend)[i] & kMsgBit16;
  }
  uint32_t clear_msg(uint32_t r, const Program& p, uint32_t i) {
    if (p.wide) return reinterpret_cast<uint32_t*>(rank_[r].pend)[i] &= ~kMsgBit;
    return widen(reinterpret_cast<uint16_t*>(rank_[r].pend)[i] &=
                 static_cast<uint16_t>(~kMsgBit16));
  }
  uint32_t clear_unposted(uint32_t r, const Program& p, uint32_t i) {
    if (p.wide) return reinterpret_cast<uint32_t*>(rank_[r].pend)[i] &= ~kUnposted;
    return widen(reinterpret_cast<uint16_t*>(rank_[r].pend)[i] &=
                 static_cast<uint16_t>(~kUnposted16));
  }

  // Wildcard matching (rank r, program p): the first posted receive that takes a message from
  // q, taken out of the posted queue (kUnset: none, and the message joins the unexpected queue).
  uint32_t take_posted(uint32_t r, const Program& p, uint32_t q, uint32_t k) {
    Matching& mq = matching_[r];
    for (auto it = mq.posted.begin(); it != mq.posted.end(); ++it) {
      const TOp& ro = store_.op(p, *it);
      if (ro.xdelta == kAnyDelta || store_.peer_of(r, ro) == q) {
        const uint32_t j = *it;
        mq.posted.erase(it);
        return j;
      }
    }
    mq.unexpected.push_back({q, k});
    return kUnset;
  }
  // Receive j of rank r (program p) is posted: the first unexpected message (send rank, op) it
  // takes, taken out of the unexpected queue ({kUnset, _}: none, and it joins the posted queue).
  std::pair<uint32_t, uint32_t> take_unexpected(uint32_t r, const Program& p, uint32_t j) {
    const TOp& ro = store_.op(p, j);
    Matching& mq = matching_[r];
    for (auto it = mq.unexpected.begin(); it != mq.unexpected.end(); ++it)
      if (ro.xdelta == kAnyDelta || store_.peer_of(r, ro) == it->first) {
        const auto m = *it;
        mq.unexpected.erase(it);
        return m;
      }
    mq.posted.push_back(j);
    return {kUnset, 0};
  }

  int64_t peak_held() const { return peak_held_; }
  size_t memory_bytes() const {
    size_t free_lists = 0;
    for (const auto& f : free_)
      for (const auto& [n, v] : f) free_lists += v.capacity() * sizeof(v[0]);
    return rank_.capacity() * sizeof(RankState) + pool_.memory_bytes() + free_lists;
  }

 private:
  static uint32_t widen(uint16_t v) {
    return (v & kMaxNarrowDeps) | (v & kMsgBit16 ? kMsgBit : 0) | (v & kUnposted16 ? kUnposted : 0);
  }

  const ProgramStore& store_;
  const bool unposted_;  // LogGOPS: a recv is posted when taken out of the queue
  std::vector<RankState> rank_;
  CounterPool pool_;
  std::unordered_map<uint32_t, std::vector<uint8_t*>> free_[2];  // by op count: released blocks
  int64_t held_ = 0, peak_held_ = 0;
  std::unordered_map<uint32_t, Units> units_;        // ranks using CPUs / NICs beyond 0
  std::unordered_map<uint32_t, Matching> matching_;  // ranks with wildcard receives
};

}  // namespace collkit::sim::detail
