#include "collkit/collective.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "collkit/error.hpp"

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

Expected expected_out(const CollectiveSpec& c, int64_t P, int64_t n, int64_t root, int64_t rank,
                      int64_t i) {
  (void)P;
  const Postcondition& p = c.post;
  if (p.kind == Kind::synchronized || !applies_to(p.ranks, root, rank)) return {};
  const int64_t k = source_index(p.index, n, rank, i);
  if (p.kind == Kind::reduced) return {Expected::Kind::reduction, -1, k};
  const int64_t from = p.source == Source::root          ? root
                       : p.source == Source::block_owner ? i / n
                                                         : rank;
  return {Expected::Kind::element, from, k};
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

}  // namespace collkit
