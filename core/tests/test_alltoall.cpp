// All-to-all generators under the sanitizers: verified for a spread of P and r, and the Bruck
// step list against a brute-force count of block digits.
#include "check.hpp"
#include "collkit/bruck.hpp"
#include "collkit/error.hpp"
#include "collkit/registry.hpp"
#include "collkit/verify.hpp"

using namespace collkit;

TEST(alltoall_verified_over_P_and_r) {
  for (int64_t P : {1, 2, 3, 5, 8, 13, 16, 31}) {
    for (const std::string& name :
         {std::string("alltoall:linear"), std::string("alltoall:pairwise"),
          std::string("alltoall:bruck"), std::string("alltoall:bruck(r=3)"),
          std::string("alltoall:bruck_modified(r=4)"), std::string("alltoall:bruck(r=auto)"),
          std::string("alltoall:bruck_modified(r=" + std::to_string(P + 1) + ")")}) {
      for (int64_t count : {0, 2}) {
        Schedule s = Algorithm(name).bind(P, count).generate();
        VerifyOptions o;
        o.commutative = false;
        VerifyResult r = verify(s, o);
        CHECK(r.ok);
      }
    }
  }
}

TEST(bruck_steps_count_block_digits) {
  for (int64_t P : {1, 2, 7, 64, 100, 243}) {
    for (int64_t r : {int64_t{2}, int64_t{3}, int64_t{5}, P, P + 7}) {
      if (r < 2) continue;
      int64_t steps = 0;
      for (const BruckStep& s : bruck_steps(P, r)) {
        int64_t rx = s.dist / s.z, brute = 0;
        for (int64_t i = 0; i < P; ++i) brute += (i / rx) % r == s.z;
        CHECK(s.blocks == brute);
        CHECK(s.dist < P);
        ++steps;
      }
      if (r >= P) CHECK(steps == P - 1);  // one round of single-block steps
    }
  }
}

TEST(bruck_bad_radix_is_a_name_error) {
  for (const char* r : {"0", "1", "x", "-2", "99999999999"}) {
    bool threw = false;
    try {
      Algorithm(std::string("alltoall:bruck(r=") + r + ")").bind(4, 1);
    } catch (const Error& e) {
      threw = e.kind() == ErrorKind::name;
    }
    CHECK(threw);
  }
}
