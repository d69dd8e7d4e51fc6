#include "scattered.hpp"

#include <algorithm>
#include <vector>

namespace collkit::phases {

void scattered_exchange(RankBuilder& b, const ScheduleHeader& h, int64_t bound, bool skip_empty) {
  const int64_t P = h.P, r = b.rank();
  const int64_t per_round = bound == 0 ? P : std::min(bound, P);
  const BlockLayout in(h, Io::in, r), out(h, Io::out, r);
  std::vector<OpId> round;
  OpId prev = kNoOp;  // the previous round's end: a zero-time join of its ops
  for (int64_t first = 0; first < P; first += per_round) {
    const int64_t last = std::min(first + per_round, P);
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(first / per_round, UINT16_MAX)));
    round.clear();
    for (int64_t i = first; i < last; ++i) {
      const int64_t q = (r + i) % P;
      if (i == 0)
        round.push_back(
            b.copy({kOut, out.offset(r), out.len(r)}, {kIn, in.offset(r), in.len(r)}, {prev}));
      else if (!skip_empty || out.len(q) > 0)
        round.push_back(b.recv(q, {kOut, out.offset(q), out.len(q)}, {prev}));
    }
    for (int64_t i = std::max<int64_t>(first, 1); i < last; ++i) {
      const int64_t q = (r - i + P) % P;
      if (!skip_empty || in.len(q) > 0)
        round.push_back(b.send(q, {kIn, in.offset(q), in.len(q)}, {prev}));
    }
    if (last < P && !round.empty()) prev = b.compute(0, round);
  }
}

}  // namespace collkit::phases
