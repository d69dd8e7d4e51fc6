// A small JSON reader for the tuning table: the whole grammar (RFC 8259), depth and size limits,
// errors with a line and column. Own code rather than a library because the interposition library
// is built from source by every MPI's compiler wrapper, with nothing but the C++ standard library.
#include "pmpi_table.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <new>
#include <utility>

namespace collkit::pmpi {
namespace {

constexpr size_t kMaxBytes = 16u << 20;
constexpr int kMaxDepth = 32;
constexpr size_t kMaxRules = 100000;

struct Value {
  enum Kind { null, boolean, number, string, array, object } kind = null;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<Value> items;
  std::vector<std::pair<std::string, Value>> members;

  const Value* get(const std::string& key) const {
    for (const auto& [k, v] : members)
      if (k == key) return &v;
    return nullptr;
  }
};

struct ParseError {
  std::string message;
};

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Value document() {
    Value v = value(0);
    skip_ws();
    if (at_ < s_.size()) fail("text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw ParseError{"line " + std::to_string(line) + ", column " + std::to_string(col) + ": " +
                     what};
  }

  void skip_ws() {
    while (at_ < s_.size() &&
           (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r'))
      ++at_;
  }

  bool literal(const char* word) {
    size_t n = 0;
    while (word[n] != '\0') ++n;
    if (s_.compare(at_, n, word) != 0) return false;
    at_ += n;
    return true;
  }

  Value value(int depth) {
    if (depth > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    skip_ws();
    if (at_ >= s_.size()) fail("unexpected end of the file");
    Value v;
    const char c = s_[at_];
    if (c == '{') {
      v.kind = Value::object;
      ++at_;
      skip_ws();
      if (at_ < s_.size() && s_[at_] == '}') {
        ++at_;
        return v;
      }
      for (;;) {
        skip_ws();
        if (at_ >= s_.size() || s_[at_] != '"') fail("expected a \"key\"");
        std::string key = string();
        skip_ws();
        if (at_ >= s_.size() || s_[at_] != ':') fail("expected ':' after a key");
        ++at_;
        v.members.emplace_back(std::move(key), value(depth + 1));
        skip_ws();
        if (at_ < s_.size() && s_[at_] == ',') {
          ++at_;
          continue;
        }
        if (at_ < s_.size() && s_[at_] == '}') {
          ++at_;
          return v;
        }
        fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      v.kind = Value::array;
      ++at_;
      skip_ws();
      if (at_ < s_.size() && s_[at_] == ']') {
        ++at_;
        return v;
      }
      for (;;) {
        v.items.push_back(value(depth + 1));
        skip_ws();
        if (at_ < s_.size() && s_[at_] == ',') {
          ++at_;
          continue;
        }
        if (at_ < s_.size() && s_[at_] == ']') {
          ++at_;
          return v;
        }
        fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      v.kind = Value::string;
      v.str = string();
      return v;
    }
    if (literal("true")) {
      v.kind = Value::boolean;
      v.b = true;
      return v;
    }
    if (literal("false")) {
      v.kind = Value::boolean;
      return v;
    }
    if (literal("null")) return v;
    if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = Value::number;
      v.num = number();
      return v;
    }
    fail(std::string("unexpected character '") + (c >= 0x20 && c < 0x7f ? c : '?') + "'");
  }

  double number() {
    const size_t start = at_;
    auto digits = [&] {
      const size_t d = at_;
      while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
      if (at_ == d) fail("malformed number");
    };
    if (s_[at_] == '-') ++at_;
    digits();
    if (at_ < s_.size() && s_[at_] == '.') {
      ++at_;
      digits();
    }
    if (at_ < s_.size() && (s_[at_] == 'e' || s_[at_] == 'E')) {
      ++at_;
      if (at_ < s_.size() && (s_[at_] == '+' || s_[at_] == '-')) ++at_;
      digits();
    }
    const std::string token = s_.substr(start, at_ - start);
    return std::strtod(token.c_str(), nullptr);  // inf for huge values: rejected by the reader
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  std::string string() {
    ++at_;  // the opening quote
    std::string out;
    for (;;) {
      if (at_ >= s_.size()) fail("unterminated string");
      const char c = s_[at_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= s_.size()) fail("unterminated string");
      const char e = s_[at_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = 0;
          for (int k = 0; k < 4; ++k) {
            const int h = at_ < s_.size() ? hex(s_[at_]) : -1;
            if (h < 0) fail("bad \\u escape");
            cp = cp * 16 + static_cast<unsigned>(h);
            ++at_;
          }
          // Names are ASCII; anything else is kept as '?' (it cannot match a valid name anyway).
          out += cp < 0x80 ? static_cast<char>(cp) : '?';
          break;
        }
        default:
          fail("bad escape in a string");
      }
    }
  }

  const std::string& s_;
  size_t at_ = 0;
};

// An integer in [0, 2^62] (JSON numbers are doubles; these fit exactly up to 2^53).
bool as_count(const Value& v, int64_t& out) {
  if (v.kind != Value::number || !std::isfinite(v.num) || v.num < 0 || v.num > 4.6e18 ||
      std::floor(v.num) != v.num)
    return false;
  out = static_cast<int64_t>(v.num);
  return true;
}

bool as_range(const Value* v, int64_t& lo, int64_t& hi) {
  if (v == nullptr || v->kind != Value::array || v->items.size() != 2) return false;
  return as_count(v->items[0], lo) && as_count(v->items[1], hi) && lo <= hi;
}

}  // namespace

Table parse_table(const std::string& text) {
  Table t;
  if (text.size() > kMaxBytes) {
    t.error = "larger than 16 MiB";
    return t;
  }
  try {
    const Value doc = Parser(text).document();
    if (doc.kind != Value::object) {
      t.error = "not a JSON object";
      return t;
    }
    const Value* format = doc.get("format");
    if (format == nullptr || format->kind != Value::string || format->str != "collkit-tuning") {
      t.error = "\"format\" is not \"collkit-tuning\" (not a collkit tuning table)";
      return t;
    }
    const Value* version = doc.get("version");
    int64_t ver = 0;
    if (version == nullptr || !as_count(*version, ver) || ver != kTableVersion) {
      t.error = "\"version\" must be " + std::to_string(kTableVersion) +
                " (this library reads version " + std::to_string(kTableVersion) + ")";
      return t;
    }
    const Value* rules = doc.get("rules");
    if (rules == nullptr || rules->kind != Value::array) {
      t.error = "\"rules\" must be a list";
      return t;
    }
    if (rules->items.size() > kMaxRules) {
      t.error = "more than " + std::to_string(kMaxRules) + " rules";
      return t;
    }
    for (size_t i = 0; i < rules->items.size(); ++i) {
      const Value& r = rules->items[i];
      const std::string where = "rule " + std::to_string(i) + ": ";
      if (r.kind != Value::object) {
        t.error = where + "not an object";
        return t;
      }
      Rule rule;
      const Value* coll = r.get("collective");
      rule.collective = -1;
      if (coll != nullptr && coll->kind == Value::string)
        for (int c = 0; c < kNumCollectives; ++c)
          if (coll->str == kCollectives[c]) rule.collective = c;
      if (rule.collective < 0) {
        std::string known;
        for (const char* c : kCollectives) known += (known.empty() ? "" : ", ") + std::string(c);
        t.error = where + "\"collective\" must be one of " + known;
        return t;
      }
      if (!as_range(r.get("P"), rule.p_lo, rule.p_hi) || rule.p_lo < 1) {
        t.error = where + "\"P\" must be [lo, hi] with 1 <= lo <= hi";
        return t;
      }
      if (!as_range(r.get("bytes"), rule.bytes_lo, rule.bytes_hi)) {
        t.error = where + "\"bytes\" must be [lo, hi] with 0 <= lo <= hi";
        return t;
      }
      const Value* algo = r.get("algorithm");
      if (algo == nullptr || algo->kind != Value::string || algo->str.empty()) {
        t.error = where + "\"algorithm\" must be a collkit algorithm name or \"native\"";
        return t;
      }
      rule.algorithm = algo->str;
      t.rules.push_back(std::move(rule));
    }
  } catch (const ParseError& e) {
    t.rules.clear();
    t.error = "not valid JSON: " + e.message;
  } catch (const std::bad_alloc&) {
    t.rules.clear();
    t.error = "out of memory";
  }
  return t;
}

Table load_table(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    Table t;
    t.error = "cannot open the file";
    return t;
  }
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxBytes) {
      Table t;
      t.error = "larger than 16 MiB";
      return t;
    }
  }
  return parse_table(text);
}

}  // namespace collkit::pmpi
