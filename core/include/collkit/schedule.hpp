// The Schedule IR: for every rank, a small program, a DAG of operations on that rank's buffers.
//
// Buffers are the user's input (`in`), the user's output (`out`) and numbered scratch buffers
// (`s0`, `s1`, ...). Offsets and lengths are in elements; the element size lives in the header.
// Each op lists the ops of its own rank it waits on; messages between an ordered pair of ranks
// match in the order they are posted (no tags). Stages are labels for pictures, not barriers.
//
// Storage is flat (struct-of-arrays over all ranks) so that 10^6 ranks cost tens of bytes per op
// and no allocation per rank. A RankProgram holds one rank alone; a Schedule holds all of them;
// both are read through the same RankView.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collkit/big_alloc.hpp"
#include "collkit/collective.hpp"
#include "collkit/placement.hpp"

namespace collkit {

enum class OpKind : uint8_t { send, recv, reduce, copy, compute, sleep };
std::string_view to_string(OpKind k);

// Operand order of a reduction, explicit so that non-commutative ops are well defined:
//   src_first: dst = src (+) dst        dst_first: dst = dst (+) src
enum class Side : uint8_t { src_first, dst_first };

using BufId = uint8_t;
constexpr BufId kIn = 0;
constexpr BufId kOut = 1;
constexpr BufId kFirstScratch = 2;
constexpr int kMaxScratch = 250;
constexpr BufId scratch_buf(int k) {
  return static_cast<BufId>(kFirstScratch + k);
}
std::string buffer_name(BufId b);  // "in", "out", "s0", ...

// A recv whose peer is kAnySource takes the first message to arrive from any rank (GOAL's
// `from -1`, MPI_ANY_SOURCE). Only the simulator runs such receives; the verifier and the MPI
// executor refuse them, since their matching depends on timing.
constexpr int32_t kAnySource = -1;
constexpr int kMaxCpu = 15, kMaxNic = 7;

using OpId = uint32_t;
constexpr OpId kNoOp = UINT32_MAX;

// Build one with `Op{.len = ..., .kind = ...}`: GCC 12 refuses a bare designated brace list
// passed to a `const Op&` once Op has an enum bit-field.
struct Op {
  int64_t len = 0;      // elements; for compute / sleep: nanoseconds
  int64_t off = 0;      // offset of the region in `buf`
  int64_t src_off = 0;  // reduce / copy: offset of the source region in `src`
  int32_t peer = -1;    // send / recv: the other rank
  OpKind kind = OpKind::compute;
  Side side : 1 = Side::src_first;
  // Which of its host's CPUs and NICs the op uses (GOAL's `cpu N` / `nic N`, LogGOPSim's several
  // CPUs per host): only the simulator reads them, and all of collkit's generators leave them 0.
  uint8_t cpu : 4 = 0;
  uint8_t nic : 3 = 0;
  BufId buf = kOut;  // send: the buffer read; recv / reduce / copy: the buffer written
  BufId src = kIn;   // reduce / copy: the buffer read
};
static_assert(sizeof(Op) == 32, "Op is kept at 32 bytes: 10^6 ranks hold tens of millions");

// A region of one buffer, [off, off + len) in elements.
struct Region {
  BufId buf;
  int64_t off;
  int64_t len;
};

// What a schedule is for: the collective, its size and the algorithm that made it.
struct ScheduleHeader {
  Collective collective = Collective::allreduce;
  std::string algorithm;  // canonical algorithm name, e.g. "allreduce:rd"; may be empty
  int64_t P = 1;
  int64_t count = 0;      // elements per rank (alltoall: per block)
  int32_t elem_size = 8;  // bytes per element
  int64_t root = 0;       // rooted collectives only
  Placement placement;    // ranks on nodes; not given (rpn 0) unless the generator asked
  // The irregular collectives (CollectiveSpec::counts, ::displs); empty: the regular form, every
  // block `count` elements, packed. With counts, `count` is their largest entry (the bound every
  // size check and cost reads). Displacements are element offsets into the user's buffer, as an
  // MPI executor passes them on: the IR's offsets into `in` / `out` are the user's own.
  std::vector<int64_t> counts;      // per_rank: P entries; per_pair: P^2, [r P + q] r to q
  std::vector<int64_t> in_displs;   // where `in`'s block b starts: P entries, or P^2 per rank
  std::vector<int64_t> out_displs;  // the same for `out`

  // Elements in the user's input and output buffers of `rank` (from the CollectiveSpec and the
  // count vector: the end of the last-lying block). O(P) for a header with counts.
  int64_t in_elems(int64_t rank) const;
  int64_t out_elems(int64_t rank) const;
  bool irregular() const { return !counts.empty() || !in_displs.empty() || !out_displs.empty(); }
  const CollectiveSpec& spec() const { return spec_of(collective); }
  bool operator==(const ScheduleHeader&) const = default;
};

// Throws Error(invalid_argument) with what is wrong unless the count vector and displacements
// fit the collective: lengths (P or P^2), entries >= 0, `count` their largest, every buffer
// inside 2^48 elements and no two blocks of an `out` overlapping (MPI: no location written twice).
void check_counts(const ScheduleHeader& h);

// Read-only view of one rank's program, whether it lives alone or inside a Schedule.
struct RankView {
  int64_t rank = 0;
  std::span<const Op> ops;
  std::span<const uint16_t> stage;      // a label per op
  std::span<const uint32_t> dep_begin;  // ops.size() + 1 entries, indices into `deps`
  std::span<const OpId> deps;           // op indices of this rank
  std::span<const int64_t> scratch;     // element count of each scratch buffer

