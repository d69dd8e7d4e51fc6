// bcast:scatter_allgather: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms bcast:scatter_allgather` prints them).
// Phases:       1. scatter: the root's vector, cut into P blocks, goes down a binomial tree
//                  relative to the root, each rank receiving its subtree's blocks in one message
//                  (phases::scatter_down, scatter:binomial's phase);
//               2. allgather: P - 1 ring steps, each rank passing on the block it got last
//                  (phases::ring_allgather, allgather:ring's phase).
// Restrictions: none (any P, any root; blocks are empty when count < P and are not sent)
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_scatter_allgather(const GenArgs& a, RankBuilder& b) {
  phases::bcast_scatter_allgather(b, phases::Tree{phases::TreeShape::knomial, 2}, a.header.root,
                                  a.header.count);
}

const Registrar reg{{
    .collective = Collective::bcast,
    .name = "scatter_allgather",
    .summary = "binomial scatter of P blocks from the root, then a ring allgather (long messages)",
    .phases = "scatter the vector's P blocks down a binomial tree relative to the root; P - 1 "
              "ring steps pass every block around",
    .cost = "(ceil(lg P) + P - 1) alpha + 2 ((P - 1) / P) n beta",
    .reference = "van de Geijn et al., \"Broadcast via scatter + allgather\"; MPICH "
                 "MPIR_Bcast_intra_scatter_ring_allgather (Thakur, Rabenseifner, Gropp 2005)",
    .mpi_equivalents = {"mpich:scatter_ring_allgather", "ompi:scatter_allgather_ring"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_scatter_allgather,
}};

}  // namespace
}  // namespace collkit
