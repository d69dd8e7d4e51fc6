// Pass 3: conflicting accesses are ordered by dependencies. Dependencies are the only order an
// executor keeps between ops of one rank (a send's buffer is free again only once the send
// completes), so two ops that touch overlapping elements, one of them writing, must be ordered by
// a path of dependencies. `in` is read-only, so skipped.
#include <algorithm>

#include "verifier.hpp"

namespace collkit::verify_detail {

namespace {

// Ranks of up to this many ops answer "is p an ancestor of q" from ancestor bitsets (one bit
// per query); larger ranks search the dependencies per conflicting pair.
constexpr size_t kBitsetOps = 8192;

}  // namespace

bool Verifier::check_hazards() {
  size_t before = res_.total_problems;
  std::vector<Access> acc, active;
  for (int64_t r = 0; r < h_.P; ++r) {
    RankView v = s_.rank(r);
    acc.clear();
    for (size_t i = 0; i < v.size(); ++i) {
      const Op& op = v.ops[i];
      if (op.len == 0) continue;
      auto push = [&](BufId b, int64_t off, bool w) {
        if (b != kIn) acc.push_back({b, off, off + op.len, static_cast<uint32_t>(i), w});
      };
      switch (op.kind) {
        case OpKind::send:
          push(op.buf, op.off, false);
          break;
        case OpKind::recv:
          push(op.buf, op.off, true);
          break;
        case OpKind::reduce:
        case OpKind::copy:
          push(op.src, op.src_off, false);
          push(op.buf, op.off, true);
          break;
        default:
          break;
      }
    }
    std::sort(acc.begin(), acc.end(), [](const Access& a, const Access& b) {
      return std::tie(a.buf, a.lo) < std::tie(b.buf, b.lo);
    });
    stamp_.assign(v.size(), 0);
    active.clear();
    size_t reported = 0;
    // Sweep the accesses by start: `active` holds those that still overlap the current one.
    for (const Access& a : acc) {
      std::erase_if(active, [&](const Access& x) { return x.buf != a.buf || x.hi <= a.lo; });
      for (const Access& x : active) {
        if (!(x.write || a.write) || x.op == a.op || ordered(v, r, x.op, a.op)) continue;
        if (reported++ < 3)
          hazard(r, v, x, a);
        else
          ++res_.total_problems;
      }
      active.push_back(a);
    }
  }
  return res_.total_problems == before;
}

// Whether a path of dependencies orders ops p and q of rank r, either way.
bool Verifier::ordered(const RankView& v, int64_t r, uint32_t p, uint32_t q) {
  if (topo_[gid(r, p)] > topo_[gid(r, q)]) std::swap(p, q);
  if (v.size() <= kBitsetOps) {
    // Ancestor sets, built once per rank that has a conflict: each query is then one bit.
    if (anc_rank_ != r) ancestors(v, r);
    return anc_[size_t{q} * anc_words_ + p / 64] >> (p % 64) & 1;
  }
  return reaches(v, r, p, q);
}

// The set of ancestors of every op of rank r, as bitsets, in topological order (a dependency's
// set is complete before its dependents read it).
void Verifier::ancestors(const RankView& v, int64_t r) {
  const size_t n = v.size();
  anc_words_ = (n + 63) / 64;
  anc_.assign(n * anc_words_, 0);
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) order[topo_[gid(r, i)]] = static_cast<uint32_t>(i);
  for (uint32_t i : order) {
    uint64_t* mine = &anc_[size_t{i} * anc_words_];
    for (OpId d : v.deps_of(i)) {
      const uint64_t* theirs = &anc_[size_t{d} * anc_words_];
      for (size_t w = 0; w < anc_words_; ++w) mine[w] |= theirs[w];
      mine[d / 64] |= uint64_t{1} << (d % 64);
    }
  }
  anc_rank_ = r;
}

// Whether op p is an ancestor of op q (topo(p) < topo(q)) through dependencies: a search back
// from q that skips ops placed before p.
bool Verifier::reaches(const RankView& v, int64_t r, uint32_t p, uint32_t q) {
  if (++epoch_ == 0) std::fill(stamp_.begin(), stamp_.end(), 0), epoch_ = 1;
  uint32_t tp = topo_[gid(r, p)];
  stack_.clear();
  stack_.push_back(q);
  stamp_[q] = epoch_;
  while (!stack_.empty()) {
    uint32_t cur = stack_.back();
    stack_.pop_back();
    for (OpId d : v.deps_of(cur)) {
      if (d == p) return true;
      if (stamp_[d] == epoch_ || topo_[gid(r, d)] < tp) continue;
      stamp_[d] = epoch_;
      stack_.push_back(d);
    }
  }
  return false;
}

void Verifier::hazard(int64_t r, const RankView& v, const Access& x, const Access& a) {
  int64_t lo = std::max(x.lo, a.lo), hi = std::min(x.hi, a.hi);
  const std::string reg = region_text(a.buf, lo, hi - lo);
  auto name = [&](const Access& acc) {
    return "op " + std::to_string(acc.op) + " (" + op_text(v.ops[acc.op]) + ")";
  };
  // Say it from the side of the message in flight, if one of the two is a message.
  std::string msg;
  for (int pass = 0; pass < 2 && msg.empty(); ++pass) {
    const Access& m = pass ? a : x;
    const Access& o = pass ? x : a;
    const OpKind k = v.ops[m.op].kind;
    if (k == OpKind::send && o.write)
      msg = name(o) + " may overwrite " + reg + " while the message sent from it by " + name(m) +
            " is in flight";
    else if (k == OpKind::recv)
      msg = name(o) + (o.write ? " may write " : " may read ") + reg +
            " while the message received into it by " + name(m) + " is in flight";
  }
  if (msg.empty()) msg = name(x) + " and " + name(a) + " race on " + reg + " (one writes it)";
  add(DiagKind::hazard, r, a.op,
      "rank " + std::to_string(r) + ": " + msg + "; no dependency path orders the two");
}

}  // namespace collkit::verify_detail
