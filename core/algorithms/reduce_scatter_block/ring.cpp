// reduce_scatter_block:ring: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms reduce_scatter_block:ring` prints them).
// Phases:       1. copy the P input blocks into scratch (in place: they are the receive buffer);
//               2. P - 1 steps: at step s rank r sends block r - 1 - s to r + 1 and receives
//                  block r - 2 - s from r - 1, combining it into its copy (allreduce:ring's
//                  reduce-scatter phase, over positions shifted by one so that rank r ends with
//                  block r); messages cut into segments of at most `seg` bytes;
//               3. copy block r to out.
// Restrictions: commutative op: block q is combined in ring order q+1, ..., P-1, 0, ..., q.
#include "../phases/ring.hpp"

#include <algorithm>
#include <cmath>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_ring(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, r = b.rank();
  b.set_stage(0);
  if (P == 1) {
    b.copy({kOut, 0, n}, {kIn, 0, n});
    return;
  }
  const int64_t seg_bytes = a.params->integer("seg");
  const int64_t seg = seg_bytes == 0 ? 0 : std::max<int64_t>(1, seg_bytes / a.header.elem_size);
  const BufId vec = b.scratch(P * n), tmp = b.scratch(n);
  const OpId ready = b.copy({vec, 0, P * n}, {kIn, 0, P * n});
  const phases::RingResult rs =
      phases::reduce_scatter_ring(b, phases::Blocks{P * n, P}, vec, 1, seg, ready, tmp, 0);
  b.set_stage(static_cast<uint16_t>(std::min<int64_t>(P - 1, UINT16_MAX)));
  std::vector<OpId> deps = rs.final_ready;
  deps.push_back(ready);
  b.copy({kOut, 0, n}, {vec, r * n, n}, deps);
}

Cost cost_ring(const CostArgs& a) {
  const auto steps = static_cast<double>(a.P - 1);
  const double seg = static_cast<double>(a.params->integer("seg"));
  const double pieces = seg > 0 ? std::max(1.0, std::ceil(a.bytes / seg)) : 1.0;
  return {steps * pieces, steps * a.bytes, steps * a.bytes};
}

const Registrar reg{{
    .collective = Collective::reduce_scatter_block,
    .name = "ring",
    .summary = "P - 1 ring steps passing partial sums on, segmented; commutative ops only",
    .phases = "copy the input; P - 1 steps around the ring, each combining the block received "
              "into the copy and passing it on; copy the own block out",
    // Cost: (n: bytes per block; unsegmented)
    .cost = "(P - 1)(alpha + n beta + n gamma)",
    .reference = "Patarasuk and Yuan, JPDC 69(2) 2009 (the reduce-scatter half of the ring "
                 "allreduce); Open MPI coll_base reduce_scatter_block ring",
    .params = {segment_param("0", "largest message in bytes; 0: whole blocks")},
    .restrictions = {.commutative_op = true, .power_of_two = false, .min_P = 1},
    .prepare = {},
    .generate = generate_ring,
    .model = cost_ring,
}};

}  // namespace
}  // namespace collkit
