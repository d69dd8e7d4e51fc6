// bcast:split_binary_tree: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms bcast:split_binary_tree` prints them).
// Algorithm:    Open MPI's split binary tree, over positions v = rank - root mod P. The tree is
//               Open MPI's breadth-first binary tree: v at level l (2^l - 1 <= v < 2^(l+1) - 1)
//               has children v + 2^l and v + 2^(l+1), so the odd positions form the subtree of 1
//               (left) and the even ones that of 2 (right). The message is cut in two halves, the
//               first floor(n / 2) elements and the rest.
// Phases:       1. the root sends the first half down the left subtree and the second down the
//                  right one, segment by segment, alternating between its children (blocking
//                  sends, one after another); every other rank receives the segments of its
//                  subtree's half and forwards each to its children as soon as it has it;
//               2. each rank swaps halves with its twin in the other subtree: an odd v with v + 1,
//                  an even v with v - 1 (a receive of the other half, then a send of its own).
//                  For even P the last position, P-1, has no twin: the root sends it the second
//                  half instead.
//               Fewer than two elements: Open MPI's chain instead, v receiving from v - 1 and
//               sending to v + 1.
// Restrictions: none (any P, any root).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "../phases/trees.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

int64_t level_of(int64_t v) {  // 2^l - 1 <= v < 2^(l+1) - 1
  int64_t l = 0;
  while ((int64_t{2} << l) - 1 <= v) ++l;
  return l;
}

int64_t parent_of(int64_t v) {
  if (v == 0) return -1;
  const int64_t l = level_of(v), half = int64_t{1} << (l - 1);
  // The parent p (level l - 1) has children p + 2^(l-1) and p + 2^l.
  return v - half <= (int64_t{1} << l) - 2 ? v - half : v - 2 * half;
}

void generate_split_binary_tree(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, root = a.header.root;
  const int64_t v = (b.rank() - root + P) % P;
  const auto rank_of = [&](int64_t u) { return (u + root) % P; };
  if (P == 1 || n == 0) return;
  b.set_stage(0);
  if (n < 2) {  // the chain
    const OpId got = v > 0 ? b.recv(rank_of(v - 1), {kOut, 0, n}) : kNoOp;
    if (v + 1 < P) b.send(rank_of(v + 1), {kOut, 0, n}, {got});
    return;
  }
  const int64_t size[2] = {n / 2, n - n / 2}, begin[2] = {0, n / 2};
  const int64_t seg_bytes = a.params->integer("seg");
  const int64_t seg =
      seg_bytes == 0 ? size[1] : std::max<int64_t>(1, seg_bytes / a.header.elem_size);
  std::vector<int64_t> kids;
  const int64_t delta = int64_t{1} << level_of(v);
  for (int64_t c : {v + delta, v + 2 * delta})
    if (c < P) kids.push_back(c);
  std::vector<OpId> step1;
  OpId after = kNoOp;  // program order: Open MPI's sends block

  // Phase 1.
  if (v == 0) {
    int64_t sent[2] = {0, 0};
    const size_t halves = std::min<size_t>(kids.size(), 2);
    for (bool more = true; more;) {
      more = false;
      for (size_t i = 0; i < halves; ++i) {
        if (sent[i] == size[i]) continue;
        const int64_t len = std::min(seg, size[i] - sent[i]);
        after = b.send(rank_of(kids[i]), {kOut, begin[i] + sent[i], len}, {after});
        step1.push_back(after);
        sent[i] += len;
        more = more || sent[i] < size[i];
      }
    }
  } else {
    const int lr = v % 2 == 1 ? 0 : 1;  // the half of this subtree
    const int64_t parent = rank_of(parent_of(v));
    // Receives are posted one segment ahead; a segment goes on once it is in.
    OpId got = kNoOp;
    int64_t at = 0, got_off = 0, got_len = 0;
    const auto forward = [&](OpId seg_in, int64_t off, int64_t len) {
      for (int64_t c : kids) {
        after = b.send(rank_of(c), {kOut, off, len}, {seg_in, after});
        step1.push_back(after);
      }
    };
    while (at < size[lr]) {
      const int64_t len = std::min(seg, size[lr] - at), off = begin[lr] + at;
      // A leaf's receives block; a node's run one ahead of its forwarding.
      const OpId r = b.recv(parent, {kOut, off, len}, {kids.empty() ? got : after});
      step1.push_back(r);
      if (got != kNoOp) forward(got, got_off, got_len);
      got = r;
      got_off = off;
      got_len = len;
      at += len;
    }
    forward(got, got_off, got_len);
  }

  // Phase 2.
  b.set_stage(1);
  const OpId done = step1.empty() ? kNoOp : b.compute(0, step1);
  if (P % 2 == 0 && v == 0) {
    b.send(rank_of(P - 1), {kOut, begin[1], size[1]}, {done});
  } else if (P % 2 == 0 && v == P - 1) {
    b.recv(root, {kOut, begin[1], size[1]}, {done});
  } else if (v != 0) {
    const int lr = v % 2 == 1 ? 0 : 1;
    const int64_t twin = rank_of(lr == 0 ? v + 1 : v - 1);
    b.recv(twin, {kOut, begin[1 - lr], size[1 - lr]}, {done});
    b.send(twin, {kOut, begin[lr], size[lr]}, {done});
  }
}

const Registrar reg{{
    .collective = Collective::bcast,
    .name = "split_binary_tree",
    .summary = "Open MPI's split binary tree: each half of the message down one subtree, then "
               "twins in the two subtrees swap halves",
    .phases = "the root pipes the first half down its left subtree and the second down its right "
              "one, segment by segment; then every rank swaps halves with its twin in the other "
              "subtree (even P: the root sends the second half to the last rank)",
    .cost = "2 (H + S - 1)(alpha + n / (2 S) beta) + alpha + n/2 beta, H = ceil(lg(P + 1)) - 1 "
            "the tree's height, S = ceil(n / (2 seg)) segments per half (1 for seg = 0)",
    .reference = "Open MPI ompi_coll_base_bcast_intra_split_bintree and "
                 "ompi_coll_base_topo_build_tree (coll/base)",
    .mpi_equivalents = {"ompi:split_binary_tree"},
    .params = {segment_param("0",
                             "segment size in bytes, rounded down to whole elements (at "
                             "least one); 0: each half in one piece")},
    .restrictions = {},
    .prepare = {},
    .generate = generate_split_binary_tree,
}};

}  // namespace
}  // namespace collkit
