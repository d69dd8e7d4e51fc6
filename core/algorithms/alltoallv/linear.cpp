// alltoallv:linear: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms alltoallv:linear` prints them).
// Phases:       the own block is a local copy; every receive (from r + i) and every send (to
//               r - i), i = 1..P-1, is posted at once, straight between the user's buffers at
//               their displacements (spread-out: each rank starts with a different peer); an
//               empty block is no message.
// Restrictions: none (any P, any count matrix, any displacements)
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_linear(const GenArgs& a, RankBuilder& b) {
  const ScheduleHeader& h = a.header;
  const int64_t P = h.P, r = b.rank();
  const BlockLayout in(h, Io::in, r), out(h, Io::out, r);
  b.set_stage(0);
  b.copy({kOut, out.offset(r), out.len(r)}, {kIn, in.offset(r), in.len(r)});
  for (int64_t i = 1; i < P; ++i) {
    const int64_t src = (r + i) % P;
    if (out.len(src) > 0) b.recv(src, {kOut, out.offset(src), out.len(src)});
  }
  for (int64_t i = 1; i < P; ++i) {
    const int64_t dst = (r - i + P) % P;
    if (in.len(dst) > 0) b.send(dst, {kIn, in.offset(dst), in.len(dst)});
  }
}

Cost cost_linear(const CostArgs& a) {
  const double m = static_cast<double>(a.P - 1);
  return {m, m * a.bytes, 0};
}

const Registrar reg{{
    .collective = Collective::alltoallv,
    .name = "linear",
    .summary = "spread-out: every receive and send posted at once, each rank from its own start",
    .phases = "the own block is a local copy; receives from r + i and sends to r - i, i = 1..P-1, "
              "all posted at once between the user's buffers",
    // Cost: (n: bytes of the largest block)
    .cost = "(P - 1)(alpha + n beta) at most (the start-ups overlap where the network allows)",
    .reference = "Open MPI coll_base alltoallv basic linear (mca_coll_basic_alltoallv_intra); "
                 "the spread-out exchange of Fan et al., HPDC 2022",
    .mpi_equivalents = {"ompi:basic_linear"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_linear,
    .model = cost_linear,
}};

}  // namespace
}  // namespace collkit
