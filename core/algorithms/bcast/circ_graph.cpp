// bcast:circ_graph: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms bcast:circ_graph` prints them).
// Algorithm:    MPICH's MPIR_Bcast_intra_circ_graph, Träff's round-optimal n-block broadcast
//               over a circulant graph (phases/circ_graph.hpp builds the skips and each rank's
//               send and receive blocks as MPICH's circ_graph.c does). The message is cut into
//               chunks of seg bytes (whole elements, rounded down, at least one), the last one
//               the remainder (MPIR_CVAR_CIRC_GRAPH_CHUNK_SIZE).
// Phases:       n - 1 + q rounds, q = ceil(log2 P); in round i, k = i mod q, rank r (relative
//               to the root) sends its block S[k] to r + Skip[k] (not to the root) and receives
//               its block R[k] from r - Skip[k] (not at the root), blocks shifted by q every q
//               rounds, negative ones skipped, past n - 1 taken as n - 1. A send waits for its
//               chunk's receive. MPICH issues a round's send before its receive; where a rank
//               sends in round k the chunk it receives in round k (P = 33, 65, 66, ...: S[k] =
//               R[k]), the receive is issued first here, as the send needs its data.
// Restrictions: none (any P, any root). MPIR_CVAR_CIRC_GRAPH_Q_LEN (requests in flight) is
//               not modelled: every op waits only for its data.
#include "../phases/circ_graph.hpp"

#include <algorithm>
#include <cstdint>

#include "../phases/costs.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_circ_graph(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, root = a.header.root, rank = b.rank();
  if (P == 1 || n == 0) return;
  const phases::CircGraph g(P);
  const phases::CircChunks ch(n, a.params->integer("seg"), a.header.elem_size, false);
  const int64_t r = (rank - root + P) % P, q = g.q(), N = ch.count;
  std::vector<int64_t> R, S;
  g.recv_blocks(r, R);
  g.send_blocks(r, S);
  // got[j]: the receive of chunk j (the root has them all: kNoOp); -2: not received yet.
  constexpr OpId kMissing = kNoOp - 1;
  std::vector<OpId> got(static_cast<size_t>(N), r == 0 ? kNoOp : kMissing);
  const auto chunk = [&](int64_t j) { return Region{kOut, ch.off(j), ch.len(j)}; };
  int64_t round = 0;
  phases::circ_graph_rounds(q, N, [&](int64_t k, int64_t offset) {
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(round++, UINT16_MAX)));
    const int64_t to = (rank + g.skip(k)) % P, from = (rank - g.skip(k) % P + P) % P;
    const int64_t sb = S[static_cast<size_t>(k)] + offset, rb = R[static_cast<size_t>(k)] + offset;
    const bool sends = sb >= 0 && to != root, recvs = rb >= 0 && r != 0;
    const int64_t sj = std::min(sb, N - 1), rj = std::min(rb, N - 1);
    const auto receive = [&] { got[static_cast<size_t>(rj)] = b.recv(from, chunk(rj)); };
    const bool recv_first = sends && recvs && sj == rj && got[static_cast<size_t>(sj)] == kMissing;
    if (recv_first) receive();
    if (sends) {
      const OpId dep = got[static_cast<size_t>(sj)];
      b.send(to, chunk(sj), {dep == kMissing ? kNoOp : dep});
    }
    if (recvs && !recv_first) receive();
  });
}

Cost cost_circ_graph(const CostArgs& a) {
  return phases::cost::circ_graph(a.P, a.bytes, static_cast<double>(a.params->integer("seg")),
                                  /*reduced=*/false);
}

const Registrar reg{{
    .collective = Collective::bcast,
    .name = "circ_graph",
    .summary = "MPICH's circulant-graph broadcast: Träff's round-optimal n-block schedule, "
               "n - 1 + ceil(log2 P) rounds of one chunk out and one in",
    .phases = "cut the message into chunks of seg bytes (the remainder last); n - 1 + q rounds: "
              "in round k mod q each rank sends its block S[k] to r + Skip[k] and receives "
              "block R[k] from r - Skip[k], Skip[k] = ceil(Skip[k+1] / 2), Skip[q] = P",
    .cost = "(N - 1 + q)(alpha + (n / N) beta), N = ceil(n / seg) chunks, q = ceil(log2 P) "
            "(one port: a round's chunk out and chunk in)",
    .reference = "MPICH MPIR_Bcast_intra_circ_graph and MPII_circ_graph_create "
                 "(src/mpi/coll/bcast/bcast_intra_circ_graph.c, "
                 "src/mpi/coll/algorithms/circ_graph/circ_graph.c); [Träff 2025]",
    .mpi_equivalents = {"mpich:circ_graph"},
    .params = {segment_param("128KiB",
                             "chunk size in bytes, rounded down to whole elements, at least "
                             "one (MPIR_CVAR_CIRC_GRAPH_CHUNK_SIZE); 0: the whole message in "
                             "one piece")},
    .restrictions = {},
    .prepare = {},
    .generate = generate_circ_graph,
    .model = cost_circ_graph,
}};

}  // namespace
}  // namespace collkit
