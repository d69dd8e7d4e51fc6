// reduce:two_tree: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms reduce:two_tree` prints them).
// Algorithm:    Sanders, Speck and Träff's two-tree reduction (NCCL's double binary tree run
//               upwards): the vector's first half is reduced up tree 1, its second half up tree
//               2, the complementary binary trees of bcast:two_tree (phases/two_tree.hpp).
// Phases:       each half is cut into segments of seg bytes (whole elements, rounded down);
//               segment by segment, first half then second, a rank copies its own segment into
//               its accumulator (out at the root, scratch elsewhere), receives its children's
//               partial results in that tree (left first) into scratch, reduces each in as it
//               comes and sends the result to its parent; the root reduces in the tree's root.
// Restrictions: a commutative op. Tree 1 is in order on the labels rank - root mod P, but the
//               labels wrap around the root, tree 2 is mirrored or shifted, and the root's own
//               value comes first: the operands are not combined in rank order.
#include "../phases/two_tree.hpp"

#include <algorithm>
#include <cstdint>

#include "../phases/costs.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_two_tree(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, root = a.header.root, rank = b.rank();
  b.set_stage(0);
  if (n == 0) return;
  if (P == 1) {
    b.copy({kOut, 0, n}, {kIn, 0, n});
    return;
  }
  const phases::TwoTrees tt(P);
  const int64_t x = (rank - root + P) % P;
  const phases::TwoTreeNode node[2] = {tt.node(0, x), tt.node(1, x)};
  const auto rank_of = [&](int64_t label) { return (label + root) % P; };
  const BufId acc = x == 0 ? kOut : b.scratch(n);
  const BufId tmp = b.scratch(2 * n);  // child j's segments at j n + their offset
  // Segment by segment: the own part, plus each child's partial as it comes, to the parent.
  const auto up = [&](int t, int64_t off, int64_t len) {
    const Region r{acc, off, len};
    OpId last = b.copy(r, {kIn, off, len});
    for (size_t j = 0; j < node[t].children.size(); ++j) {
      const Region in{tmp, static_cast<int64_t>(j) * n + off, len};
      const OpId got = b.recv(rank_of(node[t].children[j]), in);
      last = b.reduce(r, in, Side::dst_first, {last, got});
    }
    if (x != 0) b.send(rank_of(node[t].parent), r, {last});
  };
  phases::two_tree_segments(b, n, a.params->integer("seg"), a.header.elem_size, up);
}

// One port: every rank sends each segment once, to its parent in that tree; the root takes
// 2 S segments, the last one D - 1 sends after the deepest leaf's (D: the trees' depth).
Cost cost_two_tree(const CostArgs& a) {
  if (a.P <= 1) return {};
  const phases::TwoTrees tt(a.P);
  const double seg = static_cast<double>(a.params->integer("seg"));
  const double half = a.bytes / 2;
  const double S = phases::cost::pieces(half, seg);
  const double steps = 2 * S + static_cast<double>(tt.depth(0)) - 1;
  return Cost{steps, steps * half / S, steps * half / S};
}

const Registrar reg{{
    .collective = Collective::reduce,
    .name = "two_tree",
    .summary = "two-tree reduction: the vector's halves reduced up two complementary binary "
               "trees at once, segments pipelined (NCCL's double binary tree upwards)",
    .phases = "halve the vector, cut each half into segments; up the trees of bcast:two_tree "
              "(first half tree 1, second half tree 2) each rank reduces its children's "
              "segments into its own as they arrive and sends the result to its parent; the "
              "root reduces in both trees' roots",
    .cost = "(2 S + D - 1)(alpha + (n / 2S)(beta + gamma)), S = ceil(n / (2 seg)) segments "
            "per half, D = floor(log2 (P - 1)) + 1 the trees' depth (one port: a round shorter "
            "where the trees are not full)",
    .reference = "[Sanders 2009]; NCCL's double binary tree (ncclGetDtree)",
    .mpi_equivalents = {},
    .params = {segment_param("8KiB",
                             "segment size in bytes, rounded down to whole elements, at least "
                             "one; each half of the vector is cut into segments of it; 0: "
                             "each half in one piece")},
    .restrictions = {.commutative_op = true},
    .prepare = {},
    .generate = generate_two_tree,
    .model = cost_two_tree,
}};

}  // namespace
}  // namespace collkit
