// allgather:circ_graph: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allgather:circ_graph` prints them).
// Algorithm:    MPICH's MPIR_Allgather_intra_circ_graph: P circulant-graph broadcasts
//               (bcast:circ_graph), one from every rank, run round by round together. Each
//               rank's block is cut into chunks of seg bytes (whole elements, rounded down), the
//               last one the remainder (MPIR_CVAR_CIRC_GRAPH_CHUNK_SIZE).
// Phases:       1. copy the own input into out block r;
//               2. n - 1 + q rounds, q = ceil(log2 P); in round i, k = i mod q, for root = 0 ..
//                  P - 1 in turn: rank r sends root's chunk S_{r - root}[k] to r + Skip[k]
//                  (unless that is the root) and receives root's chunk R_{r - root}[k] from
//                  r - Skip[k] (unless r is the root), as bcast:circ_graph does for that root.
//                  One message per root and chunk (MPICH packs none). Where a rank sends in a
//                  round the chunk it receives in that round, the receive is issued first.
// Restrictions: none (any P, any count). Every rank's program holds the schedule of all P
//               relative ranks (prepare: O(P log^2 P)), as MPICH's MPII_circ_graph_create_all.
#include "../phases/circ_graph.hpp"

#include <algorithm>
#include <any>
#include <cstdint>
#include <memory>

#include "../phases/costs.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

struct AllSchedules {
  std::vector<int64_t> R, S;  // [relative rank * q + k]
};

std::any prepare_circ_graph(const GenArgs& a) {
  const int64_t P = a.header.P;
  auto all = std::make_shared<AllSchedules>();
  if (P == 1) return std::shared_ptr<const AllSchedules>(all);
  const phases::CircGraph g(P);
  const auto q = static_cast<size_t>(g.q());
  all->R.resize(static_cast<size_t>(P) * q);
  all->S.resize(static_cast<size_t>(P) * q);
  std::vector<int64_t> R;
  for (int64_t r = 0; r < P; ++r) {
    g.recv_blocks(r, R);
    std::copy(R.begin(), R.end(), all->R.begin() + static_cast<std::ptrdiff_t>(r * g.q()));
  }
  for (int64_t r = 0; r < P; ++r)
    for (int64_t k = 0; k < g.q(); ++k)
      all->S[static_cast<size_t>(r * g.q() + k)] =
          all->R[static_cast<size_t>(((r + g.skip(k)) % P) * g.q() + k)];
  return std::shared_ptr<const AllSchedules>(all);
}

void generate_circ_graph(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, rank = b.rank();
  b.set_stage(0);
  const OpId own = b.copy({kOut, rank * n, n}, {kIn, 0, n});
  if (P == 1 || n == 0) return;
  const auto& all = *std::any_cast<const std::shared_ptr<const AllSchedules>&>(*a.prepared);
  const phases::CircGraph g(P);
  const phases::CircChunks ch(n, a.params->integer("seg"), a.header.elem_size, false);
  const int64_t q = g.q(), N = ch.count;
  constexpr OpId kMissing = kNoOp - 1;
  // got[root * N + j]: the receive of root's chunk j (the own block's: the copy).
  std::vector<OpId> got(static_cast<size_t>(P * N), kMissing);
  for (int64_t j = 0; j < N; ++j) got[static_cast<size_t>(rank * N + j)] = own;
  const auto chunk = [&](int64_t root, int64_t j) {
    return Region{kOut, root * n + ch.off(j), ch.len(j)};
  };
  int64_t round = 0;
  phases::circ_graph_rounds(q, N, [&](int64_t k, int64_t offset) {
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(1 + round++, UINT16_MAX)));
    const int64_t to = (rank + g.skip(k)) % P, from = (rank - g.skip(k) % P + P) % P;
    for (int64_t root = 0; root < P; ++root) {
      const int64_t r = (rank - root + P) % P;
      const int64_t sb = all.S[static_cast<size_t>(r * q + k)] + offset;
      const int64_t rb = all.R[static_cast<size_t>(r * q + k)] + offset;
      const bool sends = sb >= 0 && to != root, recvs = rb >= 0 && r != 0;
      const int64_t sj = std::min(sb, N - 1), rj = std::min(rb, N - 1);
      OpId& rslot = got[static_cast<size_t>(root * N + std::max<int64_t>(rj, 0))];
      const bool recv_first =
          sends && recvs && sj == rj && got[static_cast<size_t>(root * N + sj)] == kMissing;
      if (recv_first) rslot = b.recv(from, chunk(root, rj));
      if (sends) {
        const OpId dep = got[static_cast<size_t>(root * N + sj)];
        b.send(to, chunk(root, sj), {dep == kMissing ? kNoOp : dep});
      }
      if (recvs && !recv_first) rslot = b.recv(from, chunk(root, rj));
    }
  });
}

// One port: a rank's sends over all roots are the sends of every relative rank of one
// broadcast, which delivers N chunks to each of P - 1 ranks: (P - 1) N messages of n / N.
Cost cost_circ_graph(const CostArgs& a) {
  if (a.P <= 1) return {};
  const double seg = static_cast<double>(a.params->integer("seg"));
  const double N = phases::cost::pieces(a.bytes, seg);
  const auto m = static_cast<double>(a.P - 1) * N;
  return Cost{m, m * a.bytes / N, 0};
}

const Registrar reg{{
    .collective = Collective::allgather,
    .name = "circ_graph",
    .summary = "MPICH's circulant-graph allgather: P circulant-graph broadcasts, one per root, "
               "run round by round together",
    .phases = "copy the own block into place; n - 1 + q rounds: in round k mod q, for each "
              "root in turn, send root's chunk S[k] to r + Skip[k] and receive root's chunk "
              "R[k] from r - Skip[k] (bcast:circ_graph's schedule relative to that root)",
    .cost = "(P - 1)(N alpha + n beta), N = ceil(n / seg) chunks per block (one port: every "
            "rank sends each chunk it forwards as its own message, (P - 1) N in all)",
    .reference = "MPICH MPIR_Allgather_intra_circ_graph and MPII_circ_graph_create_all "
                 "(src/mpi/coll/allgather/allgather_intra_circ_graph.c, "
                 "src/mpi/coll/algorithms/circ_graph/circ_graph.c); [Träff 2025]",
    .mpi_equivalents = {"mpich:circ_graph"},
    .params = {segment_param("128KiB",
                             "chunk size in bytes, rounded down to whole elements, at least "
                             "one (MPIR_CVAR_CIRC_GRAPH_CHUNK_SIZE); 0: each block in one "
                             "piece")},
    .restrictions = {},
    .prepare = prepare_circ_graph,
    .generate = generate_circ_graph,
    .model = cost_circ_graph,
}};

}  // namespace
}  // namespace collkit
