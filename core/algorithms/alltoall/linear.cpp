// alltoall:linear: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms alltoall:linear` prints them).
// Phases:       1. copy the own block in[rank] -> out[rank];
//               2. post the P-1 receives, from rank-1, rank-2, ... (shifted order), each straight
//                  into its place out[src];
//               3. post the P-1 sends, to rank+1, rank+2, ... (shifted order, so that no rank is
//                  the first target of everyone), each straight from in[dst].
//               No op waits on another: the network sees all P-1 messages of every rank at once.
// Restrictions: none (every P >= 1, every count >= 0).
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_linear(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, rank = b.rank();
  b.set_stage(0);
  b.copy({kOut, rank * n, n}, {kIn, rank * n, n});
  b.set_stage(1);
  for (int64_t k = 1; k < P; ++k) {
    const int64_t src = (rank - k + P) % P;
    b.recv(src, {kOut, src * n, n});
  }
  for (int64_t k = 1; k < P; ++k) {
    const int64_t dst = (rank + k) % P;
    b.send(dst, {kIn, dst * n, n});
  }
}

const Registrar reg{{
    .collective = Collective::alltoall,
    .name = "linear",
    .summary = "spread-out: all P-1 receives and sends posted at once, in shifted order",
    .phases = "copy the own block; post receives from rank-1, rank-2, ... into their places; "
              "post sends to rank+1, rank+2, ... from their places; nothing waits",
    .cost = "(P-1) alpha + (P-1) N beta (N: bytes per block; the (P-1) start-ups overlap on a "
            "network with enough injection bandwidth, which is why it wins for large N)",
    .reference =
        "Fan & Kumar 2022 (\"spread-out\", P-1 steps); MPICH MPIR_Alltoall_intra_scattered",
    .mpi_equivalents = {"ompi:linear", "impi:isend_irecv_waitall"},  // MPICH's: alltoall:scattered
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_linear,
}};

}  // namespace
}  // namespace collkit
