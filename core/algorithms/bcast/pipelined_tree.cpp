// bcast:pipelined_tree: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms bcast:pipelined_tree` prints them).
// Algorithm:    MPICH's pipelined tree with its default k-ary tree (MPIR_CVAR_BCAST_TREE_TYPE
//               kary) and non-blocking sends (MPIR_CVAR_BCAST_IS_NON_BLOCKING): over positions
//               v = rank - root mod P, v's parent is (v - 1) / k and its children are v k + 1 ..
//               v k + k. The message is cut into chunks of c = seg / element size elements, the
//               first one the remainder n mod c (c when c divides n), the others c.
// Phases:       per chunk in order, a rank receives it from its parent and sends it to each of
//               its children in order as soon as it is in. The first three receives are posted
//               at once; each later one is a blocking receive after the one before it (MPICH
//               pre-posts three unless MPIR_CVAR_BCAST_RECV_PRE_POST). Sends wait for nothing
//               but their chunk.
// Restrictions: none (any P, any root).
#include <algorithm>
#include <cstdint>

#include "collkit/registry.hpp"

namespace collkit {
namespace {

void generate_pipelined_tree(const GenArgs& a, RankBuilder& b) {
  const int64_t P = a.header.P, n = a.header.count, root = a.header.root;
  if (P == 1 || n == 0) return;
  const int64_t k = a.params->integer("k"), v = (b.rank() - root + P) % P;
  const int64_t seg_bytes = a.params->integer("seg");
  const int64_t c = seg_bytes <= 0 ? n : std::clamp<int64_t>(seg_bytes / a.header.elem_size, 1, n);
  const int64_t chunks = (n + c - 1) / c, first = n % c == 0 ? c : n % c;
  const auto rank_of = [&](int64_t u) { return (u + root) % P; };
  OpId prev = kNoOp;
  for (int64_t i = 0, off = 0; i < chunks; ++i) {
    const int64_t len = i == 0 ? first : c;
    b.set_stage(static_cast<uint16_t>(std::min<int64_t>(i, UINT16_MAX)));
    const Region chunk{kOut, off, len};
    OpId got = kNoOp;
    if (v > 0)
      got = prev = b.recv(rank_of((v - 1) / k), chunk, {chunks > 3 && i >= 3 ? prev : kNoOp});
    for (int64_t j = 1; j <= k && v * k + j < P; ++j) b.send(rank_of(v * k + j), chunk, {got});
    off += len;
  }
}

const Registrar reg{{
    .collective = Collective::bcast,
    .name = "pipelined_tree",
    .summary = "MPICH's pipelined k-ary tree: chunks forwarded down a k-ary tree as they arrive",
    .phases = "cut the message into chunks (the remainder first); each rank receives every chunk "
              "from its parent (v-1)/k and sends it on to its children v k + 1 .. v k + k",
    .cost = "(D + S - 1) k (alpha + (n / S) beta), D = the k-ary tree's depth (about log_k P), "
            "S = ceil(n / seg) chunks, each rank sending a chunk to its k children in turn",
    .reference = "MPICH MPIR_Bcast_intra_pipelined_tree (tree type kary, non-blocking sends)",
    .mpi_equivalents = {"mpich:pipelined_tree"},
    .params = {{"k",
                ParamType::integer,
                "2",
                1,
                64,
                "children per node (MPIR_CVAR_BCAST_TREE_KVAL)",
                {"2", "3", "1"}},
               segment_param("8KiB",
                             "chunk size in bytes, rounded down to whole elements, at "
                             "least one (MPIR_CVAR_BCAST_TREE_PIPELINE_CHUNK_SIZE); 0: "
                             "the whole message in one piece")},
    .restrictions = {},
    .prepare = {},
    .generate = generate_pipelined_tree,
}};

}  // namespace
}  // namespace collkit
