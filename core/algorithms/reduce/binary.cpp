// reduce:binary: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms reduce:binary` prints them).
// Phases:       partial results flow up binary trees whose subtrees are contiguous rank ranges;
//               each rank combines its children's results with its own in rank order
// Restrictions: none (any P, any root; non-commutative ops: the ranks are split at the root so that
//               every subtree is a contiguous rank range and operands combine in rank order)
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_binary(const GenArgs& a, RankBuilder& b) {
  const int64_t seg =
      phases::segment_elems(a.params->integer("seg"), a.header.elem_size, a.header.count);
  phases::reduce_to_root(b, phases::Tree{phases::TreeShape::binary, 2}, a.header.root,
                         a.header.count, seg);
}

const Registrar reg{{
    .collective = Collective::reduce,
    .name = "binary",
    .summary = "balanced binary trees on each side of the root, optionally segmented",
    .phases = "partial results flow up binary trees whose subtrees are contiguous rank ranges; "
              "each rank combines its children's results with its own in rank order",
    .cost = "2 (floor(lg P) + S - 1)(alpha + (n / S)(beta + gamma)), S = ceil(n / seg)",
    .reference = "the latency-model slides (binary tree); Open MPI coll_tuned reduce binary / "
                 "in-order binary",
    .mpi_equivalents = {"ompi:binary"},
    .params = {segment_param("0")},
    .restrictions = {},
    .prepare = {},
    .generate = generate_binary,
}};

}  // namespace
}  // namespace collkit
