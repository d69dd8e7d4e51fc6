// allreduce:swing_lat: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allreduce:swing_lat` prints them).
// Algorithm:    Swing's latency-optimal form (De Sensi, Bonato, Saam, Hoefler, NSDI 2024): the
//               torus, its fold and the swing peers of allreduce:swing (phases/swing.hpp).
// Phases:       1. fold, dimension by dimension, onto the V = 2^L virtual ranks; 2. lg V steps:
//               send the whole vector to the step's peer, receive the peer's and reduce it in;
//               3. unfold, the dimensions in reverse.
// Restrictions: an op exact under any grouping (integer sum, product, min or max; a logical or
//               bitwise op). At step s a rank combines the group it has reached with its peer's,
//               and these groups are not the same on every rank (rank 0 of 8 combines {0,1} with
//               {6,7}, rank 1 {0,1} with {2,3}): no order of operands makes the trees agree, so
//               in floating point the ranks' results would differ, which MPI's allreduce and the
//               verifier refuse.
#include <any>
#include <bit>
#include <cstdint>
#include <string_view>

#include "../phases/swing.hpp"
#include "../phases/torus.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

using phases::SwingTorus;

std::any prepare_swing_lat(const GenArgs& a) {
  return phases::swing_torus(a);
}

void generate_swing_lat(const GenArgs& a, RankBuilder& b) {
  const int64_t n = a.header.count, x = b.rank();
  const Region out{kOut, 0, n};
  b.set_stage(0);
  OpId ready = b.copy(out, {kIn, 0, n});
  if (a.header.P == 1) return;
  const auto& g = *std::any_cast<SwingTorus>(a.prepared);
  const int64_t L = g.steps(), v = g.vrank(x);
  const auto unfold_stage = static_cast<uint16_t>(L + 1);

  // Phase 1: fold. A rank folded away waits for the result (Phase 3).
  ready = phases::swing_fold(b, g, out, ready);
  if (v < 0) {
    b.set_stage(unfold_stage);
    phases::swing_unfold(b, g, out, ready);
    return;
  }

  // Phase 2: the whole vector to each step's peer.
  const Region t{b.scratch(n), 0, n};
  OpId tmp_free = kNoOp;  // the last op that read `t`
  for (int64_t s = 0; s < L; ++s) {
    b.set_stage(static_cast<uint16_t>(s + 1));
    const int64_t q = g.real(g.peer(v, s));
    const OpId sent = b.send(q, out, {ready});
    const OpId got = b.recv(q, t, {tmp_free});
    ready = tmp_free = b.reduce(out, t, q < x ? Side::src_first : Side::dst_first, {sent, got});
  }

  // Phase 3: unfold.
  b.set_stage(unfold_stage);
  phases::swing_unfold(b, g, out, ready);
}

Cost cost_swing_lat(const CostArgs& a) {
  if (a.P <= 1) return {};
  const phases::SwingShape t =
      phases::swing_shape(a.params->word("dims"), a.P, "allreduce:swing_lat");
  const double L = static_cast<double>(std::bit_width(static_cast<uint64_t>(t.V)) - 1);
  const double f = static_cast<double>(t.folded);
  return Cost{L + 2 * f, (L + 2 * f) * a.bytes, (L + f) * a.bytes};
}

const Registrar reg{{
    .collective = Collective::allreduce,
    .name = "swing_lat",
    .summary = "Swing, latency-optimal: the whole vector exchanged and reduced at each of lg P "
               "steps, with the peers +1, -1, +3, -5, ... round each torus dimension (short hops)",
    .phases = "fold each torus dimension onto a power of two (V virtual ranks); lg V steps, each "
              "sending the vector to the step's swing peer and reducing the peer's in; unfold",
    .cost = "(lg V + 2 f) (alpha + n beta) + (lg V + f) n gamma, V = the product of "
            "2^floor(lg d) over the dims d, f = the dims that are not powers of two (the model "
            "has no distance: Swing's gain is fewer hops on a torus, which `simulate --topology "
            "torus(...)` counts)",
    .reference = "De Sensi, Bonato, Saam, Hoefler, \"Swing: Short-cutting Rings for Higher "
                 "Bandwidth Allreduce\", NSDI 2024 (the latency-optimal form; peers and step "
                 "order as the authors' libswing compute_peers)",
    .mpi_equivalents = {},
    .params = {{.name = "dims",
                .type = ParamType::word,
                .default_value = "P",
                .doc = "the torus the ranks lie on, row-major, as 8x8 (the product must be P; "
                       "a size not a power of two folds); P: one ring",
                .grid = {"P", "2x2", "4x2", "3x3", "3x5"},
                .check =
                    [](std::string_view d) {
                      phases::parse_torus_dims(d, "allreduce:swing_lat", false);
                    }}},
    .restrictions = {.commutative_op = true, .exact_op = true},
    .prepare = prepare_swing_lat,
    .generate = generate_swing_lat,
    .model = cost_swing_lat,
}};

}  // namespace
}  // namespace collkit
