#include "recexch.hpp"

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace collkit::phases {

Recexch::Recexch(int64_t P_, int64_t k_, int64_t r) : P(P_), k(k_), rank(r) {
  if (P < k) k = P > 2 ? P : 2;
  while (pofk * k <= P) {
    pofk *= k;
    ++nphases;
  }
  rem = P - pofk;
  T = rem * k / (k - 1);
  int64_t s2 = -1;
  if (rank < T) {
    if (rank % k != k - 1) {
      // The last rank of the run; one past T - 1 where the run is cut short, so that the
      // folded value keeps rank order.
      sendto = rank + (k - 1 - rank % k);
      if (sendto > T - 1) sendto = T;
    } else {
      for (int64_t i = 1; i < k; ++i) recvfrom.push_back(rank - i);
      s2 = rank / k;
    }
  } else {
    s2 = rank - rem;
    if (rank == T && T >= 1 && (T - 1) % k != k - 1) {
      const int64_t senders = (T - 1) % k + 1;
      for (int64_t j = senders - 1; j >= 0; --j) recvfrom.push_back(T - senders + j);
    }
  }
  if (sendto >= 0) return;
  nbrs_.reserve(static_cast<size_t>(nphases * (k - 1)));
  for (int64_t ph = 0, kp = 1; ph < nphases; ++ph, kp *= k) {
    const int64_t digit = s2 / kp % k, base = s2 - digit * kp;
    for (int64_t d = 0; d < k; ++d)
      if (d != digit) nbrs_.push_back(origrank(base + d * kp));
  }
}

std::pair<int64_t, int64_t> Recexch::range(int64_t r, int64_t phase) const {
  int64_t kp = 1;
  for (int64_t i = 0; i < phase; ++i) kp *= k;
  // The step-2 ranks (lo, lo + kp] as real ranks: each stands for the ranks folded into it.
  const int64_t lo = step2rank(r) / kp * kp - 1, hi = lo + kp;
  const int64_t orig_lo = lo >= 0 ? origrank(lo) : lo;
  return {orig_lo + 1, origrank(hi) - orig_lo};
}

std::pair<int64_t, int64_t> Recexch::step2_range(int64_t r, int64_t phase) const {
  int64_t kp = 1;
  for (int64_t i = 0; i < phase; ++i) kp *= k;
  return {step2rank(r) / kp * kp, kp};
}

namespace {

// MPICH's do_reduce: the k - 1 received vectors bufs[0..k-2] (neighbours in rank order) and the
// own one in `out`, combined left to right in rank order; `mine` is the own position.
OpId combine(RankBuilder& b, const std::vector<Region>& bufs, Region out, size_t mine,
             std::vector<OpId> deps, bool data) {
  if (!data) return b.compute(0, deps);
  OpId last = kNoOp;
  auto step = [&](Region dst, Region src) {
    last = b.reduce(dst, src, Side::src_first, deps);
    deps.assign(1, last);
  };
  const size_t m = bufs.size();
  for (size_t i = 0; i + 1 < mine; ++i) step(bufs[i + 1], bufs[i]);
  if (mine > 0) step(out, bufs[mine - 1]);
  if (mine < m) {
    step(bufs[mine], out);
    for (size_t i = mine; i + 1 < m; ++i) step(bufs[i + 1], bufs[i]);
    last = b.copy(out, bufs[m - 1], deps);
  }
  return last;
}

}  // namespace

void recexch_allreduce(RankBuilder& b, const Recexch& g, bool single_phase_recv, int64_t n,
                       bool data, OpId ready) {
  const Region out{kOut, 0, data ? n : 0};
  const auto fold_out_stage = static_cast<uint16_t>(g.nphases + 1);
  if (!g.in_step2()) {
    const OpId s = b.send(g.sendto, out, {ready});
    b.set_stage(fold_out_stage);
    b.recv(g.sendto, out, {s});
    return;
  }
  const size_t width = static_cast<size_t>(g.k - 1);
  std::vector<Region> bufs;  // MPICH's nbr_buffer: one phase's, then the next phase's
  for (size_t i = 0; i < (single_phase_recv ? 1 : 2) * width; ++i)
    bufs.push_back(data ? Region{b.scratch(n), 0, n} : out);
  // Fold in: every sender's vector, then each on the left (senders are the ranks just below).
  if (!g.recvfrom.empty()) {
    std::vector<OpId> got;
    for (size_t i = 0; i < g.recvfrom.size(); ++i) got.push_back(b.recv(g.recvfrom[i], bufs[i]));
    got.push_back(ready);
    if (!data) {
      ready = b.compute(0, got);
    } else {
      for (size_t i = 0; i < g.recvfrom.size(); ++i) {
        ready = b.reduce(out, bufs[i], Side::src_first, got);
        got.assign(1, ready);
      }
    }
  }
  // The exchange phases, two at a time unless single_phase_recv.
  const size_t per = single_phase_recv ? 1 : 2;
  for (int64_t phase = 0; phase < g.nphases;) {
    b.set_stage(static_cast<uint16_t>(phase + 1));
    std::vector<std::vector<OpId>> waits;
    for (size_t j = 0; j < per && phase + static_cast<int64_t>(j) < g.nphases; ++j) {
      waits.emplace_back();
      const auto peers = g.nbrs(phase + static_cast<int64_t>(j));
      for (size_t i = 0; i < width; ++i)
        waits.back().push_back(b.recv(peers[i], bufs[j * width + i], {ready}));
    }
    for (size_t j = 0; j < waits.size(); ++j, ++phase) {
      b.set_stage(static_cast<uint16_t>(phase + 1));
      const auto peers = g.nbrs(phase);
      std::vector<OpId> deps = waits[j];
      for (size_t i = 0; i < width; ++i) deps.push_back(b.send(peers[i], out, {ready}));
      size_t mine = 0;
      while (mine < width && peers[mine] < g.rank) ++mine;
      const std::vector<Region> phase_bufs(
          bufs.begin() + static_cast<std::ptrdiff_t>(j * width),
          bufs.begin() + static_cast<std::ptrdiff_t>((j + 1) * width));
      ready = combine(b, phase_bufs, out, mine, std::move(deps), data);
    }
  }
  // Fold out: the result to every sender.
  b.set_stage(fold_out_stage);
  for (const int64_t r : g.recvfrom) b.send(r, out, {ready});
}

OpId recexch_gather(RankBuilder& b, const Recexch& g, bool halving, bool single_phase_recv,
                    const std::function<Region(int64_t, int64_t)>& blocks, OpId ready,
                    uint16_t stage0) {
  const int64_t r = b.rank();
  const int64_t self = halving ? g.reverse_digits(r) : r;
  const int64_t step = halving ? -1 : 1;
  int64_t phase = halving ? g.nphases - 1 : 0, recv_phase = phase;
  const size_t width = static_cast<size_t>(g.k - 1);
  for (int64_t j = 0; j < g.nphases; ++j) {
    b.set_stage(static_cast<uint16_t>(stage0 + j));
    std::vector<std::vector<OpId>> recvs;
    for (int64_t it = 0; it < (single_phase_recv ? 1 : 2) && j + it < g.nphases; ++it) {
      recvs.emplace_back();
      for (const int64_t nbr : g.nbrs(recv_phase)) {
        const int64_t whose = halving ? g.reverse_digits(nbr) : nbr;
        recvs.back().push_back(b.recv(nbr, blocks(whose, j + it), {ready}));
      }
      recv_phase += step;
    }
    // The sends of the phase (and with two phases posted, of the next) are waited on at the end.
    std::vector<OpId> sent;
    OpId after = ready;
    for (size_t it = 0; it < recvs.size(); ++it) {
      if (it > 0) {
        ++j;
        b.set_stage(static_cast<uint16_t>(stage0 + j));
      }
      for (size_t i = 0; i < width; ++i)
        sent.push_back(b.send(g.nbrs(phase)[i], blocks(self, j), {after}));
      after = b.compute(0, recvs[it]);
      phase += step;
    }
    sent.push_back(after);
    ready = b.compute(0, sent);
  }
  return ready;
}

void recexch_allgather(RankBuilder& b, const Recexch& g, bool halving, bool single_phase_recv,
                       int64_t n) {
  const int64_t r = b.rank(), P = g.P;
  const auto blocks = [&](std::pair<int64_t, int64_t> range) {
    return Region{kOut, range.first * n, range.second * n};
  };
  const auto fold_out_stage = static_cast<uint16_t>(g.nphases + 2);
  b.set_stage(0);
  if (!g.in_step2()) {
    const OpId s = b.send(g.sendto, {kIn, 0, n});
    b.set_stage(fold_out_stage);
    b.recv(g.sendto, {kOut, 0, P * n}, {s});
    return;
  }
  std::vector<OpId> got{b.copy({kOut, r * n, n}, {kIn, 0, n})};
  for (const int64_t q : g.recvfrom) got.push_back(b.recv(q, {kOut, q * n, n}));
  OpId ready = b.compute(0, got);
  if (halving) {
    // Swap with the digit-reversed rank, so that halving the distance ends in rank order.
    b.set_stage(1);
    const int64_t partner = g.reverse_digits(r);
    if (partner != r) {
      const OpId s = b.send(partner, blocks(g.range(r, 0)), {ready});
      const OpId v = b.recv(partner, blocks(g.range(partner, 0)), {ready});
      ready = b.compute(0, {s, v});
    }
  }
  ready = recexch_gather(
      b, g, halving, single_phase_recv,
      [&](int64_t whose, int64_t phase) { return blocks(g.range(whose, phase)); }, ready, 2);
  b.set_stage(fold_out_stage);
  for (const int64_t q : g.recvfrom) b.send(q, {kOut, 0, P * n}, {ready});
}

Cost recexch_allgather_cost(int64_t P, int64_t k, bool halving, double n) {
  if (P <= 1) return {};
  // Step-2 rank 0's groups are the largest at every phase (the folded runs are the lowest ranks).
  const Recexch g(P, k, 0);
  const int64_t low = g.origrank(0);
  const auto w = static_cast<double>(g.k - 1), f = static_cast<double>(std::min(g.k - 1, g.rem));
  Cost c{f, f * n, 0};  // fold in
  if (halving) c = c + Cost{1, static_cast<double>(g.range(low, 0).second) * n, 0};
  for (int64_t j = 0; j < g.nphases; ++j)
    c = c + Cost{w, w * static_cast<double>(g.range(low, j).second) * n, 0};
  return c + Cost{f, f * static_cast<double>(P) * n, 0};  // fold out
}

int64_t Recexch::reverse_digits(int64_t r) const {
  int64_t s = step2rank(r), rev = 0;
  for (int64_t i = 0; i < nphases; ++i, s /= k) rev = rev * k + s % k;
  return origrank(rev);
}

}  // namespace collkit::phases
