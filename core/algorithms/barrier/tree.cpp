// barrier:tree: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms barrier:tree` prints them).
// Phases:       1. arrive: each rank waits for a zero-length message from each of its children,
//                  then signals its parent; 2. release: rank 0, having heard from all, signals
//                  its children, and each rank passes the release on to its own children.
// Restrictions: none (any P; no data)
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_tree(const GenArgs& a, RankBuilder& b) {
  phases::gather_release(b, phases::Tree{phases::TreeShape::knomial, a.params->integer("k")});
}

const Registrar reg{{
    .collective = Collective::barrier,
    .name = "tree",
    .summary = "gather to rank 0 and release, over a k-nomial tree (k = 2: binomial)",
    .phases = "zero-length messages up the tree (a rank signals its parent once all its children "
              "have), then down from rank 0",
    // Cost: (k = 2: 2 ceil(lg P) alpha)
    .cost = "2 ceil(log_k P)(alpha + (k - 2) o)",
    .reference = "the tree (combining) barrier, Mellor-Crummey and Scott, ACM TOCS 9(1) 1991; tree "
                 "shapes shared with bcast/reduce (phases/trees.hpp)",
    .mpi_equivalents = {"ompi:tree"},
    .params = {radix_param("2", "radix of the k-nomial tree")},
    .restrictions = {},
    .prepare = {},
    .generate = generate_tree,
}};

}  // namespace
}  // namespace collkit
