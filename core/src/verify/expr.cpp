#include "expr.hpp"

#include <algorithm>

#include "collkit/error.hpp"

namespace collkit::verify_detail {

uint64_t rank_hash(int64_t rank) {
  // splitmix64: a fixed, well-mixed 64-bit value per rank.
  uint64_t z = static_cast<uint64_t>(rank) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

ExprTable::ExprTable(int64_t leaf_ranks, int64_t leaf_stride)
    : stride_(std::max<int64_t>(1, leaf_stride)) {
  int64_t leaves = leaf_ranks * stride_;
  if (leaves >= (int64_t{1} << 31))
    fail(ErrorKind::invalid_argument, "too many input elements to verify (" +
                                          std::to_string(leaves) + "): use a smaller count or P");
  leaf_end_ = static_cast<Val>(1 + leaves);
  next_canon_ = leaf_end_ + (Val{1} << 31);  // canonical ids of combined nodes live apart
}

Val ExprTable::combine(Val l, Val r) {
  if (l == kUndef || r == kUndef) return kUndef;
  uint64_t key = (uint64_t{l} << 32) | r;
  auto it = exact_.find(key);
  if (it != exact_.end()) return it->second;
  if (nodes_.size() + leaf_end_ >= (Val{1} << 31))
    fail(ErrorKind::invalid_argument, "schedule too large to verify: over 2^31 distinct values");
  Node n;
  n.a = l;
  n.b = r;
  Val cl = canon(l), cr = canon(r);
  uint64_t ckey = (uint64_t{std::min(cl, cr)} << 32) | std::max(cl, cr);
  auto cit = canon_.find(ckey);
  if (cit == canon_.end()) cit = canon_.emplace(ckey, next_canon_++).first;
  n.canon = cit->second;
  n.min_rank = std::min(min_rank(l), min_rank(r));
  n.max_rank = std::max(max_rank(l), max_rank(r));
  int64_t il = idx(l), ir = idx(r);
  n.idx = (il == ir) ? il : -1;
  n.nleaves = nleaves(l) + nleaves(r);
  n.hash = hash(l) + hash(r);
  n.ordered = ordered(l) && ordered(r) && max_rank(l) + 1 == min_rank(r);
  Val id = static_cast<Val>(leaf_end_ + nodes_.size());
  nodes_.push_back(n);
  exact_.emplace(key, id);
  return id;
}

void ExprTable::render_into(Val v, std::string& s, size_t max_chars) const {
  if (s.size() > max_chars) return;
  if (v == kUndef) {
    s += "?";
  } else if (is_leaf(v)) {
    s += "r" + std::to_string(leaf_rank(v));
  } else {
    s += "(";
    render_into(node(v).a, s, max_chars);
    s += "+";
    render_into(node(v).b, s, max_chars);
    s += ")";
  }
}

std::string ExprTable::render(Val v, size_t max_chars) const {
  std::string s;
  render_into(v, s, max_chars);
  if (s.size() > max_chars) s = s.substr(0, max_chars) + "...";
  int64_t i = v == kUndef ? -1 : idx(v);
  if (v != kUndef && i >= 0 && !is_leaf(v)) s += " of element " + std::to_string(i);
  if (v != kUndef && is_leaf(v)) s += "[" + std::to_string(leaf_idx(v)) + "]";
  if (v != kUndef && i < 0) s += " (mixing elements of different indices)";
  return s;
}

bool ExprTable::leaves(Val v, std::vector<int64_t>& out, size_t limit) const {
  if (v == kUndef) return true;
  if (is_leaf(v)) {
    out.push_back(leaf_rank(v));
    return out.size() <= limit;
  }
  if (nleaves(v) + out.size() > limit) return false;
  return leaves(node(v).a, out, limit) && leaves(node(v).b, out, limit);
}

}  // namespace collkit::verify_detail
