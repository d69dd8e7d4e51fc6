// allgatherv:ring: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allgatherv:ring` prints them).
// Phases:       1. copy the own input into out block r, at its displacement (nothing under
//                  MPI_IN_PLACE: it is there);
//               2. P - 1 steps: at step s rank r sends block r - s to r + 1 and receives block
//                  r - s - 1 from r - 1, each straight between the blocks' places in out; an
//                  empty block is no message (both ends know its count).
// Restrictions: none (any P, any count vector, any displacements)
#include <vector>

#include "../phases/irregular.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_ring(const GenArgs& a, RankBuilder& b) {
  const ScheduleHeader& h = a.header;
  const int64_t P = h.P, r = b.rank();
  const BlockLayout out(h, Io::out, r);
  b.set_stage(0);
  // have[q]: the op after which block q is in out (kNoOp: not yet, or empty).
  std::vector<OpId> have(static_cast<size_t>(P), kNoOp);
  have[static_cast<size_t>(r)] = b.copy({kOut, out.offset(r), out.len(r)}, {kIn, 0, out.len(r)});
  for (int64_t s = 0; s + 1 < P; ++s) {
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(s + 1, UINT16_MAX)));
    const int64_t give = (r - s + P) % P, take = (r - s - 1 + P) % P;
    if (out.len(give) > 0)
      b.send((r + 1) % P, {kOut, out.offset(give), out.len(give)},
             {have[static_cast<size_t>(give)]});
    if (out.len(take) > 0)
      have[static_cast<size_t>(take)] =
          b.recv((r - 1 + P) % P, {kOut, out.offset(take), out.len(take)});
  }
}

Cost cost_ring(const CostArgs& a) {
  const auto steps = static_cast<double>(a.P - 1);
  return {steps, steps * a.bytes, 0};
}

const Registrar reg{{
    .collective = Collective::allgatherv,
    .name = "ring",
    .summary = "P - 1 ring steps, each rank passing on the block it got last",
    .phases = "copy the own block into place; at step s rank r sends block r - s to r + 1 and "
              "receives block r - s - 1 from r - 1, between the blocks' places in out",
    // Cost: (n: bytes of the largest block; the sum over the blocks the ring carries past a rank)
    .cost = "(P - 1)(alpha + n beta) at most: a rank sends every block but one's successor's",
    .reference = "MPICH MPIR_Allgatherv_intra_ring; Open MPI coll_base allgatherv ring; Thakur, "
                 "Rabenseifner, Gropp, IJHPCA 19(1) 2005",
    .mpi_equivalents = {"mpich:ring", "ompi:ring"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_ring,
    .model = cost_ring,
}};

}  // namespace
}  // namespace collkit
