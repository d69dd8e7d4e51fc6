#include "vtrees.hpp"

#include <vector>

#include "irregular.hpp"

namespace collkit::phases {

namespace {

// The tree as the rooted v collectives see it: node v is rank (v + root) mod P, and a subtree's
// blocks lie in scratch packed in node order.
struct VTree {
  const ScheduleHeader& h;
  int64_t P, root;
  int64_t rank(int64_t v) const { return (v + root) % P; }
  int64_t len(int64_t v) const {
    return h.counts.empty() ? h.count : h.counts[static_cast<size_t>(rank(v))];
  }
};

}  // namespace

void gatherv_to_root(const GenArgs& a, RankBuilder& b, const Tree& t) {
  const ScheduleHeader& h = a.header;
  const VTree vt{h, h.P, h.root};
  const int64_t P = h.P, r = b.rank(), v = (r - h.root + P) % P;
  TreeNode node;
  tree_node(t, P, v, node);
  b.set_stage(0);
  const int64_t mine = vt.len(v);
  if (v != 0 && node.children.empty()) {  // a leaf sends its block as it is
    if (mine > 0) b.send(vt.rank(node.parent), {kIn, 0, mine});
    return;
  }
  // Node offsets of the subtree [v, v + size) packed.
  const std::vector<int64_t> at =
      packed_offsets(node.size, [&](int64_t i) { return vt.len(v + i); });
  const auto end_of = [&](size_t c) {
    return c + 1 < node.children.size() ? node.children[c + 1] : v + node.size;
  };
  if (v != 0) {
    const BufId s = b.scratch(at.back());
    std::vector<OpId> ready{b.copy({s, 0, mine}, {kIn, 0, mine})};
    for (size_t c = 0; c < node.children.size(); ++c) {
      b.set_stage(static_cast<uint16_t>(c + 1));
      const int64_t lo = at[static_cast<size_t>(node.children[c] - v)];
      const int64_t hi = at[static_cast<size_t>(end_of(c) - v)];
      if (hi > lo) ready.push_back(b.recv(vt.rank(node.children[c]), {s, lo, hi - lo}));
    }
    b.set_stage(static_cast<uint16_t>(node.children.size() + 1));
    if (at.back() > 0) b.send(vt.rank(node.parent), {s, 0, at.back()}, ready);
    return;
  }
  // The root: its own block, then each child's subtree into out, through scratch where the
  // subtree's blocks do not lie in node order one after another.
  const BlockLayout out(h, Io::out, r);
  b.copy({kOut, out.offset(r), mine}, {kIn, 0, mine});
  BufId s = kIn;
  for (size_t c = 0; c < node.children.size(); ++c) {
    b.set_stage(static_cast<uint16_t>(c + 1));
    const int64_t first = node.children[c], last = end_of(c);
    const int64_t lo = at[static_cast<size_t>(first)], hi = at[static_cast<size_t>(last)];
    if (hi == lo) continue;
    const auto ps = pieces(
        first, last, [&](int64_t u) { return at[static_cast<size_t>(u)]; },
        [&](int64_t u) { return out.offset(vt.rank(u)); }, [&](int64_t u) { return vt.len(u); });
    const int64_t from = vt.rank(first);
    if (ps.size() == 1) {
      b.recv(from, {kOut, ps[0].b_off, hi - lo});
      continue;
    }
    if (s == kIn) s = b.scratch(at.back());
    const OpId got = b.recv(from, {s, lo, hi - lo});
    for (const Piece& x : ps) b.copy({kOut, x.b_off, x.len}, {s, x.a_off, x.len}, {got});
  }
}

void scatterv_from_root(const GenArgs& a, RankBuilder& b, const Tree& t) {
  const ScheduleHeader& h = a.header;
  const VTree vt{h, h.P, h.root};
  const int64_t P = h.P, r = b.rank(), v = (r - h.root + P) % P;
  TreeNode node;
  tree_node(t, P, v, node);
  b.set_stage(0);
  const int64_t mine = vt.len(v);
  if (v != 0 && node.children.empty()) {
    if (mine > 0) b.recv(vt.rank(node.parent), {kOut, 0, mine});
    return;
  }
  const std::vector<int64_t> at =
      packed_offsets(node.size, [&](int64_t i) { return vt.len(v + i); });
  const auto end_of = [&](size_t c) {
    return c + 1 < node.children.size() ? node.children[c + 1] : v + node.size;
  };
  // Largest subtree first: it has the longest way down.
  if (v != 0) {
    const BufId s = b.scratch(at.back());
    const OpId got = at.back() > 0 ? b.recv(vt.rank(node.parent), {s, 0, at.back()}) : kNoOp;
    b.copy({kOut, 0, mine}, {s, 0, mine}, {got});
    for (size_t c = node.children.size(); c-- > 0;) {
      b.set_stage(static_cast<uint16_t>(node.children.size() - c));
      const int64_t lo = at[static_cast<size_t>(node.children[c] - v)];
      const int64_t hi = at[static_cast<size_t>(end_of(c) - v)];
      if (hi > lo) b.send(vt.rank(node.children[c]), {s, lo, hi - lo}, {got});
    }
    return;
  }
  const BlockLayout in(h, Io::in, r);
  BufId s = kIn;
  for (size_t c = node.children.size(); c-- > 0;) {
    b.set_stage(static_cast<uint16_t>(node.children.size() - c));
    const int64_t first = node.children[c], last = end_of(c);
    const int64_t lo = at[static_cast<size_t>(first)], hi = at[static_cast<size_t>(last)];
    if (hi == lo) continue;
    const auto ps = pieces(
        first, last, [&](int64_t u) { return in.offset(vt.rank(u)); },
        [&](int64_t u) { return at[static_cast<size_t>(u)]; },
        [&](int64_t u) { return vt.len(u); });
    const int64_t to = vt.rank(first);
    if (ps.size() == 1) {
      b.send(to, {kIn, ps[0].a_off, hi - lo});
      continue;
    }
    if (s == kIn) s = b.scratch(at.back());
    std::vector<OpId> packed;
    for (const Piece& x : ps) packed.push_back(b.copy({s, x.b_off, x.len}, {kIn, x.a_off, x.len}));
    b.send(to, {s, lo, hi - lo}, packed);
  }
  b.set_stage(0);
  b.copy({kOut, 0, mine}, {kIn, in.offset(r), mine});  // under MPI_IN_PLACE: nothing
}

}  // namespace collkit::phases
