// The block collectives (allgather, reduce_scatter_block, gather, scatter) under ASan + UBSan:
// every registered algorithm of theirs at its default parameters, generated and verified with and
// without MPI_IN_PLACE for awkward P, counts and roots, so the generators' and the verifier's
// in-place indexing run under the sanitizers. tests/test_block_collectives.py sweeps further.
#include "check.hpp"
#include "collkit/registry.hpp"
#include "collkit/verify.hpp"

using namespace collkit;

TEST(block_collectives_verified_in_and_out_of_place) {
  int algorithms = 0;
  for (const AlgorithmSpec* spec : all_algorithms()) {
    const Collective c = spec->collective;
    if (c != Collective::allgather && c != Collective::reduce_scatter_block &&
        c != Collective::gather && c != Collective::scatter)
      continue;
    ++algorithms;
    const Algorithm a(std::string(to_string(c)) + ":" + spec->name);
    for (int64_t P : {1, 2, 3, 4, 7, 8, 12, 17}) {
      if (spec->restrictions.power_of_two && (P & (P - 1)) != 0) continue;
      for (int64_t n : {int64_t{0}, int64_t{1}, P - 1, int64_t{3}})
        for (int64_t root : {int64_t{0}, P / 2, P - 1}) {
          if (!is_rooted(c) && root != 0) continue;
          // Node-aware ones (allgather:hier) on nodes of 2 where 2 divides P, else of 1.
          const Placement pl{spec->restrictions.needs_placement ? (P % 2 == 0 ? 2 : 1) : 0};
          const Schedule s = a.bind(P, n, 8, root, pl).generate();
          for (bool in_place : {false, true}) {
            VerifyOptions o;
            o.commutative = spec->restrictions.commutative_op;
            o.in_place = in_place;
            CHECK(verify(s, o).ok);
          }
        }
    }
  }
  CHECK(algorithms >= 13);
}
