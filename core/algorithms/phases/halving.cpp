// Recursive-halving reduce-scatter and the phases that undo it: recursive-doubling allgather and
// binomial gather to a root (see halving.hpp).
#include "halving.hpp"

namespace collkit::phases {

Halving::Halving(const Pof2Fold& f, int64_t vrank, bool down) : lg(f.lg()), distance_down(down) {
  int64_t lo = 0, hi = f.pof2;
  for (int k = 0; k < lg; ++k) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (vrank & distance(k)) {
      stages[static_cast<size_t>(k)] = {mid, hi, lo, mid};
      lo = mid;
    } else {
      stages[static_cast<size_t>(k)] = {lo, mid, mid, hi};
      hi = mid;
    }
  }
}

ScatterResult reduce_scatter_halving(RankBuilder& b, const Pof2Fold& f, int64_t vrank,
                                     const Blocks& blk, BufId vec, OpId vec_ready, BufId tmp,
                                     int64_t tmp_base, OpId tmp_free, uint16_t stage0,
                                     bool distance_down) {
  const Halving h(f, vrank, distance_down);
  ScatterResult res;
  res.sent.fill(kNoOp);
  res.ready = vec_ready;
  res.tmp_free = tmp_free;
  for (int k = 0; k < h.lg; ++k) {
    const auto& st = h.stages[static_cast<size_t>(k)];
    b.set_stage(static_cast<uint16_t>(stage0 + k));
    const int64_t vpeer = vrank ^ h.distance(k);
    const int64_t peer = f.real(vpeer);
    const Region give = blk.region(vec, st.send_lo, st.send_hi);
    const Region keep = blk.region(vec, st.keep_lo, st.keep_hi);
    if (give.len > 0) res.sent[static_cast<size_t>(k)] = b.send(peer, give, {res.ready});
    if (keep.len == 0) continue;
    const Region t{tmp, keep.off - tmp_base, keep.len};
    OpId r = b.recv(peer, t, {res.tmp_free});
    // The lower group's partial result on the left: the same tree as recursive doubling.
    res.ready = res.tmp_free =
        b.reduce(keep, t, vpeer < vrank ? Side::src_first : Side::dst_first, {res.ready, r});
  }
  return res;
}

std::vector<OpId> allgather_doubling(RankBuilder& b, const Pof2Fold& f, int64_t vrank,
                                     const Blocks& blk, BufId vec, const ScatterResult& rs,
                                     uint16_t stage0, bool distance_down) {
  const Halving h(f, vrank, distance_down);
  std::vector<OpId> writers{rs.ready};
  for (int k = h.lg - 1; k >= 0; --k) {
    const auto& st = h.stages[static_cast<size_t>(k)];
    b.set_stage(static_cast<uint16_t>(stage0 + (h.lg - 1 - k)));
    const int64_t peer = f.real(vrank ^ h.distance(k));
    const Region have = blk.region(vec, st.keep_lo, st.keep_hi);
    const Region get = blk.region(vec, st.send_lo, st.send_hi);
    if (have.len > 0) b.send(peer, have, writers);
    // The blocks arriving were sent away at the same stage of the halving: wait for that send.
    if (get.len > 0) writers.push_back(b.recv(peer, get, {rs.sent[static_cast<size_t>(k)]}));
  }
  return writers;
}

std::vector<OpId> gather_binomial(RankBuilder& b, const Pof2Fold& f, int64_t vrank, int64_t vroot,
                                  const Blocks& blk, BufId vec, const ScatterResult& rs,
                                  uint16_t stage0) {
  const Halving h(f, vrank);
  std::vector<OpId> writers{rs.ready};
  for (int k = h.lg - 1; k >= 0; --k) {
    const auto& st = h.stages[static_cast<size_t>(k)];
    b.set_stage(static_cast<uint16_t>(stage0 + (h.lg - 1 - k)));
    const int64_t peer = f.real(vrank ^ (int64_t{1} << k));
    if (((vrank ^ vroot) >> k) & 1) {  // the partner is on the root's side: hand over, done
      const Region have = blk.region(vec, st.keep_lo, st.keep_hi);
      if (have.len > 0) b.send(peer, have, writers);
      break;
    }
    const Region get = blk.region(vec, st.send_lo, st.send_hi);
    if (get.len > 0) writers.push_back(b.recv(peer, get, {rs.sent[static_cast<size_t>(k)]}));
  }
  return writers;
}

HalvingScratch halving_scratch(RankBuilder& b, const Pof2Fold& f, int64_t vrank, const Blocks& blk,
                               BufId vec, OpId vec_ready) {
  HalvingScratch s;
  s.ready = vec_ready;
  if (f.partner(b.rank()) >= 0) {
    s.tmp = b.scratch(blk.n);
    s.ready = s.free = fold_in(b, f, Region{vec, 0, blk.n}, vec_ready, Region{s.tmp, 0, blk.n});
    return s;
  }
  const Halving halving(f, vrank);
  const auto& first = halving.stages[0];
  const Region kept = blk.region(vec, first.keep_lo, first.keep_hi);
  s.tmp = b.scratch(kept.len);
  s.base = kept.off;
  return s;
}

}  // namespace collkit::phases
