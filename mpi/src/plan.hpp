// A compact, executable form of one rank's program: the ops, how many ops each waits on, who
// waits on each (so completing an op releases its successors in O(successors)), and for every
// send / recv its sequence number within its (me, peer) pair, used as the MPI tag so messages
// match in program order whatever order their requests are posted in.
#pragma once
#include <cstdint>
#include <vector>

#include "collkit/schedule.hpp"

namespace collkit::mpi {

// Messages of one (peer, kind) in flight at once at most, counted in the pair's order: message q
// starts only once q - kMessageWindow messages of the pair have completed (executor.cpp).
constexpr uint32_t kMessageWindow = 256;

struct Plan {
  ScheduleHeader header;
  int64_t rank = 0;
  std::vector<Op> ops;
  std::vector<uint32_t> num_deps;  // per op
  Successors succ;                 // ops that wait on op i: succ.of(i)
  std::vector<uint32_t> roots;     // ops with no deps
  std::vector<uint32_t> seq;       // send / recv: index of the message within its pair
  std::vector<int64_t> scratch;    // elements of each scratch buffer

  // Reused by every run of the plan (a plan is run by one thread at a time).
  std::vector<uint32_t> remaining;
  std::vector<uint32_t> pending;
  std::vector<uint32_t> ready;

  // Messages in flight per (peer, kind) are bounded (executor.cpp): set when some pair has more
  // messages than the window, with the per-(peer, kind) counts and held-back ops of a run.
  bool windowed = false;
  std::vector<uint32_t> msg_done;           // [2 * peer + (recv ? 1 : 0)]
  std::vector<std::vector<uint32_t>> held;  // same index: min-heaps of ops by seq

  // The shared-memory transport's view of the plan, filled by the executor the first time the
  // plan runs with it (shm_bytes: the slot size it was computed for, -1 before).
  static constexpr uint32_t kViaMpi = UINT32_MAX;
  int64_t shm_bytes = -1;
  std::vector<uint32_t> shm_seq;    // send / recv: index among the pair's shm messages, or kViaMpi
  std::vector<uint8_t> fused;       // recv: may reduce out of the slot (see executor.cpp)
  std::vector<uint8_t> done_early;  // per run: a reduce its receive did out of the slot
  std::vector<std::pair<int32_t, uint32_t>> shm_sent, shm_received;  // per peer: messages
};

// Builds the plan of `program` (this rank's program of a schedule with header `h`). Throws
// Error(format) for a program that refers to a rank, buffer or op that does not exist.
Plan make_plan(const ScheduleHeader& h, const RankProgram& program);

}  // namespace collkit::mpi
