// Composition: run a named algorithm's generator on a sub-group of the ranks (the ranks of one
// node, one leader per node, the ranks with one local index) inside a bigger schedule. The
// sub-algorithm writes its program for its own rank in the group; the program is spliced into
// the caller's with its peers mapped to global ranks, its `in` / `out` mapped to regions of the
// caller's buffers, its scratch buffers renumbered, its stages shifted, and its first ops made
// to wait on what came before. Hierarchical algorithms (allreduce:hier, alltoall:bruck_local)
// are a few such calls; the sub-algorithms stay the only copies of their logic.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collkit/registry.hpp"
#include "collkit/schedule.hpp"

namespace collkit::phases {

// A sub-algorithm bound once per group size (and root) it will run on: made in `prepare`, where
// the node sizes are known, so generating a rank binds nothing.
class SubAlgorithm {
 public:
  SubAlgorithm() = default;
  SubAlgorithm(const Algorithm& algo, int64_t count, int32_t elem_size)
      : algo_(std::make_shared<const Algorithm>(algo)), count_(count), elem_size_(elem_size) {}
  // Bind for groups of `size` ranks (with `root`, for rooted collectives). Throws the
  // sub-algorithm's Error, prefixed with what it was for.
  void prepare(int64_t size, int64_t root, const std::string& role);
  const Bound& bound(int64_t size, int64_t root) const;

 private:
  std::shared_ptr<const Algorithm> algo_;
  int64_t count_ = 0;
  int32_t elem_size_ = 8;
  std::map<std::pair<int64_t, int64_t>, Bound> bound_;
};

// Where the sub-algorithm's user buffers lie in the caller's buffers.
struct BufferMap {
  Region in;
  Region out;
};

// Splice the program of the member with index `index` of a group into `b`. `member(i)` is the
// global rank of the group's member i. The sub-program's ops without dependencies wait on
// `entry`; returns the ops nothing in the sub-program waits on (its exits), or `entry` when the
// sub-program is empty. Stages are shifted by `stage_base`; returns the next free stage in
// *next_stage when given.
template <class Member>
std::vector<OpId> run_on_group(RankBuilder& b, const Bound& sub, int64_t index, Member member,
                               const BufferMap& map, const std::vector<OpId>& entry,
                               uint16_t stage_base, uint16_t* next_stage = nullptr);

// One op that waits on all of `ops` (a zero-time compute when there are several), so that many
// ops waiting on many others cost a dependency each rather than a product of the two.
std::vector<OpId> join(RankBuilder& b, const std::vector<OpId>& ops);

namespace detail {
std::vector<OpId> splice(RankBuilder& b, const RankProgram& sub, const std::vector<int64_t>& peers,
                         const BufferMap& map, const std::vector<OpId>& entry, uint16_t stage_base,
                         uint16_t* next_stage);
}

template <class Member>
std::vector<OpId> run_on_group(RankBuilder& b, const Bound& sub, int64_t index, Member member,
                               const BufferMap& map, const std::vector<OpId>& entry,
                               uint16_t stage_base, uint16_t* next_stage) {
  RankProgram prog;  // not shared: a sub-algorithm may itself compose (hier inside hier)
  sub.generate_rank(index, prog);
  // Only the peers the program names are mapped: O(ops), not O(group).
  std::vector<int64_t> peers(prog.ops.size(), -1);
  for (size_t i = 0; i < prog.ops.size(); ++i)
    if (prog.ops[i].peer >= 0) peers[i] = member(prog.ops[i].peer);
  return detail::splice(b, prog, peers, map, entry, stage_base, next_stage);
}

}  // namespace collkit::phases
