// The schedule formats under AddressSanitizer + UBSan: exact round trips, and hostile input
// (random bytes, mutated valid files, extreme numbers) that must end in collkit::Error only.
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>

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

namespace {

// `goal` respelled so that no line but '}' takes the GOAL reader's fast path (which reads the
// lines as collkit and Schedgen write them): blanks doubled, a tab after "// collkit:". The
// Scanner reads it as the same schedule.
std::string scanner_spelling(const std::string& goal) {
  std::string out;
  for (size_t b = 0; b < goal.size();) {
    size_t e = goal.find('\n', b);
    if (e == std::string::npos) e = goal.size();
    std::string_view line(goal.data() + b, e - b);
    if (line.starts_with("// collkit:")) {
      out += "// collkit:\t";
      line.remove_prefix(11);
    }
    for (char c : line) out += c == ' ' ? std::string("  ") : std::string(1, c);
    out.push_back('\n');
    b = e + 1;
  }
  return out;
}

std::string without_collkit_lines(const std::string& goal) {
  std::string out;
  for (size_t b = 0; b < goal.size();) {
    size_t e = goal.find('\n', b);
    if (goal.compare(b, 2, "//") != 0) out.append(goal, b, e + 1 - b);
    b = e + 1;
  }
  return out;
}

// `text` with empty `comment` lines in front until a line straddles the end of the stream
// reader's first 1 MiB block (when it is longer than that).
std::string across_block_end(std::string text, const char* comment = "//\n") {
  while (text.size() > (1u << 20) && text[(1u << 20) - 1] == '\n') text.insert(0, comment);
  return text;
}

Schedule goal_from_stream(const std::string& text) {
  std::istringstream in(text);  // seekable: a plain file is read in two passes
  Schedule s;
  read_goal(
      in, [&](const ScheduleHeader& h) { s = Schedule(h); },
      [&](const RankView& r) { s.append_rank(r); });
  return s;
}

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  size_t i = s.find(from);
  CHECK(i != std::string::npos);
  return i == std::string::npos ? s : s.replace(i, from.size(), to);
}

