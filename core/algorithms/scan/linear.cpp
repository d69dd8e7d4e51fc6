// scan:linear: its summary, phases in brief, cost and reference are said once, in its Registrar
// at the end of this file (`collkit algorithms scan:linear` prints them).
// Phases:       a chain 0 -> 1 -> ... -> P-1, segment by segment: rank r receives segment g of
//               ranks 0..r-1's prefix from r - 1, adds its own input after it (out = prefix (+)
//               in) and passes the segment on to r + 1 while the next one arrives (pipelining).
// Restrictions: none (any P, any count, any op: operands in rank order)
#include <algorithm>

#include "../phases/costs.hpp"
#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_linear(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, r = b.rank();
  const phases::Segments seg(
      n, phases::segment_elems(a.params->integer("seg"), a.header.elem_size, n));
  b.set_stage(0);
  const OpId own = b.copy({kOut, 0, n}, {kIn, 0, n});  // under MPI_IN_PLACE: nothing
  const BufId tmp = r > 0 ? b.scratch(n) : kIn;
  for (int64_t g = 0; g < seg.count(); ++g) {
    const int64_t off = seg.off(g), len = seg.len(g);
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(g, UINT16_MAX)));
    OpId ready = own;
    if (r > 0) {
      const OpId got = b.recv(r - 1, {tmp, off, len});
      ready = b.reduce({kOut, off, len}, {tmp, off, len}, Side::src_first, {got, own});
    }
    if (r + 1 < P) b.send(r + 1, {kOut, off, len}, {ready});
  }
}

Cost cost_linear(const CostArgs& a) {
  const int64_t seg_bytes = a.params->integer("seg");
  const double S = phases::cost::pieces(a.bytes, static_cast<double>(seg_bytes));
  const double m = a.bytes / S, steps = static_cast<double>(a.P - 1) + S - 1;
  return a.P == 1 ? Cost{} : Cost{steps, steps * m, steps * m};
}

const Registrar reg{{
    .collective = Collective::scan,
    .name = "linear",
    .summary = "a chain 0 -> 1 -> ... -> P-1 passing the running prefix on, segment by segment",
    .phases = "rank r receives ranks 0..r-1's prefix from r - 1 segment by segment, adds its "
              "own input after it and forwards each segment to r + 1 as soon as it is reduced",
    // Cost: (n: bytes per rank; S = ceil(n / seg) segments, m = n / S)
    .cost = "(P - 2 + S)(alpha + m beta + m gamma)",
    .reference = "Open MPI coll_base scan linear (mca_coll_basic_scan_intra); pipelined as "
                 "bcast:pipeline is",
    .mpi_equivalents = {"ompi:linear"},
    .params = {segment_param("0")},
    .restrictions = {},
    .prepare = {},
    .generate = generate_linear,
    .model = cost_linear,
}};

}  // namespace
}  // namespace collkit
