// The verifier: executes a Schedule symbolically and proves, or refutes with a diagnosis, that
//  - every op is well formed (peers, buffers, regions inside buffers, dependency indices);
//  - no rank has a dependency cycle;
//  - no buffer region is written while a message from or into it is in flight, and no two ops
//    race on a region (every conflicting pair of ops is ordered by dependencies);
//  - every send has its receive and the sizes agree (messages between an ordered pair of ranks
//    match in op-index order: the k-th send from a to b with the k-th receive at b from a);
//  - nothing deadlocks, under rendezvous semantics (a send completes only once its receive is
//    posted), and if something does, the cycle of waits is shown;
//  - every rank ends with exactly what the collective specifies, and every reduced element has
//    the same reduction tree on every rank: up to swapped operands for a commutative op, exactly
//    and in rank order for a non-commutative one, any tree for an op exact under any grouping.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collkit/schedule.hpp"

namespace collkit {

enum class DiagKind : uint8_t {
  bad_op,               // malformed op: peer, buffer, region or dependency out of range
  dep_cycle,            // ops of one rank wait on each other
  hazard,               // two unordered ops touch a region and at least one writes it
  unmatched_send,       // a send with no receive
  unmatched_recv,       // a receive with no send
  size_mismatch,        // a send and its receive disagree on the length
  deadlock,             // a cycle of waits across ranks
  uninitialized,        // a reduce, send or result reads data no one wrote
  wrong_result,         // a rank does not end with the collective's result
  inconsistent_tree,    // the same element is reduced with different trees on different ranks
  needs_commutativity,  // consistent only if operands may be swapped
};
std::string_view to_string(DiagKind k);

struct Diagnostic {
  DiagKind kind;
  int64_t rank = -1;  // -1: not about one rank
  int64_t op = -1;    // -1: not about one op
  std::string message;
};

struct VerifyOptions {
  bool commutative = true;  // whether the reduction op may swap operands
  // Whether the op's result is the same however its operands are grouped (an integer sum, a
  // bitwise op: Restrictions::exact_op): each result must still combine the right inputs, each
  // once, but its tree may differ between ranks.
  bool exact = false;
  size_t max_diagnostics = 20;  // stop listing after this many (counting continues)
  // MPI_IN_PLACE: `in` is the same memory as `out` (allreduce: every rank; reduce: the root),
  // holding the input at the start. A copy of in[a:b] onto out[a:b] is then a no-op (executors
  // skip it), and a schedule that reads `in` after writing `out` is caught.
  bool in_place = false;
};

struct VerifyResult {
  bool ok = false;
  std::vector<Diagnostic> diagnostics;
  size_t total_problems = 0;  // all problems found, listed or not
  // Whether the results are consistent for a commutative op / for a non-commutative op
  // (rank order). Both are computed whatever VerifyOptions::commutative says; false when the
  // verifier stopped before looking at results.
  bool consistent_commutative = false;
  bool consistent_noncommutative = false;
  uint64_t ops = 0;
  uint64_t messages = 0;
  uint64_t bytes = 0;
};

// Throws Error(invalid_argument) if the schedule does not hold all P ranks, or if a barrier
// with more than 2^16 ranks is asked for (its check keeps a bitset per op).
VerifyResult verify(const Schedule& s, const VerifyOptions& opts = {});

// Whether two schedules of the same reduction (allreduce or reduce, same P, count and root)
// compute every result element with the same reduction tree, so that switching between them
// (e.g. at a count limit, [Rabenseifner]) does not change a bit of the result.
struct TreeComparison {
  bool same_exact = false;        // identical trees, operand order included
  bool same_commutative = false;  // identical up to swapped operands
  std::string difference;         // the first element that differs, both trees shown
};
// Both schedules must verify (commutative); Error(invalid_argument) if they do not or if they
// are not comparable. Result elements compared: every rank's for allreduce, the root's for reduce.
TreeComparison compare_trees(const Schedule& a, const Schedule& b);

}  // namespace collkit
