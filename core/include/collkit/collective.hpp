// What each collective is, said once: its buffers, root, reduction, in-place rule and
// postcondition, as data. The IR (buffer sizes), the name grammar and registry (which collectives
// exist, which take a root), the verifier (initial memory, in-place aliasing, what every rank must
// end with) and Python (lists, docs) all read the table in collective.cpp, so a new collective is
// one enum value, one CollectiveSpec and its algorithm files.
//
// Element indices: `n` is the header's count (elements per rank; per block for collectives that
// hold one block per rank), an output element `i` lies in block b = i / n at offset j = i % n.
//
// The irregular collectives (the "v" forms, MPI_Reduce_scatter, MPI_Scan, MPI_Exscan) are rows of
// the same table: `counts` says how the header's count vector sizes the blocks (block b of a
// buffer holds counts[b] elements instead of n, or counts[r P + q] for a pair) and `displs`
// which buffers take MPI's displacements (block b at displs[b] instead of packed). The
// header-aware functions at the end (BlockLayout, expected_runs, in_place_at) read both; with an
// empty count vector a v collective is its regular form, every block n elements, packed.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace collkit {

enum class Collective : uint8_t {
  allreduce,
  reduce,
  bcast,
  alltoall,
  barrier,
  allgather,
  reduce_scatter_block,
  gather,
  scatter,
  allgatherv,
  alltoallv,
  gatherv,
  scatterv,
  reduce_scatter,
  scan,
  exscan,
};
inline constexpr int kNumCollectives = static_cast<int>(Collective::exscan) + 1;

struct ScheduleHeader;

// How many count-sized blocks a buffer holds.
enum class Blocks : uint8_t { none, one, P };

// The size of one user buffer (`in` or `out`), which may differ between the root and the others.
struct BufferShape {
  Blocks at_root = Blocks::one;
  Blocks elsewhere = Blocks::one;  // every rank of an unrooted collective
};

// Which rank's input an output element comes from.
enum class Source : uint8_t {
  all,               // every rank's, reduced
  root,              // the root's
  block_owner,       // rank b, the owner of the element's block
  prefix,            // ranks 0..r, reduced (MPI_Scan)
  exclusive_prefix,  // ranks 0..r-1, reduced; rank 0's out undefined (MPI_Exscan)
};

// How the header's count vector sizes the blocks of `in` and `out` (Blocks::one: the rank's own
// block; Blocks::P: block b).
enum class Counts : uint8_t {
  none,      // every block holds the header's count; the vector must be empty
  per_rank,  // counts[b] (P entries): rank b's block, alike on every rank (MPI's recvcounts)
  per_pair,  // counts[r P + q] (P^2 entries): what rank r sends rank q; rank r's in block q
             // holds counts[r P + q], its out block q counts[q P + r] (MPI_Alltoallv)
};

// Which user buffers take MPI's displacements (where block b starts): the header's in_displs /
// out_displs, each P entries alike on every rank or P^2 (rank r's at [r P, r P + P)); empty:
// packed, block b right after block b - 1.
enum class Displs : uint8_t { none, in, out, both };

// Which element of that input: for out[i] of rank r, with i = b * n + j.
enum class SourceIndex : uint8_t {
  same,          // in[i]
  own_block,     // in[r * n + i]: the block addressed to rank r
  within_block,  // in[j]
};

// Which ranks the postcondition (or MPI_IN_PLACE) applies to.
enum class Ranks : uint8_t { none, every_rank, root };

struct Postcondition {
  enum class Kind : uint8_t {
    reduced,       // out[i] is the reduction over all ranks of in[index], one tree on every rank
    copied,        // out[i] is exactly one input element
    synchronized,  // no data: no rank leaves before every rank has entered (barrier)
  } kind = Kind::reduced;
  Source source = Source::all;
  SourceIndex index = SourceIndex::same;
  Ranks ranks = Ranks::every_rank;  // whose `out` is specified
};

struct CollectiveSpec {
  Collective id;
  std::string_view name;          // as in algorithm names: "allreduce"
  std::string_view mpi = {};      // the MPI call it stands for
  std::string_view summary = {};  // one line, for docs and --help
  bool rooted = false;
  BufferShape in, out;
  // The root's input lives in `out` at the start (MPI_Bcast has one buffer): `in` is empty.
  bool root_input_in_out = false;
  // MPI_IN_PLACE: on these ranks `in` and `out` are one buffer, with in[k] at
  // in_place_offset(k) and out[i] at in_place_out_offset(i) (SourceIndex::same: k, i;
  // own_block: r * n + k): MPI_Allgather's input at out[r n], MPI_Scatter's root keeping its
  // block where it is, in[root n]. The buffer is as large as the larger of the two
  // (in_place_elems): MPI_Reduce_scatter_block reads its P blocks from the receive buffer.
  Ranks in_place = Ranks::none;
  SourceIndex in_place_at = SourceIndex::same;
  SourceIndex in_place_out_at = SourceIndex::same;
  Postcondition post;
  Counts counts = Counts::none;
  Displs displs = Displs::none;

