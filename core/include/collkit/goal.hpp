// GOAL, the schedule language of LogGOPSim (Hoefler, Schneider, Lumsdaine, HPDC 2010), both ways.
//
//   num_ranks 2
//   rank 0 {
//   l1: send 1024b to 1 tag 7
//   l2: calc 500
//   l2 requires l1          // l2 starts after l1 completes
//   }
//   rank 1 {
//   l1: recv 1024b from 0 tag 7
//   }
//
// Export: every op becomes a GOAL op (send/recv with bytes = len * elem_size and tag = the
// message's sequence number on its ordered pair of ranks; reduce/copy/compute/sleep become
// calc), dependencies become `requires`, and what GOAL cannot say (the header, buffers,
// offsets, reduce sides, stages) rides in "// collkit:" comment lines, so that collkit reads
// its own GOAL files back into an identical Schedule. LogGOPSim ignores those comments.
//
// Import of plain GOAL (no collkit comments): a barrier-like schedule with elem_size 1, every
// send/recv on its own region of one scratch buffer per rank, calc as compute; messages are
// matched by tag as LogGOPSim does and the receives reordered so that collkit's in-order
// matching pairs the same messages; `A irequires B` (A may start once B starts) becomes
// "A waits for what B waits for"; `cpu N` / `nic N` are kept in the op (Op::cpu, Op::nic). A
// receive `from -1` becomes a wildcard receive (kAnySource); a rank with one (or with `tag -1`)
// keeps its receives as written, for the simulator to match as LogGOPSim does, and must use one
// tag. docs/schedule-formats.md has the details.
#pragma once
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

#include "collkit/schedule.hpp"
#include "collkit/text.hpp"

namespace collkit {

struct GoalOptions {
  // calc cost written for reduce and copy ops, in nanoseconds per byte of the region (rounded).
  double reduce_ns_per_byte = 0.0;
  double copy_ns_per_byte = 0.0;
};

std::string to_goal(const Schedule& s, const GoalOptions& options = {});
// The same text, handed to `sink` piece by piece as each rank's program is read from `rank`
// (ranks 0 .. P-1 in order): memory of one rank's program, whatever P.
void write_goal(const ScheduleHeader& h, const RankSource& rank, const Sink& sink,
                const GoalOptions& options = {});
// Throws Error(format) "line L, column C: ..." for malformed or unrepresentable input.
Schedule from_goal(std::string_view text);
// The same parser reading a stream line by line: `on_header`, then `on_rank` for each rank in
// order. A collkit GOAL file streams (a rank goes out when its block closes: memory of one
// rank's program whatever P). A plain one pairs its messages by tag: from a stream that can seek
// it is read twice (the first pass keeps each send's destination, tag and op index, 12 bytes a
// send; the second pairs each rank as its block closes), else it is held until its end.
void read_goal(std::istream& in, const std::function<void(const ScheduleHeader&)>& on_header,
               const std::function<void(const RankView&)>& on_rank);

}  // namespace collkit
