// Core checks that run under AddressSanitizer + UBSan in CI: the parsers with hostile input,
// generation of one rank alone versus the whole schedule, and every verifier pass.
#include <random>
#include <string>

#include "check.hpp"
#include "collkit/error.hpp"
#include "collkit/name.hpp"
#include "collkit/registry.hpp"
#include "collkit/verify.hpp"

using namespace collkit;

namespace {

// Only collkit::Error may escape a parser; anything else (or a sanitizer report) is a bug.
template <typename F>
bool only_clear_errors(F&& f) {
  try {
    f();
  } catch (const Error&) {
  } catch (...) {
    return false;
  }
  return true;
}

std::string random_text(std::mt19937_64& rng, const std::string& alphabet, size_t max_len) {
  std::string s(rng() % (max_len + 1), ' ');
  for (char& c : s) c = alphabet[rng() % alphabet.size()];
  return s;
}

}  // namespace

TEST(name_parser_hostile_input) {
  std::mt19937_64 rng(1);
  const std::string alpha = "allreduce:rdbcast()=,a8c6m2e -_.+9\t\x01\xff";
  const char* seeds[] = {"allreduce:rd", "allreduce:rm(a8,a4)", "alltoall:bruck(r=4)",
                         "bcast:pipeline(seg=8KiB)"};
  for (int i = 0; i < 20000; ++i) {
    std::string s = random_text(rng, alpha, 40);
    CHECK(only_clear_errors([&] { (void)parse_name(s); }));
    CHECK(only_clear_errors([&] { (void)Algorithm(s); }));
    std::string m = seeds[i % 4];
    m[rng() % m.size()] = alpha[rng() % alpha.size()];
    if (rng() % 2) m.insert(rng() % m.size(), 1, alpha[rng() % alpha.size()]);
    CHECK(only_clear_errors([&] { (void)Algorithm(m); }));
  }
  CHECK(only_clear_errors([] { (void)parse_name(std::string(100000, '(')); }));
}

TEST(name_errors_point_at_the_character) {
  try {
    (void)parse_name("allreduce:rm(a8,,a4)");
    CHECK(false);
  } catch (const Error& e) {
    std::string w = e.what();
    CHECK(w.find("position 16") != std::string::npos);
    CHECK(w.find("\n  allreduce:rm(a8,,a4)\n                  ^") != std::string::npos);
  }
}

TEST(size_parser) {
  CHECK(parse_size("8") == 8);
  CHECK(parse_size("8B") == 8);
  CHECK(parse_size("4KiB") == 4096);
  CHECK(parse_size("1.5MB") == 1500000);
  CHECK(parse_size("2GiB") == (int64_t{2} << 30));
  CHECK(format_size(8192) == "8KiB");
  std::mt19937_64 rng(2);
  for (int i = 0; i < 20000; ++i) {
    std::string s = random_text(rng, "0123456789.KMGTiB kb-e+", 24);
    CHECK(only_clear_errors([&] { (void)parse_size(s); }));
  }
  CHECK(only_clear_errors([] { (void)parse_size("99999999999999999999TiB"); }));
}

TEST(rank_alone_equals_rank_in_schedule) {
  Algorithm a("allreduce:rd");
  for (int64_t P : {1, 2, 3, 5, 6, 7, 12, 13, 31, 32, 33}) {
    Bound b = a.bind(P, 5);
    Schedule s = b.generate();
    CHECK(s.complete());
    RankProgram p;
    for (int64_t r = 0; r < P; ++r) {
      b.generate_rank(r, p);
      CHECK(same_program(p.view(), s.rank(r)));
    }
  }
}

TEST(rd_verified_noncommutative) {
  Algorithm a("allreduce:rd");
  for (int64_t P = 1; P <= 70; ++P)
    for (int64_t n : {0, 1, 4}) {
      VerifyOptions o;
      o.commutative = false;
      VerifyResult r = verify(a.bind(P, n).generate(), o);
      CHECK(r.ok);
      CHECK(r.consistent_noncommutative);
    }
}

TEST(bad_arguments_are_errors) {
  Algorithm a("allreduce:rd");
  CHECK(only_clear_errors([&] { (void)a.bind(0, 1); }));
  CHECK(only_clear_errors([&] { (void)a.bind(-5, 1); }));
  CHECK(only_clear_errors([&] { (void)a.bind(4, -1); }));
  CHECK(only_clear_errors([&] { (void)a.bind(4, INT64_MAX); }));
  CHECK(only_clear_errors([&] { (void)a.bind(4, 1, 0); }));
  CHECK(only_clear_errors([&] { (void)a.bind(4, 1, 8, 3); }));  // allreduce has no root
  RankProgram p;
  CHECK(only_clear_errors([&] { a.bind(4, 1).generate_rank(4, p); }));
}

// Every verifier pass on schedules edited to be wrong; the point here is that the sanitizers
// see each pass run; the diagnoses themselves are checked in tests/test_verify.py.
TEST(verifier_passes_on_broken_schedules) {
  Algorithm a("allreduce:rd");
  Bound b = a.bind(4, 2);
  auto edited = [&](auto&& edit) {
    Schedule s(b.header());
    RankProgram p, q;
    for (int64_t r = 0; r < 4; ++r) {
      b.generate_rank(r, p);
      q.clear(r);
      q.scratch = p.scratch;
      for (size_t i = 0; i < p.ops.size(); ++i) {
        Op op = p.ops[i];
        auto d = p.view().deps_of(i);
        std::vector<OpId> deps(d.begin(), d.end());
        edit(r, i, op, deps);
        q.append(op, deps, p.stage[i]);
      }
      s.append_rank(q.view());
    }
    return verify(s);
  };
  auto kind_of = [](const VerifyResult& r) {
    return r.diagnostics.empty() ? DiagKind::bad_op : r.diagnostics[0].kind;
  };
  VerifyResult r = edited([](int64_t rk, size_t i, Op& op, auto&) {
    if (rk == 0 && i == 1) op.peer = 7;
  });
  CHECK(!r.ok && kind_of(r) == DiagKind::bad_op);
  r = edited([](int64_t rk, size_t i, Op&, std::vector<OpId>& d) {
    if (rk == 1 && i == 1) d.push_back(3);
  });
  CHECK(!r.ok && kind_of(r) == DiagKind::dep_cycle);
  r = edited([](int64_t rk, size_t, Op& op, std::vector<OpId>& d) {
    if (rk == 2 && op.kind == OpKind::reduce) d.clear();
  });
  CHECK(!r.ok && kind_of(r) == DiagKind::hazard);
  r = edited([](int64_t, size_t i, Op& op, std::vector<OpId>& d) {
    if (op.kind == OpKind::send && i == 1) d.push_back(2);  // send after own recv: deadlock
  });
  CHECK(!r.ok && kind_of(r) == DiagKind::deadlock);
  r = edited([](int64_t rk, size_t, Op& op, auto&) {
    if (rk == 3 && op.kind == OpKind::recv) op.kind = OpKind::compute;
  });
  CHECK(!r.ok);
}
