#include "vtrees.hpp"

#include <utility>
#include <vector>

#include "irregular.hpp"

namespace collkit::phases {

namespace {

// This rank's place in the tree as the rooted v collectives see it, the same for the gather and
// the scatter: node v is rank (v + root) mod P, and a subtree's blocks lie in scratch packed in
// node order (`at`: the offsets of nodes v, v + 1, ... of this rank's subtree, packed).
struct VNode {
  const ScheduleHeader& h;
  int64_t P, root, v;
  TreeNode node;
  std::vector<int64_t> at;
  VNode(const ScheduleHeader& hd, const Tree& t, int64_t r)
      : h(hd), P(hd.P), root(hd.root), v((r - hd.root + hd.P) % hd.P) {
    tree_node(t, P, v, node);
    at = packed_offsets(node.size, [&](int64_t i) { return len(v + i); });
  }
  int64_t rank(int64_t u) const { return (u + root) % P; }
  int64_t len(int64_t u) const {
    return h.counts.empty() ? h.count : h.counts[static_cast<size_t>(rank(u))];
  }
  bool leaf() const { return v != 0 && node.children.empty(); }
  // The end of child c's subtree: where the next child's begins.
  int64_t end_of(size_t c) const {
    return c + 1 < node.children.size() ? node.children[c + 1] : v + node.size;
  }
  // Where child c's subtree lies packed: [lo, hi) of the scratch that holds v's subtree.
  std::pair<int64_t, int64_t> child_range(size_t c) const {
    return {at[static_cast<size_t>(node.children[c] - v)], at[static_cast<size_t>(end_of(c) - v)]};
  }
};

}  // namespace

void gatherv_to_root(const GenArgs& a, RankBuilder& b, const Tree& t) {
  const ScheduleHeader& h = a.header;
  const int64_t r = b.rank();
  const VNode vt(h, t, r);
  const TreeNode& node = vt.node;
  const std::vector<int64_t>& at = vt.at;
  b.set_stage(0);
  const int64_t mine = vt.len(vt.v);
  if (vt.leaf()) {  // a leaf sends its block as it is
    if (mine > 0) b.send(vt.rank(node.parent), {kIn, 0, mine});
    return;
  }
  if (vt.v != 0) {
    const BufId s = b.scratch(at.back());
    std::vector<OpId> ready{b.copy({s, 0, mine}, {kIn, 0, mine})};
    for (size_t c = 0; c < node.children.size(); ++c) {
      b.set_stage(static_cast<uint16_t>(c + 1));
      const auto [lo, hi] = vt.child_range(c);
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
    const int64_t first = node.children[c], last = vt.end_of(c);
    const auto [lo, hi] = vt.child_range(c);
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
  const int64_t r = b.rank();
  const VNode vt(h, t, r);
  const TreeNode& node = vt.node;
  const std::vector<int64_t>& at = vt.at;
  b.set_stage(0);
  const int64_t mine = vt.len(vt.v);
  if (vt.leaf()) {
    if (mine > 0) b.recv(vt.rank(node.parent), {kOut, 0, mine});
    return;
  }
  // Largest subtree first: it has the longest way down.
  if (vt.v != 0) {
    const BufId s = b.scratch(at.back());
    const OpId got = at.back() > 0 ? b.recv(vt.rank(node.parent), {s, 0, at.back()}) : kNoOp;
    b.copy({kOut, 0, mine}, {s, 0, mine}, {got});
    for (size_t c = node.children.size(); c-- > 0;) {
      b.set_stage(static_cast<uint16_t>(node.children.size() - c));
      const auto [lo, hi] = vt.child_range(c);
      if (hi > lo) b.send(vt.rank(node.children[c]), {s, lo, hi - lo}, {got});
    }
    return;
  }
  const BlockLayout in(h, Io::in, r);
  BufId s = kIn;
  for (size_t c = node.children.size(); c-- > 0;) {
    b.set_stage(static_cast<uint16_t>(node.children.size() - c));
    const int64_t first = node.children[c], last = vt.end_of(c);
    const auto [lo, hi] = vt.child_range(c);
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
