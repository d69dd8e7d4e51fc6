// reduce:binomial: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms reduce:binomial` prints them).
// Phases:       partial results flow up binomial trees; each rank combines its children's results
//               with its own in rank order
// Restrictions: none (any P, any root; non-commutative ops: the ranks are split at the root so that
//               every subtree is a contiguous rank range and operands combine in rank order)
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_binomial(const GenArgs& a, RankBuilder& b) {
  const int64_t seg =
      phases::segment_elems(a.params->integer("seg"), a.header.elem_size, a.header.count);
  phases::reduce_to_root(b, phases::Tree{phases::TreeShape::knomial, 2}, a.header.root,
                         a.header.count, seg);
}

const Registrar reg{{
    .collective = Collective::reduce,
    .name = "binomial",
    .summary = "binomial trees on each side of the root",
    .phases = "partial results flow up binomial trees; each rank combines its children's results "
              "with its own in rank order",
    .cost = "ceil(lg P)(alpha + n beta + n gamma) for root 0, unsegmented",
    .reference = "MPICH reduce binomial; Thakur, Rabenseifner, Gropp, IJHPCA 19(1) 2005",
    .mpi_equivalents = {"mpich:binomial", "ompi:binomial", "impi:binomial"},
    .params = {segment_param("0")},
    .restrictions = {},
    .prepare = {},
    .generate = generate_binomial,
}};

}  // namespace
}  // namespace collkit
