// collkit's tuning table (COLLKIT_TUNING=table.json) as the interposition library reads it.
// No MPI and no core here, so the parser is tested alone under ASan/UBSan with hostile files.
//
// The schema (docs/tuning.md; python/collkit/tune/table.py writes and validates it):
//   {"format": "collkit-tuning", "version": 1,
//    "rules": [{"collective": "allreduce", "P": [4, 4], "bytes": [0, 1023],
//               "algorithm": "allreduce:rd", ...}, ...]}
// P and bytes are inclusive ranges; bytes is count x type size (per block for the collectives
// with one block per rank). Keys this
// reader does not need (mpi, machine, source, speedup, ...) are allowed and skipped.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace collkit::pmpi {

inline constexpr int kTableVersion = 1;
// In the core's enum order (collective.hpp), which the interposition library relies on; kept
// here as text so that the parser needs no core.
inline constexpr const char* kCollectives[] = {
    "allreduce", "reduce", "bcast", "alltoall", "barrier", "allgather", "reduce_scatter_block",
    "gather",    "scatter"};
inline constexpr int kNumCollectives = sizeof(kCollectives) / sizeof(kCollectives[0]);

struct Rule {
  int collective = 0;  // index into kCollectives
  int64_t p_lo = 0, p_hi = 0;
  int64_t bytes_lo = 0, bytes_hi = 0;
  std::string algorithm;  // a collkit name, or "native"
};

struct Table {
  std::vector<Rule> rules;
  std::string error;  // empty when the table loaded; else why not (the whole table is dropped)
};

// Parses a table's text. Never throws, never aborts: any defect is Table::error, with the place.
Table parse_table(const std::string& text);

// Reads and parses a file (at most 16 MiB).
Table load_table(const std::string& path);

}  // namespace collkit::pmpi
