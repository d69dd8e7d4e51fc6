// Tree phases shared by the rooted collectives (bcast, reduce) and the tree barrier.
//
// Every tree here is over nodes 0..n-1, rooted at 0, and laid out in preorder: the subtree of
// node v is the contiguous range [v, v + size), and its children are listed in ascending order.
// Contiguous subtrees are what lets a reduction combine operands in rank order (an in-order walk
// of the tree meets the ranks in order), so non-commutative operations get one well defined
// result. Bcast maps the tree onto ranks relative to the root (rank = root + v mod P); reduce
// splits the ranks at the root into two such trees, see reduce_to_root.
#pragma once
#include <cstdint>
#include <vector>

#include "collkit/schedule.hpp"

namespace collkit::phases {

enum class TreeShape : uint8_t {
  flat,     // the root's children are all other nodes (linear)
  chain,    // v's child is v + 1 (pipeline)
  binary,   // at most two children; a node of size s has children of sizes ceil((s-1)/2), the rest
  knomial,  // radix k: v's children are v + j k^i, j = 1..k-1, for k^i below v's lowest digit
};

struct Tree {
  TreeShape shape = TreeShape::knomial;
  int64_t k = 2;  // knomial radix (2: binomial)
};

struct TreeNode {
  int64_t parent = -1;            // -1 for the root
  int64_t size = 1;               // nodes in v's subtree, [v, v + size)
  std::vector<int64_t> children;  // ascending; child i's subtree ends where child i+1's begins
};

// Node v of tree t over n nodes. O(children + depth) time.
void tree_node(const Tree& t, int64_t n, int64_t v, TreeNode& out);

// Splits n elements into segments of seg_elems (0: one segment). Segment i is [off(i),
// off(i)+len(i)).
struct Segments {
  int64_t n = 0;
  int64_t seg = 0;  // elements per segment, >= 1 when n > 0
  Segments(int64_t elems, int64_t seg_elems);
  int64_t count() const { return n == 0 ? 0 : (n + seg - 1) / seg; }
  int64_t off(int64_t i) const { return i * seg; }
  int64_t len(int64_t i) const { return (i + 1) * seg <= n ? seg : n - i * seg; }
};

// Elements per segment for a segment size in bytes (0: unsegmented).
int64_t segment_elems(int64_t seg_bytes, int32_t elem_size, int64_t count);

// Bcast of out[0:count] from `root` down tree t mapped onto ranks relative to the root, segment
// by segment (a rank forwards segment i as soon as it has it: pipelining). Children get each
// segment largest subtree first.
void bcast_down(RankBuilder& b, const Tree& t, int64_t root, int64_t count, int64_t seg_elems);

// Reduce of every rank's in[0:count] into root's out[0:count], segment by segment. The ranks are
// split at the root into [root, P) (tree node v = rank - root) and [0, root] (v = root - rank),
// so that every subtree is a contiguous range of ranks and each node combines its children's
// partial results in rank order: the result is the same for commutative and non-commutative ops,
// for any root, with no extra hop (for root 0 it is the usual tree). Non-root ranks never touch
// `out` (MPI's recvbuf is not significant there).
void reduce_to_root(RankBuilder& b, const Tree& t, int64_t root, int64_t count, int64_t seg_elems);

// Bcast as scatter + allgather (van de Geijn): out[0:count] is cut into P blocks (the first
// count % P one element longer), block u belonging to the rank at position u relative to the root.
// 1. scatter down tree t: a rank receives the blocks of its subtree from its parent in one message
//    and passes each child the blocks of the child's subtree;
// 2. ring allgather over the positions: at step s (0 .. P-2) a rank sends block v - s to v + 1 and
//    receives block v - s - 1 from v - 1. Empty blocks are never sent.
void bcast_scatter_allgather(RankBuilder& b, const Tree& t, int64_t root, int64_t count);

// Zero-length messages up tree t (rooted at rank 0) and back down: every rank leaves only after
// every rank has arrived.
void gather_release(RankBuilder& b, const Tree& t);

}  // namespace collkit::phases
