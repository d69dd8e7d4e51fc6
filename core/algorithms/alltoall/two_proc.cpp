// alltoall:two_proc: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms alltoall:two_proc` prints them).
// Phases:       1. one sendrecv with the other rank (rank XOR 1): in[peer] -> the peer's
//                  out[rank], received into out[peer];
//               2. then the local copy in[rank] -> out[rank], as Open MPI does it.
// Restrictions: exactly P = 2 (any other P is refused, as Open MPI refuses it).
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_two_proc(const GenArgs& a, RankBuilder& b) {
  const int64_t n = a.header.count, rank = b.rank(), peer = rank ^ 1;
  b.set_stage(0);
  const OpId r = b.recv(peer, {kOut, peer * n, n});
  const OpId s = b.send(peer, {kIn, peer * n, n});
  b.set_stage(1);
  b.copy({kOut, rank * n, n}, {kIn, rank * n, n}, {r, s});
}

Cost cost_two_proc(const CostArgs& a) {
  return {1, a.bytes, 0};
}

const Registrar reg{{
    .collective = Collective::alltoall,
    .name = "two_proc",
    .summary = "two ranks only: one sendrecv of the other rank's block, then the own block's copy",
    .phases = "exchange one block with rank^1 (a sendrecv); then copy the own block",
    .cost = "alpha + N beta (N: bytes per block; P = 2 only)",
    .reference = "Open MPI ompi_coll_base_alltoall_intra_two_procs (coll/base)",
    .mpi_equivalents = {"ompi:two_proc"},
    .params = {},
    .restrictions = {.min_P = 2, .max_P = 2},
    .prepare = {},
    .generate = generate_two_proc,
    .model = cost_two_proc,
}};

}  // namespace
}  // namespace collkit