  size_t size() const { return ops.size(); }
  std::span<const OpId> deps_of(size_t i) const {
    return deps.subspan(dep_begin[i], dep_begin[i + 1] - dep_begin[i]);
  }
  // Elements in buffer b of this rank (0 for a buffer that does not exist).
  int64_t buffer_elems(const ScheduleHeader& h, BufId b) const;
};

// One rank's program, owned. Reused across ranks by generators: clear() keeps capacity.
class RankProgram {
 public:
  int64_t rank = 0;
  std::vector<Op> ops;
  std::vector<uint16_t> stage;
  std::vector<uint32_t> dep_begin{0};
  std::vector<OpId> deps;
  std::vector<int64_t> scratch;

  void clear(int64_t new_rank);
  RankView view() const;
  // Append one op with its dependencies and stage label; returns its id.
  OpId append(const Op& op, std::span<const OpId> op_deps, uint16_t op_stage);
};

// Dependencies as passed to the builder: a brace list, a vector or a span. kNoOp entries are
// skipped, so "the previous op, if there was one" needs no branch in a generator.
class Deps {
 public:
  Deps() = default;
  Deps(std::initializer_list<OpId> l) : data_(l.begin(), l.size()) {}
  Deps(const std::vector<OpId>& v) : data_(v.data(), v.size()) {}
  Deps(std::span<const OpId> s) : data_(s) {}
  std::span<const OpId> span() const { return data_; }

 private:
  std::span<const OpId> data_;
};

// The builder a generator writes one rank's program with. Op constructors return ids;
// dependencies are passed explicitly.
class RankBuilder {
 public:
  RankBuilder(RankProgram& program, int64_t P) : p_(program), P_(P) {}
  int64_t rank() const { return p_.rank; }
  int64_t P() const { return P_; }

  void set_stage(uint16_t s) { stage_ = s; }
  uint16_t stage() const { return stage_; }
  // A new scratch buffer of `elems` elements.
  BufId scratch(int64_t elems);

  OpId send(int64_t peer, Region from, Deps deps = {});
  OpId recv(int64_t peer, Region into, Deps deps = {});
  // dst = src (+) dst  (Side::src_first)  or  dst = dst (+) src  (Side::dst_first)
  OpId reduce(Region dst, Region src, Side side, Deps deps = {});
  OpId copy(Region dst, Region src, Deps deps = {});
  OpId compute(int64_t ns, Deps deps = {});
  OpId sleep(int64_t ns, Deps deps = {});

 private:
  OpId add(const Op& op, Deps deps);
  OpId message(OpKind kind, int64_t peer, Region r, Deps deps);
  RankProgram& p_;
  int64_t P_;
  uint16_t stage_ = 0;
  std::vector<OpId> tmp_;
};

// All ranks' programs in flat arrays.
class Schedule {
 public:
  ScheduleHeader header;

  Schedule() = default;
  explicit Schedule(ScheduleHeader h);
  // Append the next rank's program; ranks must be appended in order 0, 1, ..., P-1.
  void append_rank(const RankView& r);
  void reserve(size_t ops, size_t deps, size_t scratch = 0);
  int64_t num_ranks() const { return static_cast<int64_t>(rank_op_begin_.size()) - 1; }
  bool complete() const { return num_ranks() == header.P; }
  RankView rank(int64_t r) const;
  size_t total_ops() const { return ops_.size(); }
  size_t total_deps() const { return deps_.size(); }
  // Bytes held by the flat arrays (their sizes, not capacities).
  size_t memory_bytes() const;

  // Flat arrays, for bindings and bulk consumers.
  std::span<const Op> all_ops() const { return ops_; }
  std::span<const uint64_t> rank_op_begin() const { return rank_op_begin_; }

  bool operator==(const Schedule& o) const;

 private:
  BigVector<Op> ops_;
  BigVector<uint16_t> stage_;
  BigVector<uint32_t> dep_begin_;  // per op, relative to the rank's first dep; + sentinel per rank
  BigVector<OpId> deps_;
  BigVector<int64_t> scratch_;
  BigVector<uint64_t> rank_op_begin_{0};
  BigVector<uint64_t> rank_dep_begin_{0};
  BigVector<uint64_t> rank_dep_index_begin_{0};  // into dep_begin_ (ops + 1 per rank)
  BigVector<uint64_t> rank_scratch_begin_{0};
};

// The reverse of the dependency lists: for every op, the ops of its rank that wait on it, in op
// order, in compressed form. One helper for every consumer that runs a DAG forwards (verifier,
// simulator, MPI plan). Ranks are appended one after another, so op ids may be global (all ranks)
// or, after clear(), local to one rank.
class Successors {
 public:
  void clear() {
    begin_.assign(1, 0);
    list_.clear();
  }
  // Append the successor lists of a rank's ops; its op i gets id size() + i.
  void append_rank(const RankView& v);
  size_t size() const { return begin_.size() - 1; }  // ops appended
  std::span<const uint32_t> of(size_t op) const {
    return std::span<const uint32_t>(list_).subspan(begin_[op], begin_[op + 1] - begin_[op]);
  }

 private:
  std::vector<uint32_t> begin_{0};  // size() + 1 entries, into list_
  std::vector<uint32_t> list_;      // successor ids (same numbering as the ops)
};

// Equality of two ranks' programs (ops, deps, stages, scratch).
bool same_program(const RankView& a, const RankView& b);

}  // namespace collkit
