// A line scanner shared by the schedule parsers (text IR and GOAL): it walks one line of a
// file, knows its line number and column, and fails with
//   "line L, column C: expected <what>, found <token>"
// so that every malformed input ends in one readable Error(format).
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "collkit/error.hpp"

namespace collkit::io {

inline bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool is_ident_char(char c) {
  return is_ident_start(c) || (c >= '0' && c <= '9');
}
inline bool is_digit(char c) {
  return static_cast<unsigned char>(c - '0') < 10;
}

// Splits a whole file into lines ('\n' or "\r\n"), numbering them from 1.
class Lines {
 public:
  explicit Lines(std::string_view text) : text_(text) {}
  // The next line without its terminator; false at the end of the text.
  bool next(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    size_t e = text_.find('\n', pos_);
    if (e == std::string_view::npos) e = text_.size();
    line = text_.substr(pos_, e - pos_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos_ = e + 1;
    ++number_;
    return true;
  }
  int64_t number() const { return number_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int64_t number_ = 0;
};

class Scanner {
 public:
  // `comment` starts a comment that runs to the end of the line ("#", "//"); empty for none.
  Scanner(std::string_view line, int64_t line_number, std::string_view comment = {},
          size_t start = 0)
      : line_(line), number_(line_number), comment_(comment), i_(start) {}

  size_t pos() const { return i_; }
  void set_pos(size_t p) { i_ = p; }
  std::string_view rest() const { return line_.substr(i_); }
  std::string_view line() const { return line_; }
  int64_t line_number() const { return number_; }

  void skip_ws() {
    while (i_ < line_.size() && (line_[i_] == ' ' || line_[i_] == '\t')) ++i_;
  }
  // True when only blanks and a comment are left.
  bool at_end() {
    skip_ws();
    return i_ == line_.size() || (!comment_.empty() && line_.substr(i_).starts_with(comment_));
  }
  void expect_end() {
    if (!at_end()) fail_here("end of line");
  }
  char peek() {
    skip_ws();
    return i_ < line_.size() ? line_[i_] : '\0';
  }
  // Consumes `lit` if it comes next. Words (literals that end in an identifier character)
  // must not be followed by another identifier character: "to" does not match "tox".
  bool accept(std::string_view lit) {
    skip_ws();
    // Compared here, not by memcmp: literals are a few characters and most fail on the first.
    if (line_.size() - i_ < lit.size()) return false;
    for (size_t k = 0; k < lit.size(); ++k)
      if (line_[i_ + k] != lit[k]) return false;
    size_t e = i_ + lit.size();
    if (is_ident_char(lit.back()) && e < line_.size() && is_ident_char(line_[e])) return false;
    i_ = e;
    return true;
  }
  void expect(std::string_view lit, std::string_view what) {
    if (!accept(lit)) fail_here(what);
  }
  // Consumes one character if it is `c`, without skipping blanks first.
  bool accept_char_here(char c) {
    if (i_ < line_.size() && line_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  // An identifier [A-Za-z_][A-Za-z0-9_]*.
  std::string_view ident(std::string_view what) {
    skip_ws();
    if (i_ >= line_.size() || !is_ident_start(line_[i_])) fail_here(what);
    size_t b = i_;
    while (i_ < line_.size() && is_ident_char(line_[i_])) ++i_;
    return line_.substr(b, i_ - b);
  }
  // A decimal integer in [lo, hi], optionally signed. Overflow and range are both errors.
  // With whole_word, a letter right after the digits is an error ("12x"); without, it is left
  // for the caller ("1024b", "500ns").
  int64_t integer(std::string_view what, int64_t lo, int64_t hi, bool whole_word = true) {
    int64_t v;
    return plain_integer(lo, hi, whole_word, v) ? v : integer_checked(what, lo, hi, whole_word);
  }
  // The same, with `what()` building the description only for an error (for numbers read once
  // per op, whose description names the op).
  template <class What>
  int64_t integer_lazy(What&& what, int64_t lo, int64_t hi, bool whole_word = true) {
    int64_t v;
    return plain_integer(lo, hi, whole_word, v) ? v : integer_checked(what(), lo, hi, whole_word);
  }

 private:
  // The common case at once: up to 18 plain digits, in [lo, hi], ended as integer() wants.
  bool plain_integer(int64_t lo, int64_t hi, bool whole_word, int64_t& out) {
    skip_ws();
    size_t e = i_;
    int64_t v = 0;
    while (e < line_.size() && e - i_ < 18 && is_digit(line_[e])) v = v * 10 + (line_[e++] - '0');
    if (e == i_ || v < lo || v > hi) return false;
    if (e < line_.size() && (is_digit(line_[e]) || (whole_word && is_ident_char(line_[e]))))
      return false;
    i_ = e;
    out = v;
    return true;
  }

 public:
  int64_t integer_checked(std::string_view what, int64_t lo, int64_t hi, bool whole_word) {
    skip_ws();
    size_t b = i_;
    bool neg = false;
    if (i_ < line_.size() && (line_[i_] == '-' || line_[i_] == '+')) neg = line_[i_++] == '-';
    if (i_ >= line_.size() || !is_digit(line_[i_])) {
      i_ = b;
      fail_here(what);
    }
    // Accumulate as a negative number so that INT64_MIN is reachable.
    int64_t v = 0;
    bool overflow = false;
    while (i_ < line_.size() && is_digit(line_[i_])) {
      int d = line_[i_++] - '0';
      if (v < (INT64_MIN + d) / 10) overflow = true;
      if (!overflow) v = v * 10 - d;
    }
    if (whole_word && i_ < line_.size() && is_ident_char(line_[i_])) {
      i_ = b;
      fail_here(what);
    }
    if (!neg) {
      if (v == INT64_MIN)
        overflow = true;
      else
        v = -v;
    }
    if (overflow || v < lo || v > hi) {
      size_t e = i_;
      i_ = b;
      std::string range = lo == hi                             ? ""
                          : lo == INT64_MIN && hi == INT64_MAX ? " (a 64-bit integer)"
                          : hi == INT64_MAX
                              ? " (>= " + std::to_string(lo) + ")"
                              : " in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
      fail_at_pos(b, std::string(what) + range, quoted(line_.substr(b, e - b)));
    }
    return v;
  }
  // A string: a bare word of printable ASCII without blanks, '#' or '"', or a quoted string
  // with \" \\ and \xHH escapes (whose result must be valid UTF-8).
  std::string string_value(std::string_view what);

  // Fail at the current position: "expected <what>, found <the next token>".
  [[noreturn]] void fail_here(std::string_view what) {
    skip_ws();
    fail_at_pos(i_, what, found());
  }
  [[noreturn]] void fail_at_pos(size_t pos, std::string_view what, const std::string& found) const {
    fail(ErrorKind::format, "line " + std::to_string(number_) + ", column " +
                                std::to_string(column(pos)) + ": expected " + std::string(what) +
                                ", found " + found);
  }
  // A message at `pos` that is not of the "expected ... found ..." kind.
  [[noreturn]] void fail_msg(size_t pos, const std::string& msg) const {
    fail(ErrorKind::format, "line " + std::to_string(number_) + ", column " +
                                std::to_string(column(pos)) + ": " + msg);
  }
  // Column (1-based, in characters: UTF-8 continuation bytes do not count) of byte `pos`.
  int64_t column(size_t pos) const {
    int64_t c = 1;
    for (size_t k = 0; k < pos && k < line_.size(); ++k)
      if ((static_cast<unsigned char>(line_[k]) & 0xC0) != 0x80) ++c;
    return c;
  }
  // The next token as shown in messages: 'word', or "end of line".
  std::string found() const {
    if (i_ >= line_.size()) return "end of line";
    size_t e = i_;
    if (is_ident_char(line_[e]) || line_[e] == '-' || line_[e] == '+') {
      ++e;
      while (e < line_.size() && e - i_ < 24 && is_ident_char(line_[e])) ++e;
    } else {
      ++e;
      while (e < line_.size() && (static_cast<unsigned char>(line_[e]) & 0xC0) == 0x80) ++e;
    }
    return quoted(line_.substr(i_, e - i_));
  }
  // 'text', printable.
  static std::string quoted(std::string_view s) {
    std::string out(1, '\'');
    out += printable(s);
    out.push_back('\'');
    return out;
  }
  // Text safe to put in a message: printable ASCII as is, every other byte as \xHH.
  static std::string printable(std::string_view s) {
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (char ch : s) {
      auto c = static_cast<unsigned char>(ch);
      if (c >= 0x20 && c < 0x7f) {
        out.push_back(ch);
      } else {
        out += "\\x";
        out.push_back(hex[c >> 4]);
        out.push_back(hex[c & 15]);
      }
    }
    return out;
  }

 private:
  std::string_view line_;
  int64_t number_;
  std::string_view comment_;
  size_t i_;
};

// A cursor for the readers' fast paths: a line's common shape exactly as collkit and Schedgen
// write it (single spaces, plain digits, ASCII). Every method says false on anything else and the
// caller hands the line to the Scanner, so that errors (and unusual spellings) are the Scanner's.
struct Strict {
  const char* p;
  const char* e;
  explicit Strict(std::string_view s, size_t start = 0)
      : p(s.data() + start), e(s.data() + s.size()) {}
  bool done() const { return p == e; }
  // A literal: a string constant, compared 8 bytes at a time (memcmp was a call), its tail as
  // one word too: the last 8 bytes again, or for a short literal with 8 bytes to read, one
  // masked word (a byte at a time was a branch a byte).
  template <size_t N>
  [[gnu::always_inline]] bool lit(const char (&s)[N]) {
    constexpr size_t n = N - 1;
    const size_t avail = static_cast<size_t>(e - p);
    if (avail < n) return false;
    uint64_t a = 0, b = 0;
    if constexpr (n >= 8) {
      for (size_t k = 0; k + 8 <= n; k += 8) {
        std::memcpy(&a, p + k, 8);
        std::memcpy(&b, s + k, 8);
        if (a != b) return false;
      }
      if constexpr (n % 8 != 0) {
        std::memcpy(&a, p + n - 8, 8);
        std::memcpy(&b, s + n - 8, 8);
        if (a != b) return false;
      }
    } else if (std::endian::native == std::endian::little && avail >= 8) {
      // The literal's bytes as a word by shifts (folded to a constant; a partial memcpy put it
      // in memory and stalled the load).
      for (size_t k = 0; k < n; ++k) b |= uint64_t{static_cast<unsigned char>(s[k])} << (8 * k);
      std::memcpy(&a, p, 8);
      if ((a & ((uint64_t{1} << (8 * n)) - 1)) != b) return false;
    } else {
      for (size_t k = 0; k < n; ++k)
        if (p[k] != s[k]) return false;
    }
    p += n;
    return true;
  }
  // 1 to 18 decimal digits (no sign), at most `hi`; the next character must not be a digit.
  [[gnu::always_inline]] bool num(int64_t& v, int64_t hi = INT64_MAX) {
    const char* q = p;
    const char* stop = e - q > 18 ? q + 18 : e;
    int64_t x = 0;
    while (q != stop && is_digit(*q)) x = x * 10 + (*q++ - '0');
    if (q == p || (q != e && is_digit(*q)) || x > hi) return false;
    p = q;
    v = x;
    return true;
  }
};

// Writes `s` as string_value reads it back: bare when it is a plain word, quoted otherwise.
std::string quote_string(std::string_view s);
bool valid_utf8(std::string_view s);

}  // namespace collkit::io
