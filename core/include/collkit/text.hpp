// The text form of a Schedule: readable, diffable, and exact (from_text(to_text(s)) == s).
//
//   # collkit schedule v1
//   collective allreduce
//   algorithm allreduce:rd
//   P 3
//   count 4
//   elem_size 8
//   root 0
//   rank 0 scratch 4
//     0: copy out[0:4] = in[0:4]
//     1: send out[0:4] to 1  after 0
//     2: recv s0[0:4] from 1  stage 1
//     3: reduce out[0:4] = s0[0:4] + out  after 1,2  stage 1     dst = src (+) dst
//     4: reduce out[0:4] = out + s0[0:4]                          dst = dst (+) src
//     5: compute 500ns
//
// Regions are buf[start:stop] in elements (stop = start + len, python-slice style); in a reduce
// the bare buffer name stands for the destination region, so the operand order is explicit.
// `after` lists the ops of the same rank this op waits on; `stage` is omitted when 0.
// '#' starts a comment. docs/schedule-formats.md describes the grammar in full.
#pragma once
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

#include "collkit/schedule.hpp"

namespace collkit {

// Where a streaming writer reads each rank's program (ranks 0 .. P-1 in order; the view may be
// overwritten by the next call) and where it writes its text.
using RankSource = std::function<RankView(int64_t)>;
using Sink = std::function<void(std::string_view)>;

std::string to_text(const Schedule& s);
// The same text, rank by rank into `sink`: memory of one rank's program, whatever P.
void write_text(const ScheduleHeader& h, const RankSource& rank, const Sink& sink);
// One rank's block ("rank R scratch ..." and its op lines), as it appears in to_text.
std::string rank_to_text(const ScheduleHeader& h, const RankView& r);
// The header lines (from "# collkit schedule v1" to "root R"), as they appear in to_text.
std::string header_to_text(const ScheduleHeader& h);

// Throws Error(format) "line L, column C: expected ..., found ..." for anything malformed or
// not representable in the IR (unknown keywords, bad or overflowing numbers, peers outside
// [0, P), buffers the rank does not have, negative lengths, missing or out-of-order ranks,
// dependencies on ops the rank does not have). Regions outside their buffers, cycles and
// unmatched messages are the verifier's to report, not the parser's.
Schedule from_text(std::string_view text);
// The same parser reading a stream line by line: `on_header` once, then `on_rank` for each rank
// in order as its block ends. Memory of one rank's program, whatever P.
void read_text(std::istream& in, const std::function<void(const ScheduleHeader&)>& on_header,
               const std::function<void(const RankView&)>& on_rank);

// The same checks as from_text, for a Schedule built another way (JSON, arrays): throws
// Error(format) naming the rank and op of the first field the text form could not express.
void check_fields(const Schedule& s);
// The same for a header alone and for one rank's program (readers that stream).
void check_header_fields(const ScheduleHeader& h);
void check_rank_fields(const ScheduleHeader& h, const RankView& v);
// The one buffer limit of every reader (buffer_fits: 2^48 elements, < 2^63 bytes) on the count,
// a rank's scratch buffers and its regions; the rest of check_rank_fields is the verifier's for
// a schedule built from arrays. Part of check_header_fields / check_rank_fields.
void check_buffer_limits(const ScheduleHeader& h);
void check_buffer_limits(const ScheduleHeader& h, const RankView& v);

}  // namespace collkit