  bool reduction() const { return post.kind == Postcondition::Kind::reduced; }
  bool prefix() const {
    return post.source == Source::prefix || post.source == Source::exclusive_prefix;
  }
  bool in_displs() const { return displs == Displs::in || displs == Displs::both; }
  bool out_displs() const { return displs == Displs::out || displs == Displs::both; }
};

// Every collective, in enum order.
std::span<const CollectiveSpec> all_collectives();
const CollectiveSpec& spec_of(Collective c);
std::string_view to_string(Collective c);
// Throws Error(name) for an unknown collective, listing the known ones.
Collective collective_from_string(std::string_view s);
// Whether the name is a collective's (no throw).
bool is_collective(std::string_view s);
// "allreduce, reduce, ...": the known names, for messages.
std::string_view collective_names();
bool is_rooted(Collective c);

// Elements of a buffer of this shape on `rank`, for P ranks, count n and root; saturates at
// INT64_MAX rather than wrapping (the registry bounds count * P first).
int64_t buffer_elems(const BufferShape& s, int64_t P, int64_t n, int64_t root, int64_t rank);
// The most blocks any rank's `in` or `out` holds (1 or P; 0 for none): the registry's size guard.
int64_t max_blocks(const CollectiveSpec& c, int64_t P);

// What out[i] of `rank` must hold, from the postcondition: nothing specified, one rank's input
// element, or the reduction over all ranks of input element `index`.
struct Expected {
  enum class Kind : uint8_t { unspecified, element, reduction } kind = Kind::unspecified;
  int64_t rank = -1;  // element: whose input
  int64_t index = 0;  // the input element
  // reduction: over ranks first..last (0..P-1; a prefix: 0..r, or 0..r-1)
  int64_t first = 0, last = -1;
};
Expected expected_out(const CollectiveSpec& c, int64_t P, int64_t n, int64_t root, int64_t rank,
                      int64_t i);
// Whether `rank` is one whose `out` the postcondition (ranks == root: only the root) speaks of.
bool applies_to(Ranks ranks, int64_t root, int64_t rank);
// Where in[k] and out[i] lie in the one buffer under MPI_IN_PLACE on `rank`.
int64_t in_place_offset(const CollectiveSpec& c, int64_t n, int64_t rank, int64_t k);
int64_t in_place_out_offset(const CollectiveSpec& c, int64_t n, int64_t rank, int64_t i);
// Elements of that buffer: it holds both (saturates like buffer_elems).
int64_t in_place_elems(const CollectiveSpec& c, int64_t P, int64_t n, int64_t root, int64_t rank);

// ---- Header-aware forms: they read the count vector and displacements (the regular forms above
// give the same answers for a header without them). ----

enum class Io : uint8_t { in, out };

// Where the blocks of one rank's `in` or `out` lie: block b is [offset(b), offset(b) + len(b)).
// An empty block of a displaced layout lies at 0 (its displacement is not read).
// Built in O(P) (O(1) storage for a regular header), so a generator builds it once per rank.
class BlockLayout {
 public:
  BlockLayout(const ScheduleHeader& h, Io io, int64_t rank);
  int64_t blocks() const { return nblocks_; }  // 0, 1 or P
  int64_t len(int64_t b) const { return lens_.empty() ? n_ : lens_[static_cast<size_t>(b)]; }
  int64_t offset(int64_t b) const { return offs_.empty() ? b * n_ : offs_[static_cast<size_t>(b)]; }
  // Elements of the buffer: the end of its last-lying block (saturating at INT64_MAX).
  int64_t elems() const { return elems_; }
  // Elements of the blocks, gaps left out (the buffer's payload).
  int64_t payload() const { return payload_; }
  // Whether the blocks lie one after another in block order (no displacements, or displacements
  // that say so): then blocks [a, b) are one region.
  bool packed() const { return packed_; }
  // The rank a one-block buffer belongs to (BlockLayout of Blocks::one is block `rank`'s size).
  int64_t rank() const { return rank_; }

 private:
  int64_t n_ = 0, nblocks_ = 0, elems_ = 0, payload_ = 0, rank_ = 0;
  bool packed_ = true;
  std::vector<int64_t> lens_, offs_;
};

// A run of output elements with one rule: out[out_off + j] for j in [0, len) must hold `want`
// with its index advanced by j. Kind::unspecified runs are gaps that must stay untouched
// (`untouched`) or elements the collective leaves undefined.
struct ExpectedRun {
  int64_t out_off = 0, len = 0;
  Expected want;
  bool untouched = false;  // outside every block: an MPI call never writes there
};
// What `rank`'s `out` must hold, as runs in increasing out_off covering [0, out elems).
std::vector<ExpectedRun> expected_runs(const ScheduleHeader& h, int64_t rank);
// Where in[0] and out[0] lie in the one buffer under MPI_IN_PLACE on `rank`, and its elements.
int64_t in_place_in_at(const ScheduleHeader& h, int64_t rank);
int64_t in_place_out_at(const ScheduleHeader& h, int64_t rank);
int64_t in_place_elems(const ScheduleHeader& h, int64_t rank);

}  // namespace collkit
