// The closed-form costs of the shared phases (fold.hpp, halving.hpp, ring.hpp, ...), in
// Hockney's model with a reduction term (Cost in registry.hpp), so that an algorithm's cost model
// composes its phases' costs as its generator composes the phases. n: bytes per rank.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "circ_graph.hpp"
#include "collkit/registry.hpp"

namespace collkit::phases::cost {

inline int64_t pof2(int64_t P) {
  return int64_t{1} << (std::bit_width(static_cast<uint64_t>(P)) - 1);
}
inline double lg_pof2(int64_t P) {
  return static_cast<double>(std::bit_width(static_cast<uint64_t>(P)) - 1);
}
inline double not_pof2(int64_t P) {
  return pof2(P) != P ? 1.0 : 0.0;
}

// The pieces a message of n bytes is cut into by segments (chunks) of seg bytes: at least one;
// seg <= 0 or an empty message: one.
inline double pieces(double n, double seg) {
  return seg <= 0 || n <= 0 ? 1.0 : std::max(1.0, std::ceil(n / seg));
}

// P - 1 messages of n bytes through one rank's port, one after another or overlapping (the flat
// tree's root, the spread-out all-to-all): (P - 1)(alpha + n beta).
inline Cost flat(int64_t P, double n) {
  const auto m = static_cast<double>(P - 1);
  return {m, m * n, 0};
}

// Reduce-scatter by recursive halving over the pof2 ranks: lg p alpha + (p-1)/p n (beta + gamma).
inline Cost halving(int64_t P, double n) {
  const double p = static_cast<double>(pof2(P)), share = (p - 1) / p * n;
  return {lg_pof2(P), share, share};
}

// Allgather by recursive doubling over the pof2 ranks: lg p alpha + (p-1)/p n beta.
inline Cost doubling(int64_t P, double n) {
  const double p = static_cast<double>(pof2(P));
  return {lg_pof2(P), (p - 1) / p * n, 0};
}

// Reduce-scatter (reduced = true) or allgather with 3-2 ("elim") or 2-1 ("elim21") elimination
// at the odd levels of the halving: a group of m ranks holding `share` of the vector halves it.
inline Cost elimination(int64_t P, double n, std::string_view mode, bool reduced) {
  Cost t;
  double share = 1.0;
  for (int64_t m = P; m > 1; m /= 2, share /= 2) {
    const double half = share * n / 2;
    const double k = m % 2 == 0 ? 1 : mode == "elim" ? 2 : 3;  // halves moved at this level
    t = t + Cost{m % 2 == 0 || mode == "elim" ? 1.0 : 2.0, k * half, reduced ? k * half : 0};
  }
  return t;
}

// Rabenseifner's reduce-scatter half (Rabenseifner 1997): recursive halving, after folding the
// ranks past the largest power of two in (one message and reduction of n) or with elimination.
inline Cost reduce_scatter(int64_t P, double n, std::string_view nonpof2) {
  if (nonpof2 == "fold" || pof2(P) == P) return halving(P, n) + Cost{1, n, n} * not_pof2(P);
  return elimination(P, n, nonpof2, true);
}

// Its allgather half: recursive doubling, then unfolding (one message of n) or elimination.
inline Cost allgather(int64_t P, double n, std::string_view nonpof2) {
  if (nonpof2 == "fold" || pof2(P) == P) return doubling(P, n) + Cost{1, n, 0} * not_pof2(P);
  return elimination(P, n, nonpof2, false);
}

// Gather / scatter of P blocks of n bytes along a k-nomial tree from root 0: ceil(log_k P)
// levels of up to k - 1 messages at the root, and P - 1 blocks through the root's port.
inline Cost tree_blocks(int64_t P, double n, int64_t k) {
  double levels = 0;
  for (int64_t m = 1; m < P; m *= k) levels += 1;
  const double fan = static_cast<double>(std::min<int64_t>(k, P) - 1);
  return {levels * fan, static_cast<double>(P - 1) * n, 0};
}

// The circulant-graph bcast and reduce (circ_graph.hpp), one port: N - 1 + q rounds of one chunk
// of n / N bytes out and one in, N = pieces(n, seg), q = ceil(log2 P); `reduced`: the reduce's,
// which also reduces every chunk it receives.
inline Cost circ_graph(int64_t P, double n, double seg, bool reduced) {
  if (P <= 1) return {};
  const double N = pieces(n, seg);
  const double rounds = N - 1 + static_cast<double>(CircGraph(P).q());
  return {rounds, rounds * n / N, reduced ? rounds * n / N : 0};
}

// The recursive-doubling prefix (prefix.hpp), scan's and exscan's: ceil(lg P) exchanges of n,
// two reductions each at worst.
inline Cost prefix_doubling(int64_t P, double n) {
  const double lg = static_cast<double>(std::bit_width(static_cast<uint64_t>(P - 1)));
  return {lg, lg * n, 2 * lg * n};
}

}  // namespace collkit::phases::cost
