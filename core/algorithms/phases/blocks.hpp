// The blocks a shared phase cuts a vector into (halving, ring, elimination). The shared phases
// of the reduction algorithms are written once, one file each in core/algorithms/phases/,
// and composed by the generators (STYLE.md 5).
//
// Every phase writes ops of one rank into a RankBuilder and returns the ops that later phases
// must wait on; no phase keeps state between ranks, so one rank's program is generated alone.
#pragma once
#include <cstdint>

#include "collkit/schedule.hpp"

namespace collkit::phases {

// n elements cut into nb blocks, the first n % nb of them one element longer. Or, with `unit`
// set, the blocks of the fold (Pof2Fold) over P blocks of `unit` elements: virtual block i is
// the real blocks of the ranks it stands for, 2i and 2i+1 for i < rem, else i + rem
// (reduce_scatter_block:halving on P != 2^k).
struct Blocks {
  int64_t n = 0;
  int64_t nb = 1;
  int64_t unit = 0;
  int64_t rem = 0;
  int64_t begin(int64_t i) const {
    if (unit > 0) return unit * (i < rem ? 2 * i : i + rem);
    return i * (n / nb) + (i < n % nb ? i : n % nb);
  }
  // Blocks [lo, hi) of buffer `buf`, as one region.
  Region region(BufId buf, int64_t lo, int64_t hi) const {
    return Region{buf, begin(lo), begin(hi) - begin(lo)};
  }
};

}  // namespace collkit::phases
