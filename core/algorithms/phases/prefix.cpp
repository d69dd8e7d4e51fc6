#include "prefix.hpp"

#include <vector>

namespace collkit::phases {

void prefix_doubling(RankBuilder& b, int64_t n, bool inclusive) {
  const int64_t P = b.P(), r = b.rank();
  b.set_stage(0);
  const BufId partial = b.scratch(n), tmp = b.scratch(n);
  const OpId aside = b.copy({partial, 0, n}, {kIn, 0, n});
  OpId last_partial = aside;
  // Inclusive: out = in (nothing in place); exclusive: out is undefined until the first receive.
  OpId last_out = inclusive ? b.copy({kOut, 0, n}, {kIn, 0, n}, {aside}) : kNoOp;
  std::vector<OpId> tmp_readers;
  uint16_t stage = 1;
  for (int64_t mask = 1; mask < P; mask <<= 1) {
    const int64_t dst = r ^ mask;
    if (dst >= P) continue;
    b.set_stage(stage++);
    const OpId snd = b.send(dst, {partial, 0, n}, {last_partial});
    const OpId rcv = b.recv(dst, {tmp, 0, n}, tmp_readers);
    if (r > dst) {  // the lower ranks' partial goes in front
      last_partial =
          b.reduce({partial, 0, n}, {tmp, 0, n}, Side::src_first, {snd, rcv, last_partial});
      last_out = last_out == kNoOp
                     ? b.copy({kOut, 0, n}, {tmp, 0, n}, {rcv, aside})
                     : b.reduce({kOut, 0, n}, {tmp, 0, n}, Side::src_first, {rcv, last_out});
      tmp_readers = {last_partial, last_out};
    } else {
      last_partial =
          b.reduce({partial, 0, n}, {tmp, 0, n}, Side::dst_first, {snd, rcv, last_partial});
      tmp_readers = {last_partial};
    }
  }
}

}  // namespace collkit::phases
