// Symbolic values for the verifier: every element is an interned expression over the ranks'
// input elements, so equal trees are equal ids and comparing results across ranks is cheap.
//
// Two interning tables run side by side: the exact tree (operand order kept) and the tree up to
// swapped operands (what a commutative op may do). Leaves are implicit: leaf (rank, idx) has id
// 1 + rank * leaf_stride + idx, so the inputs of 10^6 elements cost nothing until combined.
// Id 0 is "undefined": data nobody wrote; combining with it stays undefined.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace collkit::verify_detail {

using Val = uint32_t;
constexpr Val kUndef = 0;

struct Node {
  Val a, b;   // operands, exact order
  Val canon;  // id in the swap-insensitive table
  int32_t min_rank, max_rank;
  int64_t idx;  // element index shared by all leaves, -1 if mixed
  uint64_t nleaves;
  uint64_t hash;  // sum of rank_hash over leaves: a multiset fingerprint
  bool ordered;   // an in-order walk meets the leaves in increasing, contiguous rank order
};

uint64_t rank_hash(int64_t rank);

class ExprTable {
 public:
  ExprTable(int64_t leaf_ranks, int64_t leaf_stride);
  Val leaf(int64_t rank, int64_t idx) const { return static_cast<Val>(1 + rank * stride_ + idx); }
  bool is_leaf(Val v) const { return v != kUndef && v < leaf_end_; }
  Val combine(Val left, Val right);

  int64_t leaf_rank(Val v) const { return static_cast<int64_t>(v - 1) / stride_; }
  int64_t leaf_idx(Val v) const { return static_cast<int64_t>(v - 1) % stride_; }
  // Attributes of any defined value.
  int32_t min_rank(Val v) const {
    return is_leaf(v) ? static_cast<int32_t>(leaf_rank(v)) : node(v).min_rank;
  }
  int32_t max_rank(Val v) const {
    return is_leaf(v) ? static_cast<int32_t>(leaf_rank(v)) : node(v).max_rank;
  }
  int64_t idx(Val v) const { return is_leaf(v) ? leaf_idx(v) : node(v).idx; }
  uint64_t nleaves(Val v) const { return is_leaf(v) ? 1 : node(v).nleaves; }
  uint64_t hash(Val v) const { return is_leaf(v) ? rank_hash(leaf_rank(v)) : node(v).hash; }
  bool ordered(Val v) const { return is_leaf(v) || node(v).ordered; }
  Val canon(Val v) const { return is_leaf(v) || v == kUndef ? v : node(v).canon; }

  // A readable form, e.g. "((r0+r1)+r2)" or with element indices "(r0[1]+r1[1])" when `show_idx`.
  std::string render(Val v, size_t max_chars = 160) const;
  // The ranks of the leaves (with repeats), if there are at most `limit` of them.
  bool leaves(Val v, std::vector<int64_t>& out, size_t limit) const;

 private:
  const Node& node(Val v) const { return nodes_[v - leaf_end_]; }
  void render_into(Val v, std::string& s, size_t max_chars) const;

  int64_t stride_;
  Val leaf_end_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, Val> exact_;
  std::unordered_map<uint64_t, Val> canon_;
  Val next_canon_;
};

}  // namespace collkit::verify_detail
