// reduce:in_order_binary: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms reduce:in_order_binary` prints them).
// Algorithm:    Open MPI's in-order binary tree, rooted at rank P-1 whatever the root: the
//               subtree of a node is a contiguous rank range [lo, lo + s) whose largest rank is
//               the node; its first child is the node just below it, rooting the upper part
//               [lo + h, lo + s - 1), its second child roots the lower part [lo, lo + h), with
//               h = floor(s / 2) (h = 0 for s = 2: the one child is lo).
// Phases:       1. a leaf sends its input to its parent segment by segment, each send after the
//                  previous one (blocking sends);
//               2. a node copies its input into an accumulator (the output at rank P-1 when it is
//                  the root, else scratch) and, per segment, receives it from its first then its
//                  second child and reduces acc = child (+) acc, the first child's (higher ranks)
//                  first: acc = lower (+) (upper (+) own), rank order; then sends the segment up;
//               3. when the root is not P-1, rank P-1 sends the whole result to the root, which
//                  receives it into its output once its own part is done.
//               Each child's segments land in a scratch buffer of their own (Open MPI cycles
//               two segment buffers; the messages, their peers, sizes and order are the same).
// Restrictions: none (any P, any root, any op: the tree keeps rank order).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

struct InOrderNode {
  int64_t parent = -1;
  std::vector<int64_t> children;  // the first child (upper ranks), then the second (lower)
};

// The node of `rank` in the in-order binary tree over P ranks, in O(depth).
InOrderNode in_order_node(int64_t P, int64_t rank) {
  InOrderNode out;
  int64_t lo = 0, s = P, parent = -1;
  for (;;) {
    const int64_t node = lo + s - 1, h = s == 2 ? 0 : s / 2;
    if (node == rank) {
      out.parent = parent;
      if (s >= 2) out.children.push_back(node - 1);
      if (h >= 1) out.children.push_back(lo + h - 1);
      return out;
    }
    parent = node;
    if (rank >= lo + h) {  // the upper part [lo + h, node)
      lo += h;
      s = s - h - 1;
    } else {  // the lower part [lo, lo + h)
      s = h;
    }
  }
}

void generate_in_order_binary(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, root = a.header.root, rank = b.rank();
  const int64_t io_root = P - 1;
  if (n == 0) return;  // MPI returns before any message for count 0
  const phases::Segments segs(
      n, phases::segment_elems(a.params->integer("seg"), a.header.elem_size, n));
  const InOrderNode node = in_order_node(P, rank);
  std::vector<OpId> mine;  // every op of the tree phase, for the root's final receive

  b.set_stage(0);
  if (node.children.empty()) {
    if (node.parent < 0) {  // P = 1
      b.copy({kOut, 0, n}, {kIn, 0, n});
      return;
    }
    OpId prev = kNoOp;
    for (int64_t g = 0; g < segs.count(); ++g)
      mine.push_back(prev = b.send(node.parent, {kIn, segs.off(g), segs.len(g)}, {prev}));
  } else {
    const BufId acc = rank == io_root && root == io_root ? kOut : b.scratch(n);
    const OpId own = b.copy({acc, 0, n}, {kIn, 0, n});
    mine.push_back(own);
    std::vector<BufId> from;
    for (size_t c = 0; c < node.children.size(); ++c) from.push_back(b.scratch(n));
    OpId prev_send = kNoOp;
    for (int64_t g = 0; g < segs.count(); ++g) {
      const int64_t off = segs.off(g), len = segs.len(g);
      b.set_stage(static_cast<uint16_t>(std::min<int64_t>(g + 1, UINT16_MAX)));
      std::vector<OpId> got;
      for (size_t c = 0; c < node.children.size(); ++c)
        got.push_back(b.recv(node.children[c], {from[c], off, len}));
      OpId last = own;
      for (size_t c = 0; c < node.children.size(); ++c)
        last = b.reduce({acc, off, len}, {from[c], off, len}, Side::src_first, {last, got[c]});
      mine.push_back(last);
      if (node.parent >= 0)
        mine.push_back(prev_send = b.send(node.parent, {acc, off, len}, {last, prev_send}));
    }
    if (rank == io_root && root != io_root) {
      b.set_stage(UINT16_MAX);
      b.send(root, {acc, 0, n}, mine);
    }
  }
  if (rank == root && root != io_root) {
    b.set_stage(UINT16_MAX);
    // Under MPI_IN_PLACE `in` is `out`: the result lands after everything that read it.
    b.recv(io_root, {kOut, 0, n}, {b.compute(0, mine)});
  }
}

const Registrar reg{{
    .collective = Collective::reduce,
    .name = "in_order_binary",
    .summary = "Open MPI's in-order binary tree rooted at rank P-1 (any op), then one hop to the "
               "root",
    .phases = "a contiguous-range binary tree rooted at P-1: each node reduces its upper child's "
              "then its lower child's partial result into its own, segment by segment, and sends "
              "up; P-1 then sends the result to the root when the root is another rank",
    .cost = "2 (floor(lg P) + S - 1)(alpha + (n / S)(beta + gamma)) + [root != P-1] (alpha + n "
            "beta), S = ceil(n / seg)",
    .reference = "Open MPI ompi_coll_base_reduce_intra_in_order_binary and "
                 "ompi_coll_base_topo_build_in_order_bintree (coll/base)",
    .mpi_equivalents = {"ompi:in_order_binary"},
    .params = {segment_param("0")},
    .restrictions = {},
    .prepare = {},
    .generate = generate_in_order_binary,
}};

}  // namespace
}  // namespace collkit
