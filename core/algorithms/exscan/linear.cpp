// exscan:linear: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms exscan:linear` prints them).
// Phases:       a chain 0 -> 1 -> ... -> P-1, segment by segment: rank 0 sends its input; rank r
//               receives ranks 0..r-1's prefix straight into out and, unless it is the last,
//               sends prefix (+) in (computed in scratch) to r + 1. Under MPI_IN_PLACE the
//               input is copied aside before the prefix lands on it.
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
  const bool forwards = r + 1 < P;
  const BufId sum = r > 0 && forwards ? b.scratch(n) : kIn;
  for (int64_t g = 0; g < seg.count(); ++g) {
    const int64_t off = seg.off(g), len = seg.len(g);
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(g, UINT16_MAX)));
    if (r == 0) {
      if (forwards) b.send(1, {kIn, off, len});
      continue;
    }
    if (!forwards) {
      b.recv(r - 1, {kOut, off, len});
      continue;
    }
    const OpId aside = b.copy({sum, off, len}, {kIn, off, len});
    const OpId got = b.recv(r - 1, {kOut, off, len}, {aside});
    const OpId red = b.reduce({sum, off, len}, {kOut, off, len}, Side::src_first, {got, aside});
    b.send(r + 1, {sum, off, len}, {red});
  }
}

Cost cost_linear(const CostArgs& a) {
  const int64_t seg_bytes = a.params->integer("seg");
  const double S = phases::cost::pieces(a.bytes, static_cast<double>(seg_bytes));
  const double m = a.bytes / S, steps = static_cast<double>(a.P - 1) + S - 1;
  return a.P == 1 ? Cost{} : Cost{steps, steps * m, (steps - 1) * m};
}

const Registrar reg{{
    .collective = Collective::exscan,
    .name = "linear",
    .summary = "a chain 0 -> 1 -> ... -> P-1 passing the running prefix on, segment by segment",
    .phases = "rank 0 sends its input to 1; rank r receives ranks 0..r-1's prefix into out and "
              "sends it (+) its input on to r + 1, segment by segment",
    // Cost: (n: bytes per rank; S = ceil(n / seg) segments, m = n / S)
    .cost = "(P - 2 + S)(alpha + m beta) + (P - 3 + S) m gamma",
    .reference = "Open MPI coll_base exscan linear (mca_coll_basic_exscan_intra); pipelined as "
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
