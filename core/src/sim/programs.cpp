// The engine's program store: see programs.hpp.
#include "programs.hpp"

#include <algorithm>
#include <bit>

#include "collkit/error.hpp"
#include "costs.hpp"

namespace collkit::sim::detail {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

}  // namespace

void ProgramStore::intern(uint32_t r) {
  const int64_t c = classes_ ? classes_(r) : -1;
  if (c < 0) return intern_view(r, source_(r));
  if (r >= static_cast<uint64_t>(P_) || tmpl_[r] != kUnset)
    fail(ErrorKind::invalid_argument, "rank " + std::to_string(r) + " read twice or past P");
  if (auto it = class_tmpl_.find(c); it != class_tmpl_.end()) {
    // Its program is the class's up to relabelling mod P: what intern_view would have found in
    // add mode had the rank been generated (and nothing would have been added).
    tmpl_[r] = it->second;
    total_ops_ += progs_[it->second & ~kAddMode].n;
    return;
  }
  const RankView v = source_(r);
  intern_view(r, v);
  // The class's ranks share the program in add mode: kept if this rank's match was one, or if
  // the program it matched by XOR is also its own mod P (key_ and v are still this rank's).
  const uint32_t t = tmpl_[r];
  if (t & kAddMode)
    class_tmpl_.emplace(c, t);
  else if (same(progs_[t], v, 1))
    class_tmpl_.emplace(c, t | kAddMode);
}

void ProgramStore::intern_view(uint32_t r, const RankView& v) {
  if (r >= static_cast<uint64_t>(P_) || tmpl_[r] != kUnset)
    fail(ErrorKind::invalid_argument, "rank " + std::to_string(r) + " read twice or past P");
  if (v.rank != r) fail(ErrorKind::invalid_argument, "ranks must be read in order");
  if (v.size() >= kMaxRankOps)
    fail(ErrorKind::unsupported, "rank " + std::to_string(r) + " has more than 2^29 ops");
  const uint32_t n = static_cast<uint32_t>(v.size());
  key_of(v, r);
  uint32_t found = kUnset;
  if (last_ != kUnset) {
    const uint32_t t = last_ & ~kAddMode;
    if (same(progs_[t], v, 0))
      found = t;
    else if (same(progs_[t], v, 1))
      found = t | kAddMode;
  }
  for (uint32_t mode = 0; mode < 2 && found == kUnset; ++mode) {
    auto it = index_.find(hash(v, mode));
    for (uint32_t t = it == index_.end() ? kUnset : it->second; t != kUnset;
         t = progs_[t].next[mode])
      if (same(progs_[t], v, mode)) {
        found = t | (mode ? kAddMode : 0);
        break;
      }
  }
  if (found == kUnset) found = add_program(v, r);
  tmpl_[r] = last_ = found;
  total_ops_ += n;
  ++read_;
}

// The key of each op of rank r that a program is compared on (cost, kind, deps, peer both
// ways); peers are checked here, everything else of a new program in add_program.
void ProgramStore::key_of(const RankView& v, uint32_t r) {
  const uint32_t n = static_cast<uint32_t>(v.size());
  key_.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    const Op& o = v.ops[i];
    OpKey& k = key_[i];
    k.kind = static_cast<uint32_t>(o.kind);
    k.xdelta = k.adelta = 0;
    k.amount = op_amount(m_, o.kind, static_cast<double>(o.len), esize_);
    if (o.kind == OpKind::send || o.kind == OpKind::recv) {
      if (o.kind == OpKind::recv && o.peer == kAnySource) {
        k.xdelta = k.adelta = kAnyDelta;
      } else {
        // A message to itself is a message like any other (MPI allows it; the verifier too).
        if (o.peer < 0 || o.peer >= P_)
          fail(ErrorKind::invalid_argument, where(v, i) + " has peer " + std::to_string(o.peer) +
                                                ", not a rank of P = " + std::to_string(P_));
        k.xdelta = static_cast<int32_t>(static_cast<uint32_t>(o.peer) ^ r);
        k.adelta = static_cast<int32_t>(
            o.peer >= static_cast<int64_t>(r) ? o.peer - r : o.peer + P_ - static_cast<int64_t>(r));
      }
    }
    if (o.len < 0) k.amount = -1;  // refused in add_program
    k.kind |= static_cast<uint32_t>(o.cpu | o.nic << 4) << 8;
  }
}

std::string ProgramStore::where(const RankView& v, uint32_t i) {
  return "rank " + std::to_string(v.rank) + " op " + std::to_string(i) + " (" +
         std::string(to_string(v.ops[i].kind)) + ")";
}

uint64_t ProgramStore::hash(const RankView& v, uint32_t mode) const {
  uint64_t h = mode ? 0x7654321 : 0x1234567;
  for (const OpKey& k : key_)
    h = mix(mix(h, std::bit_cast<uint64_t>(k.amount) ^ k.kind),
            static_cast<uint32_t>(mode ? k.adelta : k.xdelta));
  for (uint32_t x : v.dep_begin) h = mix(h, x);
  for (OpId d : v.deps) h = mix(h, d);
  return h;
}

bool ProgramStore::same(const Program& p, const RankView& v, uint32_t mode) const {
  const uint32_t n = static_cast<uint32_t>(v.size());
  if (p.n != n || p.n_deps != v.deps.size()) return false;
  const TOp* a = ops_.data() + p.op_begin;  // data(): a program may have no ops
  for (uint32_t i = 0; i < n; ++i) {
    const TOp& x = a[i];
    const OpKey& y = key_[i];
    if (x.amount != y.amount || (x.kind_seq >> 29) != y.op_kind() ||
        (mode ? x.adelta != y.adelta : x.xdelta != y.xdelta) || unit_of(p, i) != y.unit())
      return false;
  }
  return std::equal(v.dep_begin.begin(), v.dep_begin.end(),
                    dep_begin_.begin() + static_cast<std::ptrdiff_t>(p.dep_begin)) &&
         std::equal(v.deps.begin(), v.deps.end(),
                    deps_.begin() + static_cast<std::ptrdiff_t>(p.deps_begin));
}

