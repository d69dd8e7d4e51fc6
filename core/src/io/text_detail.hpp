// Pieces of the text form that the GOAL reader and writer reuse: collkit's GOAL files carry
// each op and the header as text-form lines in "// collkit:" comments.
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "collkit/error.hpp"
#include "collkit/registry.hpp"
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

// A cursor as Strict over text that is followed by a NUL and at least 15 more readable bytes
// (StreamLines::buffered): no literal holds a NUL and no digit is one, so a match or number
// that would run past the text stops at the NUL, and no read needs the bytes left checked.
struct Padded {
  const char* p;
  const char* e;
  bool done() const { return p == e; }
  // A literal a word at a time, its tail as one masked word, each read only once those before
  // it matched (so none starts past the NUL); the literal's words by shifts, folded to constants.
  template <size_t N>
  [[gnu::always_inline]] bool lit(const char (&s)[N]) {
    constexpr size_t n = N - 1;
    if constexpr (std::endian::native != std::endian::little) {
      for (size_t k = 0; k < n; ++k)
        if (p[k] != s[k]) return false;
    } else {
      for (size_t k = 0; k < n; k += 8) {
        const size_t m = n - k < 8 ? n - k : 8;
        uint64_t a, b = 0;
        for (size_t j = 0; j < m; ++j)
          b |= uint64_t{static_cast<unsigned char>(s[k + j])} << (8 * j);
        std::memcpy(&a, p + k, 8);
        if (m < 8) a &= (uint64_t{1} << (8 * m)) - 1;
        if (a != b) return false;
      }
    }
    p += n;
    return true;
  }
  // The n bytes at `s` next, then past them; `s` is read 8 bytes at a time (its buffer holds n
  // rounded up to 8).
  [[gnu::always_inline]] bool bytes(const char* s, size_t n) {
    size_t k = 0;
    uint64_t a, b;
    for (; k + 8 <= n; k += 8) {
      std::memcpy(&a, p + k, 8);
      std::memcpy(&b, s + k, 8);
      if (a != b) return false;
    }
    if (k != n) {
      std::memcpy(&a, p + k, 8);
      std::memcpy(&b, s + k, 8);
      const uint64_t mask = (uint64_t{1} << (8 * (n - k))) - 1;
      if constexpr (std::endian::native == std::endian::little) {
        if (((a ^ b) & mask) != 0) return false;
      } else if (std::memcmp(p + k, s + k, n - k) != 0) {
        return false;
      }
    }
    p += n;
    return true;
  }
  // As Strict::num: 1 to 18 digits, at most `hi`, not followed by a digit. One digit at once;
  // up to 7 in one word, without a branch per digit (SWAR); `at` is where the number began.
  [[gnu::always_inline]] bool num(int64_t& v, int64_t hi = INT64_MAX) {
    uint64_t x = static_cast<unsigned char>(*p) - uint64_t{'0'};
    if (x > 9) return false;
    const uint64_t d1 = static_cast<unsigned char>(p[1]) - uint64_t{'0'};
    const char* q;
    if (d1 > 9) {  // one digit, the most common number by far
      if (static_cast<int64_t>(x) > hi) return false;
      at = p++;
      v = static_cast<int64_t>(x);
      return true;
    }
    if constexpr (std::endian::native == std::endian::little) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      // A byte is a digit when its high nibble is 3 and adding 6 leaves it so; a carry out of
      // a byte (>= 0xFA, no digit) only reaches bytes after the first non-digit.
      constexpr uint64_t hi_nib = 0xF0F0F0F0F0F0F0F0ull, threes = 0x3030303030303030ull;
      const uint64_t bad =
          ((w & hi_nib) ^ threes) | (((w + 0x0606060606060606ull) & hi_nib) ^ threes);
      if (bad != 0) {
        const int n = std::countr_zero(bad) / 8;  // the digits before the first non-digit (2-7)
        // The digits as the last n bytes of a word (zeros before them), then combined in pairs,
        // fours and eights.
        uint64_t d = (w & 0x0F0F0F0F0F0F0F0Full) << (8 * (8 - n));
        d = d * 10 + (d >> 8);
        x = ((d & 0x000000FF000000FFull) * (100 + (1000000ull << 32)) +
             ((d >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32))) >>
            32;
        q = p + n;
        if (static_cast<int64_t>(x) > hi) return false;
        at = p;
        p = q;
        v = static_cast<int64_t>(x);
        return true;
      }
    }
    q = p;
    x = 0;  // wraps past 18 digits, which are refused
    while (is_digit(*q)) x = x * 10 + static_cast<uint64_t>(*q++ - '0');
    if (q == p || q - p > 18 || static_cast<int64_t>(x) > hi) return false;
    at = p;
    p = q;
    v = static_cast<int64_t>(x);
    return true;
  }
  const char* at = nullptr;
};

