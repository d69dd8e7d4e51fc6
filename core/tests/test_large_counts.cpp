// The large-count algorithms and their phases under AddressSanitizer + UBSan: generated for odd
// counts (empty and unequal blocks), verified, one rank alone equal to the whole, and the
// switch-safe pairs compared tree by tree. The wide sweeps are in tests/test_large_counts.py.
#include <utility>

#include "check.hpp"
#include "collkit/registry.hpp"
#include "collkit/verify.hpp"

using namespace collkit;

TEST(large_count_algorithms_verified_under_sanitizers) {
  const char* names[] = {"allreduce:rabenseifner",
                         "allreduce:rabenseifner(nonpof2=elim)",
                         "allreduce:rabenseifner(nonpof2=elim21)",
                         "allreduce:ring(seg=16)",
                         "reduce:rabenseifner",
                         "reduce:rabenseifner(nonpof2=elim)",
                         "reduce:rabenseifner(nonpof2=elim21)",
                         "reduce:folded_binomial"};
  for (const char* name : names) {
    Algorithm a(name);
    const bool comm = a.spec().restrictions.commutative_op;
    for (int64_t P : {1, 2, 3, 5, 7, 8, 12, 13, 33}) {
      for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{5}, 2 * P + 1}) {
        Bound b = a.bind(P, n, 8, is_rooted(a.collective()) ? P / 2 : 0);
        Schedule s = b.generate();
        VerifyOptions o;
        o.commutative = comm;
        CHECK(verify(s, o).ok);
        RankProgram p;
        for (int64_t r = 0; r < P; ++r) {
          b.generate_rank(r, p);
          CHECK(same_program(p.view(), s.rank(r)));
        }
      }
    }
  }
}

TEST(switch_safe_pairs_build_the_same_tree) {
  const std::pair<const char*, const char*> pairs[] = {
      {"allreduce:rd", "allreduce:rabenseifner"},
      {"reduce:folded_binomial", "reduce:rabenseifner"}};
  for (auto [small, large] : pairs) {
    for (int64_t P : {2, 3, 6, 13, 24}) {
      const int64_t root = is_rooted(Algorithm(small).collective()) ? P - 1 : 0;
      TreeComparison c = compare_trees(Algorithm(small).bind(P, P + 2, 8, root).generate(),
                                       Algorithm(large).bind(P, P + 2, 8, root).generate());
      CHECK(c.same_exact);
    }
  }
  TreeComparison ring = compare_trees(Algorithm("allreduce:rd").bind(5, 5).generate(),
                                      Algorithm("allreduce:ring").bind(5, 5).generate());
  CHECK(!ring.same_commutative);
}
