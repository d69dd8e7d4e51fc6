// allreduce:tree: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allreduce:tree` prints them).
// Algorithm:    MPICH's MPIR_Allreduce_intra_tree: a reduce up a tree rooted at rank 0 and a
//               bcast back down it, chunk by chunk. The trees are MPICH's (treeutil.c):
//               knomial_1 (its default): node v at depth d owns [v, v + k^(D-d)), D the base-k
//                 digits of P - 1; its children are v + 1 + j k^(D-d-1) (j = 0..k-2), then the
//                 same one level down: the largest subtrees first, all contiguous, ascending;
//               knomial_2: the binomial tree, v's children v + i k^j for the digits j below
//                 v's lowest nonzero one, highest j and i first;
//               kary: v's children v k + 1 .. v k + k.
// Phases:       per chunk (MPICH's pipeline chunks: count % c first, then c elements; count 0
//               sends nothing), in MPICH's blocking order: receive the chunk from each child in
//               turn and reduce it in, send it to the parent, receive the result from the
//               parent (after that send completes: the same region), send it to each child.
// Restrictions: knomial_1 keeps rank order (the own value, then each child's on the right: its
//               subtrees are contiguous and ascending), as MPICH does for non-commutative ops;
//               kary and knomial_2 combine a child's value on the left and need a commutative
//               op (MPICH switches those to knomial_1 for a non-commutative op).
#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "collkit/error.hpp"
#include "collkit/registry.hpp"

namespace collkit {
namespace {

struct Node {
  int64_t parent = -1;
  std::vector<int64_t> children;
};

Node knomial_1(int64_t P, int64_t k, int64_t v) {
  int64_t depth = 0;
  for (int64_t t = P - 1; t > 0; t /= k) ++depth;
  std::vector<int64_t> pw(static_cast<size_t>(depth) + 1, 1);
  for (size_t i = 1; i < pw.size(); ++i) pw[i] = pw[i - 1] * k;
  const auto width = [&](int64_t step) { return pw[static_cast<size_t>(depth - step - 1)]; };
  Node out;
  int64_t current = 0, running = 1, step = 0;
  // Walk down from the root: at each step, v is in one of the k - 1 subtrees of the next size,
  // or the walk goes on to the next (smaller) size of the same node.
  for (; v != current && step < depth; ++step) {
    for (int64_t j = 1; j < k; ++j) {
      if (v >= running && v < running + width(step)) {
        out.parent = current;
        current = running;
        running = current + 1;
        break;
      }
      running += width(step);
    }
  }
  int64_t child = v + 1;
  for (int64_t i = step; i < depth; ++i)
    for (int64_t j = 1; j < k; ++j, child += width(i))
      if (child < P) out.children.push_back(child);
  return out;
}

Node knomial_2(int64_t P, int64_t k, int64_t v) {
  Node out;
  std::vector<int64_t> pw{1};
  while (pw.back() <= (P - 1) / k) pw.push_back(pw.back() * k);  // k^j <= P - 1
  size_t low = 0;                                                // v's lowest nonzero digit
  while (low < pw.size() && v / pw[low] % k == 0) ++low;
  if (v > 0) out.parent = v - v / pw[low] % k * pw[low];
  for (size_t j = std::min(low, pw.size()); j-- > 0;)
    for (int64_t i = k - 1; i >= 1; --i)
      if (v + i * pw[j] < P) out.children.push_back(v + i * pw[j]);
  return out;
}

Node kary(int64_t P, int64_t k, int64_t v) {
  Node out;
  out.parent = v == 0 ? -1 : (v - 1) / k;
  for (int64_t j = 1; j <= k && v * k + j < P; ++j) out.children.push_back(v * k + j);
  return out;
}

void check_tree(std::string_view t) {
  if (t != "knomial_1" && t != "knomial_2" && t != "kary")
    fail(ErrorKind::name, "allreduce:tree: tree = '" + std::string(t) +
                              "' must be knomial_1, knomial_2 or kary (MPICH's tree types)");
}

// MPIR_Algo_calculate_pipeline_chunk_info: c = chunk / element size elements; one chunk where
// c < 1 or c >= count; otherwise count % c (or c) first, then chunks of c.
struct Chunks {
  int64_t count = 0, first = 0, rest = 0;
};
Chunks chunks(int64_t n, int64_t chunk_bytes, int64_t elem_size) {
  if (n == 0) return {};
  const int64_t c = chunk_bytes <= 0 ? 0 : chunk_bytes / elem_size;
  if (c < 1 || c >= n) return {1, n, n};
  return {(n + c - 1) / c, n % c == 0 ? c : n % c, c};
}

void generate_tree(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, v = b.rank(), k = a.params->integer("k");
  const std::string& type = a.params->word("tree");
  b.set_stage(0);
  OpId ready = b.copy({kOut, 0, n}, {kIn, 0, n});
  const Chunks ch = chunks(n, a.params->integer("seg"), a.header.elem_size);
  if (P == 1 || ch.count == 0) return;
  const Node node = type == "kary"        ? kary(P, k, v)
                    : type == "knomial_2" ? knomial_2(P, k, v)
                                          : knomial_1(P, k, v);
  // knomial_1 in rank order (own value, then children ascending); the others as MPICH's
  // commutative path: child on the left.
  const Side side = type == "knomial_1" ? Side::dst_first : Side::src_first;
  const BufId child_buf = node.children.empty() ? kOut : b.scratch(n);
  for (int64_t j = 0, off = 0; j < ch.count; ++j) {
    const int64_t len = j == 0 ? ch.first : ch.rest;
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(j + 1, UINT16_MAX)));
    const Region mine{kOut, off, len}, theirs{child_buf, off, len};
    for (const int64_t c : node.children) {
      const OpId got = b.recv(c, theirs, {ready});
      ready = b.reduce(mine, theirs, side, {got, ready});
    }
    if (node.parent >= 0) {
      const OpId up = b.send(node.parent, mine, {ready});
      ready = b.recv(node.parent, mine, {up});
    }
    for (const int64_t c : node.children) b.send(c, mine, {ready});
    off += len;
  }
}

