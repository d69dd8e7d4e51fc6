#include "trees.hpp"

#include <algorithm>

#include "ring.hpp"

namespace collkit::phases {

void tree_node(const Tree& t, int64_t n, int64_t v, TreeNode& out) {
  out.children.clear();
  out.parent = -1;
  switch (t.shape) {
    case TreeShape::flat:
      if (v == 0) {
        out.size = n;
        for (int64_t c = 1; c < n; ++c) out.children.push_back(c);
      } else {
        out.parent = 0;
        out.size = 1;
      }
      return;
    case TreeShape::chain:
      out.parent = v - 1;
      out.size = n - v;
      if (v + 1 < n) out.children.push_back(v + 1);
      return;
    case TreeShape::binary: {
      // Descend from the root: node u owns [u, u + s); its left child u + 1 owns the first
      // ceil((s - 1) / 2) nodes after it, its right child the rest.
      int64_t u = 0, s = n;
      while (u != v) {
        const int64_t left = s / 2;  // = ceil((s - 1) / 2)
        out.parent = u;
        if (v < u + 1 + left) {
          u = u + 1;
          s = left;
        } else {
          u = u + 1 + left;
          s = s - 1 - left;
        }
      }
      out.size = s;
      const int64_t left = s / 2;
      if (left > 0) out.children.push_back(v + 1);
      if (s - 1 - left > 0) out.children.push_back(v + 1 + left);
      return;
    }
    case TreeShape::knomial: {
      const int64_t k = t.k;
      int64_t limit = n;  // children are v + j m for m below the lowest nonzero digit of v
      if (v != 0) {
        int64_t m = 1;
        while ((v / m) % k == 0) m *= k;
        out.parent = v - ((v / m) % k) * m;
        limit = m;
        out.size = std::min(m, n - v);
      } else {
        out.size = n;
      }
      for (int64_t m = 1; m < limit && m < n; m *= k)
        for (int64_t j = 1; j < k; ++j) {
          if (v + j * m >= n) break;
          out.children.push_back(v + j * m);
        }
      return;
    }
  }
}

Segments::Segments(int64_t elems, int64_t seg_elems)
    : n(elems),
      seg(seg_elems <= 0 || seg_elems > elems ? std::max<int64_t>(elems, 1) : seg_elems) {}

int64_t segment_elems(int64_t seg_bytes, int32_t elem_size, int64_t count) {
  if (seg_bytes <= 0) return count;
  return std::max<int64_t>(1, seg_bytes / elem_size);
}

void bcast_down(RankBuilder& b, const Tree& t, int64_t root, int64_t count, int64_t seg_elems) {
  const int64_t P = b.P();
  if (count == 0 || P == 1) return;
  const int64_t vr = (b.rank() - root + P) % P;
  TreeNode node;
  tree_node(t, P, vr, node);
  const auto rank_of = [&](int64_t v) { return (v + root) % P; };

  // Largest subtree first: it has the longest way to go.
  const size_t nc = node.children.size();
  std::vector<std::pair<int64_t, int64_t>> order;  // (-subtree size, child)
  for (size_t i = 0; i < nc; ++i) {
    const int64_t end = i + 1 < nc ? node.children[i + 1] : vr + node.size;
    order.emplace_back(-(end - node.children[i]), node.children[i]);
  }
  std::sort(order.begin(), order.end());

  const Segments sg(count, seg_elems);
  for (int64_t i = 0; i < sg.count(); ++i) {
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(i, 65535)));
    const Region r{kOut, sg.off(i), sg.len(i)};
    const OpId got = node.parent >= 0 ? b.recv(rank_of(node.parent), r) : kNoOp;
    for (const auto& [neg_size, c] : order) b.send(rank_of(c), r, {got});
  }
}

int64_t bcast_down_class(const Tree& t, int64_t P, int64_t root, int64_t count, int64_t rank) {
  if (count == 0 || P == 1) return 0;  // no ops
  const int64_t v = (rank - root + P) % P;
  if (v == 0) return 0;
  switch (t.shape) {
    case TreeShape::chain:
      return v == P - 1 ? 1 : 2;
    case TreeShape::knomial: {
      int64_t m = 1;
      while ((v / m) % t.k == 0) m *= t.k;
      const int64_t parent_offset = ((v / m) % t.k) * m;  // in [1, P)
      return parent_offset * (P + 1) + std::min(m, P - v);
    }
    case TreeShape::flat:
    case TreeShape::binary:
      break;
  }
  return -1;
}

