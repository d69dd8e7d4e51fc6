// Node-aware algorithms under ASan + UBSan: the placement's node map, nested names fed hostile
// input, and compositions (allreduce:hier, alltoall:bruck_local) through the verifier.
#include <random>
#include <string>

#include "check.hpp"
#include "collkit/error.hpp"
#include "collkit/name.hpp"
#include "collkit/placement.hpp"
#include "collkit/registry.hpp"
#include "collkit/verify.hpp"

using namespace collkit;

TEST(node_map_is_a_bijection) {
  for (int64_t P = 1; P <= 40; ++P)
    for (int64_t rpn = 1; rpn <= P + 1; ++rpn)
      for (NodeOrder o : {NodeOrder::contiguous, NodeOrder::round_robin}) {
        const NodeMap nm(Placement{rpn, o}, P);
        int64_t total = 0;
        for (int64_t n = 0; n < nm.nodes(); ++n) {
          CHECK(nm.node_size(n) >= 1 && nm.node_size(n) <= rpn);
          total += nm.node_size(n);
          for (int64_t l = 0; l < nm.node_size(n); ++l) {
            const int64_t r = nm.rank_of(n, l);
            CHECK(r >= 0 && r < P && nm.node_of(r) == n && nm.local_of(r) == l);
          }
        }
        CHECK(total == P);
      }
}

TEST(nested_names_with_hostile_input) {
  const std::string alphabet = "allreduce:hier(intra=reduce:binomial,inter=rm(a4)) ,=:()x";
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) {
    std::string s(rng() % 80, ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    try {
      (void)Algorithm(s);
    } catch (const Error&) {
    }
  }
  std::string deep;
  for (int i = 0; i < 150; ++i) deep += "allreduce:hier(inter=";  // under 4096 characters
  bool refused = false;
  try {
    (void)parse_name(deep);
  } catch (const Error&) {
    refused = true;
  }
  CHECK(refused);  // bounded nesting: no stack overflow
}

TEST(compositions_verified) {
  for (const char* name :
       {"allreduce:hier", "allreduce:hier(intra=allreduce:rd)", "alltoall:bruck_local(r=3)"}) {
    const Algorithm a(name);
    for (int64_t P : {1, 4, 6, 12, 16})
      for (int64_t rpn : {1, 2, 3, 4})
        for (NodeOrder o : {NodeOrder::contiguous, NodeOrder::round_robin}) {
          const Placement pl{rpn, o};
          Schedule s;
          try {
            s = a.bind(P, 3, 8, 0, pl).generate();
          } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::unsupported);  // uneven nodes: refused, not wrong
            continue;
          }
          VerifyOptions opt;
          opt.commutative = a.needs_commutative(pl);
          CHECK(verify(s, opt).ok);
        }
  }
}
