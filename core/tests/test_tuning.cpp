// The tuning table's one reader (collkit/tuning.hpp) under ASan/UBSan: every prefix of a good
// table, hostile bytes spliced in, deep nesting and huge numbers end in a table or an Error,
// never a crash; and the registry's answer to "can this algorithm run this call?".
#include <string>

#include "check.hpp"
#include "collkit/error.hpp"
#include "collkit/registry.hpp"
#include "collkit/tuning.hpp"

using namespace collkit;

namespace {

const std::string kGood =
    "{\"format\": \"collkit-tuning\", \"version\": 1, \"mpi\": \"MPICH \\u00e9\\ud83d\\ude00\", "
    "\"rules\": [{\"collective\": \"allreduce\", \"P\": [1, 8], \"bytes\": [0, 1023], "
    "\"algorithm\": \"allreduce:rm(a2,a2)\", \"speedup\": 1.5, \"ci95\": [null, 2e0]}, "
    "{\"collective\": \"bcast\", \"P\": [2, 2147483648], \"bytes\": [0, 4611686018427387904], "
    "\"algorithm\": \"native\", \"source\": \"simulated\"}]}";

// The message of the refusal, or "ok N".
std::string verdict(const std::string& text) {
  try {
    return "ok " + std::to_string(tuning::parse_table(text).rules.size());
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::invalid_argument);
    return e.what();
  }
}

bool refused_with(const std::string& text, const std::string& part) {
  const std::string v = verdict(text);
  const bool ok = v.find(part) != std::string::npos;
  if (!ok) std::fprintf(stderr, "expected '%s' in: %s\n", part.c_str(), v.c_str());
  return ok;
}

}  // namespace

TEST(tuning_table_reads_a_good_table) {
  const tuning::Table t = tuning::parse_table(kGood);
  CHECK(t.mpi == "MPICH \xc3\xa9\xf0\x9f\x98\x80");
  CHECK(t.rules.size() == 2);
  CHECK(t.rules[0].canonical == "allreduce:rm(a2,a2)" && t.rules[0].speedup == 1.5);
  CHECK(t.rules[0].ci95_hi == 2.0 && t.rules[0].ci95_lo != t.rules[0].ci95_lo);  // null: NaN
  CHECK(t.rules[0].note.find("cannot run at P = 1") != std::string::npos);
  CHECK(t.rules[1].native && t.rules[1].p_hi == kMaxP && t.rules[1].source == "simulated");
}

TEST(tuning_table_survives_every_prefix_and_hostile_bytes) {
  for (size_t cut = 0; cut < kGood.size(); ++cut) {
    CHECK(verdict(kGood.substr(0, cut)).rfind("ok", 0) != 0);
    const std::string junks[] = {
        std::string(1, '\0'), "\xff", "\xc0\x80", "\xed\xa0\x80", "[{", "\"", "\\u"};
    for (const std::string& junk : junks)
      (void)verdict(kGood.substr(0, cut) + junk + kGood.substr(cut));
  }
  CHECK(refused_with(std::string(5000, '['), "nested deeper"));
  std::string deep;
  for (int i = 0; i < 3000; ++i) deep += "{\"a\":";
  CHECK(refused_with(deep, "nested deeper"));
  CHECK(refused_with("1e999999", "a tuning table is a JSON object"));
  CHECK(refused_with("\xef\xbb\xbf{}", "unexpected character"));
  CHECK(refused_with(std::string(tuning::kMaxTableBytes + 1, ' '), "larger than 16 MiB"));
}

TEST(tuning_table_refuses_what_either_reader_used_to_take) {
  const std::string head = "{\"format\": \"collkit-tuning\", \"version\": 1, ";
  const std::string rule = "{\"collective\": \"allreduce\", \"P\": [2, 8], \"bytes\": [0, 8], ";
  CHECK(refused_with(head + "\"rules\": [], \"rules\": []}", "\"rules\" is given twice"));
  CHECK(refused_with(head + "\"rules\": [" + rule + "\"algorithm\": \"native\", \"P\": [1, 1]}]}",
                     "\"P\" is given twice"));
  CHECK(refused_with(head + "\"rules\": [" + rule + "\"algorithm\": \"native\", \"x\": 1}]}",
                     "unknown keys: x"));
  CHECK(
      refused_with(head + "\"rules\": [" + rule + "\"algorithm\": \"native\", \"speedup\": NaN}]}",
                   "not valid JSON"));
  CHECK(refused_with(head + "\"rules\": [{\"collective\": \"allreduce\", \"P\": [2.0, 8], "
                            "\"bytes\": [0, 8], \"algorithm\": \"native\"}]}",
                     "\"P\" must be"));
  CHECK(refused_with(head +
                         "\"rules\": [{\"collective\": \"allreduce\", \"P\": [2, "
                         "18446744073709551617], \"bytes\": [0, 8], \"algorithm\": \"native\"}]}",
                     "\"P\" must be"));
  CHECK(refused_with(head + "\"rules\": [{\"collective\": \"allreduce\", \"P\": [2, 2], "
                            "\"bytes\": [0, 8], \"algorithm\": \"allreduce:rm(a2,a2)\"}]}",
                     "cannot run at any P of [2, 2]"));
  CHECK(refused_with(head + "\"rules\": [{\"collective\": \"bcast\", \"P\": [2, 2], "
                            "\"bytes\": [0, 8], \"algorithm\": \"allreduce:rd\"}]}",
                     "is not a bcast algorithm"));
  CHECK(refused_with("{\"format\": \"collkit-tuning\", \"version\": 1.0, \"rules\": []}",
                     "\"version\" must be 1"));
}

