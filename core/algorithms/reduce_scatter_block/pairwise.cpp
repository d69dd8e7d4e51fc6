// reduce_scatter_block:pairwise: its summary, phases in brief, cost and reference are said once, in
// its Registrar at the end of this file (`collkit algorithms reduce_scatter_block:pairwise` prints
// them). Phases:       1. copy the own block in[r n] into an accumulator;
//               2. steps i = 1 .. P-1, each after the previous (a sendrecv): send block r + i to
//                  rank r + i, receive block r from rank r - i and combine it into the
//                  accumulator (partner's on the left);
//               3. copy the accumulator to out (after every send: under MPI_IN_PLACE the input
//                  blocks are the receive buffer).
// Restrictions: commutative op: rank r combines r, r-1, ..., 0, P-1, ..., r+1, its own order.
#include <algorithm>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_pairwise(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, r = b.rank();
  b.set_stage(0);
  const BufId acc = b.scratch(n);
  OpId last = b.copy({acc, 0, n}, {kIn, r * n, n});
  const BufId tmp = P > 1 ? b.scratch(n) : acc;
  std::vector<OpId> done{last};
  OpId prev_send = kNoOp, prev_recv = kNoOp;
  for (int64_t i = 1; i < P; ++i) {
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(i, UINT16_MAX)));
    const int64_t dst = (r + i) % P, src = (r - i + P) % P;
    const OpId rv = b.recv(src, {tmp, 0, n}, {prev_send, prev_recv, last});
    const OpId sd = b.send(dst, {kIn, dst * n, n}, {prev_send, prev_recv});
    last = b.reduce({acc, 0, n}, {tmp, 0, n}, Side::src_first, {rv, last});
    prev_send = sd;
    prev_recv = rv;
    done.push_back(sd);
  }
  done.push_back(last);
  b.set_stage(static_cast<uint16_t>(std::min<int64_t>(P, UINT16_MAX)));
  b.copy({kOut, 0, n}, {acc, 0, n}, done);
}

Cost cost_pairwise(const CostArgs& a) {
  const auto steps = static_cast<double>(a.P - 1);
  return {steps, steps * a.bytes, steps * a.bytes};
}

const Registrar reg{{
    .collective = Collective::reduce_scatter_block,
    .name = "pairwise",
    .summary = "P - 1 sendrecv steps, each rank receiving its block from one rank per step "
               "(long messages, commutative ops)",
    .phases = "step i sends block r + i to rank r + i and receives block r from rank r - i, "
              "combining it into an accumulator; the result is copied to out at the end",
    // Cost: (n: bytes per block)
    .cost = "(P - 1)(alpha + n beta + n gamma)",
    .reference = "MPICH MPIR_Reduce_scatter_block_intra_pairwise; Thakur, Rabenseifner, Gropp, "
                 "IJHPCA 19(1) 2005",
    .mpi_equivalents = {"mpich:pairwise", "impi:pairwise"},
    .params = {},
    .restrictions = {.commutative_op = true, .power_of_two = false, .min_P = 1},
    .prepare = {},
    .generate = generate_pairwise,
    .model = cost_pairwise,
}};

}  // namespace
}  // namespace collkit
