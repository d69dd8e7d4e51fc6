// allreduce:swing: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allreduce:swing` prints them).
// Algorithm:    Swing (De Sensi, Bonato, Saam, Hoefler, NSDI 2024) on P = 2^L ranks laid out
//               row-major on a torus of `dims` (each a power of two; "P": one ring of P). Step s
//               (0 .. L-1) changes one coordinate: dimension t(s) taken in turn, skipping the
//               dimensions whose steps are done, at that dimension's own step j; rank x moves
//               it by +rho(j) if its coordinate is even, -rho(j) if odd, mod the dimension's
//               size, rho(j) = sum_{i <= j} (-2)^i = 1, -1, 3, -5, 11, ... (the paper's pi).
//               The sequence t(s), j(s) is the same for every rank, as in the authors' library.
// Phases:       the bandwidth-optimal form: the vector in P blocks (block b: rank b's); R(x, s)
//               is the set x reaches from step s on (R(x, L) = {x}, R(x, s) = R(x, s+1) u R(peer(x,
//               s), s+1)). Reduce-scatter: at step s, send the blocks R(peer, s+1) (packed in block
//               order, runs of adjacent blocks one copy), receive R(x, s+1) and reduce them in;
//               allgather: the steps in reverse, send R(x, s+1), receive R(peer, s+1).
// Restrictions: P = 2^L, the product of dims; a commutative op (the groups are not rank
//               ranges). The paper's latency-optimal form (the whole vector each step) is left
//               out: the groups a rank meets are not the same on every rank (rank 0 of 8
//               combines {0,1} with {6,7}, rank 1 {0,1} with {2,3}), so its ranks' results would
//               differ in floating point, which the verifier refuses.
#include <algorithm>
#include <any>
#include <bit>
#include <cstdint>
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

// The torus and the step sequence, the same for every rank.
struct Swing {
  std::vector<int64_t> dims, stride;
  std::vector<int64_t> dim_of, shift;  // per step: the dimension, rho of its own step
  int64_t peer(int64_t x, int64_t s) const {
    const auto t = static_cast<size_t>(dim_of[static_cast<size_t>(s)]);
    const int64_t d = dims[t], c = x / stride[t] % d;
    const int64_t delta =
        c % 2 == 0 ? shift[static_cast<size_t>(s)] : -shift[static_cast<size_t>(s)];
    return x + ((c + delta) % d + d) % d * stride[t] - c * stride[t];
  }
  int64_t steps() const { return static_cast<int64_t>(dim_of.size()); }
};

std::any prepare_swing(const GenArgs& a) {
  const int64_t P = a.header.P;
  Swing g;
  phases::Torus t = phases::torus_of(a, true);
  g.dims = std::move(t.dims);
  g.stride = std::move(t.stride);
  const size_t D = g.dims.size();
  // As the authors' compute_peers: dimension (s + o) mod D, skipping those whose lg d steps
  // are done, each at its own next step. (The library's own step (s + finished) / D is that
  // count for tori of equal sizes; for unequal ones it repeats a step: 2x16 gets rho(2) twice.)
  std::vector<int64_t> left(D), taken(D, 0);
  for (size_t i = 0; i < D; ++i) left[i] = std::bit_width(static_cast<uint64_t>(g.dims[i])) - 1;
  const int64_t L = std::bit_width(static_cast<uint64_t>(P)) - 1;  // = sum of left
  for (int64_t s = 0; s < L; ++s) {
    size_t t = static_cast<size_t>(s) % D;
    while (taken[t] == left[t]) t = (t + 1) % D;
    int64_t rho = 0, term = 1;
    for (int64_t i = 0; i <= taken[t]; ++i, term *= -2) rho += term;
    ++taken[t];
    g.dim_of.push_back(static_cast<int64_t>(t));
    g.shift.push_back(rho);
  }
  return g;
}

