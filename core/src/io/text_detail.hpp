// Pieces of the text form that the GOAL reader and writer reuse: collkit's GOAL files carry
// each op and the header as text-form lines in "// collkit:" comments.
#pragma once
#include <cstdint>
#include <cstring>
#include <functional>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "collkit/error.hpp"
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

// Reads an op body as write_op_body writes it. `P` bounds peers, `num_scratch` the buffers;
// a region must fit a buffer of `elem_size`-byte elements (buffer_fits in registry.hpp).
Op parse_op_body(Scanner& sc, int64_t P, size_t num_scratch, int32_t elem_size);
// The same for an op body as write_op_body writes it (no cpu, nic or 'from any'), without the
// Scanner: false for anything else, whose reading (or error) is then parse_op_body's.
bool fast_op_body(Strict& c, int64_t P, size_t num_scratch, int32_t elem_size, Op& op);
// "<what> of N elements of E B: a buffer holds at most ...": the message of buffer_fits.
std::string too_large(std::string_view what, int64_t elems, int64_t elem_size);
// Reads "stage S" if it comes next; returns false if it does not.
bool parse_stage(Scanner& sc, uint16_t& stage);

// The header lines, read one at a time in any order (each at most once).
struct HeaderReader {
  ScheduleHeader h;
  bool seen[10] = {};
  // Reads one header line if the scanner holds one; false if the line is not a header line
  // (the scanner is left where it was).
  bool line(Scanner& sc);
  // Checks that the required lines came and the values agree (root < P). `where` is the
  // scanner of the line that ends the header, for the error position.
  void finish(const Scanner& where, size_t pos) const;
};

// The two ways a line parser (text or GOAL: a class with line(text, number) and finish(), made
// from the two callbacks) is fed: a whole text held in memory, or a stream read line by line
// (memory of one line). A UTF-8 byte order mark and CR line ends are accepted in both.
using OnHeader = std::function<void(const ScheduleHeader&)>;
using OnRank = std::function<void(const RankView&)>;

template <class Parser>
Schedule parse_whole(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  Schedule s;
  Parser parser([&](const ScheduleHeader& h) { s = Schedule(h); },
                [&](const RankView& r) { s.append_rank(r); });
  Lines lines(text);
  std::string_view line;
  while (lines.next(line)) parser.line(line, lines.number());
  parser.finish();
  return s;
}

// A stream's lines ('\n' or "\r\n", the last one with or without its end), read in blocks of
// 1 MiB: a line is a view into the block, valid until the next call.
//
// Each byte is kept at an address congruent to its offset in the stream modulo 64 (the unread
// rest of a block moves to such a place before the next read): the kernel's copy from the page
// cache is about 4x dearer into a destination 1 to 31 bytes past its source's alignment (1.4 GB
// read in 1 MiB blocks on an AMD EPYC VM: 0.9-1.2 s of system time so, 0.26-0.34 s aligned).
class StreamLines {
 public:
  explicit StreamLines(std::istream& in) : in_(in), buf_(1 << 20) {
    // -1 where the stream cannot tell: offsets counted from 0
    const std::streampos at = in.good() ? in.tellg() : std::streampos(-1);
    offset_ = at == std::streampos(-1) ? 0 : static_cast<uint64_t>(static_cast<std::streamoff>(at));
    place();
  }
  // The line within the block at once (the common case, kept small enough to inline); else
  // more of the stream first.
  bool next(std::string_view& line) {
    const char* b = buf_.data() + pos_;
    if (const void* nl = std::memchr(b, '\n', end_ - pos_); nl && number_ != 0) {
      const size_t len = static_cast<size_t>(static_cast<const char*>(nl) - b);
      pos_ += len + 1;
      ++number_;
      line = {b, len - (len != 0 && b[len - 1] == '\r')};
      return true;
    }
    return refill(line);
  }
  int64_t number() const { return number_; }
  // The text after the last line read, at least `want` bytes of it unless the stream ends
  // first: for a reader that takes whole lines from it itself, then skip()s them.
  std::string_view buffered(size_t want) {
    if (end_ - pos_ < want && !eof_ && number_ != 0) {
      if (buf_.size() < want + kAlign) buf_.resize(want + kAlign);
      place();
      while (end_ < buf_.size() && !eof_) read_more();
    }
    return {buf_.data() + pos_, end_ - pos_};
  }
  // `bytes` of buffered() taken as `lines` whole lines.
  void skip(size_t bytes, int64_t lines) {
    pos_ += bytes;
    number_ += lines;
  }

 private:
  static constexpr size_t kAlign = 64;
  // The unread bytes to the front, each at its place modulo kAlign (at most kAlign - 1 bytes
  // before them).
  void place() {
    const size_t avail = end_ - pos_;
    const uint64_t first = offset_ - avail;  // the stream offset of the byte at pos_
    const size_t to =
        static_cast<size_t>((first - reinterpret_cast<uintptr_t>(buf_.data())) & (kAlign - 1));
    if (to != pos_ && avail != 0) std::memmove(buf_.data() + to, buf_.data() + pos_, avail);
    pos_ = to;
    end_ = to + avail;
  }
  void read_more() {
    in_.read(buf_.data() + end_, static_cast<std::streamsize>(buf_.size() - end_));
    const size_t got = static_cast<size_t>(in_.gcount());
    end_ += got;
    offset_ += got;
    if (in_.bad()) fail(ErrorKind::format, "read error after line " + std::to_string(number_));
    if (got == 0) eof_ = true;
  }
  bool refill(std::string_view& line) {
    for (;;) {
      const char* b = buf_.data() + pos_;
      const size_t avail = end_ - pos_;
      if (const void* nl = std::memchr(b, '\n', avail)) {
        const size_t len = static_cast<size_t>(static_cast<const char*>(nl) - b);
        line = {b, len};
        pos_ += len + 1;
        return found(line);
      }
      if (eof_) {
        if (avail == 0) return false;
        line = {b, avail};
        pos_ = end_;
        return found(line);
      }
      if (avail + kAlign > buf_.size()) buf_.resize(buf_.size() * 2);  // a line near the block
      place();  // the start of a line to the front, then more behind it
      read_more();
    }
  }
  bool found(std::string_view& line) {
    if (number_++ == 0 && line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return true;
  }
  std::istream& in_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t offset_ = 0;  // the stream offset of the byte at end_
  bool eof_ = false;
  int64_t number_ = 0;
};

template <class Parser>
void parse_stream(std::istream& in, const OnHeader& on_header, const OnRank& on_rank) {
  Parser parser(on_header, on_rank);
  StreamLines lines(in);
  std::string_view line;
  while (lines.next(line)) parser.line(line, lines.number());
  parser.finish();
}

}  // namespace collkit::io
