// The schedule formats under AddressSanitizer + UBSan: exact round trips, and hostile input
// (random bytes, mutated valid files, extreme numbers) that must end in collkit::Error only.
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "check.hpp"
#include "collkit/error.hpp"
#include "collkit/goal.hpp"
#include "collkit/json.hpp"
#include "collkit/registry.hpp"
#include "collkit/text.hpp"

using namespace collkit;

namespace {

// Parses `t` with `parse`; a successful parse must survive both formats exactly. Returns false
// on anything but success or a collkit::Error.
template <typename Parse>
bool parses_cleanly(const std::string& t, Parse parse) {
  try {
    Schedule s = parse(t);
    check_fields(s);
    return from_text(to_text(s)) == s && from_goal(to_goal(s)) == s;
  } catch (const Error&) {
    return true;
  } catch (...) {
    return false;
  }
}

std::string mutate(std::mt19937_64& rng, std::string s) {
  static const std::string alpha = "0123456789-+:[],#/*{} \t\nabsnrtofliuepcg\"\\x\x01\xc3\xa9\xff";
  static const char* numbers[] = {"9223372036854775807",
                                  "9223372036854775808",
                                  "-9223372036854775808",
                                  "4294967295",
                                  "2147483648",
                                  "-1",
                                  "0"};
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    size_t i = rng() % s.size();
    switch (rng() % 6) {
      case 0:
        s.erase(i, 1 + rng() % 3);
        break;
      case 1:
        s.insert(i, 1, alpha[rng() % alpha.size()]);
        break;
      case 2:
        s[i] = alpha[rng() % alpha.size()];
        break;
      case 3:
        s.insert(i, numbers[rng() % 7]);
        break;
      case 4: {  // duplicate a line
        size_t b = s.rfind('\n', i), en = s.find('\n', i);
        b = b == std::string::npos ? 0 : b + 1;
        if (en != std::string::npos) s.insert(b, s.substr(b, en - b + 1));
        break;
      }
      default: {  // delete a line
        size_t b = s.rfind('\n', i), en = s.find('\n', i);
        b = b == std::string::npos ? 0 : b + 1;
        s.erase(b, en == std::string::npos ? std::string::npos : en - b + 1);
      }
    }
  }
  return s;
}

}  // namespace

TEST(text_and_goal_round_trip_rd) {
  for (int64_t P : {1, 2, 3, 5, 7, 8, 13, 64})
    for (int64_t count : {0, 1, 7}) {
      Schedule s = Algorithm("allreduce:rd").bind(P, count).generate();
      CHECK(from_text(to_text(s)) == s);
      CHECK(from_goal(to_goal(s)) == s);
      CHECK(to_text(from_text(to_text(s))) == to_text(s));
    }
}

TEST(text_and_goal_parsers_hostile_input) {
  std::mt19937_64 rng(7);
  Schedule s = Algorithm("allreduce:rd").bind(5, 3).generate();
  const std::string text = to_text(s), goal = to_goal(s);
  auto parse_text = [](const std::string& t) { return from_text(t); };
  auto parse_goal = [](const std::string& t) { return from_goal(t); };
  for (int i = 0; i < 3000; ++i) {
    CHECK(parses_cleanly(mutate(rng, text), parse_text));
    CHECK(parses_cleanly(mutate(rng, goal), parse_goal));
    std::string bytes(rng() % 200, ' ');
    for (char& c : bytes) c = static_cast<char>(rng());
    CHECK(parses_cleanly(bytes, parse_text));
    CHECK(parses_cleanly(bytes, parse_goal));
  }
  CHECK(parses_cleanly(std::string(200000, '['), parse_text));
  CHECK(parses_cleanly("num_ranks 1\nrank 0 {\n" + std::string(100000, '/') + "\n}\n", parse_goal));
}

// The streaming JSON reader: what the writer wrote reads back; mutated files end in a schedule
// or a collkit::Error (under ASan: no read past a buffer, whatever the file).
TEST(json_file_reader_round_trip_and_hostile_input) {
  std::mt19937_64 rng(11);
  const std::string path = "collkit_test_json_reader.json";
  auto parse_json = [&](const std::string& t) {
    std::ofstream(path, std::ios::binary) << t;
    Schedule out;
    read_json_file(
        path, [&](const ScheduleHeader& h) { out = Schedule(h); },
        [&](const RankView& r) { out.append_rank(r); });
    return out;
  };
  for (const char* name : {"allreduce:rd", "alltoall:bruck", "bcast:binomial"}) {
    Schedule s = Algorithm(name).bind(6, 3).generate();
    CHECK(parse_json(to_json(s)) == s);
  }
  const std::string json = to_json(Algorithm("allreduce:rd").bind(5, 3).generate());
  for (int i = 0; i < 1500; ++i) CHECK(parses_cleanly(mutate(rng, json), parse_json));
  CHECK(parses_cleanly(std::string(100000, '['), parse_json));
  CHECK(parses_cleanly("", parse_json));
  std::remove(path.c_str());
}
