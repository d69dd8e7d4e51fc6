// The engine's event queue: a radix heap. Simulated time never goes backwards, so the bits of a
// non-negative double time are a monotone integer key and each event moves down at most a few
// of 65 buckets: push is O(1), pop amortised O(1) for the clustered times of collectives, where
// a binary heap over 10^6 ranks pays ~20 cache-missing levels per event.
//
// Events due at the same time come out in the order of their insertion numbers (`seq`), as in
// LogGOPSim's queue: an event pushed again (an op retried when its CPU or gap is free) keeps its
// number. Events of one time always share a bucket, in the order they were pushed; only a retried
// event can be out of order, so the events due next are sorted only when one is among them, and
// one retried at the current time waits in a small heap beside them.
#pragma once
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <vector>

namespace collkit::sim::detail {

struct Event {
  double t;  // ns, >= 0
  uint32_t rank;
  uint32_t op_type;  // op index << 2 | type
  uint64_t seq;      // insertion number: the order among events due at the same time
};
static_assert(sizeof(Event) == 24);

class EventQueue {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  // A new event: the next insertion number. t must be >= the time of the last popped event (and
  // never -0.0). Its number is the largest yet, so it is appended to its bucket (never early_).
  void push(double t, uint32_t rank, uint32_t op_type) {
    buckets_[index(key(t))].push_back({t, rank, op_type, seq_++});
    ++size_;
  }
  // An event pushed again with its own number (t >= the time of the last popped event): among
  // the events due now it goes where its number puts it.
  void push_again(const Event& e) {
    const size_t i = index(key(e.t));
    auto& b = buckets_[i];
    if (i == 0 && head_ < b.size() && b.back().seq > e.seq) {  // before events due now: early_
      early_.push_back(e);
      std::push_heap(early_.begin(), early_.end(), later);
    } else {
      b.push_back(e);
    }
    ++size_;
  }
  // Inline: most pops take the next event of bucket 0; the rest is out of line.
  Event pop() {
    auto& b0 = buckets_[0];
    if (!early_.empty() && (head_ == b0.size() || early_.front().seq < b0[head_].seq))
      return pop_early();
    if (head_ == b0.size()) refill();
    --size_;
    return b0[head_++];
  }
  // The k-th next event due at the time of the last one popped, if there is one (a hint for
  // prefetching: events pushed again before it are not counted).
  const Event* peek(size_t k) const {
    const auto& b = buckets_[0];
    return b.size() > head_ + k ? &b[head_ + k] : nullptr;
  }
  void clear() {
    for (auto& b : buckets_) b.clear();
    early_.clear();
    last_ = 0;
    size_ = 0;
    head_ = 0;
    seq_ = 0;
  }
  size_t memory_bytes() const {
    size_t n = 0;
    for (const auto& b : buckets_) n += b.capacity() * sizeof(Event);
    return n + early_.capacity() * sizeof(Event);
  }

 private:
  [[gnu::noinline]] Event pop_early() {
    std::pop_heap(early_.begin(), early_.end(), later);
    const Event e = early_.back();
    early_.pop_back();
    --size_;
    return e;
  }
  // Bucket 0 is used up: the next non-empty bucket's events move down, the earliest into it.
  [[gnu::noinline]] void refill() {
    auto& b0 = buckets_[0];
    b0.clear();
    head_ = 0;
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
    auto by_seq = [](const Event& x, const Event& y) { return x.seq < y.seq; };
    if (!std::is_sorted(b0.begin(), b0.end(), by_seq)) std::sort(b0.begin(), b0.end(), by_seq);
  }

  static constexpr size_t kKeep = size_t{1} << 16;
  static uint64_t key(double t) { return std::bit_cast<uint64_t>(t); }
  static bool later(const Event& a, const Event& b) { return a.seq > b.seq; }
  size_t index(uint64_t k) const {
    return k == last_ ? 0 : static_cast<size_t>(64 - std::countl_zero(k ^ last_));
  }
  std::array<std::vector<Event>, 65> buckets_;
  // Events pushed again due now, before some of bucket 0's (a heap by insertion number): merged
  // with bucket 0 as they are popped, where inserting into bucket 0 would move its tail each time.
  std::vector<Event> early_;
  uint64_t last_ = 0;
  size_t size_ = 0;
  size_t head_ = 0;  // the next event of bucket 0
  uint64_t seq_ = 0;
};

}  // namespace collkit::sim::detail
