// The CollectiveSpec table and the helpers the IR and verifier read from it, for the collectives
// of MPI-1 that collkit has: allreduce, reduce, bcast, alltoall, barrier, and those added
// with no new code outside the table (allgather, reduce_scatter_block, gather, scatter).
#include <string>

#include "check.hpp"
#include "collkit/collective.hpp"
#include "collkit/error.hpp"
#include "collkit/schedule.hpp"

using namespace collkit;

namespace {
using Kind = Postcondition::Kind;

const CollectiveSpec& kAllgather = spec_of(Collective::allgather);
const CollectiveSpec& kReduceScatterBlock = spec_of(Collective::reduce_scatter_block);
const CollectiveSpec& kGather = spec_of(Collective::gather);
const CollectiveSpec& kScatter = spec_of(Collective::scatter);

bool is(const Expected& e, Expected::Kind k, int64_t rank, int64_t index) {
  return e.kind == k && (k != Expected::Kind::element || e.rank == rank) &&
         (k == Expected::Kind::unspecified || e.index == index);
}
}  // namespace

TEST(collective_table_round_trips_and_lists_itself) {
  for (const CollectiveSpec& c : all_collectives()) {
    CHECK(&spec_of(c.id) == &c);
    CHECK(collective_from_string(c.name) == c.id);
    CHECK(std::string(collective_names()).find(c.name) != std::string::npos);
    CHECK(c.rooted == is_rooted(c.id));
  }
  bool threw = false;
  try {
    collective_from_string("neighbor_alltoall");
  } catch (const Error& e) {
    threw = std::string(e.what()).find(std::string(collective_names())) != std::string::npos;
  }
  CHECK(threw);
}

TEST(irregular_layouts_and_prefix_postconditions) {
  ScheduleHeader h;
  h.collective = Collective::allgatherv;
  h.P = 3;
  h.counts = {2, 0, 3};
  h.count = 3;
  h.out_displs = {4, 9, 0};  // block 2 first, a gap [3, 4), block 1 empty
  check_counts(h);
  const BlockLayout out(h, Io::out, 1);
  CHECK(out.blocks() == 3 && out.len(2) == 3 && out.offset(0) == 4 && out.offset(1) == 0);
  CHECK(out.elems() == 6 && out.payload() == 5 && !out.packed());
  CHECK(h.in_elems(1) == 0 && h.in_elems(2) == 3 && h.out_elems(0) == 6);
  const std::vector<ExpectedRun> runs = expected_runs(h, 1);
  CHECK(runs.size() == 3);  // block 2, the gap, block 0
  CHECK(runs[0].out_off == 0 && runs[0].len == 3 && runs[0].want.rank == 2);
  CHECK(runs[1].untouched && runs[1].out_off == 3 && runs[1].len == 1);
  CHECK(runs[2].want.rank == 0 && runs[2].want.index == 0);
  CHECK(in_place_in_at(h, 2) == 0 && in_place_in_at(h, 0) == 4);
  h.out_displs = {0, 1, 1};  // blocks 0 and 2 overlap
  bool threw = false;
  try {
    check_counts(h);
  } catch (const Error& e) {
    threw = std::string(e.what()).find("overlap") != std::string::npos;
  }
  CHECK(threw);
  ScheduleHeader s;
  s.collective = Collective::exscan;
  s.P = 4;
  s.count = 2;
  CHECK(expected_runs(s, 0)[0].want.kind == Expected::Kind::unspecified);
  const Expected e = expected_runs(s, 3)[0].want;
  CHECK(e.kind == Expected::Kind::reduction && e.first == 0 && e.last == 2);
  s.collective = Collective::scan;
  CHECK(expected_runs(s, 3)[0].want.last == 3);
}

TEST(collective_specs_say_the_existing_postconditions) {
  const int64_t P = 4, n = 3, root = 2;
  using EK = Expected::Kind;
  const auto& ar = spec_of(Collective::allreduce);
  CHECK(is(expected_out(ar, P, n, root, 1, 2), EK::reduction, -1, 2));
  const auto& re = spec_of(Collective::reduce);
  CHECK(is(expected_out(re, P, n, root, root, 1), EK::reduction, -1, 1));
  CHECK(is(expected_out(re, P, n, root, 0, 1), EK::unspecified, -1, 0));
  const auto& bc = spec_of(Collective::bcast);
  CHECK(is(expected_out(bc, P, n, root, 3, 1), EK::element, root, 1));
  // alltoall: out[q n + j] of rank r is in[r n + j] of rank q.
  const auto& a2a = spec_of(Collective::alltoall);
  CHECK(is(expected_out(a2a, P, n, 0, 1, 2 * n + 1), EK::element, 2, 1 * n + 1));
  CHECK(expected_out(spec_of(Collective::barrier), P, n, 0, 0, 0).kind == EK::unspecified);
  CHECK(buffer_elems(a2a.in, P, n, 0, 3) == P * n);
  CHECK(buffer_elems(bc.in, P, n, root, root) == 0);
  CHECK(max_blocks(a2a, P) == P && max_blocks(ar, P) == 1 &&
        max_blocks(spec_of(Collective::barrier), P) == 0);
}

