// alltoallv:pairwise: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms alltoallv:pairwise` prints them).
// Phases:       the own block is a local copy; P - 1 steps, step i sending to r + i and
//               receiving from r - i, each step waiting for the one before (a sendrecv per
//               step); an empty block is no message.
// Restrictions: none (any P, any count matrix, any displacements)
#include <vector>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_pairwise(const GenArgs& a, RankBuilder& b) {
  const ScheduleHeader& h = a.header;
  const int64_t P = h.P, r = b.rank();
  const BlockLayout in(h, Io::in, r), out(h, Io::out, r);
  b.set_stage(0);
  std::vector<OpId> prev{b.copy({kOut, out.offset(r), out.len(r)}, {kIn, in.offset(r), in.len(r)})};
  for (int64_t i = 1; i < P; ++i) {
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(i, UINT16_MAX)));
    const int64_t dst = (r + i) % P, src = (r - i + P) % P;
    std::vector<OpId> step;
    if (in.len(dst) > 0) step.push_back(b.send(dst, {kIn, in.offset(dst), in.len(dst)}, prev));
    if (out.len(src) > 0) step.push_back(b.recv(src, {kOut, out.offset(src), out.len(src)}, prev));
    if (!step.empty()) prev = std::move(step);
  }
}

Cost cost_pairwise(const CostArgs& a) {
  const double m = static_cast<double>(a.P - 1);
  return {m, m * a.bytes, 0};
}

const Registrar reg{{
    .collective = Collective::alltoallv,
    .name = "pairwise",
    .summary = "P - 1 sendrecv steps, step i to r + i and from r - i",
    .phases = "the own block is a local copy; step i sends to r + i and receives from r - i, "
              "after the step before",
    // Cost: (n: bytes of the largest block)
    .cost = "(P - 1)(alpha + n beta) at most, one step after another",
    .reference = "Open MPI coll_base alltoallv pairwise (ompi_coll_base_alltoallv_intra_pairwise)",
    .mpi_equivalents = {"ompi:pairwise"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_pairwise,
    .model = cost_pairwise,
}};

}  // namespace
}  // namespace collkit
