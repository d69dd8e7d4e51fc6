// The one grammar for algorithm names, used by the CLI, the Python API, results files, tuning
// files and the C API:
//
//   name  := collective ':' algo [ '(' [ arg { ',' arg } ] ')' ]
//   arg   := key '=' value | value          (positional values come before keyword ones)
//   key   := [a-z_][a-z0-9_]*
//   value := [A-Za-z0-9_.+-]+               (e.g. 4, a8, c6m2, 8KiB, auto)
//
// e.g. allreduce:rd, allreduce:rm(a8,a4), alltoall:bruck(r=4), bcast:pipeline(seg=8KiB).
// Errors are Error(name) whose message shows the name with a caret under the offending character.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collkit/error.hpp"
#include "collkit/schedule.hpp"

namespace collkit {

struct NameArg {
  std::string key;  // empty for a positional argument
  std::string value;
  size_t pos = 0;  // offset of the argument in the name, for error messages
};

struct ParsedName {
  std::string text;  // the name as given
  Collective collective = Collective::allreduce;
  std::string algorithm;
  std::vector<NameArg> args;
};

ParsedName parse_name(std::string_view text);

// An Error(kind) whose message points at `pos` of `text`:  "<what>\n  <text>\n  <spaces>^".
[[noreturn]] void fail_at(ErrorKind kind, std::string_view text, size_t pos,
                          const std::string& what);

// Sizes with binary or decimal units: "8", "8B", "4KiB", "4K" (= KiB), "1MiB", "1.5MB", "2GiB".
// Returns bytes; Error(invalid_argument) for anything else, negatives and overflow included.
int64_t parse_size(std::string_view text);
// "8B", "4KiB", "1MiB": the largest exact binary unit (so it can stand in a name).
std::string format_size(int64_t bytes);

}  // namespace collkit
