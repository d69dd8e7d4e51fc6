// The two complementary binary trees of Sanders, Speck and Träff's two-tree broadcast and
// reduction (NCCL's double binary tree): bcast:two_tree and reduce:two_tree share them.
//
// The m = P - 1 ranks other than the root are labelled x = 1 .. m (x = rank - root mod P).
// Tree 1 is the in-order binary tree on 1 .. m: x's level is its lowest set bit b; its children
// are x - b/2 and x + b/2 (the right one, where past m, at x + b/4, x + b/8, ... or none); its
// root is the largest power of two <= m. Tree 2 is tree 1 mirrored (x -> m + 1 - x) where m is
// even, shifted by one (x -> x mod m + 1) where m is odd: tree 1's leaves (odd labels) are
// then tree 2's inner nodes and the other way round, but for at most one node. The root
// sends to both trees' roots.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "collkit/schedule.hpp"
#include "trees.hpp"

namespace collkit::phases {

struct TwoTreeNode {
  int64_t parent = -1;            // a label, 0 for the root of the tree (the collective's root)
  std::vector<int64_t> children;  // labels, left first
};

class TwoTrees {
 public:
  explicit TwoTrees(int64_t P) : m_(P - 1) {}
  int64_t m() const { return m_; }
  // Label x's place in tree t (0 or 1); x = 0 (the collective's root): the tree's root alone.
  TwoTreeNode node(int t, int64_t x) const;
  // The depth of tree t below the collective's root (1: the tree's root is its only node).
  int64_t depth(int t) const;

 private:
  int64_t to_tree1(int t, int64_t x) const;    // tree t's label x as a tree 1 position
  int64_t from_tree1(int t, int64_t y) const;  // and back
  int64_t m_;
};

// The segments the two-tree bcast and reduce walk, in their order (both are pipelined the
// same way, one down the trees, one up): the vector's first ceil(n / 2) elements go along tree
// 0, the rest along tree 1, each half cut into segments of seg_bytes (whole elements, rounded
// down, at least one). For i = 0, 1, ... at stage i: each(0, off, len) for segment i of the
// first half, then each(1, off, len) for segment i of the second (where it has one).
template <class F>
void two_tree_segments(RankBuilder& b, int64_t n, int64_t seg_bytes, int32_t elem_size, F&& each) {
  const int64_t half = (n + 1) / 2;
  const int64_t seg = segment_elems(seg_bytes, elem_size, half);
  const Segments halves[2] = {{half, seg}, {n - half, seg}};
  const int64_t base[2] = {0, half};
  for (int64_t i = 0; i < halves[0].count(); ++i) {
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(i, UINT16_MAX)));
    for (int t = 0; t < 2; ++t)
      if (i < halves[t].count()) each(t, base[t] + halves[t].off(i), halves[t].len(i));
  }
}

}  // namespace collkit::phases
