// allreduce:ring: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allreduce:ring` prints them).
// Phases:       1. reduce-scatter: P-1 steps; at step s rank r sends block r-s to r+1 and
//                  receives block r-s-1 from r-1 into scratch, combining it into `out`;
//               2. allgather: P-1 steps; at step s rank r passes block r+1-s on to r+1.
//               `in` is copied to `out` first and received blocks go to scratch, so that the
//               schedule is in-place safe (MPI_IN_PLACE: `in` is `out`).
//               Every message is cut into segments of at most `seg` bytes so that combining one
//               segment overlaps with receiving the next (seg=0: whole blocks).
// Restrictions: commutative op: block q is combined in ring order q, q+1, ..., P-1, 0, ..., q-1,
//               a different tree per block, so the ring is NOT switch-safe with allreduce:rd
//               (compare_trees says so; see docs/large-counts.md).
#include "../phases/ring.hpp"

#include <algorithm>
#include <cmath>

#include "../phases/costs.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_ring(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count;
  if (P == 1) {
    b.copy(Region{kOut, 0, n}, Region{kIn, 0, n});
    return;
  }
  const int64_t seg_bytes = a.params->integer("seg");
  const int64_t seg = seg_bytes == 0 ? 0 : std::max<int64_t>(1, seg_bytes / a.header.elem_size);
  const phases::Blocks blk{n, P};
  // Copy first, then only `out` and scratch: in-place safe (MPI_IN_PLACE makes `in` be `out`).
  const OpId out_ready = b.copy(Region{kOut, 0, n}, Region{kIn, 0, n});
  const BufId tmp = b.scratch(n / P + (n % P != 0 ? 1 : 0));  // the longest block
  const phases::RingResult rs = phases::reduce_scatter_ring(b, blk, seg, out_ready, tmp, 0);
  phases::allgather_ring(b, blk, seg, rs, static_cast<uint16_t>(std::min<int64_t>(P - 1, 65535)));
}

Cost cost_ring(const CostArgs& a) {
  if (a.P == 1) return {};
  const double steps = static_cast<double>(a.P - 1), block = a.bytes / static_cast<double>(a.P);
  const double seg = static_cast<double>(a.params->integer("seg"));
  const double pieces = seg > 0 ? std::max(1.0, std::ceil(block / seg)) : 1.0;
  return {2 * steps * pieces, 2 * steps * block, steps * block};
}

const Registrar reg{{
    .collective = Collective::allreduce,
    .name = "ring",
    .summary = "ring reduce-scatter + ring allgather, segmented; bandwidth-optimal, commutative "
               "ops only",
    .phases = "P-1 reduce-scatter steps around the ring, then P-1 allgather steps; messages cut "
              "into segments of at most seg bytes",
    .cost = "2 (P-1) alpha + 2 (P-1)/P n beta + (P-1)/P n gamma",
    .reference = "Patarasuk and Yuan, JPDC 69(2) 2009; Thakur, Rabenseifner, Gropp 2005",
    .mpi_equivalents = {"mpich:ring", "ompi:ring", "impi:ring"},
    .params = {segment_param("1MiB", "largest message in bytes; 0: whole blocks")},
    .restrictions = {.commutative_op = true, .power_of_two = false, .min_P = 1},
    .prepare = {},
    .generate = generate_ring,
    .model = cost_ring,
}};

}  // namespace
}  // namespace collkit