void reduce_to_root(RankBuilder& b, const Tree& t, int64_t root, int64_t count, int64_t seg_elems) {
  const int64_t P = b.P(), rank = b.rank();
  if (count == 0) return;

  // The two sides of the root: [root, P) with v = rank - root (children to the right, combined
  // as acc (+) child) and [0, root] with v = root - rank (children to the left, child (+) acc).
  struct Child {
    int64_t v, rank;
    Side side;
  };
  std::vector<Child> children;
  int64_t parent = -1;
  TreeNode node;
  if (rank >= root) {
    tree_node(t, P - root, rank - root, node);
    if (node.parent >= 0) parent = root + node.parent;
    for (int64_t c : node.children) children.push_back({c, root + c, Side::dst_first});
  }
  if (rank <= root) {
    tree_node(t, root + 1, root - rank, node);
    if (node.parent >= 0) parent = root - node.parent;
    for (int64_t c : node.children) children.push_back({c, root - c, Side::src_first});
  }
  // Nearest children first on each side (rank order); at the root the two sides interleave,
  // smaller subtrees (which arrive first) first.
  std::stable_sort(children.begin(), children.end(),
                   [](const Child& a, const Child& c) { return a.v < c.v; });

  const Segments sg(count, seg_elems);
  if (children.empty()) {
    for (int64_t i = 0; i < sg.count(); ++i) {
      b.set_stage(static_cast<uint16_t>(std::min<int64_t>(i, 65535)));
      const Region in{kIn, sg.off(i), sg.len(i)};
      if (parent >= 0)
        b.send(parent, in, {});
      else
        b.copy({kOut, sg.off(i), sg.len(i)}, in);  // P == 1
    }
    return;
  }
  const BufId acc = rank == root ? kOut : b.scratch(count);
  const int64_t slots = std::min<int64_t>(2, static_cast<int64_t>(children.size()));
  const BufId tmp =
      b.scratch(slots * count);  // double buffer: receive one child while reducing the other
  for (int64_t i = 0; i < sg.count(); ++i) {
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(i, 65535)));
    const Region a{acc, sg.off(i), sg.len(i)};
    OpId last = b.copy(a, {kIn, sg.off(i), sg.len(i)});
    OpId slot_free[2] = {kNoOp, kNoOp};
    for (size_t j = 0; j < children.size(); ++j) {
      const size_t slot = j % 2;
      const Region in{tmp, static_cast<int64_t>(slot) * count + sg.off(i), sg.len(i)};
      const OpId r = b.recv(children[j].rank, in, {slot_free[slot]});
      last = slot_free[slot] = b.reduce(a, in, children[j].side, {last, r});
    }
    if (parent >= 0) b.send(parent, a, {last});
  }
}

namespace {
// The pieces of positions [lo, hi): split where they cross bt.split.
template <class F>
void for_each_piece(const BlockTree& bt, int64_t lo, int64_t hi, F&& f) {
  if (lo < bt.split && bt.split < hi) {
    f(lo, bt.split);
    f(bt.split, hi);
  } else {
    f(lo, hi);
  }
}
}  // namespace

ScatterDown scatter_down(RankBuilder& b, const BlockTree& bt) {
  const int64_t P = b.P();
  const auto rank_of = [&](int64_t u) { return (u % P + bt.root) % P; };
  ScatterDown sd;
  sd.v = (b.rank() - bt.root + P) % P;
  tree_node(bt.t, P, sd.v, sd.node);
  const int64_t v = sd.v, size = sd.node.size;
  if (sd.node.parent >= 0)
    for_each_piece(bt, v, v + size, [&](int64_t lo, int64_t hi) {
      const Region mine = bt.at(lo, hi);
      if (mine.len > 0) sd.got.push_back(b.recv(rank_of(sd.node.parent), mine));
    });
  sd.sender.assign(static_cast<size_t>(size), kNoOp);
  const std::vector<int64_t>& ch = sd.node.children;
  for (size_t i = ch.size(); i-- > 0;) {  // largest subtree first
    const int64_t c = ch[i], end = i + 1 < ch.size() ? ch[i + 1] : v + size;
    for_each_piece(bt, c, end, [&](int64_t lo, int64_t hi) {
      const Region theirs = bt.at(lo, hi);
      if (theirs.len == 0) return;
      const OpId s = b.send(rank_of(c), theirs, sd.got);
      for (int64_t u = lo; u < hi; ++u) sd.sender[static_cast<size_t>(u - v)] = s;
    });
  }
  return sd;
}

