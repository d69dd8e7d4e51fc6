// A compact, executable form of one rank's program: the ops, how many ops each waits on, who
// waits on each (so completing an op releases its successors in O(successors)), and for every
// send / recv its sequence number within its (me, peer) pair, used as the MPI tag so messages
// match in program order whatever order their requests are posted in.
#pragma once
#include <cstdint>
#include <vector>

#include "collkit/schedule.hpp"

namespace collkit::mpi {

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
};

// Builds the plan of `program` (this rank's program of a schedule with header `h`). Throws
// Error(format) for a program that refers to a rank, buffer or op that does not exist.
Plan make_plan(const ScheduleHeader& h, const RankProgram& program);

}  // namespace collkit::mpi
