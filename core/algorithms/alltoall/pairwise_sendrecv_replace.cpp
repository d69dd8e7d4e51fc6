// alltoall:pairwise_sendrecv_replace: its summary, phases in brief, cost and reference are said
// once, in its Registrar at the end of this file (`collkit algorithms
// alltoall:pairwise_sendrecv_replace` prints them).
// Phases:       MPICH's in-place alltoall: every pair {i, j}, i < j, swaps blocks in one global
//               order, (0,1), (0,2), ..., (0,P-1), (1,2), ...: rank r exchanges with 0, 1, ...,
//               r-1, then r+1, ..., P-1, each exchange after the previous one (a blocking
//               MPI_Sendrecv_replace, of one block: a copy of out[peer] into a one-block scratch,
//               sent from there while out[peer] receives the peer's block).
//               1. copy in -> out (nothing moves under MPI_IN_PLACE: `in` is `out`);
//               2. the P-1 exchanges in place in `out`, one block of scratch.
// Restrictions: none (every P >= 1, every count >= 0). MPICH runs it only for MPI_IN_PLACE; the
//               schedule is the same either way after the first copy.
#include <algorithm>
#include <cstdint>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_sendrecv_replace(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, rank = b.rank();
  b.set_stage(0);
  OpId s = kNoOp, r = b.copy({kOut, 0, P * n}, {kIn, 0, P * n});
  if (P == 1) return;
  const BufId t = b.scratch(n);
  for (int64_t peer = 0; peer < P; ++peer) {
    if (peer == rank) continue;
    const int64_t step = peer < rank ? peer + 1 : peer;  // the exchange's place in rank's order
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(step, UINT16_MAX)));
    const OpId packed = b.copy({t, 0, n}, {kOut, peer * n, n}, {s, r});
    r = b.recv(peer, {kOut, peer * n, n}, {packed});
    s = b.send(peer, {t, 0, n}, {packed});
  }
}

Cost cost_sendrecv_replace(const CostArgs& a) {
  // Pair (i, j) swaps at step i + j, after both ranks' earlier swaps: the last, (P-2, P-1), at
  // step 2P - 3.
  const double m = a.P < 2 ? 0.0 : static_cast<double>(2 * a.P - 3);
  return {m, m * a.bytes, 0};
}

const Registrar reg{{
    .collective = Collective::alltoall,
    .name = "pairwise_sendrecv_replace",
    .summary = "in place: every pair of ranks swaps its two blocks, all pairs in one global "
               "order, one block of scratch",
    .phases = "copy in to out; rank r swaps block p of out with rank p for p = 0..r-1, r+1..P-1, "
              "each a sendrecv_replace after the previous one",
    .cost = "(2P-3) (alpha + N beta) (N: bytes per block): pair (i, j) swaps only after both "
            "ranks' earlier swaps, at step i + j, so the last pair's is step 2P-3",
    .reference = "MPICH MPIR_Alltoall_intra_pairwise_sendrecv_replace (for MPI_IN_PLACE)",
    .mpi_equivalents = {"mpich:pairwise_sendrecv_replace"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_sendrecv_replace,
    .model = cost_sendrecv_replace,
}};

}  // namespace
}  // namespace collkit
