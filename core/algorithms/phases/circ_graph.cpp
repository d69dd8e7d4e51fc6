// The circulant-graph schedules (see circ_graph.hpp).
#include "circ_graph.hpp"

#include <algorithm>

namespace collkit::phases {

CircGraph::CircGraph(int64_t p) : p_(p), q_(1) {
  while ((int64_t{1} << q_) < p) ++q_;
  skip_.assign(static_cast<size_t>(q_ + 1), 0);
  skip_[static_cast<size_t>(q_)] = p;
  for (int64_t k = q_ - 1; k >= 0; --k) {
    const int64_t s = skip_[static_cast<size_t>(k + 1)];
    skip_[static_cast<size_t>(k)] = s / 2 + (s & 1);
  }
}

// r = Skip[e1] + Skip[e2] + ... + Skip[b] with e1 > e2 > ... > b (greedy): b; the root's is q.
int64_t CircGraph::baseblock(int64_t r) const {
  if (r == 0) return q_;
  int64_t rt = r;
  for (int64_t k = q_ - 1; k >= 0; --k) {
    if (rt >= skip(k)) {
      rt -= skip(k);
      if (rt == 0) return k;
    }
  }
  return q_;  // not reached for 0 < r < p: every such r is a sum of distinct skips
}

void CircGraph::recv_blocks(int64_t r, std::vector<int64_t>& R) const {
  const int64_t q = q_, p = p_, b = baseblock(r);
  R.assign(static_cast<size_t>(q), 0);
  if (p <= 1) return;  // one rank: no rounds (the search below needs a second one)
  // The baseblocks not yet taken, as MPICH's doubly linked list q -> q-1 -> ... -> 0 -> -1.
  std::vector<int64_t> next(static_cast<size_t>(q + 1)), prev(static_cast<size_t>(q + 1));
  for (int64_t i = 0; i <= q; ++i) {
    next[static_cast<size_t>(i)] = i - 1;
    prev[static_cast<size_t>(i)] = i + 1;
  }
  prev[static_cast<size_t>(q)] = -1;
  const auto del = [&](int64_t e) {
    const auto E = static_cast<size_t>(e);
    if (prev[E] != -1) next[static_cast<size_t>(prev[E])] = next[E];
    if (next[E] != -1) prev[static_cast<size_t>(next[E])] = prev[E];
  };
  del(b);
  // Depth-first over r' = Skip[e1] + Skip[e2] + ..., e1 > e2 > ..., in decreasing order; round k
  // takes the first r' in (r + p - Skip[k + 1], r + p - Skip[k]] and its last skip.
  std::vector<int64_t> stack;
  stack.reserve(static_cast<size_t>(q + 1));
  int64_t k = 0, rt = 0, e = q;
  int64_t low = r + p - skip(1), high = r + p - skip(0);
  rt += skip(e);
  stack.push_back(e);
  while (k < q) {
    if (rt < low || (rt == low && next[static_cast<size_t>(e)] > -1)) {
      e = next[static_cast<size_t>(e)];
      rt += skip(e);
      stack.push_back(e);
    } else if (rt > high) {
      rt -= skip(stack.back());
      stack.pop_back();
    } else {
      e = stack.back();
      R[static_cast<size_t>(k++)] = e;
      high = low;
      if (k < q) low = r + p - skip(k + 1);
      del(e);
      rt -= skip(stack.back());
      stack.pop_back();
    }
  }
  for (auto& x : R) x = x == q ? b : x - q;
}

void CircGraph::send_blocks(int64_t r, std::vector<int64_t>& S) const {
  S.assign(static_cast<size_t>(q_), 0);
  if (r == 0) {
    for (int64_t k = 0; k < q_; ++k) S[static_cast<size_t>(k)] = k;
    return;
  }
  std::vector<int64_t> R;
  for (int64_t k = 0; k < q_; ++k) {
    recv_blocks((r + skip(k)) % p_, R);
    S[static_cast<size_t>(k)] = R[static_cast<size_t>(k)];
  }
}

CircChunks::CircChunks(int64_t elems, int64_t seg_bytes, int64_t elem_size, bool round_up)
    : n(elems) {
  if (seg_bytes <= 0 || elems <= 0) {
    c = std::max<int64_t>(elems, 1);
    count = 1;
    return;
  }
  const int64_t es = std::max<int64_t>(elem_size, 1);
  c = round_up ? seg_bytes / es + (seg_bytes % es != 0) : seg_bytes / es;
  c = std::clamp<int64_t>(c, 1, elems);
  count = elems / c + (elems % c != 0);
}

}  // namespace collkit::phases
