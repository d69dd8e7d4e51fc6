// collkit's tuning table (schema "collkit-tuning", version 1; docs/tuning.md), read and checked
// once for everyone: `collkit run` and `collkit tune` (through the Python binding) and the
// interposition library (libcollkit_pmpi, COLLKIT_TUNING=table.json) get the same verdict from
// this one reader, so a table one of them takes the other never drops.
//
//   {"format": "collkit-tuning", "version": 1, "mpi": "...", "machine": "...", "date": "...",
//    "block": 1, "rules": [{"collective": "allreduce", "P": [4, 4], "bytes": [0, 1023],
//               "algorithm": "allreduce:rd", "source": "measured", "median_us": 3.1,
//               "native_median_us": 4.2, "speedup": 1.35, "p_value": 1e-9, "ci95": [1.2, 1.5],
//               "speedups": {"back_to_back": 1.35, "barrier": 1.4}},
//              {"collective": "allreduce", "P": [4, 4], "nodes": [2, 2], "ppn": [2, 2], ...}]}
//
// The rules, all refusals of the whole table with the place: the text is UTF-8 JSON (RFC 8259:
// no NaN or Infinity, no trailing commas) of at most 16 MiB, nested at most 32 deep; no object
// has a key twice; only the keys above (kTableKeys, kRuleKeys); "version" is the integer 1; P and
// bytes are [lo, hi] of integers written as integers (no fraction or exponent), 1 <= P <= 2^31,
// 0 <= bytes <= 2^62; "nodes" and "ppn" (optional, either or both) are [lo, hi] like P, and some
// nodes x ppn of them must lie in the rule's P range (a shape no call can have is refused); the
// statistics are numbers or null; "speedups" (optional) is an object whose keys are call patterns
// (kPatterns) and whose values are numbers or null; the algorithm is "native" (or
// "allreduce:native", ...) or a name of the rule's collective that the registry accepts, and it can
// run at some P of the rule's range (the registry's answer, Algorithm::refusal). A rule whose
// algorithm cannot run at some other P of its range is kept with a note: those calls go to the MPI
// (the library declines them alike on every rank).
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collkit/collective.hpp"

namespace collkit::tuning {

inline constexpr int kVersion = 1;
inline constexpr size_t kMaxTableBytes = size_t{16} << 20;
inline constexpr size_t kMaxRules = 100000;
inline constexpr int64_t kMaxRuleBytes = int64_t{1} << 62;
// P of a rule's range that are checked against the registry, from its low end (and its high
// end): a wider range is checked in part.
inline constexpr int64_t kCheckedP = 1024;

inline constexpr const char* kTableKeys[] = {"format", "version", "mpi",  "machine",
                                             "date",   "block",   "rules"};
// "block" (optional, 1 if absent): the calls per timed sample the rules were measured with, 1
// (one call after a barrier) to kMaxBlock (back-to-back calls, as OSU measures loops). It says
// what the medians mean; the library runs a table the same whatever it is.
inline constexpr int64_t kMaxBlock = 1000000;
inline constexpr const char* kRuleKeys[] = {
    "collective", "P",       "bytes", "algorithm", "source", "median_us", "native_median_us",
    "speedup",    "p_value", "ci95",  "speedups",  "nodes",  "ppn"};
// The call patterns a rule's speedups may name (collkit_bench --pattern; docs/tuning.md).
inline constexpr const char* kPatterns[] = {"back_to_back", "barrier", "rotate_root", "buffers",
                                            "evict"};
inline constexpr const char* kSources[] = {"measured", "simulated"};

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Rule {
  Collective collective = Collective::allreduce;
  int64_t p_lo = 1, p_hi = 1;
  int64_t bytes_lo = 0, bytes_hi = 0;
  std::string algorithm;  // as written
  std::string canonical;  // the registry's canonical name; "native" for the MPI's own call
  bool native = false;
  std::string source = "measured";
  double median_us = kNaN, native_median_us = kNaN, speedup = kNaN, p_value = kNaN;
  double ci95_lo = kNaN, ci95_hi = kNaN;  // null: NaN
  // The speedup in each call pattern it was measured in (null: NaN), in the file's order.
  std::vector<std::pair<std::string, double>> speedups;
  // The communicator's shape the rule is for: its number of nodes and ranks on each node, both
  // inclusive ranges; 0, 0 where the file gives none (any shape).
  int64_t nodes_lo = 0, nodes_hi = 0, ppn_lo = 0, ppn_hi = 0;
  bool shaped() const { return nodes_lo > 0 || ppn_lo > 0; }
  // Whether a communicator of `nodes` nodes with `ppn` ranks on every one (0: the nodes hold
  // different numbers of ranks; nodes 0: not known) has the rule's shape. A shape-less rule
  // takes every communicator; a rule with "ppn" takes none whose nodes differ in ranks.
  bool covers_shape(int64_t nodes, int64_t ppn) const {
    if (nodes_lo > 0 && (nodes < nodes_lo || nodes > nodes_hi)) return false;
    if (ppn_lo > 0 && (ppn < ppn_lo || ppn > ppn_hi || nodes < 1)) return false;
    return true;
  }
  // "" or why some calls the rule covers go to the MPI ("cannot run at P = 3: ...").
  std::string note;
};

struct Table {
  std::string mpi, machine, date;
  int64_t block = 1;
  std::vector<Rule> rules;
};

// Parses and checks a table's text; throws Error(invalid_argument) saying what is wrong and
// where ("rule 2: ...", "line 3, column 7: ..."). Never aborts on any input.
Table parse_table(std::string_view text);

// Reads a file (at most kMaxTableBytes; more is refused without reading it all) and parses it.
Table read_table(const std::string& path);

}  // namespace collkit::tuning
