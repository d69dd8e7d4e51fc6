// exscan:recursive_doubling: its summary, phases in brief, cost and reference are said once, in
// its Registrar at the end of this file (`collkit algorithms exscan:recursive_doubling` prints
// them).
// Phases:       (phases::prefix_doubling, exclusive) partial = in; for mask = 1, 2, 4, ...:
//               exchange partial with r ^ mask (if it exists); the higher of the two puts the
//               lower's partial in front of its partial and of its out (the first one it gets is
//               copied: out starts undefined), the lower appends the higher's partial to its own.
//               Rank 0 never writes out.
// Restrictions: none (any P, any count, any op: operands in rank order)
#include "../phases/costs.hpp"
#include "../phases/prefix.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_rd(const GenArgs& a, RankBuilder& b) {
  phases::prefix_doubling(b, a.header.count, /*inclusive=*/false);
}

Cost cost_rd(const CostArgs& a) {
  return phases::cost::prefix_doubling(a.P, a.bytes);
}

const Registrar reg{{
    .collective = Collective::exscan,
    .name = "recursive_doubling",
    .summary = "ceil(lg P) exchanges of the running partial with rank ^ 2^k",
    .phases = "exchange the partial of a growing block of ranks with r ^ mask; the higher rank "
              "puts the lower block's partial in front of its partial and its result",
    // Cost: (n: bytes per rank)
    .cost = "ceil(lg P)(alpha + n beta + 2 n gamma) at worst",
    .reference = "MPICH MPIR_Exscan_intra_recursive_doubling; Open MPI coll_base exscan "
                 "recursive_doubling",
    .mpi_equivalents = {"mpich:recursive_doubling", "ompi:recursive_doubling"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_rd,
    .model = cost_rd,
}};

}  // namespace
}  // namespace collkit
