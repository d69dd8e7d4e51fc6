// alltoall:pairwise: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms alltoall:pairwise` prints them).
// Phases:       1. copy the own block in[rank] -> out[rank];
//               2. steps k = 1 .. P-1, each waiting for the previous one (a sendrecv):
//                  P = 2^j: exchange with rank XOR k (each step is a perfect matching);
//                  otherwise: send to (rank + k) mod P, receive from (rank - k) mod P.
// Restrictions: none (every P >= 1, every count >= 0).
#include <algorithm>
#include <bit>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_pairwise(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, rank = b.rank();
  const bool pof2 = std::has_single_bit(static_cast<uint64_t>(P));
  b.set_stage(0);
  b.copy({kOut, rank * n, n}, {kIn, rank * n, n});
  OpId prev_send = kNoOp, prev_recv = kNoOp;
  for (int64_t k = 1; k < P; ++k) {
    // Stages label steps; they saturate rather than wrap for P > 65535.
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(k, UINT16_MAX)));
    const int64_t dst = pof2 ? rank ^ k : (rank + k) % P;
    const int64_t src = pof2 ? rank ^ k : (rank - k + P) % P;
    // Both ops of step k wait for both of step k-1: a blocking sendrecv per step.
    const OpId r = b.recv(src, {kOut, src * n, n}, {prev_send, prev_recv});
    const OpId s = b.send(dst, {kIn, dst * n, n}, {prev_send, prev_recv});
    prev_send = s;
    prev_recv = r;
  }
}

const Registrar reg{{
    .collective = Collective::alltoall,
    .name = "pairwise",
    .summary = "P-1 sendrecv steps: XOR partners for P = 2^k, else send to rank+k, "
               "receive from rank-k",
    .phases = "copy the own block; step k = 1..P-1 exchanges one block with rank^k (P = 2^j) "
              "or sends to rank+k and receives from rank-k, each step after the previous",
    // Cost: (N: bytes per block; no start-ups overlap)
    .cost = "(P-1) (alpha + N beta)",
    .reference = "Fan & Kumar 2022 (linear, P-1 steps); MPICH MPIR_Alltoall_intra_pairwise",
    .mpi_equivalents = {"mpich:pairwise", "ompi:pairwise", "impi:pairwise"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_pairwise,
}};

}  // namespace
}  // namespace collkit
