// alltoall:bruck_local: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms alltoall:bruck_local` prints them).
// Algorithm:    locality-aware Bruck all-to-all (alltoall:bruck_local(r=R)): Bruck inside each
//               node, then Bruck across nodes, both alltoall:bruck(r=R) run on sub-groups
//               (phases/compose.hpp)
// Phases:       with q ranks per node, N nodes, rank (node m, local l), N-block bundles:
//               1. pack: bundle l' = the blocks for (m', l') for every node m';
//               2. intra: alltoall:bruck(r) among the node's q ranks, blocks of N*count, so rank
//                  (m, l) holds every block of its node bound for local index l on any node;
//               3. transpose the bundles to one per destination node;
//               4. inter: alltoall:bruck(r) among the N ranks of local index l, blocks of
//                  q*count; each arrives as the q blocks of one source node;
//               5. unpack to `out` by source rank (contiguous placement: already in place).
// Restrictions: needs the placement (--rpn, --order) with every node holding the same number of
//               ranks (rpn divides P); any P, any count.
#include <algorithm>

#include "../phases/bruck.hpp"
#include "../phases/compose.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

using phases::BufferMap;
using phases::run_on_group;
using phases::SubAlgorithm;

struct LocalPrepared {
  SubAlgorithm intra, inter;
};

std::any prepare_bruck_local(const GenArgs& a) {
  const ScheduleHeader& h = a.header;
  const NodeMap nm(h.placement, h.P);
  nm.require_uniform(h.algorithm);
  const int64_t q = nm.node_size(0), N = nm.nodes();
  const Algorithm bruck("alltoall:bruck(r=" + a.params->word("r") + ")");
  LocalPrepared p;
  p.intra = SubAlgorithm(bruck, h.count * N, h.elem_size);
  p.inter = SubAlgorithm(bruck, h.count * q, h.elem_size);
  p.intra.prepare(q, 0, "intra");
  p.inter.prepare(N, 0, "inter");
  return p;
}

void generate_bruck_local(const GenArgs& a, RankBuilder& b) {
  const auto& p = std::any_cast<const LocalPrepared&>(*a.prepared);
  const int64_t P = a.header.P, n = a.header.count, rank = b.rank();
  const NodeMap nm(a.header.placement, P);
  const int64_t q = nm.node_size(0), N = nm.nodes();
  const int64_t node = nm.node_of(rank), local = nm.local_of(rank);
  const bool contiguous = a.header.placement.order == NodeOrder::contiguous || q == 1;

  // Phase 1: pack, bundle l' of N blocks: [l' * N + m'] = in[rank_of(m', l')].
  b.set_stage(0);
  const BufId packed = b.scratch(P * n), gathered = b.scratch(P * n), bynode = b.scratch(P * n);
  std::vector<OpId> deps;
  for (int64_t l = 0; l < q; ++l)
    for (int64_t m = 0; m < N; ++m)
      deps.push_back(b.copy({packed, (l * N + m) * n, n}, {kIn, nm.rank_of(m, l) * n, n}));

  // Phase 2: Bruck within the node; bundle l_src arrives from (node, l_src).
  uint16_t stage = 1;
  deps = run_on_group(
      b, p.intra.bound(q, 0), local, [&](int64_t l) { return nm.rank_of(node, l); },
      BufferMap{{packed, 0, P * n}, {gathered, 0, P * n}}, deps, stage, &stage);

  // Phase 3: transpose, [m' * q + l_src] = gathered[l_src * N + m'].
  b.set_stage(stage++);
  deps = phases::join(b, deps);
  std::vector<OpId> moved;
  for (int64_t m = 0; m < N; ++m)
    for (int64_t l = 0; l < q; ++l)
      moved.push_back(b.copy({bynode, (m * q + l) * n, n}, {gathered, (l * N + m) * n, n}, deps));

  // Phase 4: Bruck across nodes among the ranks of this local index; block (m_src, l_src)
  // lands at [m_src * q + l_src], which contiguously is out[rank_of(m_src, l_src)].
  const Region result = contiguous ? Region{kOut, 0, P * n} : Region{b.scratch(P * n), 0, P * n};
  deps = run_on_group(
      b, p.inter.bound(N, 0), node, [&](int64_t m) { return nm.rank_of(m, local); },
      BufferMap{{bynode, 0, P * n}, result}, moved, stage, &stage);

  // Phase 5: unpack by source rank.
  if (contiguous) return;
  b.set_stage(stage);
  deps = phases::join(b, deps);
  for (int64_t m = 0; m < N; ++m)
    for (int64_t l = 0; l < q; ++l)
      b.copy({kOut, nm.rank_of(m, l) * n, n}, {result.buf, (m * q + l) * n, n}, deps);
}

// Bruck among q ranks with blocks of N n, then among N with blocks of q n (no placement: one
// node of P ranks).
Cost cost_bruck_local(const CostArgs& a) {
  const int64_t q = a.placement.given() ? std::min(a.placement.rpn, a.P) : a.P;
  const int64_t N = (a.P + q - 1) / q;
  const Algorithm bruck("alltoall:bruck(r=" + a.params->word("r") + ")");
  return bruck.cost(q, static_cast<double>(N) * a.bytes) +
         bruck.cost(N, static_cast<double>(q) * a.bytes);
}

const Registrar reg{{
    .collective = Collective::alltoall,
    .name = "bruck_local",
    .summary = "locality-aware Bruck: radix-r Bruck inside each node, then across nodes",
    .phases = "pack the blocks into per-local-index bundles; Bruck among the node's ranks "
              "(blocks of N count); transpose to per-node bundles; Bruck among the ranks of one "
              "local index (blocks of q count); unpack by source rank",
    .cost = "(numC(q) + numC(N)) alpha + (numD(q) N + numD(N) q) n beta for q ranks per node "
            "and N nodes (numC, numD of alltoall:bruck), plus 2-3 P n of local copies",
    .reference =
        "Fan & Kumar 2022, future work (split the processes by node; Bruck within each node, "
        "then across nodes)",
    .params = {bruck_radix_param()},
    .restrictions = {.needs_placement = true},
    .prepare = prepare_bruck_local,
    .generate = generate_bruck_local,
    .model = cost_bruck_local,
}};

}  // namespace
}  // namespace collkit
