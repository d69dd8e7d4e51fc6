// allreduce:bucket: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allreduce:bucket` prints them).
// Algorithm:    the bucket (multi-dimensional ring) allreduce of Jain and Sabharwal (ICS 2010)
//               on P ranks laid out row-major on a torus of `dims` (any sizes; "P": one ring
//               of P, which is allreduce:ring). Ranks that differ in one coordinate only form
//               that dimension's ring; every message goes to a neighbour on the torus.
// Phases:       reduce-scatter along dimension 0, 1, ..., D-1 in turn: along dimension t the
//               part a rank holds (the whole vector for t = 0) is cut into d_t blocks and
//               reduced round that dimension's ring (d_t - 1 steps: at step s the rank at
//               coordinate c sends block c - s to c + 1 and reduces block c - s - 1 from c - 1
//               in), leaving it block c + 1, the part the next dimension cuts; then the
//               allgathers in the reverse order (dimension D-1 first), each d_t - 1 steps of
//               passing block c + 1 - s on to c + 1 and receiving block c - s from c - 1.
//               The rings are written here rather than with phases/ring.hpp's, whose rings run
//               over all P ranks: these run over the d_t ranks of one line of the torus and
//               over a part of the vector.
// Restrictions: P is the product of dims; a commutative op (each block is combined in the ring
//               order of its own position, as allreduce:ring).
#include <algorithm>
#include <any>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../phases/blocks.hpp"
#include "../phases/torus.hpp"
#include "collkit/error.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

using phases::Torus;

std::any prepare_bucket(const GenArgs& a) {
  return phases::torus_of(a, false);
}

// One dimension's ring as a rank takes part in it: the part of `out` it cuts and where the rank
// sits on the ring.
struct Level {
  int64_t lo = 0;  // first element of the part
  phases::Blocks blk;
  int64_t d = 1, c = 0;
  int64_t left = 0, right = 0;  // global ranks at c - 1 and c + 1
  Region block(int64_t i) const {
    const int64_t k = ((i % d) + d) % d;
    return Region{kOut, lo + blk.begin(k), blk.begin(k + 1) - blk.begin(k)};
  }
};

void generate_bucket(const GenArgs& a, RankBuilder& b) {
  const int64_t n = a.header.count, P = a.header.P, r = b.rank();
  b.set_stage(0);
  OpId ready = b.copy({kOut, 0, n}, {kIn, 0, n});
  if (P == 1) return;
  const auto& g = *std::any_cast<Torus>(a.prepared);
  std::vector<Level> levels;
  int64_t lo = 0, len = n;
  for (size_t t = 0; t < g.dims.size(); ++t) {
    const int64_t d = g.dims[t];
    if (d == 1) continue;
    Level lv;
    lv.lo = lo;
    lv.blk = phases::Blocks{len, d};
    lv.d = d;
    lv.c = r / g.stride[t] % d;
    lv.left = r + ((lv.c + d - 1) % d - lv.c) * g.stride[t];
    lv.right = r + ((lv.c + 1) % d - lv.c) * g.stride[t];
    levels.push_back(lv);
    const Region kept = lv.block(lv.c + 1);
    lo = kept.off;
    len = kept.len;
  }
  uint16_t stage = 1;
  int64_t longest = 0;
  for (const Level& lv : levels) longest = std::max(longest, lv.blk.begin(1));
  const BufId tmp = b.scratch(longest);
  // Reduce-scatters, dimension by dimension.
  for (const Level& lv : levels) {
    for (int64_t s = 0; s + 1 < lv.d; ++s, ++stage) {
      b.set_stage(stage);
      const Region give = lv.block(lv.c - s), take = lv.block(lv.c - s - 1);
      std::vector<OpId> joined{ready};
      if (give.len > 0) joined.push_back(b.send(lv.right, give, {ready}));
      if (take.len > 0) {
        const OpId got = b.recv(lv.left, {tmp, 0, take.len}, {ready});
        joined.push_back(b.reduce(take, {tmp, 0, take.len}, Side::src_first, {got}));
      }
      ready = b.compute(0, joined);
    }
  }
  // Allgathers, in the reverse order.
  for (size_t k = levels.size(); k-- > 0;) {
    const Level& lv = levels[k];
    for (int64_t s = 0; s + 1 < lv.d; ++s, ++stage) {
      b.set_stage(stage);
      const Region give = lv.block(lv.c + 1 - s), take = lv.block(lv.c - s);
      std::vector<OpId> joined{ready};
      if (give.len > 0) joined.push_back(b.send(lv.right, give, {ready}));
      if (take.len > 0) joined.push_back(b.recv(lv.left, take, {ready}));
      ready = b.compute(0, joined);
    }
  }
}

Cost cost_bucket(const CostArgs& a) {
  if (a.P <= 1) return {};
  std::vector<int64_t> dims =
      phases::parse_torus_dims(a.params->word("dims"), "allreduce:bucket", false);
  if (dims.empty()) dims = {a.P};
  Cost c;
  double part = a.bytes;
  for (const int64_t d : dims) {
    const double dd = static_cast<double>(d), share = (dd - 1) / dd * part;
    c = c + Cost{2 * (dd - 1), 2 * share, share};
    part /= dd;
  }
  return c;
}

const Registrar reg{{
    .collective = Collective::allreduce,
    .name = "bucket",
    .summary = "bucket: a ring reduce-scatter along each torus dimension in turn, then ring "
               "allgathers in the reverse order (neighbour messages only)",
    .phases = "for each dimension t, d_t - 1 ring reduce-scatter steps on the part left by the "
              "dimensions before; then, last dimension first, d_t - 1 ring allgather steps",
    .cost = "sum over dimensions t of 2 (d_t - 1) alpha + 2 (d_t - 1)/d_t n_t beta + (d_t - "
            "1)/d_t n_t gamma, n_t = n / (d_0 ... d_{t-1}) (the model has no distance: on a "
            "torus every message is one hop, which `simulate --topology torus(...)` counts)",
    .reference = "Jain, Sabharwal, \"Optimal Bucket Algorithms for Large MPI Collectives on "
                 "Torus Interconnects\", ICS 2010",
    .mpi_equivalents = {},
    .params = {{.name = "dims",
                .type = ParamType::word,
                .default_value = "P",
                .doc = "the torus the ranks lie on, row-major, any sizes, as 8x8 or 3x4 (the "
                       "product must be P); P: one ring",
                .grid = {"P", "4x2", "2x2x2", "3x4", "4x3"},
                .check =
                    [](std::string_view d) {
                      phases::parse_torus_dims(d, "allreduce:bucket", false);
                    }}},
    .restrictions = {.commutative_op = true, .power_of_two = false, .min_P = 1},
    .prepare = prepare_bucket,
    .generate = generate_bucket,
    .model = cost_bucket,
}};

}  // namespace
}  // namespace collkit
