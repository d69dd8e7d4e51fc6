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
#include <functional>
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
// A key of bcast_down's program of `rank` up to a relabelling of its peers mod P (the
// AlgorithmSpec::program_class of the bcasts over it), or -1 where the tree shares none (flat,
// binary). Knomial: node v's program is fixed by its parent's offset (its lowest nonzero digit
// times that digit's weight m) and by min(m, P - v), which bounds its children's offsets and
// subtree sizes; chain: the root, the last node and the rest. A few keys per P.
int64_t bcast_down_class(const Tree& t, int64_t P, int64_t root, int64_t count, int64_t rank);

// Reduce of every rank's in[0:count] into root's out[0:count], segment by segment. The ranks are
// split at the root into [root, P) (tree node v = rank - root) and [0, root] (v = root - rank),
// so that every subtree is a contiguous range of ranks and each node combines its children's
// partial results in rank order: the result is the same for commutative and non-commutative ops,
// for any root, with no extra hop (for root 0 it is the usual tree). Non-root ranks never touch
// `out` (MPI's recvbuf is not significant there).
void reduce_to_root(RankBuilder& b, const Tree& t, int64_t root, int64_t count, int64_t seg_elems);

// Blocks of P positions relative to a root (position v is rank (v + root) mod P) moved along tree
// t, one block per position: the scatter of scatter:* and bcast:scatter_allgather, the gather of
// gather:*. The blocks of a range of positions go as one message, or as two where the range
// crosses position `split` (scatter/gather: P - root, where the ranks wrap to 0, so that every
// piece is contiguous in rank order too; P: never). Empty pieces are not sent.
struct BlockTree {
  const Tree& t;
  int64_t root = 0;
  int64_t split = 0;
  // Where this rank holds the blocks of positions [lo, hi), a range that does not cross `split`.
  std::function<Region(int64_t lo, int64_t hi)> at;
};

struct ScatterDown {
  int64_t v = 0;                   // this rank's position
  TreeNode node;                   // its tree node: the subtree is [v, v + node.size)
  std::vector<OpId> got;           // the receives of the subtree's blocks (none at the root)
  std::vector<OpId> sender;        // per position v + i of the subtree: the send that read it
  OpId sent_by(int64_t u) const {  // kNoOp outside the subtree or for a block never sent
    const int64_t i = u - v;
    return i >= 0 && i < static_cast<int64_t>(sender.size()) ? sender[static_cast<size_t>(i)]
                                                             : kNoOp;
  }
};
// Scatter down the tree: a rank receives the blocks of its subtree from its parent and passes
// each child the blocks of the child's subtree, largest subtree first.
ScatterDown scatter_down(RankBuilder& b, const BlockTree& bt);

// Gather up the tree: a rank receives each child's subtree blocks (nearest child, the smallest
// subtree, first), then sends the blocks of its own subtree to its parent after `ready` (the op
// that put its own block in place) and those receives. Returns the receives.
std::vector<OpId> gather_up(RankBuilder& b, const BlockTree& bt, OpId ready);

// The gather and scatter collectives along tree t, n elements per block (gather:* and scatter:*).
// The root holds the P blocks in rank order in `out` (gather) or `in` (scatter) and moves them in
// place; a rank with children holds its subtree's blocks in scratch, a leaf only its own block.
// Both are in-place safe: the root's own block is the one copy it makes, onto itself under
// MPI_IN_PLACE (the spec's in_place_at / in_place_out_at).
void gather_to_root(RankBuilder& b, const Tree& t, int64_t root, int64_t n);
void scatter_from_root(RankBuilder& b, const Tree& t, int64_t root, int64_t n);

// Bcast as scatter + allgather (van de Geijn): out[0:count] is cut into P blocks (the first
// count % P one element longer), block u belonging to the rank at position u relative to the root.
// 1. scatter down tree t (scatter_down, scatter:binomial's phase for the binomial tree);
// 2. ring allgather over the positions (ring_allgather, allgather:ring's phase).
void bcast_scatter_allgather(RankBuilder& b, const Tree& t, int64_t root, int64_t count);

// Zero-length messages up tree t (rooted at rank 0) and back down: every rank leaves only after
// every rank has arrived.
void gather_release(RankBuilder& b, const Tree& t);

}  // namespace collkit::phases