// Along the deepest path, unpipelined: each level receives from up to `fan` children in turn,
// then the result comes down the same levels.
Cost cost_tree(const CostArgs& a) {
  if (a.P <= 1) return {};
  const int64_t k = a.params->integer("k");
  const std::string& type = a.params->word("tree");
  double levels = 0;
  for (int64_t m = 1; m < a.P; m *= k) levels += 1;
  if (type == "kary") {
    levels = 0;
    for (int64_t m = 1, w = 1; m < a.P; w *= k, m += w) levels += 1;
  }
  const double fan = static_cast<double>(std::min(a.P - 1, type == "kary" ? k : k - 1));
  return Cost{2 * levels * fan, 2 * levels * fan * a.bytes, levels * fan * a.bytes};
}

const Registrar reg{{
    .collective = Collective::allreduce,
    .name = "tree",
    .summary = "MPICH's tree allreduce: reduce up a knomial or k-ary tree to rank 0 and bcast "
               "back down it, chunk by chunk",
    .phases = "per chunk: receive each child's partial result and reduce it in, send to the "
              "parent, receive the result from it, send it to each child",
    .cost = "unpipelined, at most 2 L f (alpha + n beta) + L f n gamma, L = the tree's depth "
            "(ceil(log_k P) for the knomial trees), f = its fan-out (k - 1 knomial, k kary)",
    .reference = "MPICH MPIR_Allreduce_intra_tree and MPII_Treeutil_tree_*_init "
                 "(src/mpi/coll/allreduce/allreduce_intra_tree.c, "
                 "src/mpi/coll/algorithms/treealgo/treeutil.c)",
    .mpi_equivalents = {"mpich:tree"},
    .params = {radix_param("2", "tree radix (MPIR_CVAR_ALLREDUCE_TREE_KVAL)"),
               {.name = "tree",
                .type = ParamType::word,
                .default_value = "knomial_1",
                .doc = "MPICH's tree type (MPIR_CVAR_ALLREDUCE_TREE_TYPE): knomial_1, "
                       "knomial_2 or kary",
                .grid = {"knomial_1", "knomial_2", "kary"},
                .check = check_tree},
               segment_param("0",
                             "chunk size in bytes (MPIR_CVAR_ALLREDUCE_TREE_PIPELINE_CHUNK_SIZE): "
                             "chunks of chunk / element size elements, the remainder first; 0 "
                             "or under one element: the whole message in one piece")},
    .restrictions = {},
    .prepare = {},
    .generate = generate_tree,
    .model = cost_tree,
    .needs_commutative = [](const ParamValues& p,
                            const Placement&) { return p.word("tree") != "knomial_1"; },
}};

}  // namespace
}  // namespace collkit
