#include "scanner.hpp"

namespace collkit::io {

namespace {
bool is_bare_char(char c) {
  return c > 0x20 && c < 0x7f && c != '#' && c != '"' && c != '\\' && c != '/';
}
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
        (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
      return false;
    i += n + 1;
  }
  return true;
}

std::string quote_string(std::string_view s) {
  bool bare = !s.empty();
  for (char c : s) bare = bare && is_bare_char(c);
  if (bare) return std::string(s);
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out.push_back('\\');
      out.push_back(ch);
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    } else {
      out.push_back(ch);
    }
  }
  out.push_back('"');
  return out;
}

std::string Scanner::string_value(std::string_view what) {
  skip_ws();
  size_t b = i_;
  if (i_ < line_.size() && line_[i_] == '"') {
    ++i_;
    std::string out;
    for (;;) {
      if (i_ >= line_.size()) fail_msg(b, "unterminated quoted string (a closing '\"' is missing)");
      char c = line_[i_++];
      if (c == '"') break;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (i_ < line_.size() && (line_[i_] == '"' || line_[i_] == '\\')) {
        out.push_back(line_[i_++]);
      } else if (i_ + 2 < line_.size() && line_[i_] == 'x' && hex_value(line_[i_ + 1]) >= 0 &&
                 hex_value(line_[i_ + 2]) >= 0) {
        out.push_back(static_cast<char>(hex_value(line_[i_ + 1]) * 16 + hex_value(line_[i_ + 2])));
        i_ += 3;
      } else {
        fail_msg(i_ - 1, "bad escape in a quoted string (known: \\\" \\\\ \\xHH)");
      }
    }
    if (!valid_utf8(out)) fail_msg(b, "quoted string is not valid UTF-8");
    return out;
  }
  while (i_ < line_.size() && is_bare_char(line_[i_])) ++i_;
  if (i_ == b) fail_here(what);
  return std::string(line_.substr(b, i_ - b));
}

}  // namespace collkit::io
