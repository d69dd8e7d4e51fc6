// allreduce:rm under AddressSanitizer + UBSan: hostile stage lists end in a clear error, the
// seed's schedules verify, one rank alone equals its part of the whole.
#include <random>
#include <string>

#include "check.hpp"
#include "collkit/error.hpp"
#include "collkit/registry.hpp"
#include "collkit/rm/stages.hpp"
#include "collkit/verify.hpp"

using namespace collkit;

TEST(rm_hostile_stage_lists) {
  std::mt19937_64 rng(2017);
  const std::string alphabet = "acemng0123456789,";
  for (int i = 0; i < 3000; ++i) {
    std::string list(rng() % 24, ' ');
    for (char& c : list) c = alphabet[rng() % alphabet.size()];
    const int64_t P = 1 + static_cast<int64_t>(rng() % 200);
    try {
      Algorithm a("allreduce:rm(" + list + ")");
      Bound b = a.bind(P, 1);
      RankProgram p;
      b.generate_rank(static_cast<int64_t>(rng() % static_cast<uint64_t>(P)), p);
    } catch (const Error&) {
    } catch (...) {
      CHECK(false);
    }
  }
}

TEST(rm_seed_schedules_verify) {
  struct Case {
    const char* stages;
    int64_t P;
    bool rank_order;
  };
  for (const Case& c :
       {Case{"a8,a4", 32, true}, Case{"a2,a2,a2", 8, true}, Case{"a8", 8, true},
        Case{"c6m2,a2,a2,e6m2", 7, true}, Case{"m1g2a3,n1g3a2", 7, true},
        Case{"m3g2a2,n3g2a2", 7, false}, Case{"a8,a3,a4", 96, true}, Case{"", 13, true}}) {
    Algorithm a(std::string("allreduce:rm(") + c.stages + ")");
    Bound b = a.bind(c.P, 3);
    Schedule s = b.generate();
    VerifyResult r = verify(s, VerifyOptions{});
    CHECK(r.ok);
    CHECK(r.consistent_noncommutative == c.rank_order);
    RankProgram p;
    for (int64_t rank = 0; rank < c.P; ++rank) {
      b.generate_rank(rank, p);
      CHECK(same_program(p.view(), s.rank(rank)));
    }
  }
}

TEST(rm_plan_checks) {
  CHECK(rm::make_plan({"a8", "a4"}, 32).inner == 32);
  CHECK(rm::make_plan({"c6m2", "a2", "a2", "e6m2"}, 7).inner == 4);
  CHECK(rm::to_string(rm::recursive_doubling_stages(13)) == "c10m2,a2,a2,a2,e10m2");
  bool threw = false;
  try {
    rm::make_plan({"a8", "a3"}, 32);
  } catch (const Error& e) {
    threw = e.kind() == ErrorKind::invalid_argument;
  }
  CHECK(threw);
}
