// Helpers of the irregular collectives' generators (count vectors, displacements): the messages
// that carry a range of blocks between two layouts, and the cost of a count vector.
#pragma once
#include <cstdint>
#include <vector>

#include "collkit/collective.hpp"
#include "collkit/schedule.hpp"

namespace collkit::phases {

// A message's worth of blocks [first, last): contiguous in both layouts, at `a_off` in one and
// `b_off` in the other, `len` elements.
struct Piece {
  int64_t first, last;
  int64_t a_off, b_off, len;
};

// Blocks [lo, hi) of two layouts (the sender's and the receiver's: `block(k)` of each gives
// its offset) cut into pieces, empty blocks left out and neighbours joined where both layouts
// keep them adjacent. Both ends of a message compute the same pieces, so they post the same
// messages; a packed layout (no displacements) gives one piece per range.
template <class A, class B, class Len>
std::vector<Piece> pieces(int64_t lo, int64_t hi, A&& a_off, B&& b_off, Len&& len) {
  std::vector<Piece> out;
  for (int64_t k = lo; k < hi; ++k) {
    const int64_t n = len(k);
    if (n == 0) continue;
    const int64_t x = a_off(k), y = b_off(k);
    if (!out.empty() && out.back().a_off + out.back().len == x &&
        out.back().b_off + out.back().len == y) {
      out.back().last = k + 1;
      out.back().len += n;
    } else {
      out.push_back({k, k + 1, x, y, n});
    }
  }
  return out;
}

// Prefix sums of block lengths in a given order: offsets of a packed scratch buffer holding
// blocks order(0), order(1), ... (size order.size() + 1, the last the total).
template <class Len>
std::vector<int64_t> packed_offsets(int64_t nblocks, Len&& len) {
  std::vector<int64_t> off(static_cast<size_t>(nblocks) + 1, 0);
  for (int64_t i = 0; i < nblocks; ++i)
    off[static_cast<size_t>(i) + 1] = off[static_cast<size_t>(i)] + len(i);
  return off;
}

}  // namespace collkit::phases
