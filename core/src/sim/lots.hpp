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

  void clear() { lots_.clear(); }

  // Event e finds the resources of lot lk busy until `free`: it waits in its lot (a runner goes
  // back into the queue at `free`; a newcomer before the runner becomes the runner).
  void wait(const Event& e, uint64_t lk, double free, EventQueue& queue) {
    if (e.op_type & kRunnerBit) return queue.push_again({free, e.rank, e.op_type, e.seq});
    Lot& lot = lots_[lk];
    lot.heap.push_back(e);
    std::push_heap(lot.heap.begin(), lot.heap.end(), later);
    if (lot.runner == kNone || e.seq < lot.runner) {  // the one before it is due no more
      lot.runner = e.seq;
      queue.push_again({free, e.rank, e.op_type | kRunnerBit, e.seq});
    }
  }
  // False for a runner that is no longer the first of its lot (one before it came since).
  bool current(const Event& e, uint64_t lk) const {
    if (!(e.op_type & kRunnerBit)) return true;
    auto it = lots_.find(lk);
    return it != lots_.end() && it->second.runner == e.seq;
  }
  // Event e has run: if it was a runner, the next of its lot (made runner) to enter the queue
  // when the lot's resources are free; null if none.
  const Event* next(const Event& e, uint64_t lk) {
    if (!(e.op_type & kRunnerBit)) return nullptr;
    auto it = lots_.find(lk);
    Lot& lot = it->second;
    std::pop_heap(lot.heap.begin(), lot.heap.end(), later);
    lot.heap.pop_back();
    if (lot.heap.empty()) {
      lots_.erase(it);
      return nullptr;
    }
    const Event& n = lot.heap.front();
    lot.runner = n.seq;
    return &n;
  }

 private:
  struct Lot {
    std::vector<Event> heap;  // by insertion number, the first on top
    uint64_t runner = kNone;  // the insertion number of the one in the queue
  };
  static bool later(const Event& a, const Event& b) { return a.seq > b.seq; }
  std::unordered_map<uint64_t, Lot> lots_;
};

}  // namespace collkit::sim::detail
