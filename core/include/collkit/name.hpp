// The one grammar for algorithm names, used by the CLI, the Python API, results files, tuning
// files and the C API:
//
//   name  := collective ':' algo [ '(' [ arg { ',' arg } ] ')' ]
//   arg   := key '=' value | value          (positional values come before keyword ones)
//   key   := [a-z_][a-z0-9_]*
//   value := name | [A-Za-z0-9_.+-]+        (e.g. 4, a8, c6m2, 8KiB, auto, reduce:binomial)
//
// e.g. allreduce:rd, allreduce:rm(a8,a4), alltoall:bruck(r=4), bcast:pipeline(seg=8KiB),
// allreduce:hier(intra=reduce:binomial, inter=allreduce:rm(a4)): a value that is itself an
// algorithm name (nested up to kMaxNameDepth deep) names a part of a composed algorithm.
// Errors are Error(name) whose message shows the name with a caret under the offending character.
//
// What a result row, `collkit bench --algos` or a tuning table names is a row name:
//
//   row_name := name | 'native' | collective ':' 'native' | impl ':' algo
//   impl     := mpich | ompi | impi     (MPICH, Open MPI, Intel MPI)
//
// `native` is the MPI's own collective as it chooses; `impl:algo` one of an MPI's own algorithms,
// forced (mpich:recursive_doubling, ompi:ring, impi:rabenseifner). collkit resolves a name
// against its registry; what `impl:algo` means is the MPI's business (python/collkit/mpi/).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collkit/error.hpp"
#include "collkit/schedule.hpp"

namespace collkit {

struct ParsedName;

struct NameArg {
  std::string key;    // empty for a positional argument
  std::string value;  // the value's text (a nested name: all of it)
  size_t pos = 0;     // offset of the value in the outermost name, for error messages
  std::shared_ptr<const ParsedName> nested;  // the value parsed, if it is an algorithm name
};

struct ParsedName {
  std::string text;  // the name as given (a nested name: its own text)
  Collective collective = Collective::allreduce;
  std::string algorithm;
  std::vector<NameArg> args;
  size_t begin = 0;     // offset of this name in the outermost name
  size_t algo_pos = 0;  // offset of the algorithm in the outermost name
};

// How deep algorithm names may nest: hier(inter=hier(inter=...)) past this is refused.
constexpr int kMaxNameDepth = 8;

ParsedName parse_name(std::string_view text);

// A call: the same argument grammar without the collective, for the simulator's specs (noise,
// skew, topology):
//
//   call  := word [ '(' [ arg { ',' arg } ] ')' ]     e.g. uniform(0,100ns), file(/tmp/d.txt),
//                                                     fattree(k=16,hop=100ns,link=10GB/s)
//
// A value may also hold '/' (a path, a bandwidth) and never nests. Errors are Error(kind) with a
// caret under the offending character.
struct ParsedCall {
  std::string kind;
  std::vector<NameArg> args;
};
ParsedCall parse_call(std::string_view text, ErrorKind kind = ErrorKind::invalid_argument);

// The implementations an `impl:algo` row name may name, comma-separated: "mpich, ompi, impi".
std::string_view mpi_impl_names();
bool is_mpi_impl(std::string_view impl);

struct RowName {
  enum class Kind : uint8_t { collkit, native, mpi };
  Kind kind = Kind::collkit;
  std::string impl;             // mpi: mpich, ompi or impi
  std::string algorithm;        // mpi: the MPI's algorithm; collkit: as ParsedName::algorithm
  ParsedName parsed;            // collkit (and collective:native): the parsed name
  bool has_collective = false;  // collkit, and native written as collective:native
};

// A row name (see above); Error(name) with a caret for anything else. An `impl:algo` takes no
// arguments; a collkit name is parsed, not resolved against the registry.
RowName parse_row_name(std::string_view text);

// An Error(kind) whose message points at `pos` of `text`:  "<what>\n  <text>\n  <spaces>^".
[[noreturn]] void fail_at(ErrorKind kind, std::string_view text, size_t pos,
                          const std::string& what);

// Sizes with binary or decimal units: "8", "8B", "4KiB", "4K" (= KiB), "1MiB", "1.5MB", "2GiB".
// Returns bytes; Error(invalid_argument) for anything else, negatives and overflow included.
int64_t parse_size(std::string_view text);
// "8B", "4KiB", "1MiB": the largest exact binary unit (so it can stand in a name).
std::string format_size(int64_t bytes);

}  // namespace collkit
