// allreduce:swing: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allreduce:swing` prints them).
// Algorithm:    Swing (De Sensi, Bonato, Saam, Hoefler, NSDI 2024) on P ranks laid out
//               row-major on a torus of `dims` ("P": one ring of P), each dimension folded onto
//               a power of two, or (nonpof2=direct) run on its own size when even, an odd one
//               folding one pair (phases/swing.hpp: the fold, the steps and the swing peers
//               +rho(j), -rho(j), rho(j) = 1, -1, 3, -5, 11, ...).
// Phases:       the bandwidth-optimal form. 1. fold, dimension by dimension, onto the V
//               virtual ranks; 2. on them, the vector in V blocks (block b: virtual rank b's);
//               R(x, s) is the set x reaches from step s on (R(x, L) = {x}, R(x, s) = R(x, s+1)
//               u R(peer(x, s), s+1)). Reduce-scatter: at step s, send the blocks R(peer, s+1)
//               \ R(x, s+1) (packed in block order, runs of adjacent blocks one copy), receive
//               R(x, s+1) \ R(peer, s+1) and reduce them in; allgather: the steps in reverse,
//               send R(x, s+1) \ R(peer, s+1), receive R(peer, s+1) \ R(x, s+1); 3. unfold,
//               the dimensions in reverse. On powers of two the two sets are disjoint (the
//               halving and doubling of the paper). On an even size they overlap: a block goes
//               only where it is not yet, so the allgather of block b is a tree, each rank
//               getting it once, at the step where b enters its reach, and the reduce-scatter
//               is that tree in reverse: every rank sends each block but its own once, (V-1)/V
//               of the vector in all.
// Restrictions: a commutative op (the groups are not rank ranges). The latency-optimal form is
//               allreduce:swing_lat (swing_lat.cpp).
#include "../phases/swing.hpp"

#include <algorithm>
#include <any>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../phases/blocks.hpp"
#include "../phases/torus.hpp"
#include "collkit/error.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

using phases::SwingTorus;

bool direct(const ParamValues& p) {
  return p.word("nonpof2") == "direct";
}

std::any prepare_swing(const GenArgs& a) {
  return phases::swing_torus(a, direct(*a.params));
}

// R(x, s) in ascending order.
void reach(const SwingTorus& g, int64_t x, int64_t s, std::vector<int64_t>& out) {
  out.push_back(x);
  for (int64_t t = s; t < g.steps(); ++t) {
    reach(g, g.peer(x, t), t + 1, out);
  }
}
std::vector<int64_t> reach_sorted(const SwingTorus& g, int64_t x, int64_t s) {
  std::vector<int64_t> out;
  reach(g, x, s, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}
// R(x, s+1) \ R(q, s+1): what x has at step s that its peer q lacks.
std::vector<int64_t> reach_beyond(const SwingTorus& g, int64_t x, int64_t q, int64_t s) {
  const std::vector<int64_t> mine = reach_sorted(g, x, s + 1), theirs = reach_sorted(g, q, s + 1);
  std::vector<int64_t> out;
  std::set_difference(mine.begin(), mine.end(), theirs.begin(), theirs.end(),
                      std::back_inserter(out));
  return out;
}

// Runs of adjacent blocks: [first block, end block) pairs.
std::vector<std::pair<int64_t, int64_t>> runs(const std::vector<int64_t>& blocks) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const int64_t b : blocks) {
    if (!out.empty() && out.back().second == b)
      ++out.back().second;
    else
      out.emplace_back(b, b + 1);
  }
  return out;
}

