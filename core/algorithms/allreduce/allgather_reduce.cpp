// allreduce:allgather_reduce: its summary, phases in brief, cost and reference are said once, in
// its Registrar at the end of this file (`collkit algorithms allreduce:allgather_reduce` prints
// them).
// Algorithm:    allreduce:allgather_reduce(allgather=A): every rank gathers every rank's operand
//               with the named allgather A (phases/compose.hpp), then reduces them locally. It
//               trades bandwidth (P n bytes received) for latency: only A's rounds cross the
//               network, and no reduction waits on a message but the last.
// Phases:       1. A gathers the P input vectors into a scratch buffer of P n elements, rank q's
//                  at block q;
//               2. copy block 0 into out, then out = out (+) block q for q = 1 .. P-1, in rank
//                  order, so every rank computes the same left-to-right tree. (Open MPI reduces
//                  its blocks into block 0 from the right, x_{P-1} (+) ... (+) x_0, which is the
//                  same result for a commutative op; rank order also serves the others.)
// Restrictions: none of its own (any P, any op); A's own (allgather:hier needs a placement, which
//               a composed part is not given).
#include "../phases/compose.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

using phases::BufferMap;
using phases::run_on_group;
using phases::SubAlgorithm;

std::any prepare_allgather_reduce(const GenArgs& a) {
  SubAlgorithm gather(a.params->algorithm("allgather"), a.header.count, a.header.elem_size);
  gather.prepare(a.header.P, 0, "allgather");
  return gather;
}

void generate_allgather_reduce(const GenArgs& a, RankBuilder& b) {
  const auto& gather = std::any_cast<const SubAlgorithm&>(*a.prepared);
  const int64_t P = a.header.P, n = a.header.count, rank = b.rank();
  const BufId all = b.scratch(P * n);
  uint16_t stage = 0;
  const std::vector<OpId> gathered = run_on_group(
      b, gather.bound(P, 0), rank, [](int64_t q) { return q; },
      BufferMap{{kIn, 0, n}, {all, 0, P * n}}, {}, stage, &stage);
  // Under MPI_IN_PLACE `in` is `out`: the copy waits for the whole allgather, which read it.
  b.set_stage(stage);
  OpId last = b.copy({kOut, 0, n}, {all, 0, n}, gathered);
  for (int64_t q = 1; q < P; ++q)
    last = b.reduce({kOut, 0, n}, {all, q * n, n}, Side::dst_first, {last});
}

Cost cost_allgather_reduce(const CostArgs& a) {
  const double reduced = static_cast<double>(a.P - 1) * a.bytes;
  return a.params->algorithm("allgather").cost(a.P, a.bytes) + Cost{0, 0, reduced};
}

const Registrar reg{{
    .collective = Collective::allreduce,
    .name = "allgather_reduce",
    .summary = "a named allgather of every rank's vector, then a local reduction of the P "
               "vectors in rank order (short messages)",
    .phases = "allgather the P input vectors into scratch (allgather=A); copy rank 0's into out "
              "and reduce the others into it in rank order",
    .cost = "T_allgather(P, n) + (P - 1) n gamma (allgather:bruck: numC alpha + (P - 1) n beta; "
            "every rank receives (P - 1) n bytes)",
    .reference = "Open MPI ompi_coll_base_allreduce_intra_allgather_reduce (coll/base, 5.0)",
    .mpi_equivalents = {},  // Open MPI 5's allreduce algorithm 7; 4.1 has none
    .params = {{.name = "allgather",
                .type = ParamType::algorithm,
                .default_value = "allgather:bruck",
                .doc = "the allgather of the operands",
                .grid = {"allgather:bruck", "allgather:ring", "allgather:rd"},
                .collectives = {Collective::allgather}}},
    .restrictions = {},
    .prepare = prepare_allgather_reduce,
    .generate = generate_allgather_reduce,
    .model = cost_allgather_reduce,
}};

}  // namespace
}  // namespace collkit
