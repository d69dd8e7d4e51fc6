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
#include <cstdint>
#include <vector>

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

}  // namespace collkit::phases