void generate_swing(const GenArgs& a, RankBuilder& b) {
  const int64_t n = a.header.count, P = a.header.P, x = b.rank();
  const Region out{kOut, 0, n};
  b.set_stage(0);
  OpId ready = b.copy(out, {kIn, 0, n});
  if (P == 1) return;
  const auto& g = *std::any_cast<SwingTorus>(a.prepared);
  const int64_t L = g.steps(), r = g.vrank(x);
  // Phase 1: fold. A rank folded away waits for the result (Phase 3).
  ready = phases::swing_fold(b, g, out, ready);
  const auto unfold_stage = static_cast<uint16_t>(2 * L + 1);
  if (r < 0) {
    b.set_stage(unfold_stage);
    phases::swing_unfold(b, g, out, ready);
    return;
  }
  // Phase 2: reduce-scatter and allgather on the virtual ranks.
  const phases::Blocks blk{n, g.V};
  const auto length = [&](const std::vector<std::pair<int64_t, int64_t>>& rs) {
    int64_t len = 0;
    for (const auto& [lo, hi] : rs) len += blk.begin(hi) - blk.begin(lo);
    return len;
  };
  // One step with peer q: the runs of blocks `give` packed from `out` into scratch and sent,
  // those of `take` received into scratch and reduced into `out` (the reduce-scatter) or copied
  // there (the allgather).
  const auto step = [&](int64_t q, const std::vector<int64_t>& give_blocks,
                        const std::vector<int64_t>& take_blocks, bool reducing) {
    const auto give = runs(give_blocks), take = runs(take_blocks);
    const int64_t glen = length(give), tlen = length(take);
    const BufId pack = b.scratch(glen), tmp = b.scratch(tlen);
    std::vector<OpId> packed;
    for (int64_t off = 0; const auto& [lo, hi] : give) {
      const Region from = blk.region(kOut, lo, hi);
      if (from.len > 0) packed.push_back(b.copy({pack, off, from.len}, from, {ready}));
      off += from.len;
    }
    std::vector<OpId> joined{ready, glen > 0 ? b.send(g.real(q), {pack, 0, glen}, packed) : kNoOp};
    const OpId got = tlen > 0 ? b.recv(g.real(q), {tmp, 0, tlen}) : kNoOp;
    for (int64_t off = 0; const auto& [lo, hi] : take) {
      const Region into = blk.region(kOut, lo, hi), from{tmp, off, into.len};
      if (into.len > 0)
        joined.push_back(reducing ? b.reduce(into, from, Side::src_first, {got, ready})
                                  : b.copy(into, from, {got, ready}));
      off += into.len;
    }
    ready = b.compute(0, joined);
  };
  for (int64_t s = 0; s < L; ++s) {  // reduce-scatter: hand the peer what it reaches, I do not
    b.set_stage(static_cast<uint16_t>(s + 1));
    const int64_t q = g.peer(r, s);
    step(q, reach_beyond(g, q, r, s), reach_beyond(g, r, q, s), true);
  }
  for (int64_t s = L; s-- > 0;) {  // allgather: the steps in reverse, the sets swapped
    b.set_stage(static_cast<uint16_t>(2 * L - s));
    const int64_t q = g.peer(r, s);
    step(q, reach_beyond(g, r, q, s), reach_beyond(g, q, r, s), false);
  }
  // Phase 3: unfold.
  b.set_stage(unfold_stage);
  phases::swing_unfold(b, g, out, ready);
}

Cost cost_swing(const CostArgs& a) {
  if (a.P <= 1) return {};
  const phases::SwingShape t =
      phases::swing_shape(a.params->word("dims"), a.P, "allreduce:swing", direct(*a.params));
  const auto L = static_cast<double>(t.steps);
  const double f = static_cast<double>(t.folded), n = a.bytes;
  const double share = static_cast<double>(t.V - 1) / static_cast<double>(t.V) * n;
  return Cost{2 * L + 2 * f, 2 * share + 2 * f * n, share + f * n};
}

const Registrar reg{{
    .collective = Collective::allreduce,
    .name = "swing",
    .summary = "Swing, bandwidth-optimal: reduce-scatter + allgather whose peers swing +1, -1, "
               "+3, -5, ... round each torus dimension (short hops)",
    .phases = "fold each torus dimension onto a power of two (nonpof2=direct: onto its own size "
              "if even, one pair folding if odd; V virtual ranks); a reduce-scatter over the L "
              "steps (to each step's peer the blocks it reaches from the next step on and the "
              "sender does not), then an allgather over the steps in reverse; unfold",
    .cost = "2 (L + f) alpha + 2 ((V-1)/V + f) n beta + ((V-1)/V + f) n gamma, V = the product "
            "of the virtual sizes v over the dims d (2^floor(lg d); direct: d, or d - 1 if odd), "
            "L = the sum of ceil(lg v), f = the dims that fold (the model has no distance: "
            "Swing's gain is fewer hops and less congestion on a torus, which `simulate "
            "--topology torus(...)` counts)",
    .reference = "De Sensi, Bonato, Saam, Hoefler, \"Swing: Short-cutting Rings for Higher "
                 "Bandwidth Allreduce\", NSDI 2024 (peers and step order as the authors' "
                 "libswing compute_peers, which steps an even size d mod d in ceil(lg d) steps; "
                 "nonpof2=direct's one-pair fold of an odd size is collkit's)",
    .mpi_equivalents = {},
    .params = {{.name = "dims",
                .type = ParamType::word,
                .default_value = "P",
                .doc = "the torus the ranks lie on, row-major, as 8x8 (the product must be P; "
                       "a size not a power of two folds); P: one ring",
                .grid = {"P", "2x2", "4x2", "3x3", "3x5"},
                .check =
                    [](std::string_view d) {
                      phases::parse_torus_dims(d, "allreduce:swing", false);
                    }},
               {.name = "nonpof2",
                .type = ParamType::word,
                .default_value = "fold",
                .doc = "a dimension whose size d is not a power of two: fold (onto 2^floor(lg "
                       "d), lg steps) or direct (ceil(lg d) steps mod d, the paper's; an odd d "
                       "folds one pair onto d - 1 first)",
                .grid = {"fold", "direct"},
                .check =
                    [](std::string_view v) {
                      if (v != "fold" && v != "direct")
                        fail(ErrorKind::name, "allreduce:swing: nonpof2 = '" + std::string(v) +
                                                  "' must be fold or direct");
                    }}},
    .restrictions = {.commutative_op = true},
    .prepare = prepare_swing,
    .generate = generate_swing,
    .model = cost_swing,
}};

}  // namespace
}  // namespace collkit
