// reduce:linear: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms reduce:linear` prints them).
// Algorithm:    reduce:linear, flat tree: the root receives every rank's vector and combines them
//               in rank order
// Phases:       every rank sends in[0:n] to the root; the root receives into two alternating
//               buffers and reduces in rank order
// Restrictions: none (any P, any root; non-commutative ops: the ranks are split at the root so that
//               every subtree is a contiguous rank range and operands combine in rank order)
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_linear(const GenArgs& a, RankBuilder& b) {
  const int64_t seg = phases::segment_elems(0, a.header.elem_size, a.header.count);
  phases::reduce_to_root(b, phases::Tree{phases::TreeShape::flat, 2}, a.header.root, a.header.count,
                         seg);
}

const Registrar reg{{
    .collective = Collective::reduce,
    .name = "linear",
    .summary = "flat tree: the root receives every rank's vector and combines them in rank order",
    .phases = "every rank sends in[0:n] to the root; the root receives into two alternating "
              "buffers and reduces in rank order",
    .cost = "(P - 1)(alpha + n beta + n gamma) at the root",
    .reference = "the latency-model slides (flat tree / linear); Open MPI coll_tuned reduce linear",
    .mpi_equivalents = {"ompi:linear"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_linear,
}};

}  // namespace
}  // namespace collkit