// fast_op_body over either cursor: the grammar of its fast path, once.
// "in", "out" or "sK" with K < the rank's scratch buffers, not followed by a word character.
template <class Cursor>
[[gnu::always_inline]] inline bool fast_buffer(Cursor& c, size_t num_scratch, BufId& buf) {
  if (c.lit("out")) {
    buf = kOut;
  } else if (c.lit("in")) {
    buf = kIn;
  } else if (c.lit("s")) {
    int64_t k;
    if (!c.num(k, static_cast<int64_t>(num_scratch) - 1)) return false;
    buf = scratch_buf(static_cast<int>(k));
  } else {
    return false;
  }
  return c.done() || !is_ident_char(*c.p);
}
// "[a:b]" with a <= b and a region that fits a buffer.
template <class Cursor>
[[gnu::always_inline]] inline bool fast_bounds(Cursor& c, int32_t elem_size, int64_t& off,
                                               int64_t& len) {
  int64_t stop;
  if (!c.lit("[") || !c.num(off) || !c.lit(":") || !c.num(stop) || !c.lit("]") || stop < off)
    return false;
  len = stop - off;
  int64_t bytes;  // buffer_fits without its division
  return len <= kMaxElems && (elem_size < 1 || !__builtin_mul_overflow(len, elem_size, &bytes));
}
template <class Cursor>
[[gnu::always_inline]] inline bool fast_region(Cursor& c, size_t num_scratch, int32_t elem_size,
                                               BufId& buf, int64_t& off, int64_t& len) {
  return fast_buffer(c, num_scratch, buf) && fast_bounds(c, elem_size, off, len);
}
template <class Cursor>
[[gnu::always_inline]] inline bool fast_op_body_in(Cursor& c, int64_t P, size_t num_scratch,
                                                   int32_t elem_size, Op& op) {
  int64_t peer;
  const bool send = c.lit("send "), recv = !send && c.lit("recv ");
  const bool reduce = !send && !recv && c.lit("reduce "), copy = !reduce && c.lit("copy ");
  if (send || recv) {
    op.kind = send ? OpKind::send : OpKind::recv;
    if (!fast_region(c, num_scratch, elem_size, op.buf, op.off, op.len) ||
        !(send ? c.lit(" to ") : c.lit(" from ")) || !c.num(peer, P - 1))
      return false;
    op.peer = static_cast<int32_t>(peer);
  } else if (reduce || copy) {
    op.kind = reduce ? OpKind::reduce : OpKind::copy;
    int64_t len;
    if (!fast_region(c, num_scratch, elem_size, op.buf, op.off, op.len) || !c.lit(" = "))
      return false;
    if (op.kind == OpKind::copy) {
      if (!fast_region(c, num_scratch, elem_size, op.src, op.src_off, len)) return false;
    } else {
      BufId first;
      if (!fast_buffer(c, num_scratch, first)) return false;
      if (c.lit(" + ")) {  // "DST + SRC[a:b]"
        if (first != op.buf || !fast_region(c, num_scratch, elem_size, op.src, op.src_off, len))
          return false;
        op.side = Side::dst_first;
      } else {  // "SRC[a:b] + DST"
        BufId again;
        op.src = first;
        if (!fast_bounds(c, elem_size, op.src_off, len) || !c.lit(" + ") ||
            !fast_buffer(c, num_scratch, again) || again != op.buf)
          return false;
        op.side = Side::src_first;
      }
    }
    if (len != op.len) return false;
  } else if (const bool compute = c.lit("compute "); compute || c.lit("sleep ")) {
    op.kind = compute ? OpKind::compute : OpKind::sleep;
    if (!c.num(op.len) || !c.lit("ns")) return false;
  } else {
    return false;
  }
  return true;
}

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
  explicit StreamLines(std::istream& in) : in_(in), buf_((1 << 20) + kPad) {
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
  // first: for a reader that takes whole lines from it itself, then skip()s them. A NUL and
  // kPad - 1 more readable bytes follow it (what io::Padded reads over).
  std::string_view buffered(size_t want) {
    if (end_ - pos_ < want && !eof_ && number_ != 0) {
      if (cap() < want + kAlign) buf_.resize(want + kAlign + kPad);
      place();
      while (end_ < cap() && !eof_) read_more();
    }
    buf_[end_] = '\0';
    return {buf_.data() + pos_, end_ - pos_};
  }
  // `bytes` of buffered() taken as `lines` whole lines.
  void skip(size_t bytes, int64_t lines) {
    pos_ += bytes;
    number_ += lines;
  }

 private:
  static constexpr size_t kAlign = 64;
  static constexpr size_t kPad = 16;  // after the bytes read: buffered()'s NUL and more
  size_t cap() const { return buf_.size() - kPad; }
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
    in_.read(buf_.data() + end_, static_cast<std::streamsize>(cap() - end_));
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
      if (avail + kAlign > cap()) buf_.resize(cap() * 2 + kPad);  // a line near the block
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