TEST(collective_specs_say_the_block_collectives) {
  const int64_t P = 5, n = 2, root = 3;
  using EK = Expected::Kind;
  // allgather: out[q n + j] = in[j] of rank q; in place, the input sits at out[r n].
  CHECK(buffer_elems(kAllgather.out, P, n, 0, 4) == P * n);
  CHECK(is(expected_out(kAllgather, P, n, 0, 1, 3 * n + 1), EK::element, 3, 1));
  CHECK(in_place_offset(kAllgather, n, 4, 1) == 4 * n + 1);
  // reduce_scatter_block: out[j] of rank r = the reduction of element r n + j.
  CHECK(buffer_elems(kReduceScatterBlock.in, P, n, 0, 0) == P * n);
  CHECK(is(expected_out(kReduceScatterBlock, P, n, 0, 2, 1), EK::reduction, -1, 2 * n + 1));
  // gather: only the root's out is specified, P blocks; the others have none.
  CHECK(buffer_elems(kGather.out, P, n, root, root) == P * n);
  CHECK(buffer_elems(kGather.out, P, n, root, 0) == 0);
  CHECK(is(expected_out(kGather, P, n, root, root, 4 * n), EK::element, 4, 0));
  CHECK(is(expected_out(kGather, P, n, root, 1, 0), EK::unspecified, -1, 0));
  // scatter: out[j] of rank r = the root's in[r n + j]; only the root has an input.
  CHECK(buffer_elems(kScatter.in, P, n, root, root) == P * n);
  CHECK(buffer_elems(kScatter.in, P, n, root, 1) == 0);
  CHECK(is(expected_out(kScatter, P, n, root, 4, 1), EK::element, root, 4 * n + 1));
}

TEST(in_place_puts_in_and_out_in_one_buffer_as_mpi_says) {
  const int64_t P = 5, n = 2, root = 3;
  // allreduce: in[k] and out[k] are the same element.
  const auto& ar = spec_of(Collective::allreduce);
  CHECK(in_place_offset(ar, n, 1, 1) == 1 && in_place_out_offset(ar, n, 1, 1) == 1);
  CHECK(in_place_elems(ar, P, n, 0, 1) == n);
  // allgather: the input is block r of the receive buffer.
  CHECK(in_place_out_offset(kAllgather, n, 4, 3) == 3);
  CHECK(in_place_elems(kAllgather, P, n, 0, 4) == P * n);
  // reduce_scatter_block: the P input blocks are the receive buffer, the result at its start.
  CHECK(kReduceScatterBlock.in_place == Ranks::every_rank);
  CHECK(in_place_offset(kReduceScatterBlock, n, 2, 2 * n + 1) == 2 * n + 1);
  CHECK(in_place_out_offset(kReduceScatterBlock, n, 2, 1) == 1);
  CHECK(in_place_elems(kReduceScatterBlock, P, n, 0, 2) == P * n);
  // gather: the root's input is its own block of the receive buffer.
  CHECK(kGather.in_place == Ranks::root && in_place_offset(kGather, n, root, 1) == root * n + 1);
  CHECK(in_place_elems(kGather, P, n, root, root) == P * n);
  // scatter: the root's own block stays where it is in the send buffer.
  CHECK(kScatter.in_place == Ranks::root && in_place_offset(kScatter, n, root, 7) == 7);
  CHECK(in_place_out_offset(kScatter, n, root, 1) == root * n + 1);
  CHECK(in_place_elems(kScatter, P, n, root, root) == P * n);
}

TEST(successors_reverse_the_dependencies) {
  RankProgram p;
  p.clear(0);
  RankBuilder b(p, 2);
  OpId a = b.compute(1), c = b.compute(1, {a}), d = b.compute(1, {a, c});
  (void)d;
  Successors s;
  s.append_rank(p.view());
  CHECK(s.size() == 3);
  CHECK(s.of(0).size() == 2 && s.of(0)[0] == 1 && s.of(0)[1] == 2);
  CHECK(s.of(1).size() == 1 && s.of(1)[0] == 2);
  CHECK(s.of(2).empty());
  // A second rank's ops are numbered after the first's.
  s.append_rank(p.view());
  CHECK(s.size() == 6 && s.of(3).size() == 2 && s.of(3)[0] == 4 && s.of(4)[0] == 5);
  s.clear();
  CHECK(s.size() == 0);
  // A dependency on an op that does not exist is an error, not a write out of bounds.
  p.deps.push_back(7);
  p.dep_begin.back() = static_cast<uint32_t>(p.deps.size());
  bool threw = false;
  try {
    s.append_rank(p.view());
  } catch (const Error&) {
    threw = true;
  }
  CHECK(threw);
}
