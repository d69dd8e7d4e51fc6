// reduce_scatter:pairwise: its summary, phases in brief, cost and reference are said once, in
// its Registrar at the end of this file (`collkit algorithms reduce_scatter:pairwise` prints
// them).
// Phases:       the own block of in is copied to scratch; P - 1 steps, step i sending in's
//               block r + i to rank r + i and receiving block r's operand from r - i, added to
//               the scratch; the sum is copied to out once every read of in is done.
// Restrictions: a commutative op (the operands arrive r, r - 1, r - 2, ...)
#include <vector>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_pairwise(const GenArgs& a, RankBuilder& b) {
  const ScheduleHeader& h = a.header;
  const int64_t P = h.P, r = b.rank();
  const BlockLayout in(h, Io::in, r);
  const int64_t n = in.len(r);
  b.set_stage(0);
  const BufId acc = b.scratch(n), tmp = b.scratch(n);
  std::vector<OpId> readers{b.copy({acc, 0, n}, {kIn, in.offset(r), n})};
  OpId last = readers.back();
  for (int64_t i = 1; i < P; ++i) {
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(i, UINT16_MAX)));
    const int64_t dst = (r + i) % P, src = (r - i + P) % P;
    if (in.len(dst) > 0) readers.push_back(b.send(dst, {kIn, in.offset(dst), in.len(dst)}));
    if (n > 0) {
      const OpId rcv = b.recv(src, {tmp, 0, n}, {last});
      last = b.reduce({acc, 0, n}, {tmp, 0, n}, Side::src_first, {rcv, last});
    }
  }
  readers.push_back(last);
  b.set_stage(static_cast<uint16_t>(std::min<int64_t>(P, UINT16_MAX)));
  b.copy({kOut, 0, n}, {acc, 0, n}, readers);
}

Cost cost_pairwise(const CostArgs& a) {
  const auto steps = static_cast<double>(a.P - 1);
  return {steps, steps * a.bytes, steps * a.bytes};
}

const Registrar reg{{
    .collective = Collective::reduce_scatter,
    .name = "pairwise",
    .summary = "P - 1 steps: send block r + i to rank r + i, add the operand from r - i",
    .phases = "copy the own block aside; step i sends in's block r + i to r + i and adds the "
              "operand received from r - i",
    // Cost: (n: bytes of the largest block)
    .cost = "(P - 1)(alpha + n beta + n gamma) at most",
    .reference = "MPICH MPIR_Reduce_scatter_intra_pairwise; Thakur, Rabenseifner, Gropp, "
                 "IJHPCA 19(1) 2005",
    .mpi_equivalents = {"mpich:pairwise"},
    .params = {},
    .restrictions = {.commutative_op = true},
    .prepare = {},
    .generate = generate_pairwise,
    .model = cost_pairwise,
}};

}  // namespace
}  // namespace collkit
