// bcast:two_tree: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms bcast:two_tree` prints them).
// Algorithm:    Sanders, Speck and Träff's two-tree broadcast (NCCL's double binary tree): the
//               message's first half goes down tree 1, its second half down tree 2, two
//               binary trees on the non-root ranks in which nearly every rank is an inner node
//               of one and a leaf of the other (phases/two_tree.hpp), so that every rank sends
//               about as much as it receives and both halves stream at once.
// Phases:       each half is cut into segments of seg bytes (whole elements, rounded down);
//               segment by segment, first half then second, the root sends the segment to the
//               tree's root, every other rank receives it from its parent in that tree and
//               sends it on to its children there (left first) as soon as it is in.
// Restrictions: none (any P, any root). The paper's edge colouring, which pairs each rank's
//               receive of one tree with its send in the other in the same step, is left to
//               the ops' dependencies: a rank posts every receive at once, and a send waits
//               only for its segment.
#include "../phases/two_tree.hpp"

#include <algorithm>
#include <cstdint>

#include "../phases/costs.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_two_tree(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, root = a.header.root, rank = b.rank();
  if (P == 1 || n == 0) return;
  const phases::TwoTrees tt(P);
  const int64_t x = (rank - root + P) % P;
  const phases::TwoTreeNode node[2] = {tt.node(0, x), tt.node(1, x)};
  const auto rank_of = [&](int64_t label) { return (label + root) % P; };
  // Segment by segment: receive it from the parent, send it on to the children.
  const auto down = [&](int t, int64_t off, int64_t len) {
    const Region r{kOut, off, len};
    const OpId got = x == 0 ? kNoOp : b.recv(rank_of(node[t].parent), r);
    for (int64_t c : node[t].children) b.send(rank_of(c), r, {got});
  };
  phases::two_tree_segments(b, n, a.params->integer("seg"), a.header.elem_size, down);
}

// One port: a rank sends each segment of its inner tree to two children in turn, and the
// root both trees' segments to their roots: 2 S sends at the root, and the last segment
// reaches the deepest leaf 2 (D - 1) sends after leaving it (D: the trees' depth).
Cost cost_two_tree(const CostArgs& a) {
  if (a.P <= 1) return {};
  const phases::TwoTrees tt(a.P);
  const double seg = static_cast<double>(a.params->integer("seg"));
  const double half = a.bytes / 2;
  const double S = phases::cost::pieces(half, seg);
  const double steps = 2 * (S + static_cast<double>(tt.depth(0)) - 1);
  return Cost{steps, steps * half / S, 0};
}

const Registrar reg{{
    .collective = Collective::bcast,
    .name = "two_tree",
    .summary = "two-tree broadcast: the message's halves pipelined down two complementary "
               "binary trees at once (NCCL's double binary tree)",
    .phases = "halve the message, cut each half into segments; the root sends the first half's "
              "segments to tree 1's root and the second half's to tree 2's; every rank forwards "
              "each segment to its children in that tree as it arrives. Tree 1: the in-order "
              "binary tree on the ranks 1 .. P-1 after the root; tree 2: it mirrored (P - 1 "
              "even) or shifted by one (odd)",
    .cost = "2 (S + D - 1)(alpha + (n / 2S) beta), S = ceil(n / (2 seg)) segments per half, "
            "D = floor(log2 (P - 1)) + 1 the trees' depth (one port: a segment out to two "
            "children in turn; a round shorter where the trees are not full)",
    .reference = "[Sanders 2009]; NCCL's double binary tree (ncclGetDtree)",
    .mpi_equivalents = {},
    .params = {segment_param("8KiB",
                             "segment size in bytes, rounded down to whole elements, at least "
                             "one; each half of the message is cut into segments of it; 0: "
                             "each half in one piece")},
    .restrictions = {},
    .prepare = {},
    .generate = generate_two_tree,
    .model = cost_two_tree,
}};

}  // namespace
}  // namespace collkit