std::string goal_error(const std::string& text) {
  try {
    (void)from_goal(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// The GOAL reader's fast path and its Scanner read the same schedules: collkit's files and plain
// ones, with CRLF, without a final newline, and from a stream whose lines straddle its 1 MiB
// blocks (rd at P = 1024: 2.9 MB, 1.3 MB plain).
TEST(goal_fast_path_reads_what_the_scanner_reads) {
  auto check = [](const Schedule& s) {
    const std::string goal = to_goal(s), plain = without_collkit_lines(goal);
    CHECK(from_goal(goal) == s);
    CHECK(from_goal(scanner_spelling(goal)) == s);
    std::string crlf;
    for (char c : goal) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    CHECK(from_goal(crlf) == s);
    CHECK(from_goal(goal.substr(0, goal.size() - 1)) == s);
    CHECK(goal_from_stream(across_block_end(goal)) == s);
    const Schedule p = from_goal(plain);
    CHECK(p.header.P == s.header.P);
    CHECK(from_goal(scanner_spelling(plain)) == p);
    CHECK(goal_from_stream(across_block_end(plain)) == p);
    CHECK(goal_from_stream(plain.substr(0, plain.size() - 1)) == p);
  };
  for (const char* name : {"allreduce:rd", "allreduce:rabenseifner", "bcast:binomial",
                           "alltoall:bruck", "allreduce:ring", "barrier:dissemination"})
    for (int64_t P : {1, 5, 8}) check(Algorithm(name).bind(P, 7).generate());
  const Schedule big = Algorithm("allreduce:rd").bind(1024, 1).generate();
  CHECK(without_collkit_lines(to_goal(big)).size() > (1u << 20));
  check(big);
}

// A collkit file from a stream as its block reader takes it: a rank longer than the reader's
// view (bcast:linear's root at P = 6000: 5999 sends, op indices and peers of 1 to 4 digits) is
// resumed within the rank, and numbers of every width up to 16 digits (a count past 2^47) read
// as written.
TEST(goal_stream_reads_long_ranks_and_wide_numbers) {
  const std::tuple<const char*, int64_t, int64_t> cases[] = {
      {"bcast:linear", 6000, 3},
      {"allreduce:rd", 8, (int64_t{1} << 47) + 12345},
      {"allreduce:rabenseifner", 12, 123456789}};
  for (const auto& [name, P, count] : cases) {
    const Schedule s = Algorithm(name).bind(P, count).generate();
    CHECK(goal_from_stream(to_goal(s)) == s);
    CHECK(goal_from_stream(across_block_end(to_goal(s))) == s);
  }
}

// Lines at the fast path's edges (huge numbers, missing or extra fields, other blanks, labels it
// does not take) end as the Scanner alone ended them: the same schedule or the same message.
TEST(goal_fast_path_edges_keep_the_scanner_messages) {
  auto plain = [](const std::string& op) {
    return "num_ranks 2\nrank 0 {\n" + op + "\n}\nrank 1 {\nl1: recv 8b from 0 tag 0\n}\n";
  };
  const std::string ok = "";
  const std::pair<std::string, std::string> plain_cases[] = {
      {plain("l1: send 99999999999999999999b to 1 tag 0"),
       "line 3, column 10: expected a size in bytes, as in 1024b, in [0, 281474976710656], found "
       "'99999999999999999999'"},
      {plain("l1: send 8b to 2 tag 0"), "line 3, column 16: rank 2 is not in [0, 2)"},
      {plain("l1: send 8b to 1 tag"), "line 3, column 21: expected a tag, found end of line"},
      {plain("l1: send 8b to 1 tag 4294967295"),
       "line 3, column 22: tag 4294967295 is not in [0, 4294967294]"},
      {plain("l1: send 8b to 1 tag 0 "), ok},
      {plain("l1:\tsend 8b to 1 tag 0"), ok},
      {plain("l1: send 8b to 1"), ok},
      {plain("l01: send 8b to 1 tag 00"), ok},
      {plain("l1: send 8b to 1 tag 0 tag 1"),
       "line 3, column 24: expected 'tag', 'cpu', 'nic' or end of line, found 'tag'"},
      {plain("l1: send 8b to 1 tag -1"),
       "line 3, column 22: 'tag -1' (any tag) is for receives; a send needs its tag"},
      {plain("l1: send 8b to 1 tag 0\nl1 requires l2"),
       "line 4, column 13: label 'l2' is not defined in rank 0"},
      {plain("l1: send 8b to 1 tag 0\nl2: calc 9223372036854775808"),
       "line 4, column 10: expected a duration in nanoseconds (>= 0), found "
       "'9223372036854775808'"},
      {plain("l1: send 8b to 1 tag 0\nl1: calc 5"),
       "line 4, column 5: label 'l1' is defined twice in rank 0"},
  };
  for (const auto& [text, message] : plain_cases) CHECK(goal_error(text) == message);

  const std::string g = to_goal(Algorithm("allreduce:rd").bind(2, 1).generate());
  const std::string send = "// collkit: 1: send out[0:1] to 1 stage 1";
  const std::pair<std::string, std::string> collkit_cases[] = {
      {replace_once(g, send, "// collkit: 1: send out[0:1] to 2 stage 1"),
       "line 16, column 33: expected a rank of P = 2 in [0, 1], found '2'"},
      {replace_once(g, send, "// collkit: 1: send out[1:0] to 1 stage 1"),
       "line 16, column 25: region stop is before its start (a negative length)"},
      {replace_once(g, send, "// collkit: 1: send s1[0:1] to 1 stage 1"),
       "line 16, column 21: buffer s1 does not exist: this rank has 1 scratch buffer(s) (s0..s0)"},
      {replace_once(g, send, "// collkit: 1: send out[0:281474976710657] to 1 stage 1"),
       "line 16, column 25: a region of 281474976710657 elements of 8 B: a buffer holds at most "
       "2^48 elements and 2^63 bytes"},
      {replace_once(g, send, "// collkit: 1: send out[0:1] to 1 stage 70000"),
       "line 16, column 41: expected a stage number in [0, 65535], found '70000'"},
      {replace_once(g, send, "// collkit: 2: send out[0:1] to 1 stage 1"),
       "line 16, column 13: expected op index 1 (the index of the GOAL op that follows), found "
       "'2'"},
      {replace_once(g, send, "// collkit: 1: send out[0:99999999999999999999] to 1 stage 1"),
       "line 16, column 27: expected a region stop (a 64-bit integer), found "
       "'99999999999999999999'"},
      {replace_once(g, send, "// collkit: 1: send out[0:1]"),
       "line 16, column 29: expected 'to' and the receiving rank, found end of line"},
      {replace_once(g, send, "// collkit: 1: send s01[0:1] to 1 stage 1"),
       "line 16, column 21: buffer s01 does not exist: this rank has 1 scratch buffer(s) "
       "(s0..s0)"},
      {replace_once(g, send, "// collkit: 1: send out[00:01] to 1 stage 1 "), ok},
      {replace_once(g, "l1: send 8b to 1 tag 0", "l1: send 16b to 1 tag 0"),
       "line 17, column 5: this GOAL op disagrees with its '// collkit:' comment on line 16, "
       "which asks for a size of len * elem_size bytes"},
      {replace_once(g, "l1: send 8b to 1 tag 0", "l1: send 08b to 1 tag 0"), ok},
      {replace_once(g, "l1: send 8b to 1 tag 0", "l1: send 8b to 1 tag 1"),
       "line 17, column 5: tag 1 should be 0: in a collkit GOAL file the k-th message between "
       "two ranks has tag k"},
      {replace_once(g, "l1: send 8b to 1 tag 0", "l1: send 99999999999999999999999b to 1 tag 0"),
       "line 17, column 5: this GOAL op disagrees with its '// collkit:' comment on line 16, "
       "which asks for a size of len * elem_size bytes"},
      {replace_once(g, "// collkit: 3: reduce out[0:1] = out + s0[0:1] stage 1",
                    "// collkit: 3: reduce out[0:1] = out + s0[0:2] stage 1"),
       "line 21, column 40: the source region has 2 elements, the destination 1"},
      {replace_once(g, "// collkit: 3: reduce out[0:1] = s0[0:1] + out stage 1",
                    "// collkit: 3: reduce out[0:1] = s0[0:1] + in stage 1"),
       "line 36, column 44: expected the destination buffer out alone (as in 'reduce out[0:4] = "
       "s0[0:4] + out')"},
      {replace_once(g, "// collkit: 0: copy out[0:1] = in[0:1]\nl0: calc 0",
                    "// collkit: 0: compute 5nsx\nl0: calc 5"),
       "line 14, column 27: expected 'ns' right after the duration, as in 500ns, found 'x'"},
      {replace_once(g, "// collkit: 2: recv s0[0:1] from 1 stage 1",
                    "// collkit: 2: recv s0[0:1] from any stage 1"),
       "line 20, column 5: this GOAL op disagrees with its '// collkit:' comment on line 19, "
       "which asks for peer -1"},
  };
  for (const auto& [text, message] : collkit_cases) CHECK(goal_error(text) == message);
}

// The text reader's fast path (op lines as write_op_line writes them) against its Scanner: the
// same schedules with the op lines indented by a tab (which only the Scanner reads), CRLF, no
// final newline; and at its edges, the Scanner's messages.
TEST(text_fast_path_reads_what_the_scanner_reads) {
  auto check = [](const Schedule& s) {
    const std::string text = to_text(s);
    std::string tabbed, crlf;
    for (size_t b = 0; b < text.size();) {
      size_t e = text.find('\n', b);
      tabbed += text.compare(b, 2, "  ") == 0 ? "\t" + text.substr(b + 2, e + 1 - b - 2)
                                              : text.substr(b, e + 1 - b);
      crlf += text.substr(b, e - b) + "\r\n";
      b = e + 1;
    }
    CHECK(from_text(text) == s);
    CHECK(from_text(tabbed) == s);
    CHECK(from_text(crlf) == s);
    CHECK(from_text(text.substr(0, text.size() - 1)) == s);
    std::istringstream in(across_block_end(text, "#\n"));
    Schedule streamed;
    read_text(
        in, [&](const ScheduleHeader& h) { streamed = Schedule(h); },
        [&](const RankView& r) { streamed.append_rank(r); });
    CHECK(streamed == s);
  };
  for (const char* name : {"allreduce:rd", "allreduce:rabenseifner", "bcast:binomial",
                           "alltoall:bruck", "allreduce:ring", "barrier:dissemination"})
    for (int64_t P : {1, 5, 8}) check(Algorithm(name).bind(P, 7).generate());
  const Schedule big = Algorithm("allreduce:rd").bind(1024, 1).generate();
  CHECK(to_text(big).size() > (1u << 20));
  check(big);

  const std::string t = to_text(Algorithm("allreduce:rd").bind(2, 1).generate());
  const std::string line = "  1: send out[0:1] to 1  after 0  stage 1";
  auto error = [&](const std::string& op) {
    try {
      (void)from_text(replace_once(t, line, op));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error("  1: send out[0:1] to 2  after 0  stage 1") ==
        "line 10, column 23: expected a rank of P = 2 in [0, 1], found '2'");
  CHECK(error("  1: send out[0:1] to 1  after 0,  stage 1") ==
        "line 10, column 36: expected an op index of this rank, found 'stage'");
  CHECK(error("  1: send out[0:1] to 1  after 0,7  stage 1") ==
        "line 10, column 34: op 7 does not exist: rank 0 has 4 ops");
  CHECK(error("  1: send out[0:1] to 1  after 0  stage 70000") ==
        "line 10, column 41: expected a stage number in [0, 65535], found '70000'");
  CHECK(error("  2: send out[0:1] to 1  after 0  stage 1") ==
        "line 10, column 3: expected op index 1, found '2'");
  CHECK(error("  1: send out[0:1] to 1  after 4294967295") ==
        "line 10, column 32: expected an op index of this rank in [0, 4294967294], found "
        "'4294967295'");
  CHECK(error("  1: send out[0:1] to 1  after 0  after 0") ==
        "line 10, column 35: expected 'stage' or end of line, found 'after'");
  CHECK(error("  1: send out[0:1] to 1 after 0 stage 1 # a comment").empty());
}
