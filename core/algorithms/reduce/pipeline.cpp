// reduce:pipeline: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms reduce:pipeline` prints them).
// Algorithm:    reduce:pipeline, chain (pipeline): segments are reduced along the ranks towards the
//               root
// Phases:       the ranks above the root form a chain P-1 -> ... -> root+1 -> root, those below it
//               0 -> 1 -> ... -> root; segment by segment each rank reduces what comes from its
//               chain neighbour with its own and passes it on
// Restrictions: none (any P, any root; non-commutative ops: the ranks are split at the root so that
//               every subtree is a contiguous rank range and operands combine in rank order)
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_pipeline(const GenArgs& a, RankBuilder& b) {
  const int64_t seg =
      phases::segment_elems(a.params->integer("seg"), a.header.elem_size, a.header.count);
  phases::reduce_to_root(b, phases::Tree{phases::TreeShape::chain, 2}, a.header.root,
                         a.header.count, seg);
}

const Registrar reg{{
    .collective = Collective::reduce,
    .name = "pipeline",
    .summary = "chain (pipeline): segments are reduced along the ranks towards the root",
    .phases = "the ranks above the root form a chain P-1 -> ... -> root+1 -> root, those below it "
              "0 -> 1 -> ... -> root; segment by segment each rank reduces what comes from its "
              "chain neighbour with its own and passes it on",
    .cost = "(max(root, P - 1 - root) - 1 + S)(alpha + (n / S)(beta + gamma)), S = ceil(n / seg)",
    .reference = "the latency-model slides (pipeline); Open MPI coll_tuned reduce pipeline",
    .mpi_equivalents = {"ompi:pipeline"},
    .params = {segment_param("8KiB")},
    .restrictions = {},
    .prepare = {},
    .generate = generate_pipeline,
}};

}  // namespace
}  // namespace collkit
