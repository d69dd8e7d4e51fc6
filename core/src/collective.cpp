#include "collkit/collective.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <string>

#include "collkit/error.hpp"
#include "collkit/schedule.hpp"

namespace collkit {

namespace {

using Kind = Postcondition::Kind;

// The one table of collectives, in enum order.
constexpr std::array<CollectiveSpec, kNumCollectives> kSpecs = {{
    {.id = Collective::allreduce,
     .name = "allreduce",
     .mpi = "MPI_Allreduce",
     .summary = "every rank ends with the reduction of all ranks' inputs",
     .in = {Blocks::one, Blocks::one},
     .out = {Blocks::one, Blocks::one},
     .in_place = Ranks::every_rank,
     .post = {Kind::reduced, Source::all, SourceIndex::same, Ranks::every_rank}},
    {.id = Collective::reduce,
     .name = "reduce",
     .mpi = "MPI_Reduce",
     .summary = "the root ends with the reduction of all ranks' inputs",
     .rooted = true,
     .in = {Blocks::one, Blocks::one},
     .out = {Blocks::one, Blocks::one},
     .in_place = Ranks::root,
     .post = {Kind::reduced, Source::all, SourceIndex::same, Ranks::root}},
    {.id = Collective::bcast,
     .name = "bcast",
     .mpi = "MPI_Bcast",
     .summary = "every rank ends with the root's data (one buffer, `out`)",
     .rooted = true,
     .in = {Blocks::none, Blocks::none},
     .out = {Blocks::one, Blocks::one},
     .root_input_in_out = true,
     .post = {Kind::copied, Source::root, SourceIndex::same, Ranks::every_rank}},
    {.id = Collective::alltoall,
     .name = "alltoall",
     .mpi = "MPI_Alltoall",
     .summary = "rank r's block q goes to rank q's block r (count is per block)",
     .in = {Blocks::P, Blocks::P},
     .out = {Blocks::P, Blocks::P},
     .post = {Kind::copied, Source::block_owner, SourceIndex::own_block, Ranks::every_rank}},
    {.id = Collective::barrier,
     .name = "barrier",
     .mpi = "MPI_Barrier",
     .summary = "no rank leaves before every rank has entered (no data)",
     .in = {Blocks::none, Blocks::none},
     .out = {Blocks::none, Blocks::none},
     .post = {Kind::synchronized, Source::all, SourceIndex::same, Ranks::every_rank}},
    {.id = Collective::allgather,
     .name = "allgather",
     .mpi = "MPI_Allgather",
     .summary = "every rank ends with every rank's block, rank b's in block b (count is per block)",
     .in = {Blocks::one, Blocks::one},
     .out = {Blocks::P, Blocks::P},
     .in_place = Ranks::every_rank,
     .in_place_at = SourceIndex::own_block,
     .post = {Kind::copied, Source::block_owner, SourceIndex::within_block, Ranks::every_rank}},
    {.id = Collective::reduce_scatter_block,
     .name = "reduce_scatter_block",
     .mpi = "MPI_Reduce_scatter_block",
     .summary = "rank r ends with the reduction of all ranks' block r (count is per block)",
     .in = {Blocks::P, Blocks::P},
     .out = {Blocks::one, Blocks::one},
     .in_place =
         Ranks::every_rank,  // the P input blocks in the receive buffer, result at its start
     .post = {Kind::reduced, Source::all, SourceIndex::own_block, Ranks::every_rank}},
    {.id = Collective::gather,
     .name = "gather",
     .mpi = "MPI_Gather",
     .summary = "the root ends with every rank's block, rank b's in block b (count is per block)",
     .rooted = true,
     .in = {Blocks::one, Blocks::one},
     .out = {Blocks::P, Blocks::none},
     .in_place = Ranks::root,
     .in_place_at = SourceIndex::own_block,
     .post = {Kind::copied, Source::block_owner, SourceIndex::within_block, Ranks::root}},
    {.id = Collective::scatter,
     .name = "scatter",
     .mpi = "MPI_Scatter",
     .summary = "rank r ends with block r of the root's in (count is per block)",
     .rooted = true,
     .in = {Blocks::P, Blocks::none},
     .out = {Blocks::one, Blocks::one},
     .in_place = Ranks::root,
     .in_place_out_at = SourceIndex::own_block,  // the root's block stays in in[root n]
     .post = {Kind::copied, Source::root, SourceIndex::own_block, Ranks::every_rank}},
    // The irregular ones: their regular form's row with the count vector and displacements.
    {.id = Collective::allgatherv,
     .name = "allgatherv",
     .mpi = "MPI_Allgatherv",
     .summary = "allgather with per-rank counts: rank b's counts[b] elements at out[displs[b]]",
     .in = {Blocks::one, Blocks::one},
     .out = {Blocks::P, Blocks::P},
     .in_place = Ranks::every_rank,
     .in_place_at = SourceIndex::own_block,
     .post = {Kind::copied, Source::block_owner, SourceIndex::within_block, Ranks::every_rank},
     .counts = Counts::per_rank,
     .displs = Displs::out},
    {.id = Collective::alltoallv,
     .name = "alltoallv",
     .mpi = "MPI_Alltoallv",
     .summary = "alltoall with per-pair counts: rank r sends counts[r P + q] elements to rank q",
     .in = {Blocks::P, Blocks::P},
     .out = {Blocks::P, Blocks::P},
     .post = {Kind::copied, Source::block_owner, SourceIndex::own_block, Ranks::every_rank},
     .counts = Counts::per_pair,
     .displs = Displs::both},
    {.id = Collective::gatherv,
     .name = "gatherv",
     .mpi = "MPI_Gatherv",
     .summary = "gather with per-rank counts: rank b's counts[b] elements at the root's "
                "out[displs[b]]",
     .rooted = true,
     .in = {Blocks::one, Blocks::one},
     .out = {Blocks::P, Blocks::none},
     .in_place = Ranks::root,
     .in_place_at = SourceIndex::own_block,
     .post = {Kind::copied, Source::block_owner, SourceIndex::within_block, Ranks::root},
     .counts = Counts::per_rank,
     .displs = Displs::out},
    {.id = Collective::scatterv,
     .name = "scatterv",
     .mpi = "MPI_Scatterv",
     .summary = "scatter with per-rank counts: rank r gets counts[r] elements from the root's "
                "in[displs[r]]",
     .rooted = true,
     .in = {Blocks::P, Blocks::none},
     .out = {Blocks::one, Blocks::one},
     .in_place = Ranks::root,
     .in_place_out_at = SourceIndex::own_block,
     .post = {Kind::copied, Source::root, SourceIndex::own_block, Ranks::every_rank},
     .counts = Counts::per_rank,
     .displs = Displs::in},
    {.id = Collective::reduce_scatter,
     .name = "reduce_scatter",
     .mpi = "MPI_Reduce_scatter",
     .summary = "rank r ends with the reduction of all ranks' block r, of counts[r] elements",
     .in = {Blocks::P, Blocks::P},
     .out = {Blocks::one, Blocks::one},
     .in_place = Ranks::every_rank,  // as reduce_scatter_block: the input in the receive buffer
     .post = {Kind::reduced, Source::all, SourceIndex::own_block, Ranks::every_rank},
     .counts = Counts::per_rank},
    {.id = Collective::scan,
     .name = "scan",
     .mpi = "MPI_Scan",
     .summary = "rank r ends with the reduction of ranks 0..r's inputs, in rank order",
     .in = {Blocks::one, Blocks::one},
     .out = {Blocks::one, Blocks::one},
     .in_place = Ranks::every_rank,
     .post = {Kind::reduced, Source::prefix, SourceIndex::same, Ranks::every_rank}},
    {.id = Collective::exscan,
     .name = "exscan",
     .mpi = "MPI_Exscan",
     .summary = "rank r ends with the reduction of ranks 0..r-1's inputs; rank 0's out undefined",
     .in = {Blocks::one, Blocks::one},
     .out = {Blocks::one, Blocks::one},
     .in_place = Ranks::every_rank,
     .post = {Kind::reduced, Source::exclusive_prefix, SourceIndex::same, Ranks::every_rank}},
}};

constexpr bool table_in_enum_order() {
  for (size_t i = 0; i < kSpecs.size(); ++i)
    if (static_cast<size_t>(kSpecs[i].id) != i) return false;
  return true;
}
static_assert(table_in_enum_order(), "kSpecs lists the collectives in enum order");

int64_t blocks(Blocks b, int64_t P) {
  return b == Blocks::none ? 0 : b == Blocks::one ? 1 : P;
}

}  // namespace

std::span<const CollectiveSpec> all_collectives() {
  return kSpecs;
}

const CollectiveSpec& spec_of(Collective c) {
  return kSpecs[static_cast<size_t>(c)];
}

std::string_view to_string(Collective c) {
  return spec_of(c).name;
}

std::string_view collective_names() {
  static const std::string names = [] {
    std::string s;
    for (const CollectiveSpec& c : kSpecs) s += (s.empty() ? "" : ", ") + std::string(c.name);
    return s;
  }();
  return names;
}

bool is_collective(std::string_view s) {
  for (const CollectiveSpec& c : kSpecs)
    if (c.name == s) return true;
  return false;
}

Collective collective_from_string(std::string_view s) {
  for (const CollectiveSpec& c : kSpecs)
    if (c.name == s) return c.id;
  fail(ErrorKind::name, "unknown collective '" + std::string(s) +
                            "' (known: " + std::string(collective_names()) + ")");
}

bool is_rooted(Collective c) {
  return spec_of(c).rooted;
}

int64_t buffer_elems(const BufferShape& s, int64_t P, int64_t n, int64_t root, int64_t rank) {
  const int64_t b = blocks(rank == root ? s.at_root : s.elsewhere, P);
  if (b != 0 && n > INT64_MAX / b) return INT64_MAX;
  return b * n;
}

int64_t max_blocks(const CollectiveSpec& c, int64_t P) {
  int64_t m = 0;
  for (Blocks b : {c.in.at_root, c.in.elsewhere, c.out.at_root, c.out.elsewhere})
    m = std::max(m, blocks(b, P));
  return m;
}

bool applies_to(Ranks ranks, int64_t root, int64_t rank) {
  return ranks == Ranks::every_rank || (ranks == Ranks::root && rank == root);
}

namespace {
int64_t source_index(SourceIndex s, int64_t n, int64_t rank, int64_t i) {
  switch (s) {
    case SourceIndex::same:
      return i;
    case SourceIndex::own_block:
      return rank * n + (n == 0 ? 0 : i % n);
    case SourceIndex::within_block:
      return n == 0 ? 0 : i % n;
  }
  return i;
}
}  // namespace

namespace {
// The ranks a reduction of `rank`'s result runs over: [first, last], empty if undefined.
std::pair<int64_t, int64_t> reduced_ranks(Source s, int64_t P, int64_t rank) {
  switch (s) {
    case Source::prefix:
      return {0, rank};
    case Source::exclusive_prefix:
      return {0, rank - 1};
    default:
      return {0, P - 1};
  }
}
}  // namespace

Expected expected_out(const CollectiveSpec& c, int64_t P, int64_t n, int64_t root, int64_t rank,
                      int64_t i) {
  const Postcondition& p = c.post;
  if (p.kind == Kind::synchronized || !applies_to(p.ranks, root, rank)) return {};
  const int64_t k = source_index(p.index, n, rank, i);
  if (p.kind == Kind::reduced) {
    const auto [first, last] = reduced_ranks(p.source, P, rank);
    if (last < first) return {};
    return {Expected::Kind::reduction, -1, k, first, last};
  }
  const int64_t from = p.source == Source::root          ? root
                       : p.source == Source::block_owner ? i / n
                                                         : rank;
  return {Expected::Kind::element, from, k, 0, -1};
}

int64_t in_place_offset(const CollectiveSpec& c, int64_t n, int64_t rank, int64_t k) {
  return c.in_place_at == SourceIndex::own_block ? rank * n + k : k;
}

int64_t in_place_out_offset(const CollectiveSpec& c, int64_t n, int64_t rank, int64_t i) {
  return c.in_place_out_at == SourceIndex::own_block ? rank * n + i : i;
}

int64_t in_place_elems(const CollectiveSpec& c, int64_t P, int64_t n, int64_t root, int64_t rank) {
  const int64_t in = buffer_elems(c.in, P, n, root, rank);
  const int64_t out = buffer_elems(c.out, P, n, root, rank);
  const auto end = [&](int64_t elems, int64_t first) {
    return elems == 0 ? 0 : elems > INT64_MAX - first ? INT64_MAX : first + elems;
  };
  return std::max(end(in, in_place_offset(c, n, rank, 0)),
                  end(out, in_place_out_offset(c, n, rank, 0)));
}

// ---- Header-aware forms ----

namespace {
int64_t sat_add(int64_t a, int64_t b) {
  return a > INT64_MAX - b ? INT64_MAX : a + b;
}
}  // namespace

BlockLayout::BlockLayout(const ScheduleHeader& h, Io io, int64_t rank) : n_(h.count), rank_(rank) {
  const CollectiveSpec& c = h.spec();
  const BufferShape& shape = io == Io::in ? c.in : c.out;
  nblocks_ = collkit::blocks(rank == h.root ? shape.at_root : shape.elsewhere, h.P);
  const std::vector<int64_t>& displs = io == Io::in ? h.in_displs : h.out_displs;
  const bool has_displs = nblocks_ == h.P && nblocks_ > 0 && !displs.empty();
  if (h.counts.empty() && !has_displs) {  // regular: n per block, packed
    elems_ = payload_ = buffer_elems(shape, h.P, n_, h.root, rank);
    return;
  }
  const size_t P = static_cast<size_t>(h.P), r = static_cast<size_t>(rank);
  lens_.resize(static_cast<size_t>(nblocks_), n_);
  if (!h.counts.empty()) {
    if (nblocks_ == 1 && c.counts == Counts::per_rank) lens_[0] = h.counts[r];
    for (size_t b = 0; nblocks_ == h.P && b < P; ++b)
      lens_[b] = c.counts == Counts::per_rank ? h.counts[b]
                 : io == Io::in               ? h.counts[r * P + b]
                                              : h.counts[b * P + r];
  }
  offs_.resize(lens_.size());
  int64_t next = 0;
  for (size_t b = 0; b < lens_.size(); ++b) {
    offs_[b] = has_displs ? displs[displs.size() == P ? b : r * P + b] : next;
    // An empty block's displacement is never read (MPI: no data there): it lies at 0, so that
    // a zero-length op on it is inside any buffer.
    if (has_displs && lens_[b] == 0) offs_[b] = 0;
    packed_ = packed_ && (lens_[b] == 0 || offs_[b] == next);
    next = sat_add(next, lens_[b]);
    payload_ = sat_add(payload_, lens_[b]);
    if (lens_[b] > 0) elems_ = std::max(elems_, sat_add(offs_[b], lens_[b]));
  }
}

std::vector<ExpectedRun> expected_runs(const ScheduleHeader& h, int64_t rank) {
  const CollectiveSpec& c = h.spec();
  const Postcondition& p = c.post;
  const BlockLayout out(h, Io::out, rank);
  std::vector<ExpectedRun> runs;
  if (p.kind == Kind::synchronized || !applies_to(p.ranks, h.root, rank)) {
    if (out.elems() > 0) runs.push_back({0, out.elems(), {}, false});
    return runs;
  }
  // The blocks in the order they lie, empty ones left out.
  std::vector<int64_t> order;
  for (int64_t b = 0; b < out.blocks(); ++b)
    if (out.len(b) > 0) order.push_back(b);
  if (!out.packed())
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t x, int64_t y) { return out.offset(x) < out.offset(y); });
  // Rank q's in layout, for own_block sources (alltoallv: each rank's own).
  const auto in_offset = [&](int64_t q, int64_t b) {
    if (h.counts.empty() && h.in_displs.empty()) return b * h.count;
    return BlockLayout(h, Io::in, q).offset(b);
  };
  int64_t at = 0;
  for (int64_t b : order) {
    const int64_t off = out.offset(b);
    if (off > at) runs.push_back({at, off - at, {}, true});
    Expected want;
    if (p.kind == Kind::reduced) {
      const auto [first, last] = reduced_ranks(p.source, h.P, rank);
      if (last >= first) {
        want.kind = Expected::Kind::reduction;
        want.first = first;
        want.last = last;
      }
    } else {
      want.kind = Expected::Kind::element;
      want.rank = p.source == Source::root ? h.root : p.source == Source::block_owner ? b : rank;
    }
    if (want.kind != Expected::Kind::unspecified)
      want.index = p.index == SourceIndex::same ? off
                   : p.index == SourceIndex::own_block
                       ? in_offset(want.rank < 0 ? rank : want.rank, rank)
                       : 0;
    runs.push_back({off, out.len(b), want, false});
    at = off + out.len(b);
  }
  if (out.elems() > at) runs.push_back({at, out.elems() - at, {}, true});
  return runs;
}

int64_t in_place_in_at(const ScheduleHeader& h, int64_t rank) {
  if (h.spec().in_place_at != SourceIndex::own_block) return 0;
  return BlockLayout(h, Io::out, rank).offset(rank);
}

int64_t in_place_out_at(const ScheduleHeader& h, int64_t rank) {
  if (h.spec().in_place_out_at != SourceIndex::own_block) return 0;
  return BlockLayout(h, Io::in, rank).offset(rank);
}

int64_t in_place_elems(const ScheduleHeader& h, int64_t rank) {
  const int64_t in = BlockLayout(h, Io::in, rank).elems();
  const int64_t out = BlockLayout(h, Io::out, rank).elems();
  const auto end = [](int64_t elems, int64_t first) {
    return elems == 0 ? 0 : sat_add(first, elems);
  };
  return std::max(end(in, in_place_in_at(h, rank)), end(out, in_place_out_at(h, rank)));
}

}  // namespace collkit
