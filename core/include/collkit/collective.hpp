// What each collective is, said once: its buffers, root, reduction, in-place rule and
// postcondition, as data. The IR (buffer sizes), the name grammar and registry (which collectives
// exist, which take a root), the verifier (initial memory, in-place aliasing, what every rank must
// end with) and Python (lists, docs) all read the table in collective.cpp, so a new collective is
// one enum value, one CollectiveSpec and its algorithm files.
//
// Element indices: `n` is the header's count (elements per rank; per block for collectives that
// hold one block per rank), an output element `i` lies in block b = i / n at offset j = i % n.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

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
};
inline constexpr int kNumCollectives = static_cast<int>(Collective::scatter) + 1;

// How many count-sized blocks a buffer holds.
enum class Blocks : uint8_t { none, one, P };

// The size of one user buffer (`in` or `out`), which may differ between the root and the others.
struct BufferShape {
  Blocks at_root = Blocks::one;
  Blocks elsewhere = Blocks::one;  // every rank of an unrooted collective
};

// Which rank's input an output element comes from.
enum class Source : uint8_t {
  all,          // every rank's, reduced
  root,         // the root's
  block_owner,  // rank b, the owner of the element's block
};

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

  bool reduction() const { return post.kind == Postcondition::Kind::reduced; }
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

}  // namespace collkit
