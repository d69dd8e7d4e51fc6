// reduce_scatter:noncommutative: its summary, phases in brief, cost and reference are said
// once, in its Registrar at the end of this file (`collkit algorithms
// reduce_scatter:noncommutative` prints them).
// Phases:       1. copy the P input blocks into scratch, packed, block i at position bitrev(i);
//               2. lg P halvings, partner at distance 1 first: the range of positions held is
//                  halved (the lower rank keeps the lower half), the half the partner keeps sent
//                  and the other's operand received, the lower ranks' partial put on the left,
//                  so every element is combined in rank order; rank r ends with position
//                  bitrev(r), which holds block r; 3. copy it to out.
// Restrictions: P a power of two (as MPICH's); any op, commutative or not
#include <bit>
#include <vector>

#include "../phases/irregular.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

int64_t bitrev(int64_t i, int lg) {
  int64_t out = 0;
  for (int k = 0; k < lg; ++k) out |= ((i >> k) & 1) << (lg - 1 - k);
  return out;
}

void generate_noncommutative(const GenArgs& a, RankBuilder& b) {
  const ScheduleHeader& h = a.header;
  const int64_t P = h.P, r = b.rank();
  const int lg = std::bit_width(static_cast<uint64_t>(P)) - 1;
  const BlockLayout in(h, Io::in, r);
  const std::vector<int64_t> at =
      phases::packed_offsets(P, [&](int64_t pos) { return in.len(bitrev(pos, lg)); });
  b.set_stage(0);
  const BufId acc = b.scratch(at.back()), tmp = b.scratch(at.back());
  std::vector<OpId> copies;
  for (int64_t pos = 0; pos < P; ++pos) {
    const int64_t blk = bitrev(pos, lg);
    copies.push_back(b.copy({acc, at[static_cast<size_t>(pos)], in.len(blk)},
                            {kIn, in.offset(blk), in.len(blk)}));
  }
  std::vector<OpId> last = copies;
  std::vector<OpId> tmp_readers;
  int64_t first = 0, size = P;  // positions [first, first + size) held
  uint16_t stage = 1;
  for (int64_t mask = 1; mask < P; mask <<= 1, size /= 2) {
    b.set_stage(stage++);
    const int64_t peer = r ^ mask;
    const bool low = (r & mask) == 0;
    const int64_t half = size / 2;
    const int64_t keep = low ? first : first + half, give = low ? first + half : first;
    const int64_t klo = at[static_cast<size_t>(keep)], khi = at[static_cast<size_t>(keep + half)];
    const int64_t glo = at[static_cast<size_t>(give)], ghi = at[static_cast<size_t>(give + half)];
    const OpId snd = ghi > glo ? b.send(peer, {acc, glo, ghi - glo}, last) : kNoOp;
    if (khi > klo) {
      const OpId rcv = b.recv(peer, {tmp, klo, khi - klo}, tmp_readers);
      std::vector<OpId> deps = last;
      deps.push_back(rcv);
      deps.push_back(snd);
      // The lower ranks' partial on the left: ours if we are the low one.
      last = {b.reduce({acc, klo, khi - klo}, {tmp, klo, khi - klo},
                       low ? Side::dst_first : Side::src_first, deps)};
      tmp_readers = last;
    }
    first = keep;
  }
  b.set_stage(stage);
  std::vector<OpId> deps = last;
  deps.insert(deps.end(), copies.begin(), copies.end());
  b.copy({kOut, 0, in.len(r)}, {acc, at[static_cast<size_t>(bitrev(r, lg))], in.len(r)}, deps);
}

Cost cost_noncommutative(const CostArgs& a) {
  const double lg = static_cast<double>(std::bit_width(static_cast<uint64_t>(a.P)) - 1);
  const double share = static_cast<double>(a.P - 1) * a.bytes;
  return {lg, share, share};
}

const Registrar reg{{
    .collective = Collective::reduce_scatter,
    .name = "noncommutative",
    .summary = "recursive halving in rank order on bit-reversed blocks (any op)",
    .phases = "place block i at position bitrev(i); lg P halvings, partner at distance 1 first, "
              "the lower ranks' partial on the left; rank r ends with position bitrev(r) = block r",
    // Cost: (n: bytes of the largest block)
    .cost = "lg P alpha + (P - 1) n (beta + gamma) at most",
    .reference = "MPICH MPIR_Reduce_scatter_intra_noncommutative (carried to per-rank counts)",
    .mpi_equivalents = {"mpich:noncommutative"},
    .params = {},
    .restrictions = {.power_of_two = true},
    .prepare = {},
    .generate = generate_noncommutative,
    .model = cost_noncommutative,
}};

}  // namespace
}  // namespace collkit
