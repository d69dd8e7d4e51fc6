// allgather:hier: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allgather:hier` prints them).
// Algorithm:    node-aware (hierarchical) allgather, allgather:hier(gather=A, inter=B, bcast=C),
//               three named algorithms run on sub-groups (phases/compose.hpp)
// Phases:       with q ranks per node and N nodes:
//               1. gather: A gathers the node's q blocks to its leader (local rank 0);
//               2. inter: B allgathers among the leaders, one per node, blocks of q*count (a
//                  node's blocks; round-robin nodes: then put in rank order by local copies);
//               3. bcast: C broadcasts all P blocks from each leader to its node.
// Restrictions: needs the placement (--rpn, --order) with every node holding the same number of
//               ranks (rpn divides P); any count; MPI_IN_PLACE.
#include "../phases/compose.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

using phases::BufferMap;
using phases::run_on_group;
using phases::SubAlgorithm;

struct HierPrepared {
  SubAlgorithm gather, inter, bcast;
};

std::any prepare_hier(const GenArgs& a) {
  const ScheduleHeader& h = a.header;
  const NodeMap nm(h.placement, h.P);
  nm.require_uniform(h.algorithm);
  const int64_t q = nm.node_size(0), N = nm.nodes();
  HierPrepared p;
  p.gather = SubAlgorithm(a.params->algorithm("gather"), h.count, h.elem_size);
  p.inter = SubAlgorithm(a.params->algorithm("inter"), h.count * q, h.elem_size);
  p.bcast = SubAlgorithm(a.params->algorithm("bcast"), h.count * h.P, h.elem_size);
  p.gather.prepare(q, 0, "gather");
  if (N > 1) p.inter.prepare(N, 0, "inter");
  p.bcast.prepare(q, 0, "bcast");
  return p;
}

void generate_hier(const GenArgs& a, RankBuilder& b) {
  const auto& p = std::any_cast<const HierPrepared&>(*a.prepared);
  const int64_t P = a.header.P, n = a.header.count, rank = b.rank();
  const NodeMap nm(a.header.placement, P);
  const int64_t q = nm.node_size(0), N = nm.nodes();
  const int64_t node = nm.node_of(rank), local = nm.local_of(rank);
  const auto in_node = [&](int64_t l) { return nm.rank_of(node, l); };
  const Region all{kOut, 0, P * n};
  const bool contiguous = a.header.placement.order == NodeOrder::contiguous || q == 1 || N == 1;
  uint16_t stage = 0;

  // Phase 1: the node's blocks to its leader, in local order: with one node that is all of
  // `out` already; else a scratch the inter part reads.
  const Region node_blocks =
      local == 0 && N > 1 ? Region{b.scratch(q * n), 0, q * n} : Region{kOut, 0, q * n};
  std::vector<OpId> done = run_on_group(b, p.gather.bound(q, 0), local, in_node,
                                        BufferMap{{kIn, 0, n}, node_blocks}, {}, stage, &stage);

  // Phase 2: the leaders exchange their nodes' blocks; node m's arrive as block m, which is
  // ranks m q .. m q + q - 1 when the placement is contiguous.
  if (local == 0 && N > 1) {
    const Region gathered = contiguous ? all : Region{b.scratch(P * n), 0, P * n};
    done = run_on_group(
        b, p.inter.bound(N, 0), node, [&](int64_t m) { return nm.rank_of(m, 0); },
        BufferMap{node_blocks, gathered}, done, stage, &stage);
    if (!contiguous) {  // block (m, l) to rank_of(m, l)'s place
      b.set_stage(stage++);
      done = phases::join(b, done);
      std::vector<OpId> moved;
      for (int64_t m = 0; m < N; ++m)
        for (int64_t l = 0; l < q; ++l)
          moved.push_back(
              b.copy({kOut, nm.rank_of(m, l) * n, n}, {gathered.buf, (m * q + l) * n, n}, done));
      done = std::move(moved);
    }
  }

  // Phase 3: every block from the leader to its node.
  run_on_group(b, p.bcast.bound(q, 0), local, in_node, BufferMap{{kIn, 0, 0}, all}, done, stage);
}

const Registrar reg{{
    .collective = Collective::allgather,
    .name = "hier",
    .summary = "node-aware: a named gather to each node's leader, a named allgather among the "
               "leaders, a named bcast in each node",
    .phases = "gather the node's blocks to its first rank; allgather the nodes' blocks among "
              "those leaders (blocks of q count; round-robin nodes: then local copies into rank "
              "order); bcast all P blocks within each node",
    .cost = "T_gather(q) + T_inter(N, q n) + T_bcast(q, P n), each part's cost at its group "
            "size; only the inter part crosses the network",
    .reference = "Fan & Kumar 2022, future work (split the processes by node, then run within and "
                 "across nodes), applied to the allgather; the gather / allgather / bcast form "
                 "of Open MPI coll/han's allgather (Luo et al., Cluster 2020)",
    .params = {{.name = "gather",
                .type = ParamType::algorithm,
                .default_value = "gather:binomial",
                .doc = "within each node: a gather to the node's first rank",
                .grid = {"gather:binomial", "gather:linear"},
                .collectives = {Collective::gather}},
               {.name = "inter",
                .type = ParamType::algorithm,
                .default_value = "allgather:rd",
                .doc = "across nodes: an allgather among one rank per node",
                .grid = {"allgather:rd", "allgather:ring"},
                .collectives = {Collective::allgather}},
               {.name = "bcast",
                .type = ParamType::algorithm,
                .default_value = "bcast:binomial",
                .doc = "within each node, from its first rank: all P blocks",
                .grid = {"bcast:binomial", "bcast:knomial"},
                .collectives = {Collective::bcast}}},
    .restrictions = {.needs_placement = true},
    .prepare = prepare_hier,
    .generate = generate_hier,
    .model = {},  // the parts' closed forms: reduce and bcast algorithms declare none yet
}};

}  // namespace
}  // namespace collkit
