#include "collkit/name.hpp"

#include <cctype>
#include <cmath>
#include <limits>

#include "collkit/error.hpp"

namespace collkit {

void fail_at(ErrorKind kind, std::string_view text, size_t pos, const std::string& what) {
  // Show the text with a caret; control characters are shown as '?' so the caret lines up.
  std::string shown;
  shown.reserve(text.size());
  for (char c : text) shown.push_back(std::isprint(static_cast<unsigned char>(c)) ? c : '?');
  if (pos > shown.size()) pos = shown.size();
  fail(kind, what + " at position " + std::to_string(pos) + "\n  " + shown + "\n  " +
                 std::string(pos, ' ') + "^");
}

namespace {

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || c == '_';
}
bool is_ident_char(char c) {
  return is_ident_start(c) || (c >= '0' && c <= '9') || c == '-';
}
bool is_value_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '+' ||
         c == '-';
}
bool is_call_value_char(char c) {
  return is_value_char(c) || c == '/' || c == '~';
}

class NameParser {
 public:
  explicit NameParser(std::string_view t, ErrorKind kind = ErrorKind::name, bool call = false)
      : t_(t), kind_(kind), call_(call) {}

  // A call: word [ '(' args ')' ] (see name.hpp).
  ParsedCall parse_call() {
    if (t_.empty()) fail_at(kind_, t_, 0, "empty spec");
    skip_ws();
    ParsedCall out;
    out.kind = ident("a name such as uniform or fattree");
    skip_ws();
    if (i_ < t_.size() && t_[i_] == '(') {
      ++i_;
      out.args = arg_list(0);
    }
    skip_ws();
    if (i_ != t_.size()) fail_at(kind_, t_, i_, "unexpected character after the spec");
    return out;
  }

  ParsedName parse() {
    if (t_.empty()) fail_at(kind_, t_, 0, "empty algorithm name");
    skip_ws();
    ParsedName out = name(0);
    out.text = std::string(t_);
    skip_ws();
    if (i_ != t_.size()) fail_at(kind_, t_, i_, "unexpected character after the name");
    return out;
  }

 private:
  // One name from i_ on, stopping after it (its closing parenthesis, or the algorithm).
  ParsedName name(int depth) {
    ParsedName out;
    out.begin = i_;
    size_t cpos = i_;
    std::string coll = ident("a collective (" + std::string(collective_names()) + ")");
    if (!is_collective(coll))
      fail_at(kind_, t_, cpos,
              "unknown collective '" + coll + "' (known: " + std::string(collective_names()) + ")");
    out.collective = collective_from_string(coll);
    skip_ws();
    expect(':', "expected ':' between the collective and the algorithm, as in allreduce:rd");
    skip_ws();
    out.algo_pos = i_;
    out.algorithm = ident("an algorithm name after ':'");
    size_t end = i_;
    skip_ws();
    if (i_ < t_.size() && t_[i_] == '(') {
      ++i_;
      out.args = arg_list(depth);
      end = i_;
    } else {
      i_ = end;  // spaces after a nested name belong to the list around it
    }
    out.text = std::string(t_.substr(out.begin, end - out.begin));
    return out;
  }

  // The arguments after '(' up to and with the closing ')'.
  std::vector<NameArg> arg_list(int depth) {
    std::vector<NameArg> args;
    skip_ws();
    if (i_ < t_.size() && t_[i_] == ')') {
      ++i_;
      return args;
    }
    bool seen_keyword = false;
    for (;;) {
      skip_ws();
      NameArg a = arg(depth);
      if (a.key.empty() && seen_keyword)
        fail_at(kind_, t_, a.pos, "a positional argument cannot follow a keyword argument");
      if (!a.key.empty()) {
        for (const auto& b : args)
          if (b.key == a.key) fail_at(kind_, t_, a.pos, "parameter '" + a.key + "' given twice");
        seen_keyword = true;
      }
      args.push_back(std::move(a));
      skip_ws();
      if (i_ < t_.size() && t_[i_] == ',') {
        ++i_;
        continue;
      }
      expect(')', "expected ',' or ')' in the argument list");
      return args;
    }
  }

  void skip_ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t')) ++i_;
  }
  void expect(char c, const char* what) {
    if (i_ >= t_.size() || t_[i_] != c) fail_at(kind_, t_, i_, what);
    ++i_;
  }
  std::string ident(const std::string& what) {
    if (i_ >= t_.size() || !is_ident_start(t_[i_])) fail_at(kind_, t_, i_, "expected " + what);
    size_t b = i_;
    while (i_ < t_.size() && is_ident_char(t_[i_])) ++i_;
    return std::string(t_.substr(b, i_ - b));
  }
  // A value: a token, or an algorithm name when a ':' follows the first word.
  void value(NameArg& a, int depth) {
    const size_t b = i_;
    a.pos = b;
    while (i_ < t_.size() && (call_ ? is_call_value_char(t_[i_]) : is_value_char(t_[i_]))) ++i_;
    if (i_ == b) return;
    size_t after = i_;
    skip_ws();
    if (!call_ && i_ < t_.size() && t_[i_] == ':') {
      if (depth + 1 >= kMaxNameDepth)
        fail_at(kind_, t_, b,
                "algorithm names nest at most " + std::to_string(kMaxNameDepth) + " deep");
      i_ = b;
      auto n = std::make_shared<ParsedName>(name(depth + 1));
      a.value = n->text;
      a.nested = std::move(n);
      return;
    }
    i_ = after;
    a.value = std::string(t_.substr(b, i_ - b));
  }

  NameArg arg(int depth) {
    NameArg a;
    size_t b = i_;
    value(a, depth);
    if (i_ == b) fail_at(kind_, t_, i_, "expected an argument");
    std::string first = a.value;
    skip_ws();
    if (i_ < t_.size() && t_[i_] == '=') {
      if (a.nested) fail_at(kind_, t_, i_, "an algorithm name cannot be a parameter name");
      if (!is_ident_start(first[0]))
        fail_at(kind_, t_, b, "a parameter name starts with a lowercase letter");
      for (char c : first)
        if (!is_ident_char(c) || c == '-')
          fail_at(kind_, t_, b, "malformed parameter name '" + first + "'");
      ++i_;
      skip_ws();
      size_t vb = i_;
      value(a, depth);
      if (i_ == vb) fail_at(kind_, t_, i_, "expected a value after '='");
      a.key = first;
      if (!a.nested) a.pos = b;  // scalar errors point at the key, nested ones inside the value
    }
    return a;
  }

  std::string_view t_;
  ErrorKind kind_;
  bool call_;
  size_t i_ = 0;
};

}  // namespace