// Checks a program never seen and adds it: successor lists, send sequence numbers, receive
// indexes.
uint32_t ProgramStore::add_program(const RankView& v, uint32_t r) {
  if (progs_.size() >= kAddMode - 1) fail(ErrorKind::unsupported, "too many distinct programs");
  const uint32_t n = static_cast<uint32_t>(v.size());
  for (uint32_t i = 0; i < n; ++i) {
    if (v.ops[i].len < 0) fail(ErrorKind::invalid_argument, where(v, i) + " has a negative length");
    if (static_cast<uint8_t>(v.ops[i].kind) > static_cast<uint8_t>(OpKind::sleep))
      fail(ErrorKind::invalid_argument,
           "rank " + std::to_string(r) + " op " + std::to_string(i) + " has an unknown kind");
    for (OpId d : v.deps_of(i)) {
      if (d >= n || d == i)
        fail(ErrorKind::invalid_argument, where(v, i) + " depends on op " + std::to_string(d) +
                                              ", which is not another op of its rank");
    }
  }
  // Successor lists (the core's helper), each in increasing op order so that ties resolve in
  // program order.
  succ_.clear();
  succ_.append_rank(v);

  Program p{};
  p.op_begin = ops_.size();
  p.overflow_begin = overflow_.size();
  p.recv_begin = recv_[0].size();
  p.dep_begin = dep_begin_.size();
  p.deps_begin = deps_.size();
  p.n = n;
  p.n_deps = static_cast<uint32_t>(v.deps.size());
  p.next[0] = p.next[1] = kUnset;
  p.unit_begin = kNone;
  for (uint32_t i = 0; i < n; ++i) {
    if (key_[i].unit() != 0 && p.unit_begin == kNone) {
      p.unit_begin = units_.size();
      for (const OpKey& k : key_) units_.push_back(k.unit());
    }
    if (key_[i].xdelta == kAnyDelta) p.dynamic = true;
  }
  sends_.clear();
  for (uint32_t i = 0; i < n; ++i) {
    const OpKey& k = key_[i];
    TOp s{k.amount, k.xdelta, k.adelta, k.op_kind() << 29, 0, {kNoSucc, kNoSucc}};
    const uint32_t ndeps = static_cast<uint32_t>(v.deps_of(i).size());
    p.wide |= ndeps > kMaxNarrowDeps;
    s.pending = ndeps | (v.ops[i].kind == OpKind::recv ? kMsgBit : 0);
    if (v.ops[i].kind == OpKind::send) sends_.push_back({v.ops[i].peer, i});
    const std::span<const uint32_t> next = succ_.of(i);
    const uint32_t ns = static_cast<uint32_t>(next.size());
    if (ns <= 2) {
      for (uint32_t t = 0; t < ns; ++t) s.succ[t] = next[t];
    } else {
      const size_t rel = overflow_.size() - p.overflow_begin;
      if (rel + ns + 1 >= kOverflow)
        fail(ErrorKind::unsupported, "too many ops with more than two successors");
      s.succ[0] = kOverflow;
      s.succ[1] = static_cast<uint32_t>(rel);
      overflow_.push_back(ns);
      overflow_.insert(overflow_.end(), next.begin(), next.end());
    }
    ops_.push_back(s);
  }
  std::sort(sends_.begin(), sends_.end());
  TOp* ops = ops_.data() + p.op_begin;
  for (size_t k = 0; k < sends_.size(); ++k) {
    uint32_t seq = 0;
    if (k > 0 && sends_[k - 1].first == sends_[k].first)
      seq = (ops[sends_[k - 1].second].kind_seq & kSeqMask) + 1;
    ops[sends_[k].second].kind_seq |= seq;
  }
  for (uint32_t mode = 0; mode < 2; ++mode) {
    const size_t b = recv_[mode].size();
    for (uint32_t i = 0; i < n; ++i)
      if (ops[i].kind() == OpKind::recv)
        recv_[mode].push_back({mode ? ops[i].adelta : ops[i].xdelta, i});
    std::sort(recv_[mode].begin() + static_cast<std::ptrdiff_t>(b), recv_[mode].end());
    p.n_recv = static_cast<uint32_t>(recv_[mode].size() - b);
  }
  dep_begin_.insert(dep_begin_.end(), v.dep_begin.begin(), v.dep_begin.end());
  deps_.insert(deps_.end(), v.deps.begin(), v.deps.end());
  const uint32_t id = static_cast<uint32_t>(progs_.size());
  for (uint32_t mode = 0; mode < 2; ++mode) {
    auto [it, fresh] = index_.try_emplace(hash(v, mode), id);
    if (!fresh) {
      p.next[mode] = it->second;
      it->second = id;
    }
  }
  progs_.push_back(p);
  return id;
}

size_t ProgramStore::memory_bytes() const {
  auto cap = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
  return cap(ops_) + cap(units_) + cap(overflow_) + cap(dep_begin_) + cap(deps_) + cap(recv_[0]) +
         cap(recv_[1]) + cap(progs_) + (index_.size() + class_tmpl_.size()) * 32 + cap(tmpl_);
}

}  // namespace collkit::sim::detail
