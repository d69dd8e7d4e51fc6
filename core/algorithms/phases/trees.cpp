#include "trees.hpp"

#include <algorithm>

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

void bcast_scatter_allgather(RankBuilder& b, const Tree& t, int64_t root, int64_t count) {
  const int64_t P = b.P();
  if (count == 0 || P == 1) return;
  const int64_t v = (b.rank() - root + P) % P;
  const auto rank_of = [&](int64_t u) { return (u % P + root) % P; };
  const auto begin = [&](int64_t u) { return u * (count / P) + std::min(u, count % P); };
  const auto blocks = [&](int64_t lo, int64_t hi) {
    return Region{kOut, begin(lo), begin(hi) - begin(lo)};
  };
  TreeNode node;
  tree_node(t, P, v, node);

  // Phase 1: scatter. sender[u]: the send that read block u (a later receive must wait for it).
  b.set_stage(0);
  std::vector<OpId> sender(static_cast<size_t>(P), kNoOp);
  OpId got = kNoOp;
  const Region mine = blocks(v, v + node.size);
  if (node.parent >= 0 && mine.len > 0) got = b.recv(rank_of(node.parent), mine);
  for (size_t i = node.children.size(); i-- > 0;) {  // largest subtree first
    const int64_t c = node.children[i];
    const int64_t end = i + 1 < node.children.size() ? node.children[i + 1] : v + node.size;
    const Region theirs = blocks(c, end);
    if (theirs.len == 0) continue;
    const OpId s = b.send(rank_of(c), theirs, {got});
    for (int64_t u = c; u < end; ++u) sender[static_cast<size_t>(u)] = s;
  }

  // Phase 2: ring allgather over the positions.
  OpId last = got;  // what wrote the block sent next
  for (int64_t s = 0; s + 1 < P; ++s) {
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(s + 1, 65535)));
    const Region out = blocks((v - s + P) % P, (v - s + P) % P + 1);
    const int64_t q = (v - s - 1 + P) % P;
    const Region in = blocks(q, q + 1);
    if (out.len > 0) b.send(rank_of(v + 1), out, {last});
    if (in.len > 0) last = b.recv(rank_of(v + P - 1), in, {sender[static_cast<size_t>(q)]});
  }
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
