// The two complementary binary trees (see two_tree.hpp).
#include "two_tree.hpp"

namespace collkit::phases {
namespace {

int64_t lowbit(int64_t x) {
  return x & -x;
}

int64_t top(int64_t m) {
  int64_t t = 1;
  while (t * 2 <= m) t *= 2;
  return t;
}

// The in-order tree on 1 .. m: x's parent (0 for the root) and children.
void inorder(int64_t m, int64_t x, int64_t& parent, int64_t& left, int64_t& right) {
  const int64_t b = lowbit(x);
  if (x == top(m)) {
    parent = 0;
  } else {
    const int64_t up = (x ^ b) | (b << 1);
    parent = up <= m ? up : x ^ b;
  }
  left = right = -1;
  int64_t h = b >> 1;
  if (h > 0) left = x - h;
  while (h > 0 && x + h > m) h >>= 1;
  if (h > 0) right = x + h;
}

}  // namespace

int64_t TwoTrees::to_tree1(int t, int64_t x) const {
  if (t == 0 || x == 0) return x;
  return m_ % 2 == 0 ? m_ + 1 - x : x % m_ + 1;
}

int64_t TwoTrees::from_tree1(int t, int64_t y) const {
  if (t == 0 || y == 0) return y;
  return m_ % 2 == 0 ? m_ + 1 - y : (y + m_ - 2) % m_ + 1;
}

TwoTreeNode TwoTrees::node(int t, int64_t x) const {
  TwoTreeNode out;
  if (m_ <= 0) return out;
  if (x == 0) {
    out.children.push_back(from_tree1(t, top(m_)));
    return out;
  }
  int64_t parent = 0, left = -1, right = -1;
  inorder(m_, to_tree1(t, x), parent, left, right);
  out.parent = from_tree1(t, parent);
  for (int64_t c : {left, right})
    if (c > 0) out.children.push_back(from_tree1(t, c));
  return out;
}

int64_t TwoTrees::depth(int) const {
  int64_t d = 0;
  for (int64_t t = top(m_); t > 0; t >>= 1) ++d;
  return m_ <= 0 ? 0 : d;
}

}  // namespace collkit::phases
