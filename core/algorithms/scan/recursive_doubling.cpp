// scan:recursive_doubling: its summary, phases in brief, cost and reference are said once, in
// its Registrar at the end of this file (`collkit algorithms scan:recursive_doubling` prints
// them).
// Phases:       partial = in, out = in; for mask = 1, 2, 4, ...: exchange partial with
//               r ^ mask (if it exists); the higher of the two puts the lower's partial in
//               front of its partial and of its out, the lower appends the higher's partial to
//               its own. partial always covers a contiguous range of ranks, so every operand
//               stays in rank order (any op).
// Restrictions: none (any P, any count)
#include <bit>
#include <vector>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_rd(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, r = b.rank();
  b.set_stage(0);
  const BufId partial = b.scratch(n), tmp = b.scratch(n);
  const OpId aside = b.copy({partial, 0, n}, {kIn, 0, n});
  OpId last_partial = aside;
  OpId last_out = b.copy({kOut, 0, n}, {kIn, 0, n}, {aside});  // in place: nothing
  std::vector<OpId> tmp_readers;
  uint16_t stage = 1;
  for (int64_t mask = 1; mask < P; mask <<= 1) {
    const int64_t dst = r ^ mask;
    if (dst >= P) continue;
    b.set_stage(stage++);
    const OpId snd = b.send(dst, {partial, 0, n}, {last_partial});
    const OpId rcv = b.recv(dst, {tmp, 0, n}, tmp_readers);
    tmp_readers.clear();
    if (r > dst) {  // the lower ranks' partial goes in front
      last_partial =
          b.reduce({partial, 0, n}, {tmp, 0, n}, Side::src_first, {snd, rcv, last_partial});
      last_out = b.reduce({kOut, 0, n}, {tmp, 0, n}, Side::src_first, {rcv, last_out});
      tmp_readers = {last_partial, last_out};
    } else {
      last_partial =
          b.reduce({partial, 0, n}, {tmp, 0, n}, Side::dst_first, {snd, rcv, last_partial});
      tmp_readers = {last_partial};
    }
  }
}

Cost cost_rd(const CostArgs& a) {
  const double lg = static_cast<double>(std::bit_width(static_cast<uint64_t>(a.P - 1)));
  return {lg, lg * a.bytes, 2 * lg * a.bytes};
}

const Registrar reg{{
    .collective = Collective::scan,
    .name = "recursive_doubling",
    .summary = "ceil(lg P) exchanges of the running partial with rank ^ 2^k",
    .phases = "exchange the partial of a growing block of ranks with r ^ mask; the higher rank "
              "puts the lower block's partial in front of its partial and its result",
    // Cost: (n: bytes per rank)
    .cost = "ceil(lg P)(alpha + n beta + 2 n gamma) at worst",
    .reference = "MPICH MPIR_Scan_intra_recursive_doubling; Open MPI coll_base scan "
                 "recursive_doubling",
    .mpi_equivalents = {"mpich:recursive_doubling", "ompi:recursive_doubling"},
    .params = {},
    .restrictions = {},
    .prepare = {},
    .generate = generate_rd,
    .model = cost_rd,
}};

}  // namespace
}  // namespace collkit