TEST(registry_answers_whether_an_algorithm_can_run_a_call) {
  const Algorithm rm("allreduce:rm(a2,a2)");
  CHECK(rm.refusal({.P = 4, .count = 10}).empty());
  CHECK(rm.refusal({.P = 2, .count = 10}).rfind("allreduce:rm(a2,a2): ", 0) == 0);
  CHECK(rm.refusal({.P = 2, .count = 10}, CallCheck::limits).empty());  // the stages: full only
  const Algorithm ring("allreduce:ring");
  CHECK(ring.refusal({.P = 3, .count = 1, .commutative = false}).find("commutative") !=
        std::string::npos);
  CHECK(ring.refusal({.P = 3, .count = 1, .elem_size = 1048580}, CallCheck::limits)
            .find("element size = 1048580 bytes") != std::string::npos);
  CHECK(ring.refusal({.P = 3, .count = 1, .elem_size = kMaxElemSize}).empty());
  const Algorithm pof2("reduce_scatter_block:noncommutative");
  CHECK(!pof2.refusal({.P = 3}, CallCheck::limits).empty() && pof2.refusal({.P = 8}).empty());
}

TEST(tuning_table_reads_shapes_and_matches_them) {
  const std::string head = "{\"format\": \"collkit-tuning\", \"version\": 1, \"rules\": [";
  const std::string rule =
      "{\"collective\": \"allreduce\", \"P\": [4, 4], \"bytes\": [0, 8], \"algorithm\": "
      "\"allreduce:rd\"";
  const tuning::Table t =
      tuning::parse_table(head + rule + ", \"nodes\": [2, 2], \"ppn\": [2, 2]}, " + rule +
                          ", \"nodes\": [1, 4]}, " + rule + "}]}");
  CHECK(t.rules.size() == 3);
  const tuning::Rule& both = t.rules[0];
  CHECK(both.shaped() && both.nodes_lo == 2 && both.nodes_hi == 2 && both.ppn_lo == 2);
  CHECK(both.covers_shape(2, 2) && !both.covers_shape(4, 1) && !both.covers_shape(2, 0));
  CHECK(!both.covers_shape(0, 0) && !both.covers_shape(-1, 0));  // nodes not known
  const tuning::Rule& nodes = t.rules[1];
  CHECK(nodes.shaped() && nodes.ppn_lo == 0);
  CHECK(nodes.covers_shape(3, 0) && nodes.covers_shape(1, 4) && !nodes.covers_shape(5, 1));
  const tuning::Rule& any = t.rules[2];
  CHECK(!any.shaped() && any.covers_shape(-1, 0) && any.covers_shape(7, 3));
  // Shapes no call of the rule's P can have, and ranges that are not ranges.
  CHECK(refused_with(head + rule + ", \"nodes\": [2, 2], \"ppn\": [1, 1]}]}",
                     "no communicator of P in [4, 4] has the shape nodes [2, 2] x ppn [1, 1]"));
  CHECK(refused_with(head + rule + ", \"ppn\": [5, 9]}]}", "has the shape ppn [5, 9]"));
  CHECK(refused_with(head + rule + ", \"nodes\": [3, 3], \"ppn\": [1, 3]}]}", "has the shape"));
  CHECK(refused_with(head + rule + ", \"nodes\": [0, 2]}]}", "\"nodes\" must be [lo, hi]"));
  CHECK(refused_with(head + rule + ", \"ppn\": [2147483648, 2147483649]}]}",
                     "\"ppn\" must be [lo, hi]"));
  CHECK(verdict(head + rule + ", \"nodes\": [1, 2147483648], \"ppn\": [1, 2147483648]}]}") ==
        "ok 1");  // the largest ranges: no overflow
}
