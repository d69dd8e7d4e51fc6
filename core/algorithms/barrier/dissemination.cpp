// barrier:dissemination: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms barrier:dissemination` prints them).
// Phases:       ceil(log_{k+1} P) rounds; in round i (distance d = (k+1)^i) every rank sends a
//               zero-length message to rank + j d and receives one from rank - j d (mod P), for
//               j = 1..k with j d < P; a round's sends wait for the previous round's receives.
//               After round i a rank has heard (through chains of messages) from the (k+1)^(i+1)
//               ranks below it, so after the last round from all P.
// Restrictions: none (any P; no data, so no operation)
#include <span>
#include <vector>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_dissemination(const GenArgs& a, RankBuilder& b) {
  const int64_t P = b.P(), rank = b.rank(), k = a.params->integer("k");
  const Region z{kOut, 0, 0};
  std::vector<OpId> heard;  // every receive so far: what a send passes on
  uint16_t stage = 0;
  for (int64_t d = 1; d < P; d *= k + 1, ++stage) {
    b.set_stage(stage);
    // The offsets j d (j = 1..k, over all rounds) are distinct base-(k+1) numbers below P, so
    // each ordered pair of ranks carries at most one message: matching needs no order.
    const size_t before = heard.size();
    for (int64_t j = 1; j <= k && j * d < P; ++j) {
      b.send((rank + j * d) % P, z, std::span<const OpId>(heard.data(), before));
      heard.push_back(b.recv((rank - j * d + P) % P, z));
    }
    if (d > P / (k + 1)) break;  // d * (k + 1) >= P: done (and no overflow)
  }
}

const Registrar reg{{
    .collective = Collective::barrier,
    .name = "dissemination",
    .summary = "n-way dissemination: k zero-length messages per rank and round, log_{k+1} P rounds",
    .phases = "in round i each rank signals rank + j (k+1)^i for j = 1..k and waits for the k "
              "signals from rank - j (k+1)^i before the next round",
    // Cost: (k messages per round in flight at once)
    .cost = "ceil(log_{k+1} P)(alpha + (k - 1) o)",
    .reference =
        "Hoefler, Mehlan, Mietke, Rehm, \"Fostering BSP by the n-way dissemination "
        "barrier\" (2006); Ruefenacht et al. 2017 section 7; k = 1 is the dissemination barrier of "
        "Hensgen, Finkel, Manber (1988)",
    .mpi_equivalents = {"ompi:bruck", "impi:dissemination"},
    .params = {{.name = "k",
                .type = ParamType::integer,
                .default_value = "1",
                .min = 1,
                .max = 64,
                .doc = "messages per rank and round (k = 1: the classic dissemination barrier)",
                .grid = {"1", "2", "5"}}},
    .restrictions = {},
    .prepare = {},
    .generate = generate_dissemination,
}};

}  // namespace
}  // namespace collkit
