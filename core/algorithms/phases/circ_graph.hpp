// The circulant-graph schedules of Träff's round-optimal n-block broadcast, as MPICH builds them
// (src/mpi/coll/algorithms/circ_graph/circ_graph.c): bcast:circ_graph, allgather:circ_graph
// and reduce:circ_graph share them.
//
// With q = ceil(log2 p) and skips Skip[q] = p, Skip[k] = ceil(Skip[k + 1] / 2) (1, 2, 4, ... for
// a power of two), in round k of every q rounds rank r (relative to the root) sends to
// r + Skip[k] its block S[k] and receives from r - Skip[k] its block R[k], mod p. Blocks are
// numbered relative to the current q rounds: a negative one is not sent, and every q rounds all
// block numbers advance by q. R is MPICH's gen_rsched: the largest baseblock among the ranks in
// (r - Skip[k + 1], r - Skip[k]] not taken in an earlier round; S[k] is R[k] of r + Skip[k]
// (MPICH's gen_ssched finds most of them by rule and looks the rest up in R: the same values).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace collkit::phases {

class CircGraph {
 public:
  explicit CircGraph(int64_t p);
  int64_t p() const { return p_; }
  int64_t q() const { return q_; }
  int64_t skip(int64_t k) const { return skip_[static_cast<size_t>(k)]; }
  // Rank r's (relative to the root) receive blocks R[0..q) and send blocks S[0..q).
  void recv_blocks(int64_t r, std::vector<int64_t>& R) const;
  void send_blocks(int64_t r, std::vector<int64_t>& S) const;

 private:
  int64_t baseblock(int64_t r) const;
  int64_t p_, q_;
  std::vector<int64_t> skip_;
};

// The n - 1 + q rounds of an n-block schedule in MPICH's order: round i = x .. n - 2 + q + x
// with x = (q - (n - 1) mod q) mod q, using skip k = i mod q and adding `offset` to the
// blocks of S and R (offset starts at -x and grows by q after each k = q - 1). A block past
// n - 1 is n - 1. `each(k, offset)` is called per round, in order.
template <class F>
void circ_graph_rounds(int64_t q, int64_t n, F&& each) {
  const int64_t x = (q - (n - 1) % q) % q;
  int64_t offset = -x;
  for (int64_t i = x; i < n - 1 + q + x; ++i) {
    const int64_t k = i % q;
    each(k, offset);
    if (k == q - 1) offset += q;
  }
}

// The chunks of an n-element message in MPICH's circ_graph layout: chunks of c elements, the
// last one the remainder. c = seg / elem_size rounded down (bcast, allgather: the chunk is in
// bytes of the data) or up (reduce: whole elements), at least 1, at most n; seg <= 0: one chunk.
struct CircChunks {
  CircChunks(int64_t n, int64_t seg_bytes, int64_t elem_size, bool round_up);
  int64_t count = 1, c = 0, n = 0;
  int64_t off(int64_t i) const { return i * c; }
  int64_t len(int64_t i) const { return i == count - 1 ? n - i * c : c; }
};

}  // namespace collkit::phases
