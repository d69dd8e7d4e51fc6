// The tree phases' shapes: every node's subtree is the contiguous range [v, v + size), its
// children partition (v, v + size) in ascending order, and parent/children agree.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "../algorithms/phases/trees.hpp"
#include "check.hpp"

using collkit::phases::Tree;
using collkit::phases::TreeNode;
using collkit::phases::TreeShape;

namespace {

void check_tree(const Tree& t, int64_t n, int64_t max_children) {
  TreeNode node, child;
  for (int64_t v = 0; v < n; ++v) {
    collkit::phases::tree_node(t, n, v, node);
    CHECK((v == 0) == (node.parent < 0));
    CHECK(node.size >= 1 && v + node.size <= n);
    CHECK(static_cast<int64_t>(node.children.size()) <= max_children);
    int64_t next = v + 1;  // children tile (v, v + size) in order
    for (int64_t c : node.children) {
      CHECK(c == next);
      collkit::phases::tree_node(t, n, c, child);
      CHECK(child.parent == v);
      next = c + child.size;
    }
    CHECK(next == v + node.size);
  }
}

}  // namespace

TEST(tree_shapes_are_contiguous_preorder_trees) {
  for (int64_t n = 1; n <= 130; ++n) {
    check_tree({TreeShape::flat, 2}, n, n);
    check_tree({TreeShape::chain, 2}, n, 1);
    check_tree({TreeShape::binary, 2}, n, 2);
    for (int64_t k = 2; k <= 5; ++k) check_tree({TreeShape::knomial, k}, n, n);
  }
  check_tree({TreeShape::knomial, 64}, 5000, 5000);
  check_tree({TreeShape::binary, 2}, 4097, 2);
}

TEST(binomial_parent_clears_the_lowest_bit) {
  TreeNode node;
  for (int64_t v = 1; v < 1000; ++v) {
    collkit::phases::tree_node({TreeShape::knomial, 2}, 1000, v, node);
    CHECK(node.parent == (v & (v - 1)));
  }
}

TEST(segments_cover_the_vector) {
  for (int64_t n = 0; n < 40; ++n)
    for (int64_t seg = 0; seg < 12; ++seg) {
      collkit::phases::Segments s(n, seg);
      int64_t covered = 0;
      for (int64_t i = 0; i < s.count(); ++i) {
        CHECK(s.off(i) == covered);
        CHECK(s.len(i) >= 1);
        covered += s.len(i);
      }
      CHECK(covered == n);
    }
}