// R(x, s) in ascending order.
void reach(const Swing& g, int64_t x, int64_t s, std::vector<int64_t>& out) {
  out.push_back(x);
  for (int64_t t = s; t < g.steps(); ++t) {
    reach(g, g.peer(x, t), t + 1, out);
  }
}
std::vector<int64_t> reach_sorted(const Swing& g, int64_t x, int64_t s) {
  std::vector<int64_t> out;
  reach(g, x, s, out);
  std::sort(out.begin(), out.end());
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
  const int64_t n = a.header.count, P = a.header.P, r = b.rank();
  const Region out{kOut, 0, n};
  b.set_stage(0);
  OpId ready = b.copy(out, {kIn, 0, n});
  if (P == 1) return;
  const auto& g = *std::any_cast<Swing>(a.prepared);
  const int64_t L = g.steps();
  const phases::Blocks blk{n, P};
  // Packs (or unpacks) the runs of `blocks` between `out` and a contiguous scratch buffer.
  const auto length = [&](const std::vector<std::pair<int64_t, int64_t>>& rs) {
    int64_t len = 0;
    for (const auto& [lo, hi] : rs) len += blk.begin(hi) - blk.begin(lo);
    return len;
  };
  for (int64_t s = 0; s < L; ++s) {
    b.set_stage(static_cast<uint16_t>(s + 1));
    const int64_t q = g.peer(r, s);
    const auto give = runs(reach_sorted(g, q, s + 1)), take = runs(reach_sorted(g, r, s + 1));
    const int64_t glen = length(give), tlen = length(take);
    const BufId pack = b.scratch(glen), tmp = b.scratch(tlen);
    std::vector<OpId> packed;
    for (int64_t off = 0; const auto& [lo, hi] : give) {
      const Region from = blk.region(kOut, lo, hi);
      if (from.len > 0) packed.push_back(b.copy({pack, off, from.len}, from, {ready}));
      off += from.len;
    }
    std::vector<OpId> joined{ready, glen > 0 ? b.send(q, {pack, 0, glen}, packed) : kNoOp};
    const OpId got = tlen > 0 ? b.recv(q, {tmp, 0, tlen}) : kNoOp;
    for (int64_t off = 0; const auto& [lo, hi] : take) {
      const Region into = blk.region(kOut, lo, hi);
      if (into.len > 0)
        joined.push_back(b.reduce(into, {tmp, off, into.len}, Side::src_first, {got, ready}));
      off += into.len;
    }
    ready = b.compute(0, joined);
  }
  for (int64_t s = L; s-- > 0;) {
    b.set_stage(static_cast<uint16_t>(2 * L - s));
    const int64_t q = g.peer(r, s);
    const auto give = runs(reach_sorted(g, r, s + 1)), take = runs(reach_sorted(g, q, s + 1));
    const int64_t glen = length(give), tlen = length(take);
    const BufId pack = b.scratch(glen), tmp = b.scratch(tlen);
    std::vector<OpId> packed;
    for (int64_t off = 0; const auto& [lo, hi] : give) {
      const Region from = blk.region(kOut, lo, hi);
      if (from.len > 0) packed.push_back(b.copy({pack, off, from.len}, from, {ready}));
      off += from.len;
    }
    std::vector<OpId> joined{ready, glen > 0 ? b.send(q, {pack, 0, glen}, packed) : kNoOp};
    const OpId got = tlen > 0 ? b.recv(q, {tmp, 0, tlen}) : kNoOp;
    for (int64_t off = 0; const auto& [lo, hi] : take) {
      const Region into = blk.region(kOut, lo, hi);
      if (into.len > 0) joined.push_back(b.copy(into, {tmp, off, into.len}, {got, ready}));
      off += into.len;
    }
    ready = b.compute(0, joined);
  }
}

Cost cost_swing(const CostArgs& a) {
  if (a.P <= 1) return {};
  const auto L = static_cast<double>(std::bit_width(static_cast<uint64_t>(a.P)) - 1);
  const double share = static_cast<double>(a.P - 1) / static_cast<double>(a.P) * a.bytes;
  return Cost{2 * L, 2 * share, share};
}

const Registrar reg{{
    .collective = Collective::allreduce,
    .name = "swing",
    .summary = "Swing, bandwidth-optimal: reduce-scatter + allgather whose peers swing +1, -1, "
               "+3, -5, ... round each torus dimension (short hops)",
    .phases = "a reduce-scatter over the lg P steps (to each step's peer the blocks it reaches "
              "from the next step on), then an allgather over the steps in reverse",
    .cost = "2 lg P alpha + 2 (P-1)/P n beta + (P-1)/P n gamma (the model has no distance: Swing's "
            "gain is fewer hops and "
            "less congestion on a torus, which `simulate --topology torus(...)` counts)",
    .reference = "De Sensi, Bonato, Saam, Hoefler, \"Swing: Short-cutting Rings for Higher "
                 "Bandwidth Allreduce\", NSDI 2024 (peers and step order as the authors' "
                 "libswing compute_peers)",
    .mpi_equivalents = {},
    .params = {{.name = "dims",
                .type = ParamType::word,
                .default_value = "P",
                .doc = "the torus the ranks lie on, row-major, each size a power of two, as "
                       "8x8 (the product must be P); P: one ring",
                .grid = {"P", "2x2", "4x2"},
                .check =
                    [](std::string_view d) {
                      phases::parse_torus_dims(d, "allreduce:swing", true);
                    }}},
    .restrictions = {.commutative_op = true, .power_of_two = true},
    .prepare = prepare_swing,
    .generate = generate_swing,
    .model = cost_swing,
}};

}  // namespace
}  // namespace collkit
