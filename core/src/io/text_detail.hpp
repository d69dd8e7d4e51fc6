// Pieces of the text form that the GOAL reader and writer reuse: collkit's GOAL files carry
// each op and the header as text-form lines in "// collkit:" comments.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "collkit/schedule.hpp"
#include "scanner.hpp"

namespace collkit::io {

void write_int(std::string& out, int64_t v);
// A value past 64 bits (a sum or product of an invalid op's fields), written exactly so that the
// reader rejects it rather than reading a wrapped number.
__extension__ typedef __int128 wide_int;  // __extension__: -Wpedantic knows no __int128
void write_wide_int(std::string& out, wide_int v);
// "send out[0:4] to 1", "reduce out[0:4] = s0[0:4] + out", "compute 500ns": no index, no
// dependencies, no stage.
void write_op_body(std::string& out, const Op& op);

// Reads an op body as write_op_body writes it. `P` bounds peers, `num_scratch` the buffers.
Op parse_op_body(Scanner& sc, int64_t P, size_t num_scratch);
// Reads "stage S" if it comes next; returns false if it does not.
bool parse_stage(Scanner& sc, uint16_t& stage);

// The header lines, read one at a time in any order (each at most once).
struct HeaderReader {
  ScheduleHeader h;
  bool seen[7] = {};
  // Reads one header line if the scanner holds one; false if the line is not a header line
  // (the scanner is left where it was).
  bool line(Scanner& sc);
  // Checks that the required lines came and the values agree (root < P). `where` is the
  // scanner of the line that ends the header, for the error position.
  void finish(const Scanner& where, size_t pos) const;
};

}  // namespace collkit::io