ParsedName parse_name(std::string_view text) {
  if (text.size() > 4096) fail(ErrorKind::name, "algorithm name longer than 4096 characters");
  return NameParser(text).parse();
}

ParsedCall parse_call(std::string_view text, ErrorKind kind) {
  if (text.size() > 4096) fail(kind, "spec longer than 4096 characters");
  return NameParser(text, kind, true).parse_call();
}

namespace {
constexpr std::string_view kMpiImpls[] = {"mpich", "ompi", "impi"};
}

std::string_view mpi_impl_names() {
  return "mpich, ompi, impi";
}

bool is_mpi_impl(std::string_view impl) {
  for (auto i : kMpiImpls)
    if (i == impl) return true;
  return false;
}

RowName parse_row_name(std::string_view text) {
  if (text.size() > 4096) fail(ErrorKind::name, "algorithm name longer than 4096 characters");
  size_t b = 0, e = text.size();
  while (b < e && (text[b] == ' ' || text[b] == '\t')) ++b;
  while (e > b && (text[e - 1] == ' ' || text[e - 1] == '\t')) --e;
  const std::string_view t = text.substr(b, e - b);
  RowName out;
  if (t == "native") {
    out.kind = RowName::Kind::native;
    out.algorithm = "native";
    return out;
  }
  size_t i = 0;
  while (i < t.size() && is_ident_char(t[i])) ++i;
  if (i > 0 && is_mpi_impl(t.substr(0, i))) {
    out.kind = RowName::Kind::mpi;
    out.impl = std::string(t.substr(0, i));
    size_t j = i;
    while (j < t.size() && (t[j] == ' ' || t[j] == '\t')) ++j;
    if (j >= t.size() || t[j] != ':')
      fail_at(ErrorKind::name, text, b + j,
              "expected ':' between the MPI and its algorithm, as in " + out.impl + ":ring");
    ++j;
    while (j < t.size() && (t[j] == ' ' || t[j] == '\t')) ++j;
    if (j >= t.size() || !is_ident_start(t[j]))
      fail_at(ErrorKind::name, text, b + j, "expected an algorithm of " + out.impl + " after ':'");
    const size_t a = j;
    while (j < t.size() && is_ident_char(t[j])) ++j;
    out.algorithm = std::string(t.substr(a, j - a));
    if (j < t.size())
      fail_at(ErrorKind::name, text, b + j,
              t[j] == '(' ? "an MPI's own algorithm takes no arguments"
                          : "unexpected character after the name");
    return out;
  }
  out.parsed = parse_name(text);
  out.has_collective = true;
  out.algorithm = out.parsed.algorithm;
  if (out.parsed.algorithm == "native") {
    if (!out.parsed.args.empty())
      fail_at(ErrorKind::name, text, out.parsed.algo_pos, "native takes no arguments");
    out.kind = RowName::Kind::native;
  }
  return out;
}

int64_t parse_size(std::string_view text) {
  std::string_view t = text;
  while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  auto bad = [&](const std::string& why) -> int64_t {
    fail(ErrorKind::invalid_argument, "bad size '" + std::string(text) + "': " + why +
                                          " (examples: 8, 8B, 4KiB, 4K, 1MiB, 1.5MB, 2GiB)");
  };
  if (t.empty()) bad("empty");
  size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.')) ++i;
  if (i == 0) bad("it must start with a number");
  std::string num(t.substr(0, i));
  if (num.find('.') != num.rfind('.') || num == ".") bad("malformed number");
  std::string_view unit = t.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  double mult = 1;
  static const struct {
    const char* u;
    double m;
  } units[] = {{"", 1},
               {"B", 1},
               {"K", 1024.0},
               {"KiB", 1024.0},
               {"KB", 1e3},
               {"k", 1024.0},
               {"kB", 1e3},
               {"M", 1048576.0},
               {"MiB", 1048576.0},
               {"MB", 1e6},
               {"G", 1073741824.0},
               {"GiB", 1073741824.0},
               {"GB", 1e9},
               {"T", 1099511627776.0},
               {"TiB", 1099511627776.0},
               {"TB", 1e12}};
  bool found = false;
  for (const auto& u : units)
    if (unit == u.u) {
      mult = u.m;
      found = true;
    }
  if (!found) bad("unknown unit '" + std::string(unit) + "'");
  double v = std::strtod(num.c_str(), nullptr) * mult;
  if (!std::isfinite(v) || v >= 9.2e18) bad("too large");
  if (v != std::floor(v)) bad("not a whole number of bytes");
  return static_cast<int64_t>(v);
}

std::string format_size(int64_t bytes) {
  static const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  int64_t v = bytes;
  while (u < 4 && v != 0 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + names[u];
}

}  // namespace collkit
