// The engine's event queue: a radix heap. Simulated time never goes backwards, so the bits of a
// non-negative double time are a monotone integer key and each event moves down at most a few
// of 65 buckets: push is O(1), pop amortised O(1) for the clustered times of collectives, where
// a binary heap over 10^6 ranks pays ~20 cache-missing levels per event.
#pragma once
#include <array>
#include <bit>
#include <cstdint>
#include <vector>

namespace collkit::sim::detail {

struct Event {
  double t;  // ns, >= 0
  uint32_t rank;
  uint32_t op_type;  // op index << 2 | type
};
static_assert(sizeof(Event) == 16);

class EventQueue {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  // t must be >= the time of the last popped event (and never -0.0).
  void push(const Event& e) {
    buckets_[index(key(e.t))].push_back(e);
    ++size_;
  }
  Event pop() {
    if (buckets_[0].empty()) {
      size_t i = 1;
      while (buckets_[i].empty()) ++i;
      auto& b = buckets_[i];
      uint64_t m = UINT64_MAX;
      for (const Event& e : b) m = key(e.t) < m ? key(e.t) : m;
      last_ = m;
      for (const Event& e : b) buckets_[index(key(e.t))].push_back(e);  // all land below i
      // A bucket that held most of 10^7 ranks' events would keep that memory while the next
      // bucket grows as large: give it back.
      if (b.capacity() > kKeep)
        std::vector<Event>().swap(b);
      else
        b.clear();
    }
    Event e = buckets_[0].back();
    buckets_[0].pop_back();
    --size_;
    return e;
  }
  // The k-th next event due at the time of the last one popped, if there is one.
  const Event* peek(size_t k) const {
    const auto& b = buckets_[0];
    return b.size() > k ? &b[b.size() - 1 - k] : nullptr;
  }
  void clear() {
    for (auto& b : buckets_) b.clear();
    last_ = 0;
    size_ = 0;
  }
  size_t memory_bytes() const {
    size_t n = 0;
    for (const auto& b : buckets_) n += b.capacity() * sizeof(Event);
    return n;
  }

 private:
  static constexpr size_t kKeep = size_t{1} << 16;
  static uint64_t key(double t) { return std::bit_cast<uint64_t>(t); }
  size_t index(uint64_t k) const {
    return k == last_ ? 0 : static_cast<size_t>(64 - std::countl_zero(k ^ last_));
  }
  std::array<std::vector<Event>, 65> buckets_;
  uint64_t last_ = 0;
  size_t size_ = 0;
};

}  // namespace collkit::sim::detail