std::vector<OpId> gather_up(RankBuilder& b, const BlockTree& bt, OpId ready) {
  const int64_t P = b.P();
  const auto rank_of = [&](int64_t u) { return (u % P + bt.root) % P; };
  const int64_t v = (b.rank() - bt.root + P) % P;
  TreeNode node;
  tree_node(bt.t, P, v, node);
  std::vector<OpId> got{ready};
  const std::vector<int64_t>& ch = node.children;
  for (size_t i = 0; i < ch.size(); ++i) {  // nearest (smallest) subtree first
    const int64_t c = ch[i], end = i + 1 < ch.size() ? ch[i + 1] : v + node.size;
    for_each_piece(bt, c, end, [&](int64_t lo, int64_t hi) {
      const Region theirs = bt.at(lo, hi);
      if (theirs.len > 0) got.push_back(b.recv(rank_of(c), theirs));
    });
  }
  if (node.parent >= 0)
    for_each_piece(bt, v, v + node.size, [&](int64_t lo, int64_t hi) {
      const Region mine = bt.at(lo, hi);
      if (mine.len > 0) b.send(rank_of(node.parent), mine, got);
    });
  got.erase(got.begin());
  return got;
}

namespace {
// Where the blocks of positions [lo, hi) lie on this rank for gather / scatter: at the root in
// `user` in rank order (a piece never wraps), at a rank with children in `tmp` from its own
// position v on, at a leaf in `own` (its one block).
BlockTree rooted_blocks(const Tree& t, int64_t root, int64_t P, int64_t n, int64_t v,
                        bool has_children, BufId user, BufId own, BufId tmp) {
  return BlockTree{t, root, P - root, [=](int64_t lo, int64_t hi) {
                     if (v == 0) return Region{user, (lo + root) % P * n, (hi - lo) * n};
                     if (has_children) return Region{tmp, (lo - v) * n, (hi - lo) * n};
                     return Region{own, 0, (hi - lo) * n};
                   }};
}
}  // namespace

void gather_to_root(RankBuilder& b, const Tree& t, int64_t root, int64_t n) {
  const int64_t P = b.P(), r = b.rank(), v = (r - root + P) % P;
  TreeNode node;
  tree_node(t, P, v, node);
  const bool inner = v != 0 && node.size > 1;
  const BufId tmp = inner ? b.scratch(node.size * n) : kOut;
  b.set_stage(0);
  OpId ready = kNoOp;
  if (v == 0)
    ready = b.copy({kOut, r * n, n}, {kIn, 0, n});
  else if (inner)
    ready = b.copy({tmp, 0, n}, {kIn, 0, n});
  gather_up(b, rooted_blocks(t, root, P, n, v, inner, kOut, kIn, tmp), ready);
}

void scatter_from_root(RankBuilder& b, const Tree& t, int64_t root, int64_t n) {
  const int64_t P = b.P(), r = b.rank(), v = (r - root + P) % P;
  TreeNode node;
  tree_node(t, P, v, node);
  const bool inner = v != 0 && node.size > 1;
  const BufId tmp = inner ? b.scratch(node.size * n) : kOut;
  b.set_stage(0);
  if (v == 0) b.copy({kOut, 0, n}, {kIn, r * n, n});
  const ScatterDown sd = scatter_down(b, rooted_blocks(t, root, P, n, v, inner, kIn, kOut, tmp));
  if (inner) b.copy({kOut, 0, n}, {tmp, 0, n}, sd.got);
}

void bcast_scatter_allgather(RankBuilder& b, const Tree& t, int64_t root, int64_t count) {
  const int64_t P = b.P();
  if (count == 0 || P == 1) return;
  const Blocks blk{count, P};  // block u: position u's
  const BlockTree bt{t, root, P, [&](int64_t lo, int64_t hi) { return blk.region(kOut, lo, hi); }};
  // Phase 1: scatter. A block's receive in the ring must wait for the scatter's send of it.
  b.set_stage(0);
  const ScatterDown sd = scatter_down(b, bt);
  // Phase 2: ring allgather over the positions.
  ring_allgather(
      b, blk, kOut, root, 0, {sd.got.empty() ? kNoOp : sd.got[0]},
      [&](int64_t u, int64_t) { return sd.sent_by(u); }, 1);
}

void gather_release(RankBuilder& b, const Tree& t) {
  const int64_t P = b.P();
  TreeNode node;
  tree_node(t, P, b.rank(), node);
  const Region z{kOut, 0, 0};
  std::vector<OpId> arrived;
  b.set_stage(0);
  for (int64_t c : node.children) arrived.push_back(b.recv(c, z));
  if (node.parent >= 0) {
    const OpId up = b.send(node.parent, z, arrived);
    b.set_stage(1);
    const OpId down = b.recv(node.parent, z, {up});
    for (int64_t c : node.children) b.send(c, z, {down});
  } else {
    b.set_stage(1);
    for (int64_t c : node.children) b.send(c, z, arrived);
  }
}

}  // namespace collkit::phases
