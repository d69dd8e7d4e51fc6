// allreduce:hier: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allreduce:hier` prints them).
// Algorithm:    node-aware (hierarchical) allreduce, allreduce:hier(intra=A, inter=B, bcast=C),
//               composed of three named algorithms run on sub-groups (phases/compose.hpp)
// Phases:       intra a reduce (default reduce:binomial):
//                 1. intra: A reduces each node's vectors to its leader (local rank 0);
//                 2. inter: B allreduces the node results among the leaders, one per node;
//                 3. bcast: C broadcasts the result from each leader to its node.
//               intra an allreduce, e.g. allreduce:rm(a16) (Ruefenacht et al. 2017's on-node
//               all-to-all stage; bcast is not used):
//                 1. intra: A allreduces within each node, so every rank holds its node's sum;
//                 2. inter: B allreduces among the ranks of the same local index, one per node
//                    (every rank takes part, as a recursive multiplying stage over nodes).
// Restrictions: needs the placement (--rpn, --order); intra an allreduce needs every node to hold
//               the same number of ranks (rpn divides P). Non-commutative ops: the parts keep
//               rank order when the placement is contiguous and every part keeps rank order;
//               round-robin node groups do not, and then it needs a commutative op.
#include "../phases/compose.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

using phases::BufferMap;
using phases::run_on_group;
using phases::SubAlgorithm;

struct HierPrepared {
  bool columns = false;  // intra is an allreduce: the inter part runs on every local index
  SubAlgorithm intra, inter, bcast;
};

std::any prepare_hier(const GenArgs& a) {
  const ScheduleHeader& h = a.header;
  const NodeMap nm(h.placement, h.P);
  HierPrepared p;
  const Algorithm& intra = a.params->algorithm("intra");
  p.columns = intra.collective() == Collective::allreduce;
  if (p.columns)
    nm.require_uniform(
        h.algorithm, "intra=" + intra.canonical() + " runs the inter-node part on every local rank",
        "give an rpn that divides P, or intra a reduce");
  p.intra = SubAlgorithm(intra, h.count, h.elem_size);
  p.inter = SubAlgorithm(a.params->algorithm("inter"), h.count, h.elem_size);
  p.bcast = SubAlgorithm(a.params->algorithm("bcast"), h.count, h.elem_size);
  for (int64_t n = 0; n < nm.nodes(); ++n) {
    p.intra.prepare(nm.node_size(n), 0, "intra");
    if (!p.columns) p.bcast.prepare(nm.node_size(n), 0, "bcast");
  }
  if (nm.nodes() > 1) p.inter.prepare(nm.nodes(), 0, "inter");
  return p;
}

void generate_hier(const GenArgs& a, RankBuilder& b) {
  const auto& p = std::any_cast<const HierPrepared&>(*a.prepared);
  const int64_t n = a.header.count, rank = b.rank();
  const NodeMap nm(a.header.placement, a.header.P);
  const int64_t node = nm.node_of(rank), local = nm.local_of(rank), size = nm.node_size(node);
  const auto in_node = [&](int64_t l) { return nm.rank_of(node, l); };
  const auto across = [&](int64_t m) { return nm.rank_of(m, local); };
  const Region in{kIn, 0, n}, out{kOut, 0, n};
  const bool crosses = nm.nodes() > 1;
  uint16_t stage = 0;

  // Phase 1 (intra): the node's result lands in a scratch vector when it still has to cross
  // nodes (the inter part reads it as its input), else straight in `out`.
  const bool holds_node_result = p.columns || local == 0;
  const Region node_result = crosses && holds_node_result ? Region{b.scratch(n), 0, n} : out;
  std::vector<OpId> done = run_on_group(b, p.intra.bound(size, 0), local, in_node,
                                        BufferMap{in, node_result}, {}, stage, &stage);

  // Phase 2 (inter): leaders (or every local index) allreduce the node results.
  if (crosses && (p.columns || local == 0))
    done = run_on_group(b, p.inter.bound(nm.nodes(), 0), node, across, BufferMap{node_result, out},
                        done, stage, &stage);

  // Phase 3 (bcast): from each leader to its node.
  if (!p.columns)
    run_on_group(b, p.bcast.bound(size, 0), local, in_node, BufferMap{{kIn, 0, 0}, out}, done,
                 stage);
}

bool hier_needs_commutative(const ParamValues& v, const Placement& pl) {
  return (pl.order == NodeOrder::round_robin && pl.rpn > 1) ||
         v.algorithm("intra").needs_commutative(pl) || v.algorithm("inter").needs_commutative(pl);
}

const Registrar reg{{
    .collective = Collective::allreduce,
    .name = "hier",
    .summary = "node-aware: a named intra-node part, a named inter-node allreduce, a named bcast",
    .phases =
        "intra a reduce: reduce to each node's leader, allreduce among the leaders, bcast "
        "in each node; intra an allreduce (Ruefenacht et al. 2017's on-node all-to-all stage): "
        "allreduce in each node, then among the ranks of each local index",
    .cost = "T_intra(rpn) + T_inter(nodes) + T_bcast(rpn), each part's cost at its group size "
            "(nodes = ceil(P / rpn)); only the inter part crosses the network",
    .reference = "Ruefenacht et al. 2017 section 8 (on-node all-to-all stage); Open MPI coll/han "
                 "(Luo et al., "
                 "Cluster 2020); MPICH MPIR_Allreduce_intra_smp",
    .params = {{.name = "intra",
                .type = ParamType::algorithm,
                .default_value = "reduce:binomial",
                .doc = "within each node: a reduce to the node's first rank, or an allreduce "
                       "(then bcast is not used and inter runs on every local index)",
                .grid = {"reduce:binomial", "allreduce:rd"},
                .collectives = {Collective::reduce, Collective::allreduce}},
               {.name = "inter",
                .type = ParamType::algorithm,
                .default_value = "allreduce:rd",
                .doc = "across nodes: an allreduce among one rank per node",
                .grid = {"allreduce:rd", "allreduce:rm(a4)"},
                .collectives = {Collective::allreduce}},
               {.name = "bcast",
                .type = ParamType::algorithm,
                .default_value = "bcast:binomial",
                .doc = "within each node, from its first rank (intra a reduce only)",
                .grid = {"bcast:binomial", "bcast:knomial"},
                .collectives = {Collective::bcast}}},
    .restrictions = {.needs_placement = true},
    .prepare = prepare_hier,
    .generate = generate_hier,
    .model = {},  // the parts' closed forms: reduce and bcast algorithms declare none yet
    .needs_commutative = hier_needs_commutative,
}};

}  // namespace
}  // namespace collkit
