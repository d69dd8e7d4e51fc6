// allreduce:segmented_ring: its summary, phases in brief, cost and reference are said once, in
// its Registrar at the end of this file (`collkit algorithms allreduce:segmented_ring` prints
// them).
// Algorithm:    Open MPI's segmented ring. The vector is cut into P blocks (the first n % P one
//               element longer) and every block into np phase pieces the same way, with
//               c = seg / element size elements per segment (seg = 0: c = n) and
//               np = floor(n / (P c)), plus one when the rest is at least P and more than half of
//               P c; n < P c: np = 1, the plain ring.
// Phases:       0. copy in -> out;
//               1. for each phase p, a ring reduce-scatter of the pieces p: rank r posts the
//                  receive of block r-1 from r-1, sends its block r to r+1, then for k = 2..P-1
//                  posts the next receive (block r-k) into the other of two segment buffers,
//                  reduces the block it got, out = received (+) out, and sends it on; it ends
//                  reducing block r+1. Sends block, as Open MPI's do: each op after the send
//                  before it. Phase p+1 starts after phase p's last reduction;
//               2. a ring allgather of whole blocks: step k = 0..P-2 sends block r+1-k to r+1
//                  and receives block r-k from r-1 (a sendrecv per step).
//               Empty pieces and blocks (n < P) are not sent: every rank knows their sizes.
// Restrictions: commutative op (block q is combined in ring order q+1, ..., q, a different tree
//               per block).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "../phases/blocks.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

// Phase pieces per block (Open MPI's num_phases) for n elements, P ranks, c per segment.
int64_t num_phases(int64_t n, int64_t P, int64_t c) {
  if (c <= 0 || n < P * c) return 1;
  const int64_t rest = n % (P * c);
  return n / (P * c) + (rest >= P && rest > P * c / 2 ? 1 : 0);
}

void generate_segmented_ring(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, r = b.rank();
  b.set_stage(0);
  OpId after = b.copy({kOut, 0, n}, {kIn, 0, n});  // what program order waits on next
  if (P == 1) return;
  const int64_t seg_bytes = a.params->integer("seg");
  const int64_t c = seg_bytes == 0 ? n : std::max<int64_t>(1, seg_bytes / a.header.elem_size);
  const int64_t np = num_phases(n, P, c);
  const phases::Blocks blocks{n, P};
  const auto piece = [&](int64_t block, int64_t p) {
    const int64_t lo = blocks.begin(block), len = blocks.begin(block + 1) - lo;
    const phases::Blocks in_block{len, np};
    return Region{kOut, lo + in_block.begin(p), in_block.begin(p + 1) - in_block.begin(p)};
  };
  // Two segment buffers, one receiving while the other is reduced (one suffices for P = 2).
  const int64_t early = n / P + (n % P != 0), longest = early / np + (early % np != 0);
  const BufId first = b.scratch(longest), buf[2] = {first, P > 2 ? b.scratch(longest) : first};
  const int64_t to = (r + 1) % P, from = (r - 1 + P) % P;
  const auto block_of = [&](int64_t k) { return ((r - k) % P + P) % P; };

  for (int64_t p = 0; p < np; ++p) {
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(p + 1, UINT16_MAX - 1)));
    // recv j gets block r-1-j into buf[j % 2]
    const auto recv = [&](int64_t j) {
      const Region pc = piece(block_of(j + 1), p);
      return pc.len == 0 ? kNoOp : b.recv(from, {buf[j % 2], 0, pc.len}, {after});
    };
    const auto reduce = [&](int64_t j, OpId got) {
      const Region pc = piece(block_of(j + 1), p);
      if (pc.len == 0) return;
      after = b.reduce(pc, {buf[j % 2], 0, pc.len}, Side::src_first, {got, after});
    };
    const auto send = [&](int64_t block) {
      const Region pc = piece(block, p);
      if (pc.len != 0) after = b.send(to, pc, {after});
    };
    OpId got = recv(0);
    send(r);
    for (int64_t k = 2; k < P; ++k) {
      const OpId next = recv(k - 1);
      reduce(k - 2, got);
      send(block_of(k - 1));
      got = next;
    }
    reduce(P - 2, got);
  }

  b.set_stage(UINT16_MAX);
  OpId prev_send = after, prev_recv = after;
  for (int64_t k = 0; k < P - 1; ++k) {
    const Region out_block = blocks.region(kOut, block_of(k - 1), block_of(k - 1) + 1);
    const Region in_block = blocks.region(kOut, block_of(k), block_of(k) + 1);
    if (out_block.len == 0 && in_block.len == 0) continue;
    const OpId s = out_block.len ? b.send(to, out_block, {prev_send, prev_recv}) : kNoOp;
    const OpId v = in_block.len ? b.recv(from, in_block, {prev_send, prev_recv}) : kNoOp;
    prev_send = s == kNoOp ? prev_send : s;
    prev_recv = v == kNoOp ? prev_recv : v;
  }
}

Cost cost_segmented_ring(const CostArgs& a) {
  if (a.P == 1) return {};
  const double P = static_cast<double>(a.P), steps = P - 1, block = a.bytes / P;
  const int64_t seg = a.params->integer("seg");
  // Phases from bytes, as from elements of one byte: the count in elements is not known here.
  const auto n = static_cast<int64_t>(a.bytes);
  const double np = static_cast<double>(num_phases(n, a.P, seg == 0 ? n : seg));
  return {(np + 1) * steps, 2 * steps * block, steps * block};
}

const Registrar reg{{
    .collective = Collective::allreduce,
    .name = "segmented_ring",
    .summary = "Open MPI's segmented ring: np ring reduce-scatters of block pieces, then one ring "
               "allgather of whole blocks; commutative ops only",
    .phases = "copy in to out; for each of the np phases, P-1 ring steps reduce piece p of every "
              "block; then P-1 ring allgather steps of whole blocks",
    .cost = "(np + 1)(P-1) alpha + 2 (P-1)/P n beta + (P-1)/P n gamma, np = floor(n / (P seg)) "
            "phases (+1 for a large rest; 1 when n < P seg or seg = 0)",
    .reference = "Open MPI ompi_coll_base_allreduce_intra_ring_segmented (coll/base); Patarasuk "
                 "and Yuan, JPDC 69(2) 2009",
    .mpi_equivalents = {"ompi:segmented_ring"},
    .params = {segment_param("0",
                             "segment size in bytes, rounded down to whole elements (at "
                             "least one): sets the number of phases; 0: one phase")},
    .restrictions = {.commutative_op = true},
    .prepare = {},
    .generate = generate_segmented_ring,
    .model = cost_segmented_ring,
}};

}  // namespace
}  // namespace collkit
