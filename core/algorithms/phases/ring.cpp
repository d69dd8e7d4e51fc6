// Ring reduce-scatter and ring allgather (see ring.hpp).
#include "ring.hpp"

#include <algorithm>
#include <span>

namespace collkit::phases {
namespace {

int64_t mod(int64_t a, int64_t m) {
  return ((a % m) + m) % m;
}

// The segments of block q: [off, off + len) pieces of at most `seg` elements (seg 0: one piece).
template <class F>
void for_each_segment(const Blocks& blk, BufId buf, int64_t q, int64_t seg, F&& f) {
  const Region whole = blk.region(buf, q, q + 1);
  if (whole.len == 0) return;
  const int64_t step = seg > 0 ? seg : whole.len;
  int64_t g = 0;
  for (int64_t off = 0; off < whole.len; off += step, ++g)
    f(g, Region{buf, whole.off + off, std::min(step, whole.len - off)});
}

}  // namespace

std::vector<int64_t> ring_steps(const Blocks& blk, int64_t v) {
  const int64_t P = blk.nb;
  std::vector<int64_t> steps;
  if (blk.n >= P) {
    steps.resize(static_cast<size_t>(std::max<int64_t>(P - 1, 0)));
    for (int64_t s = 0; s + 1 < P; ++s) steps[static_cast<size_t>(s)] = s;
    return steps;
  }
  // Step s sends block v - s and receives block v - s - 1: it moves data iff (v - s) mod P is in
  // [0, n].
  for (int64_t t = 0; t <= blk.n; ++t)
    if (const int64_t s = mod(v - t, P); s + 1 < P) steps.push_back(s);
  std::sort(steps.begin(), steps.end());
  return steps;
}

OpId RingResult::send_at(int64_t s, int64_t g) const {
  const auto it = std::lower_bound(steps.begin(), steps.end(), s);
  if (it == steps.end() || *it != s) return kNoOp;
  const auto i = static_cast<size_t>(it - steps.begin());
  const size_t k = step_begin[i] + static_cast<size_t>(g);
  return k < step_begin[i + 1] ? sends[k] : kNoOp;
}

RingResult reduce_scatter_ring(RankBuilder& b, const Blocks& blk, int64_t seg, OpId out_ready,
                               BufId tmp, uint16_t stage0) {
  return reduce_scatter_ring(b, blk, kOut, 0, seg, out_ready, tmp, stage0);
}

RingResult reduce_scatter_ring(RankBuilder& b, const Blocks& blk, BufId vec, int64_t origin,
                               int64_t seg, OpId out_ready, BufId tmp, uint16_t stage0) {
  const int64_t P = blk.nb, r = b.rank(), v = mod(r - origin, P);
  const int64_t next = mod(r + 1, P), prev = mod(r - 1, P);
  RingResult res;
  res.step_begin.push_back(0);
  std::vector<OpId> reduced;   // the reduces of the previous step, one per segment
  std::vector<OpId> tmp_free;  // per segment of `tmp`: the last reduce that read it
  res.steps = ring_steps(blk, v);
  for (const int64_t s : res.steps) {
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(stage0 + s, 65535)));  // labels saturate
    // Step 0 sends the own copy of the input; later steps the block reduced in the step before
    // (which moved data too: it received this block).
    for_each_segment(blk, vec, mod(v - s, P), seg, [&](int64_t g, Region piece) {
      const OpId dep = s == 0 ? out_ready : reduced[static_cast<size_t>(g)];
      res.sends.push_back(b.send(next, piece, {dep}));
    });
    res.step_begin.push_back(res.sends.size());
    reduced.clear();
    const int64_t base = blk.begin(mod(v - s - 1, P));
    for_each_segment(blk, vec, mod(v - s - 1, P), seg, [&](int64_t g, Region piece) {
      const auto gi = static_cast<size_t>(g);
      if (tmp_free.size() <= gi) tmp_free.resize(gi + 1, kNoOp);
      const Region t{tmp, piece.off - base, piece.len};
      OpId rv = b.recv(prev, t, {tmp_free[gi]});
      // The partial of the ranks before this one in ring order goes on the left.
      reduced.push_back(b.reduce(piece, t, Side::src_first, {rv, out_ready}));
      tmp_free[gi] = reduced.back();
    });
  }
  res.final_ready = reduced;
  return res;
}

std::vector<OpId> allgather_ring(RankBuilder& b, const Blocks& blk, int64_t seg,
                                 const RingResult& rs, uint16_t stage0) {
  const int64_t P = blk.nb, r = b.rank();
  // Block u arrives at step s = r - u, when block r - s left this rank in the reduce-scatter:
  // its receive must not overwrite it while that send is in flight.
  const BlockFree gone = [&](int64_t u, int64_t g) { return rs.send_at(mod(r - u, P), g); };
  return ring_allgather(b, blk, kOut, P - 1, seg, rs.final_ready, gone, stage0);
}

std::vector<OpId> ring_allgather(RankBuilder& b, const Blocks& blk, BufId buf, int64_t origin,
                                 int64_t seg, const std::vector<OpId>& have, const BlockFree& free,
                                 uint16_t stage0) {
  const int64_t P = blk.nb, r = b.rank(), v = mod(r - origin, P);
  const int64_t next = mod(r + 1, P), prev = mod(r - 1, P);
  std::vector<OpId> last = have;  // per segment: what wrote the block to send next
  std::vector<OpId> writers = have;
  std::vector<OpId> received;
  const auto writer = [&](int64_t g) {
    return last.size() == 1                       ? last[0]
           : static_cast<size_t>(g) < last.size() ? last[static_cast<size_t>(g)]
                                                  : kNoOp;
  };
  for (const int64_t s : ring_steps(blk, v)) {
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(stage0 + s, 65535)));  // labels saturate
    for_each_segment(blk, buf, mod(v - s, P), seg,
                     [&](int64_t g, Region piece) { b.send(next, piece, {writer(g)}); });
    received.clear();
    const int64_t u = mod(v - s - 1, P);
    for_each_segment(blk, buf, u, seg, [&](int64_t g, Region piece) {
      received.push_back(b.recv(prev, piece, {free ? free(u, g) : kNoOp}));
    });
    writers.insert(writers.end(), received.begin(), received.end());
    if (!received.empty()) last = received;
  }
  return writers;
}

}  // namespace collkit::phases
