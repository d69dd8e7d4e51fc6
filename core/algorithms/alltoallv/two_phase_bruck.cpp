// alltoallv:two_phase_bruck: its summary, phases in brief, cost and reference are said once, in
// its Registrar at the end of this file (`collkit algorithms alltoallv:two_phase_bruck` prints
// them).
// Phases:       Fan et al.'s two-phase Bruck: the first phase tells every rank the sizes of the
//               blocks it will forward (here the header's count matrix: Restrictions::all_counts,
//               an MPI caller gathers it first), the second moves the data in ceil(lg P) steps
//               of exact sizes. Rank x holds slots i = 0..P-1, slot i the block on its way from
//               x - (i mod 2^k) to that rank + i. At step k it packs the slots with bit k set
//               into scratch and sends them to x + 2^k in one message, receiving as many from
//               x - 2^k; at the end slot i holds the block from x - i, copied to its place in out
//               (slot 0, the own block, straight from in).
// Restrictions: all_counts (rank x forwards other pairs' blocks); any P, any count matrix, any
//               displacements
#include <bit>
#include <vector>

#include "../phases/irregular.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_bruck(const GenArgs& a, RankBuilder& b) {
  const ScheduleHeader& h = a.header;
  const int64_t P = h.P, x = b.rank();
  const BlockLayout in(h, Io::in, x), out(h, Io::out, x);
  const auto pair = [&](int64_t from, int64_t to) {
    return h.counts.empty() ? h.count : h.counts[static_cast<size_t>(from * P + to)];
  };
  // Where slot i is now: its buffer, offset and the op that put it there.
  struct Slot {
    BufId buf;
    int64_t off;
    OpId ready;
  };
  std::vector<Slot> slot(static_cast<size_t>(P));
  for (int64_t i = 0; i < P; ++i)
    slot[static_cast<size_t>(i)] = {kIn, in.offset((x + i) % P), kNoOp};
  b.set_stage(0);
  b.copy({kOut, out.offset(x), out.len(x)}, {kIn, in.offset(x), in.len(x)});
  uint16_t stage = 1;
  for (int64_t k = 1; k < P; k <<= 1) {
    b.set_stage(stage++);
    const int64_t to = (x + k) % P, from = (x - k + P) % P;
    // The slots moving, and their sizes as the sender of each message sees them: slot i at
    // rank y before step k left x - (i mod k).
    const auto size_at = [&](int64_t y, int64_t i) {
      const int64_t origin = (y - (i & (k - 1)) % P + P) % P;
      return pair(origin, (origin + i) % P);
    };
    std::vector<int64_t> moving;
    for (int64_t i = k; i < P; ++i)
      if (i & k) moving.push_back(i);
    int64_t give = 0, take = 0;
    for (int64_t i : moving) {
      give += size_at(x, i);
      take += size_at(from, i);
    }
    if (give > 0) {
      const BufId pack = b.scratch(give);
      std::vector<OpId> packed;
      int64_t at = 0;
      for (int64_t i : moving) {
        const int64_t n = size_at(x, i);
        const Slot& s = slot[static_cast<size_t>(i)];
        if (n > 0) packed.push_back(b.copy({pack, at, n}, {s.buf, s.off, n}, {s.ready}));
        at += n;
      }
      b.send(to, {pack, 0, give}, packed);
    }
    if (take > 0) {
      const BufId got = b.scratch(take);
      const OpId rcv = b.recv(from, {got, 0, take});
      int64_t at = 0;
      for (int64_t i : moving) {
        slot[static_cast<size_t>(i)] = {got, at, rcv};
        at += size_at(from, i);
      }
    }
  }
  b.set_stage(stage);
  for (int64_t i = 1; i < P; ++i) {
    const int64_t src = (x - i + P) % P;
    const Slot& s = slot[static_cast<size_t>(i)];
    if (out.len(src) > 0)
      b.copy({kOut, out.offset(src), out.len(src)}, {s.buf, s.off, out.len(src)}, {s.ready});
  }
}

Cost cost_bruck(const CostArgs& a) {
  const double lg = static_cast<double>(std::bit_width(static_cast<uint64_t>(a.P - 1)));
  return {lg, lg * static_cast<double>(a.P) / 2 * a.bytes, 0};
}

const Registrar reg{{
    .collective = Collective::alltoallv,
    .name = "two_phase_bruck",
    .summary = "Bruck's ceil(lg P) steps with exact block sizes: the slots with bit k set go to "
               "rank + 2^k, packed",
    .phases = "pack the slots with bit k set and send them to x + 2^k, receiving as many from "
              "x - 2^k; copy every slot to its place in out at the end",
    // Cost: (n: bytes of the largest block; each step moves about half the slots)
    .cost = "ceil(lg P) alpha + ceil(lg P) P/2 n beta at most, and packing copies",
    .reference = "Fan et al., Optimizing the Bruck Algorithm for Non-uniform All-to-all "
                 "Communication, HPDC 2022 (two-phase); Bruck et al., IEEE TPDS 8(11) 1997",
    .params = {},
    .restrictions = {.all_counts = true},
    .prepare = {},
    .generate = generate_bruck,
    .model = cost_bruck,
}};

}  // namespace
}  // namespace collkit
