// LogGOPS: ops and messages waiting for a busy CPU or gap. LogGOPSim pushes one that finds its
// CPU or gap busy back into the queue at the time they are free: k of them waiting for the same
// resources are each pushed back up to k times. Here they wait in a lot per rank and set of
// resources (a CPU; a CPU and a send gap; a CPU and a receive gap), ordered by insertion number,
// and only the first (the runner) is in the queue: once it has run, the next enters the queue at
// the time the resources are free. The order is LogGOPSim's: the whole lot would be due then, and
// only its first can run.
#pragma once
#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "event_queue.hpp"
#include "programs.hpp"

namespace collkit::sim::detail {

class Lots {
 public:
  static constexpr uint32_t kRunnerBit = 0x80000000u;  // in Event::op_type: a lot's runner
  enum Kind : uint32_t { kLocal = 0, kSend = 1, kMsg = 2 };
  static uint64_t key(uint32_t r, Kind kind, uint8_t unit) {
    return uint64_t{r} << 32 | uint64_t{kind} << 8 | unit;
  }
  static uint32_t rank_of(uint64_t lk) { return static_cast<uint32_t>(lk >> 32); }
  static Kind kind_of(uint64_t lk) { return static_cast<Kind>((lk >> 8) & 0xff); }
  static uint8_t unit_of(uint64_t lk) { return lk & 0xff; }

  void clear() {
    for (auto& [lk, i] : index_) free_.push_back(i);
    index_.clear();
  }

  // Event e finds the resources of lot lk busy until `free`: it waits in its lot (a runner goes
  // back into the queue at `free`; a newcomer before the runner becomes the runner).
  void wait(const Event& e, uint64_t lk, double free, EventQueue& queue) {
    if (e.op_type & kRunnerBit) return queue.push_again({free, e.rank, e.op_type, e.seq});
    auto [it, fresh] = index_.try_emplace(lk, 0);
    if (fresh) it->second = new_lot();
    Lot& lot = lots_[it->second];
    lot.push(e);
    if (lot.runner == kNone || e.seq < lot.runner) {  // the one before it is due no more
      lot.runner = e.seq;
      queue.push_again({free, e.rank, e.op_type | kRunnerBit, e.seq});
    }
  }
  // False for a runner that is no longer the first of its lot (one before it came since).
  bool current(const Event& e, uint64_t lk) const {
    if (!(e.op_type & kRunnerBit)) return true;
    auto it = index_.find(lk);
    return it != index_.end() && lots_[it->second].runner == e.seq;
  }
  // Event e has run: if it was a runner, the next of its lot (made runner) to enter the queue
  // when the lot's resources are free; null if none.
  const Event* next(const Event& e, uint64_t lk) {
    if (!(e.op_type & kRunnerBit)) return nullptr;
    auto it = index_.find(lk);
    Lot& lot = lots_[it->second];
    lot.pop();
    if (lot.empty()) {
      lot.runner = kNone;
      free_.push_back(it->second);
      index_.erase(it);
      return nullptr;
    }
    const Event& n = lot.front();
    lot.runner = n.seq;
    return &n;
  }

 private:
  // The waiting events of a lot by insertion number, the first at `head`. They mostly come in
  // that order (appended); one that does not is put in its place.
  struct Lot {
    std::vector<Event> q;
    size_t head = 0;
    uint64_t runner = kNone;  // the insertion number of the one in the queue
    bool empty() const { return head == q.size(); }
    const Event& front() const { return q[head]; }
    void push(const Event& e) {
      if (empty() || q.back().seq < e.seq) return q.push_back(e);
      auto by_seq = [](const Event& x, const Event& y) { return x.seq < y.seq; };
      q.insert(std::upper_bound(q.begin() + static_cast<std::ptrdiff_t>(head), q.end(), e, by_seq),
               e);
    }
    void pop() {
      if (++head == q.size()) {
        q.clear();
        head = 0;
      } else if (head >= 64 && 2 * head >= q.size()) {  // the front's space given back
        q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(head));
        head = 0;
      }
    }
  };
  uint32_t new_lot() {
    if (free_.empty()) {
      lots_.emplace_back();
      return static_cast<uint32_t>(lots_.size() - 1);
    }
    const uint32_t i = free_.back();
    free_.pop_back();
    Lot& lot = lots_[i];
    lot.q.clear();
    lot.head = 0;
    lot.runner = kNone;
    return i;
  }
  // Lots in use by key; their storage is kept for the next lot (no allocation per lot).
  std::unordered_map<uint64_t, uint32_t> index_;
  std::vector<Lot> lots_;
  std::vector<uint32_t> free_;
};

}  // namespace collkit::sim::detail
