// allgather:rm: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allgather:rm` prints them).
// Algorithm:    recursive multiplying allgather (allgather:rm), the k-nomial generalisation of
//               recursive doubling; stages in allreduce:rm's schedule language
//               (collkit/rm/stages.hpp), e.g. rm(a4,a4) (P = 16, 4-nomial), rm(c6m2,a2,a2,e6m2).
// Phases:       0. copy the own input into out block r (nothing under MPI_IN_PLACE);
//               collapse (split schedules): each group of B ranks below T sends its block to
//                  the group's last rank, which stands for the group (virtual rank w);
//               1..s. factor stage i, base B, stage mask m: virtual rank w holds the blocks of
//                  its aligned group of m virtual ranks (contiguous real blocks, as virtual ranks
//                  keep rank order) and exchanges them with the B - 1 ranks whose digit
//                  (w / m) mod B differs, sending to digits d+1, d+2, ... as allreduce:rm;
//               expand: the group's last rank sends the whole result to the others.
// Restrictions: factored and split schedules (merged ones, mRgGaB, are for reductions); the
//               empty list is MPICH's recursive doubling schedule c2rm2, a2, ..., e2rm2.
#include <any>
#include <vector>

#include "collkit/error.hpp"
#include "collkit/registry.hpp"
#include "collkit/rm/stages.hpp"

namespace collkit {
namespace {

void generate_rm(const GenArgs& a, RankBuilder& b) {
  const rm::Plan& plan = std::any_cast<const rm::Plan&>(*a.prepared);
  const int64_t P = a.header.P, n = a.header.count, x = b.rank();
  const auto blocks = [&](int64_t lo, int64_t hi) { return Region{kOut, lo * n, (hi - lo) * n}; };
  // The real blocks of the aligned group of m virtual ranks that w belongs to.
  const auto group = [&](int64_t w, int64_t m) {
    const int64_t g = w - w % m;
    return blocks(plan.first_rank(g), plan.first_rank(g + m));
  };
  b.set_stage(0);
  std::vector<OpId> writers{b.copy(blocks(x, x + 1), {kIn, 0, n})};
  std::vector<OpId> pending;  // a collapsed-away rank's send, before `out` is written again
  const auto& st = plan.stages;
  for (size_t i = 0; i < st.size(); ++i) {
    b.set_stage(static_cast<uint16_t>(i + 1));
    const rm::Stage& s = st[i];
    const int64_t w = plan.virtual_rank(x);
    const int64_t leader = s.base > 0 ? x / s.base * s.base + s.base - 1 : x;
    switch (s.kind) {
      case rm::StageKind::collapse:
        if (x >= s.threshold) break;
        if (x != leader) {
          pending.push_back(b.send(leader, blocks(x, x + 1), writers));
        } else {
          for (int64_t j = x - (s.base - 1); j < x; ++j)
            writers.push_back(b.recv(j, blocks(j, j + 1)));
        }
        break;
      case rm::StageKind::expand:
        if (x >= s.threshold) break;
        if (x != leader) {
          writers.push_back(b.recv(leader, blocks(0, P), pending));
        } else {
          for (int64_t j = x - (s.base - 1); j < x; ++j) b.send(j, blocks(0, P), writers);
        }
        break;
      case rm::StageKind::factor: {
        if (w < 0) break;
        const int64_t m = plan.mask[i], B = s.base, d = (w / m) % B, first = w - d * m;
        const Region mine = group(w, m);
        for (int64_t k = 1; k < B; ++k)
          b.send(plan.real_rank(first + (d + k) % B * m), mine, writers);
        for (int64_t j = 0; j < B; ++j) {
          if (j == d) continue;
          const int64_t peer = first + j * m;
          writers.push_back(b.recv(plan.real_rank(peer), group(peer, m)));
        }
        break;
      }
      case rm::StageKind::merge:
      case rm::StageKind::invmerge:
        fail(ErrorKind::unsupported, "allgather:rm: merged schedules are for reductions");
    }
  }
}

std::any prepare_rm(const GenArgs& a) {
  rm::Plan plan = rm::make_plan(a.params->list("stages"), a.header.P);
  if (plan.shape == rm::Shape::merged)
    fail(ErrorKind::unsupported, a.header.algorithm +
                                     ": merged schedules (mRgGaB ... nRgGaB) fold remainder "
                                     "ranks into a reduction; use a factored or split schedule");
  return plan;
}

Cost cost_rm(const CostArgs& a) {
  const rm::Plan plan = rm::make_plan(a.params->list("stages"), a.P);
  const double per = static_cast<double>(a.P) / static_cast<double>(plan.inner) * a.bytes;
  Cost c;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const rm::Stage& s = plan.stages[i];
    const auto b = static_cast<double>(s.base - 1);
    switch (s.kind) {
      case rm::StageKind::factor:
        c = c + Cost{b, b * static_cast<double>(plan.mask[i]) * per, 0};
        break;
      case rm::StageKind::collapse:
        c = c + Cost{b, b * a.bytes, 0};
        break;
      case rm::StageKind::expand:
        c = c + Cost{b, b * static_cast<double>(a.P) * a.bytes, 0};
        break;
      default:
        fail(ErrorKind::unsupported, "allgather:rm: merged schedules are for reductions");
    }
  }
  return c;
}

const Registrar reg{{
    .collective = Collective::allgather,
    .name = "rm",
    .summary = "recursive multiplying (k-nomial): multi-way exchanges by a stage list (a4,a4 / "
               "c6m2,a2,a2,e6m2)",
    .phases = "optional collapse (cTmB) onto the groups' last ranks; factor stages aB exchanging "
              "the blocks held with B-1 peers; expand (eTmB). No stages: MPICH recursive "
              "doubling (c2rm2, a2..., e2rm2)",
    // Cost: plus (B - 1)(alpha + n beta) and (B - 1)(alpha + P n beta) for collapse and expand (n:
    //   bytes per block, inner: ranks of the hypercuboid)
    .cost = "sum_i (B_i - 1)(alpha + m_i (P / inner) n beta) over the factor stages",
    .reference = "Ruefenacht, Bull, Booth, Parallel Computing 2017 applied to "
                 "allgather; MPICH MPIR_Allgather_intra_recexch (k-nomial recursive exchange)",
    .params = {{.name = "stages",
                .type = ParamType::list,
                .default_value = "",
                .doc = "the schedule, e.g. a4,a4 or c6m2,a2,a2,e6m2 (factored or split); "
                       "empty: recursive doubling"}},
    .restrictions = {},
    .prepare = prepare_rm,
    .generate = generate_rm,
    .model = cost_rm,
}};

}  // namespace
}  // namespace collkit
