// The tuning table's reader (tuning.hpp): a small JSON reader (the whole RFC 8259 grammar, strict
// UTF-8, depth and size limits, errors with a line and column) and the schema's checks. Own code
// rather than a library because the interposition library is built from source by every MPI's
// compiler wrapper, with nothing but the C++ standard library.
#include "collkit/tuning.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <new>
#include <optional>
#include <unordered_set>
#include <utility>

#include "collkit/error.hpp"
#include "collkit/registry.hpp"

namespace collkit::tuning {
namespace {

constexpr int kMaxDepth = 32;

struct Value {
  enum Kind { null, boolean, number, string, array, object } kind = null;
  bool b = false;
  double num = 0;
  bool integral = false;  // a number written without fraction or exponent
  bool fits = false;      // ... and within int64 (then `i` is exact)
  int64_t i = 0;
  std::string str;
  std::vector<Value> items;
  std::vector<std::pair<std::string, Value>> members;  // keys are unique (checked when read)

  const Value* get(std::string_view key) const {
    for (const auto& [k, v] : members)
      if (k == key) return &v;
    return nullptr;
  }
};

[[noreturn]] void refuse(const std::string& what) {
  fail(ErrorKind::invalid_argument, what);
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Value document() {
    Value v = value(0);
    skip_ws();
    if (at_ < s_.size()) error("text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    refuse("not valid JSON: line " + std::to_string(line) + ", column " + std::to_string(col) +
           ": " + what);
  }

  void skip_ws() {
    while (at_ < s_.size() &&
           (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r'))
      ++at_;
  }

  bool literal(std::string_view word) {
    if (s_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  Value value(int depth) {
    if (depth > kMaxDepth) error("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    skip_ws();
    if (at_ >= s_.size()) error("unexpected end of the text");
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
      std::unordered_set<std::string> keys;
      for (;;) {
        skip_ws();
        if (at_ >= s_.size() || s_[at_] != '"') error("expected a \"key\"");
        const size_t key_at = at_;
        std::string key = string();
        if (!keys.insert(key).second) {
          at_ = key_at;
          error("the key \"" + printable(key) + "\" is given twice");
        }
        skip_ws();
        if (at_ >= s_.size() || s_[at_] != ':') error("expected ':' after a key");
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
        error("expected ',' or '}'");
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
        error("expected ',' or ']'");
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
      number(v);
      return v;
    }
    error(std::string("unexpected character '") + (c >= 0x20 && c < 0x7f ? c : '?') + "'");
  }

  void number(Value& v) {
    v.kind = Value::number;
    const size_t start = at_;
    auto digits = [&] {
      const size_t d = at_;
      while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
      if (at_ == d) error("malformed number");
      return at_ - d;
    };
    if (s_[at_] == '-') ++at_;
    const size_t int_start = at_;
    if (digits() > 1 && s_[int_start] == '0') error("a number with a leading zero");
    v.integral = true;
    if (at_ < s_.size() && s_[at_] == '.') {
      ++at_;
      digits();
      v.integral = false;
    }
    if (at_ < s_.size() && (s_[at_] == 'e' || s_[at_] == 'E')) {
      ++at_;
      if (at_ < s_.size() && (s_[at_] == '+' || s_[at_] == '-')) ++at_;
      digits();
      v.integral = false;
    }
    const std::string token(s_.substr(start, at_ - start));
    v.num = std::strtod(token.c_str(), nullptr);  // +-inf past the doubles: refused where read
    if (v.integral) {
      const auto r = std::from_chars(token.data(), token.data() + token.size(), v.i);
      v.fits = r.ec == std::errc() && r.ptr == token.data() + token.size();
    }
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  unsigned hex4() {
    unsigned cp = 0;
    for (int k = 0; k < 4; ++k) {
      const int h = at_ < s_.size() ? hex(s_[at_]) : -1;
      if (h < 0) error("bad \\u escape");
      cp = cp * 16 + static_cast<unsigned>(h);
      ++at_;
    }
    return cp;
  }

  static void put_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // One UTF-8 sequence starting at at_ (its first byte >= 0x80), copied to `out`; strict: no
  // overlong forms, no surrogates, nothing past U+10FFFF.
  void utf8_sequence(std::string& out) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(s_[at_ + k]); };
    const unsigned char b0 = byte(0);
    size_t n = 0;
    unsigned cp = 0, min = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      n = 2, cp = b0 & 0x1Fu, min = 0x80;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      n = 3, cp = b0 & 0x0Fu, min = 0x800;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      n = 4, cp = b0 & 0x07u, min = 0x10000;
    } else {
      error("text that is not UTF-8");
    }
    if (at_ + n > s_.size()) error("text that is not UTF-8");
    for (size_t k = 1; k < n; ++k) {
      if ((byte(k) & 0xC0) != 0x80) error("text that is not UTF-8");
      cp = (cp << 6) | (byte(k) & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      error("text that is not UTF-8");
    out.append(s_.substr(at_, n));
    at_ += n;
  }

  std::string string() {
    ++at_;  // the opening quote
    std::string out;
    for (;;) {
      if (at_ >= s_.size()) error("unterminated string");
      const char c = s_[at_];
      if (c == '"') {
        ++at_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) error("control character in a string");
      if (static_cast<unsigned char>(c) >= 0x80) {
        utf8_sequence(out);
        continue;
      }
      ++at_;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= s_.size()) error("unterminated string");
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
          unsigned cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) error("a lone surrogate in a \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (!literal("\\u")) error("a lone surrogate in a \\u escape");
            const unsigned lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) error("a lone surrogate in a \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default:
          error("bad escape in a string");
      }
    }
  }

  // A key for a message: its printable ASCII, at most 40 characters.
  static std::string printable(const std::string& key) {
    std::string out;
    for (char ch : key) {
      if (out.size() >= 40) return out + "...";
      out += ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\' ? ch : '?';
    }
    return out;
  }

  std::string_view s_;
  size_t at_ = 0;
};

const char* kind_name(Value::Kind k) {
  switch (k) {
    case Value::null:
      return "null";
    case Value::boolean:
      return "a boolean";
    case Value::number:
      return "a number";
    case Value::string:
      return "a string";
    case Value::array:
      return "a list";
    case Value::object:
      return "an object";
  }
  return "?";
}

template <size_t N>
void only_keys(const Value& obj, const char* const (&known)[N], const std::string& where) {
  std::string unknown, list;
  bool any = false;  // an empty key is unknown too, though it adds nothing to the text
  for (const auto& [k, v] : obj.members) {
    bool found = false;
    for (const char* name : known) found = found || k == name;
    if (!found) {
      unknown += (any ? ", " : "") + (k.empty() ? std::string("\"\"") : k);
      any = true;
    }
  }
  if (!any) return;
  for (const char* name : known) list += (list.empty() ? "" : ", ") + std::string(name);
  refuse(where + "unknown keys: " + unknown + " (known: " + list + ")");
}

std::string optional_string(const Value& obj, const char* key, const std::string& where) {
  const Value* v = obj.get(key);
  if (v == nullptr) return "";
  if (v->kind != Value::string)
    refuse(where + "\"" + key + "\" must be a string, not " + kind_name(v->kind));
  return v->str;
}

// [lo, hi]: two integers written as integers, min <= lo <= hi <= max.
void range(const Value& rule, const char* key, int64_t min, int64_t max, const std::string& where,
           int64_t& lo, int64_t& hi) {
  const Value* v = rule.get(key);
  const std::string what = where + "\"" + key + "\" must be [lo, hi], two integers with " +
                           std::to_string(min) + " <= lo <= hi <= " + std::to_string(max);
  if (v == nullptr || v->kind != Value::array || v->items.size() != 2) refuse(what);
  for (const Value& x : v->items)
    if (x.kind != Value::number || !x.integral) refuse(what);
  for (const Value& x : v->items)
    if (!x.fits || x.i < min || x.i > max) refuse(what);
  lo = v->items[0].i;
  hi = v->items[1].i;
  if (lo > hi) refuse(what);
}

// A statistic: a finite number, or null (NaN).
double statistic(const Value* v, const std::string& where, const char* key) {
  if (v == nullptr || v->kind == Value::null) return kNaN;
  if (v->kind != Value::number || !std::isfinite(v->num))
    refuse(where + "\"" + key + "\" must be a finite number or null");
  return v->num;
}

// Whether the algorithm can run at the rule's P: refused when at none of them, noted when at some
// not. The registry's answer for a call of no data at root 0 with an op that suits it
// (commutative, exact under any grouping: the op is each call's), what P alone decides; node-aware
// algorithms are checked on their declared restrictions only (their placement is the run's).
void check_p(const Algorithm& a, Rule& rule, const std::string& where) {
  const CallCheck check =
      a.spec().restrictions.needs_placement ? CallCheck::limits : CallCheck::full;
  std::string first_refusal, first_bad;
  bool any_ok = false;
  auto at = [&](int64_t P) {
    std::string why = a.refusal(CallShape{P, 0, 8, 0, true, {}, nullptr, true}, check);
    if (why.empty()) {
      any_ok = true;
    } else if (first_bad.empty()) {
      first_bad = std::to_string(P);
      first_refusal = why;
    }
  };
  const int64_t last =
      rule.p_hi - rule.p_lo + 1 > kCheckedP ? rule.p_lo + kCheckedP - 1 : rule.p_hi;
  for (int64_t P = rule.p_lo; P <= last; ++P) at(P);
  if (last != rule.p_hi) at(rule.p_hi);
  if (!any_ok)
    refuse(where + "'" + rule.algorithm + "' cannot run at any P of [" + std::to_string(rule.p_lo) +
           ", " + std::to_string(rule.p_hi) + "]" +
           (last != rule.p_hi ? " (of those checked)" : "") + ": at P = " + first_bad + ", " +
           first_refusal);
  if (!first_bad.empty())
    rule.note =
        "cannot run at P = " + first_bad + " (" + first_refusal + "): calls there go to the MPI";
}

Rule read_rule(const Value& r, const std::string& where) {
  if (r.kind != Value::object) refuse(where + "not an object, but " + kind_name(r.kind));
  only_keys(r, kRuleKeys, where);
  Rule rule;
  const Value* coll = r.get("collective");
  if (coll == nullptr || coll->kind != Value::string || !is_collective(coll->str))
    refuse(where + "\"collective\" must be one of " + std::string(collective_names()));
  rule.collective = collective_from_string(coll->str);
  range(r, "P", 1, kMaxP, where, rule.p_lo, rule.p_hi);
  range(r, "bytes", 0, kMaxRuleBytes, where, rule.bytes_lo, rule.bytes_hi);
  if (r.get("nodes") != nullptr) range(r, "nodes", 1, kMaxP, where, rule.nodes_lo, rule.nodes_hi);
  if (r.get("ppn") != nullptr) range(r, "ppn", 1, kMaxP, where, rule.ppn_lo, rule.ppn_hi);
  if (rule.shaped()) {
    // The fewest and most ranks a communicator of the rule's shape holds (a node holds one rank
    // at least, and P at most): no call at a P outside [fewest, most] has it.
    const int64_t n_lo = rule.nodes_lo > 0 ? rule.nodes_lo : 1;
    const int64_t n_hi = rule.nodes_lo > 0 ? rule.nodes_hi : kMaxP;
    const int64_t k_lo = rule.ppn_lo > 0 ? rule.ppn_lo : 1;
    const int64_t k_hi = rule.ppn_lo > 0 ? rule.ppn_hi : kMaxP;
    const int64_t fewest = n_lo * k_lo;  // both <= 2^31: no overflow in int64
    const int64_t most = n_hi * k_hi;
    bool any = fewest <= rule.p_hi && most >= rule.p_lo;
    if (any && rule.nodes_lo > 0 && rule.ppn_lo > 0 &&
        (rule.nodes_hi - rule.nodes_lo + 1) * (rule.ppn_hi - rule.ppn_lo + 1) <= kCheckedP) {
      any = false;  // small ranges: the exact products
      for (int64_t n = rule.nodes_lo; n <= rule.nodes_hi && !any; ++n)
        for (int64_t k = rule.ppn_lo; k <= rule.ppn_hi && !any; ++k)
          any = n * k >= rule.p_lo && n * k <= rule.p_hi;
    }
    if (!any)
      refuse(where + "no communicator of P in [" + std::to_string(rule.p_lo) + ", " +
             std::to_string(rule.p_hi) + "] has the shape " +
             (rule.nodes_lo > 0 ? "nodes [" + std::to_string(rule.nodes_lo) + ", " +
                                      std::to_string(rule.nodes_hi) + "]"
                                : std::string()) +
             (rule.nodes_lo > 0 && rule.ppn_lo > 0 ? " x " : "") +
             (rule.ppn_lo > 0
                  ? "ppn [" + std::to_string(rule.ppn_lo) + ", " + std::to_string(rule.ppn_hi) + "]"
                  : std::string()));
  }
  const Value* algo = r.get("algorithm");
  if (algo == nullptr || algo->kind != Value::string || algo->str.empty())
    refuse(where + "\"algorithm\" must be a collkit algorithm name or \"native\"");
  rule.algorithm = algo->str;
  const std::string coll_name(to_string(rule.collective));
  if (rule.algorithm == "native" || rule.algorithm == coll_name + ":native") {
    rule.native = true;
    rule.canonical = "native";
  } else {
    std::optional<Algorithm> a;
    try {
      a.emplace(rule.algorithm);
    } catch (const Error& e) {
      const std::string what = e.what();  // its first line: the caret line needs the name above
      refuse(where + what.substr(0, what.find('\n')));
    }
    if (a->collective() != rule.collective)
      refuse(where + "'" + rule.algorithm + "' is not a " + coll_name + " algorithm");
    rule.canonical = a->canonical();
    check_p(*a, rule, where);
  }
  const Value* source = r.get("source");
  if (source != nullptr) {
    bool ok = source->kind == Value::string;
    if (ok) {
      ok = false;
      for (const char* s : kSources) ok = ok || source->str == s;
    }
    if (!ok) refuse(where + "\"source\" must be \"measured\" or \"simulated\"");
    rule.source = source->str;
  }
  rule.median_us = statistic(r.get("median_us"), where, "median_us");
  rule.native_median_us = statistic(r.get("native_median_us"), where, "native_median_us");
  rule.speedup = statistic(r.get("speedup"), where, "speedup");
  rule.p_value = statistic(r.get("p_value"), where, "p_value");
  if (const Value* ci = r.get("ci95"); ci != nullptr) {
    if (ci->kind != Value::array || ci->items.size() != 2)
      refuse(where + "\"ci95\" must be [lo, hi], numbers or null");
    rule.ci95_lo = statistic(&ci->items[0], where, "ci95");
    rule.ci95_hi = statistic(&ci->items[1], where, "ci95");
  }
  if (const Value* sp = r.get("speedups"); sp != nullptr) {
    if (sp->kind != Value::object)
      refuse(where + "\"speedups\" must be an object of a number or null per call pattern");
    only_keys(*sp, kPatterns, where + "\"speedups\": ");
    for (const auto& [k, v] : sp->members)
      rule.speedups.emplace_back(k, statistic(&v, where, "speedups"));
  }
  return rule;
}

}  // namespace

Table parse_table(std::string_view text) {
  if (text.size() > kMaxTableBytes) refuse("larger than 16 MiB");
  Value doc;
  try {
    doc = Parser(text).document();
  } catch (const std::bad_alloc&) {
    refuse("out of memory reading the table");
  }
  if (doc.kind != Value::object) refuse("a tuning table is a JSON object");
  const Value* format = doc.get("format");
  if (format == nullptr || format->kind != Value::string || format->str != "collkit-tuning")
    refuse("\"format\" is not \"collkit-tuning\": not a collkit tuning table");
  const Value* version = doc.get("version");
  if (version == nullptr || version->kind != Value::number || !version->integral ||
      !version->fits || version->i != kVersion)
    refuse("\"version\" must be " + std::to_string(kVersion) + " (this collkit reads version " +
           std::to_string(kVersion) + ")");
  only_keys(doc, kTableKeys, "");
  Table t;
  t.mpi = optional_string(doc, "mpi", "");
  t.machine = optional_string(doc, "machine", "");
  t.date = optional_string(doc, "date", "");
  if (const Value* b = doc.get("block")) {
    if (b->kind != Value::number || !b->integral || !b->fits || b->i < 1 || b->i > kMaxBlock)
      refuse("\"block\" must be an integer with 1 <= block <= " + std::to_string(kMaxBlock));
    t.block = b->i;
  }
  const Value* rules = doc.get("rules");
  if (rules == nullptr || rules->kind != Value::array) refuse("\"rules\" must be a list");
  if (rules->items.size() > kMaxRules) refuse("more than " + std::to_string(kMaxRules) + " rules");
  t.rules.reserve(rules->items.size());
  for (size_t i = 0; i < rules->items.size(); ++i)
    t.rules.push_back(read_rule(rules->items[i], "rule " + std::to_string(i) + ": "));
  return t;
}

Table read_table(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) refuse("cannot open the file");
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxTableBytes) refuse("larger than 16 MiB");
  }
  return parse_table(text);
}

}  // namespace collkit::tuning
