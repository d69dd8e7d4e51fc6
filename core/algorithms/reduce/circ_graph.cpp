// reduce:circ_graph: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms reduce:circ_graph` prints them).
// Algorithm:    MPICH's MPIR_Reduce_intra_circ_graph: bcast:circ_graph's schedule run backwards.
//               The vector is cut into chunks of ceil(seg / element size) elements (MPICH rounds
//               up: whole elements), the last one the remainder (MPIR_CVAR_CIRC_GRAPH_CHUNK_SIZE).
// Phases:       1. copy in to the accumulator (out at the root, scratch elsewhere);
//               2. the n - 1 + q rounds of the broadcast from last to first: in round k, rank r
//                  (relative to the root) sends its accumulated chunk R[k] to r - Skip[k]
//                  (not from the root) and receives chunk S[k] from r + Skip[k] (unless that
//                  is the root) into a scratch slot, reducing it in. A chunk is sent once,
//                  after all its receives are reduced in. MPICH issues a round's send before its
//                  receive; where the two are the same chunk (P = 33, 65, ...), the receive and
//                  its reduction come first here, or the contribution would be lost.
// Restrictions: a commutative op (MPICH asserts one): the chunks are combined in the order they
//               arrive along the circulant graph, not in rank order.
#include "../phases/circ_graph.hpp"

#include <algorithm>
#include <cstdint>

#include "../phases/costs.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_circ_graph(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, root = a.header.root, rank = b.rank();
  b.set_stage(0);
  if (n == 0) return;
  if (P == 1) {
    b.copy({kOut, 0, n}, {kIn, 0, n});
    return;
  }
  const phases::CircGraph g(P);
  const phases::CircChunks ch(n, a.params->integer("seg"), a.header.elem_size, true);
  const int64_t r = (rank - root + P) % P, q = g.q(), N = ch.count;
  std::vector<int64_t> R, S;
  g.recv_blocks(r, R);
  g.send_blocks(r, S);
  const BufId acc = r == 0 ? kOut : b.scratch(n);
  const OpId init = b.copy({acc, 0, n}, {kIn, 0, n});
  // Receive slots, reused round robin: a receive waits for the reduction that read its slot.
  const int64_t slots = std::min<int64_t>(2 * q, N * q);
  const BufId tmp = b.scratch(slots * ch.c);
  std::vector<OpId> slot_free(static_cast<size_t>(slots), kNoOp);
  std::vector<OpId> last(static_cast<size_t>(N), init);  // the last op writing chunk j
  const auto chunk = [&](int64_t j) { return Region{acc, ch.off(j), ch.len(j)}; };
  int64_t nrecv = 0;
  // The broadcast's rounds in order, then run from the last.
  std::vector<std::pair<int64_t, int64_t>> rounds;
  phases::circ_graph_rounds(q, N,
                            [&](int64_t k, int64_t offset) { rounds.emplace_back(k, offset); });
  int64_t stage = 1;
  for (auto it = rounds.rbegin(); it != rounds.rend(); ++it) {
    const auto [k, offset] = *it;
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(stage++, UINT16_MAX)));
    const int64_t to = (rank - g.skip(k) % P + P) % P, from = (rank + g.skip(k)) % P;
    const int64_t sb = R[static_cast<size_t>(k)] + offset, rb = S[static_cast<size_t>(k)] + offset;
    const bool sends = sb >= 0 && r != 0, recvs = rb >= 0 && from != root;
    const int64_t sj = std::min(sb, N - 1), rj = std::min(rb, N - 1);
    const auto receive = [&] {
      const int64_t s = nrecv++ % slots;
      const Region in{tmp, s * ch.c, ch.len(rj)};
      const OpId got = b.recv(from, in, {slot_free[static_cast<size_t>(s)]});
      last[static_cast<size_t>(rj)] = slot_free[static_cast<size_t>(s)] =
          b.reduce(chunk(rj), in, Side::dst_first, {last[static_cast<size_t>(rj)], got});
    };
    const bool recv_first = sends && recvs && sj == rj;
    if (recv_first) receive();
    if (sends) b.send(to, chunk(sj), {last[static_cast<size_t>(sj)]});
    if (recvs && !recv_first) receive();
  }
}

Cost cost_circ_graph(const CostArgs& a) {
  return phases::cost::circ_graph(a.P, a.bytes, static_cast<double>(a.params->integer("seg")),
                                  /*reduced=*/true);
}

const Registrar reg{{
    .collective = Collective::reduce,
    .name = "circ_graph",
    .summary = "MPICH's circulant-graph reduce: bcast:circ_graph's round-optimal schedule run "
               "backwards, chunks reduced as they arrive",
    .phases = "cut the vector into chunks; the broadcast's n - 1 + q rounds from last to first: "
              "in round k send the accumulated chunk R[k] to r - Skip[k], receive chunk S[k] "
              "from r + Skip[k] and reduce it in",
    .cost = "(N - 1 + q)(alpha + (n / N)(beta + gamma)), N = ceil(n / seg) chunks, q = "
            "ceil(log2 P) (one port: the rounds; off powers of two the chains into the root "
            "are a round or two shorter)",
    .reference = "MPICH MPIR_Reduce_intra_circ_graph (src/mpi/coll/reduce/"
                 "reduce_intra_circ_graph.c, src/mpi/coll/algorithms/circ_graph/circ_graph.c); "
                 "[Träff 2025]",
    .mpi_equivalents = {"mpich:circ_graph"},
    .params = {segment_param("128KiB",
                             "chunk size in bytes, rounded up to whole elements "
                             "(MPIR_CVAR_CIRC_GRAPH_CHUNK_SIZE); 0: the whole vector in one "
                             "piece")},
    .restrictions = {.commutative_op = true},
    .prepare = {},
    .generate = generate_circ_graph,
    .model = cost_circ_graph,
}};

}  // namespace
}  // namespace collkit
