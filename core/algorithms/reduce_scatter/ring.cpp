// reduce_scatter:ring: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms reduce_scatter:ring` prints them).
// Phases:       P - 1 ring steps: at step s rank r sends its partial of block r - s - 1 (its
//               input at s = 0) to r + 1 and receives the partial of block r - s - 2 from r - 1
//               into scratch, adding its input to it; the last one received is block r, copied
//               to out once every read of in is done (under MPI_IN_PLACE out is in's start).
// Restrictions: a commutative op (a block's partial starts at the rank after its owner)
#include <vector>

#include "../phases/irregular.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_ring(const GenArgs& a, RankBuilder& b) {
  const ScheduleHeader& h = a.header;
  const int64_t P = h.P, r = b.rank();
  const BlockLayout in(h, Io::in, r);
  b.set_stage(0);
  if (P == 1) {
    b.copy({kOut, 0, in.len(0)}, {kIn, in.offset(0), in.len(0)});
    return;
  }
  const BufId acc = b.scratch(in.elems());
  std::vector<OpId> readers;                              // every op that reads in
  std::vector<OpId> have(static_cast<size_t>(P), kNoOp);  // the reduce that made a partial
  for (int64_t s = 0; s + 1 < P; ++s) {
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(s + 1, UINT16_MAX)));
    const int64_t give = (r - s - 1 + 2 * P) % P, take = (r - s - 2 + 2 * P) % P;
    if (in.len(give) > 0) {
      const OpId snd = s == 0 ? b.send((r + 1) % P, {kIn, in.offset(give), in.len(give)})
                              : b.send((r + 1) % P, {acc, in.offset(give), in.len(give)},
                                       {have[static_cast<size_t>(give)]});
      if (s == 0) readers.push_back(snd);
    }
    if (in.len(take) > 0) {
      const Region t{acc, in.offset(take), in.len(take)};
      const OpId rcv = b.recv((r - 1 + P) % P, t);
      have[static_cast<size_t>(take)] =
          b.reduce(t, {kIn, in.offset(take), in.len(take)}, Side::dst_first, {rcv});
      readers.push_back(have[static_cast<size_t>(take)]);
    }
  }
  b.set_stage(static_cast<uint16_t>(std::min<int64_t>(P, UINT16_MAX)));
  b.copy({kOut, 0, in.len(r)}, {acc, in.offset(r), in.len(r)}, readers);
}

Cost cost_ring(const CostArgs& a) {
  const auto steps = static_cast<double>(a.P - 1);
  return {steps, steps * a.bytes, steps * a.bytes};
}

const Registrar reg{{
    .collective = Collective::reduce_scatter,
    .name = "ring",
    .summary = "P - 1 ring steps, each rank adding its input to the partial it received",
    .phases = "at step s send the partial of block r - s - 1 to r + 1, receive block r - s - 2's "
              "from r - 1 and add the own input to it; block r comes last",
    // Cost: (n: bytes of the largest block)
    .cost = "(P - 1)(alpha + n beta + n gamma) at most",
    .reference = "the reduce-scatter half of allreduce:ring (Patarasuk, Yuan, JPDC 69(2) 2009); "
                 "Open MPI coll_base reduce_scatter ring",
    .mpi_equivalents = {"ompi:ring"},
    .params = {},
    .restrictions = {.commutative_op = true},
    .prepare = {},
    .generate = generate_ring,
    .model = cost_ring,
}};

}  // namespace
}  // namespace collkit
