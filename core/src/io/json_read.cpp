// The JSON reader that streams (see collkit/json.hpp): a first pass checks the document's shape
// and notes where each array starts; a second reads every column at once through its own cursor
// into the file, one rank at a time.
#include <cctype>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "collkit/error.hpp"
#include "collkit/json.hpp"

namespace collkit {

namespace {

[[noreturn]] void bad(const std::string& m) {
  fail(ErrorKind::format, m);
}

// What is read: a file, or text in memory (`text` set; read through fmemopen, so both go the
// same way).
struct JsonSource {
  std::string path;
  const std::string_view* text = nullptr;
  std::FILE* open() const {
    if (text == nullptr) return std::fopen(path.c_str(), "rb");
    if (text->empty()) bad("JSON: an empty text is not a schedule");
    return fmemopen(const_cast<char*>(text->data()), text->size(), "rb");
  }
};

// Buffered reading of one file, from a given offset.
class Reader {
 public:
  Reader(const JsonSource& src, long offset) : f_(src.open()) {
    const std::string& path = src.path;
    if (f_ == nullptr) fail(ErrorKind::invalid_argument, "cannot read " + path);
    if (offset > 0 && std::fseek(f_, offset, SEEK_SET) != 0) bad("cannot seek in " + path);
    pos_ = offset;
  }
  ~Reader() { std::fclose(f_); }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  int peek() {
    if (i_ == n_) {
      n_ = std::fread(buf_, 1, sizeof buf_, f_);
      i_ = 0;
      if (n_ == 0) return EOF;
    }
    return static_cast<unsigned char>(buf_[i_]);
  }
  int get() {
    int c = peek();
    if (c != EOF) ++i_, ++pos_;
    return c;
  }
  long pos() const { return pos_; }
  void ws() {
    for (int c = peek(); c == ' ' || c == '\n' || c == '\r' || c == '\t'; c = peek()) get();
  }
  void expect(char c, const char* what) {
    ws();
    if (get() != c) bad(std::string("JSON: expected ") + what + " at byte " + std::to_string(pos_));
  }
  bool accept(char c) {
    ws();
    if (peek() != c) return false;
    get();
    return true;
  }
  unsigned hex4() {
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      int h = get();
      v = v * 16 + static_cast<unsigned>(std::isxdigit(h)
                                             ? (std::isdigit(h) ? h - '0' : (h | 32) - 'a' + 10)
                                             : bad_escape());
    }
    return v;
  }
  std::string string() {  // ASCII escapes and \uXXXX below 0x80 are enough for the keys used
    expect('"', "a string");
    std::string out;
    for (int c = get(); c != '"'; c = get()) {
      if (c == EOF || c < 0x20) bad("JSON: unterminated or malformed string");
      if (c == '\\') {
        int e = get();
        if (e == 'u') {
          unsigned v = hex4();
          if (v >= 0xd800 && v < 0xdc00) {  // a high surrogate: its low half must follow
            if (get() != '\\' || get() != 'u') bad("JSON: a lone surrogate in a \\u escape");
            unsigned lo = hex4();
            if (lo < 0xdc00 || lo >= 0xe000) bad("JSON: a lone surrogate in a \\u escape");
            v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
          } else if (v >= 0xdc00 && v < 0xe000) {
            bad("JSON: a lone surrogate in a \\u escape");
          }
          if (v >= 0x80) {  // UTF-8 of the code point
            if (v < 0x800) {
              out.push_back(static_cast<char>(0xc0 | v >> 6));
            } else if (v < 0x10000) {
              out.push_back(static_cast<char>(0xe0 | v >> 12));
              out.push_back(static_cast<char>(0x80 | (v >> 6 & 0x3f)));
            } else {
              out.push_back(static_cast<char>(0xf0 | v >> 18));
              out.push_back(static_cast<char>(0x80 | (v >> 12 & 0x3f)));
              out.push_back(static_cast<char>(0x80 | (v >> 6 & 0x3f)));
            }
            out.push_back(static_cast<char>(0x80 | (v & 0x3f)));
            continue;
          }
          out.push_back(static_cast<char>(v));
        } else {
          static const std::string from = "\"\\/bfnrt", to = "\"\\/\b\f\n\r\t";
          auto k = from.find(static_cast<char>(e));
          if (e == EOF || k == std::string::npos) bad_escape();
          out.push_back(to[k]);
        }
      } else {
        out.push_back(static_cast<char>(c));
      }
    }
    return out;
  }
  // An integer (no fraction, no exponent) within [lo, hi].
  int64_t integer(const std::string& what, int64_t lo, int64_t hi) {
    ws();
    // The common case at once, from the buffer: up to 18 digits, no sign, in range.
    if (n_ - i_ > 19) {
      const char* p = buf_ + i_;
      const char* q = p;
      int64_t v = 0;
      while (q - p < 18 && *q >= '0' && *q <= '9') v = v * 10 + (*q++ - '0');
      if (q != p && !(*q >= '0' && *q <= '9') && *q != '.' && *q != 'e' && *q != 'E' && v >= lo &&
          v <= hi) {
        i_ += static_cast<size_t>(q - p);
        pos_ += q - p;
        return v;
      }
    }
    bool neg = accept_here('-');
    int c = peek();
    if (c < '0' || c > '9')
      bad("JSON: " + what + " must hold integers (byte " + std::to_string(pos_) + ")");
    uint64_t v = 0;
    bool over = false;  // past 64 bits
    for (; c >= '0' && c <= '9'; c = peek()) {
      get();
      const auto d = static_cast<uint64_t>(c - '0');
      // v * 10 + d > UINT64_MAX, without a division per digit
      over = over || v > UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d > UINT64_MAX % 10);
      if (!over) v = v * 10 + d;
    }
    if (c == '.' || c == 'e' || c == 'E')
      bad("JSON: " + what + " must hold integers, not fractions");
    const uint64_t limit = neg ? uint64_t{1} << 63 : static_cast<uint64_t>(INT64_MAX);
    if (over || v > limit) range(what, lo, hi);
    const int64_t x = neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
    if (x < lo || x > hi) range(what, lo, hi);
    return x;
  }
  // Skips any JSON value (for keys this version does not read).
  void skip(int depth = 0) {
    if (depth > 64) bad("JSON: nested too deeply");
    ws();
    int c = peek();
    if (c == '"') {
      string();
    } else if (c == '[' || c == '{') {
      get();
      const char close = c == '[' ? ']' : '}';
      if (accept(close)) return;
      do {
        if (c == '{') {
          string();
          expect(':', "':'");
        }
        skip(depth + 1);
      } while (accept(','));
      expect(close, "the end of an array or object");
    } else {
      bool any = false;
      for (c = peek(); c == '-' || c == '+' || c == '.' || std::isalnum(c); c = peek())
        get(), any = true;
      if (!any) bad("JSON: a value expected at byte " + std::to_string(pos_));
    }
  }

 private:
  bool accept_here(char c) {
    if (peek() != c) return false;
    get();
    return true;
  }
  [[noreturn]] static int bad_escape() { bad("JSON: malformed escape in a string"); }
  [[noreturn]] static void range(const std::string& what, int64_t lo, int64_t hi) {
    bad("JSON: " + what + " holds a number outside [" + std::to_string(lo) + ", " +
        std::to_string(hi) + "]");
  }
  std::FILE* f_;
  char buf_[1 << 16];
  size_t i_ = 0, n_ = 0;
  long pos_ = 0;
};

struct Column {
  int64_t lo, hi;
  long offset = -1;  // just after its '['
  size_t size = 0;
};

// A cursor reading one integer array, element by element.
class Cursor {
 public:
  Cursor(const JsonSource& src, const std::string& name, const Column& c)
      : r_(std::make_unique<Reader>(src, c.offset)), name_(name), c_(c) {}
  int64_t next() {
    if (read_ > 0) r_->expect(',', "','");
    ++read_;
    return r_->integer(name_, c_.lo, c_.hi);
  }

 private:
  std::unique_ptr<Reader> r_;
  std::string name_;
  Column c_;
  size_t read_ = 0;
};

constexpr int64_t kI64 = std::numeric_limits<int64_t>::max();

void read_json(const JsonSource& src, const std::function<void(const ScheduleHeader&)>& on_header,
               const std::function<void(const RankView&)>& on_rank) {
  // Pass 1: the shape, the header, where the arrays are.
  std::map<std::string, Column> cols = {{"ops.rank", {0, kI64}},
                                        {"ops.kind", {0, 255}},
                                        {"ops.peer", {INT32_MIN, INT32_MAX}},
                                        {"ops.buf", {0, 255}},
                                        {"ops.off", {-kI64 - 1, kI64}},
                                        {"ops.src", {0, 255}},
                                        {"ops.src_off", {-kI64 - 1, kI64}},
                                        {"ops.len", {-kI64 - 1, kI64}},
                                        {"ops.side", {0, 255}},
                                        {"ops.stage", {0, 65535}},
                                        {"ops.cpu", {0, 255}},
                                        {"ops.nic", {0, 255}},
                                        {"dep_begin", {-kI64 - 1, kI64}},
                                        {"deps", {0, UINT32_MAX}},
                                        {"scratch_begin", {-kI64 - 1, kI64}},
                                        {"scratch", {-kI64 - 1, kI64}}};
  ScheduleHeader h;
  std::set<std::string> seen;
  std::string format, version;
  {
    Reader r(src, 0);
    r.ws();
    if (r.peek() == 0xef) {  // a UTF-8 byte order mark
      r.get(), r.get(), r.get();
    }
    auto array = [&](const std::string& name) {
      Column& c = cols.at(name);
      r.expect('[', ("'[' opening " + name).c_str());
      c.offset = r.pos();
      if (r.accept(']')) return;
      do {
        r.integer(name, c.lo, c.hi);
        ++c.size;
      } while (r.accept(','));
      r.expect(']', ("']' closing " + name).c_str());
    };
    auto legend = [&](const std::string& key, const std::vector<std::string>& want) {
      std::vector<std::string> got;
      r.expect('[', "'['");
      if (!r.accept(']')) {
        do got.push_back(r.string());
        while (r.accept(','));
        r.expect(']', "']'");
      }
      if (got != want) bad("'" + key + "' must be the codes of this version");
    };
    r.expect('{', "'{' (a JSON schedule is an object)");
    if (!r.accept('}')) do {
        const std::string key = r.string();
        r.expect(':', "':'");
        if (!seen.insert(key).second) bad("JSON: duplicate key '" + key + "'");
        if (key == "format") {
          format = r.string();
        } else if (key == "version") {
          version = std::to_string(r.integer("'version'", -kI64 - 1, kI64));
        } else if (key == "collective") {
          const std::string c = r.string();
          if (!is_collective(c))
            bad("unknown collective '" + c.substr(0, 40) +
                "' (known: " + std::string(collective_names()) + ")");
          h.collective = collective_from_string(c);
        } else if (key == "algorithm") {
          h.algorithm = r.string();
        } else if (key == "P") {
          h.P = r.integer("'P'", 1, int64_t{1} << 31);
        } else if (key == "count") {
          h.count = r.integer("'count'", 0, kI64);
        } else if (key == "elem_size") {
          h.elem_size = static_cast<int32_t>(r.integer("'elem_size'", 1, INT32_MAX));
        } else if (key == "root") {
          h.root = r.integer("'root'", 0, kI64);
        } else if (key == "placement") {  // optional: {"rpn": N, "order": "contiguous"}
          const char* shape =
              "\"placement\" must be {\"rpn\": N, \"order\": \"contiguous\" or "
              "\"round_robin\"}";
          std::set<std::string> got;
          r.expect('{', "'{' opening \"placement\"");
          if (!r.accept('}')) do {
              const std::string k = r.string();
              r.expect(':', "':'");
              if (!got.insert(k).second) bad(shape);
              if (k == "rpn") {
                h.placement.rpn = r.integer("'placement.rpn'", 1, int64_t{1} << 31);
              } else if (k == "order") {
                const std::string o = r.string();
                if (o != "contiguous" && o != "round_robin") bad(shape);
                h.placement.order = node_order_from_string(o);
              } else {
                bad(shape);
              }
            } while (r.accept(','));
          r.expect('}', "'}' closing \"placement\"");
          if (got.size() != 2) bad(shape);
        } else if (key == "counts" || key == "in_displs" || key == "out_displs") {
          // optional: the irregular collectives' vectors, as in the text form
          std::vector<int64_t>& v = key == "counts"      ? h.counts
                                    : key == "in_displs" ? h.in_displs
                                                         : h.out_displs;
          const std::string what = "'" + key + "' entry";
          r.expect('[', ("'[' opening \"" + key + "\"").c_str());
          if (!r.accept(']')) {
            do v.push_back(r.integer(what.c_str(), 0, int64_t{1} << 48));
            while (r.accept(','));
            r.expect(']', ("']' closing \"" + key + "\"").c_str());
          }
        } else if (key == "op_kinds") {
          legend(key, {"send", "recv", "reduce", "copy", "compute", "sleep"});
        } else if (key == "reduce_sides") {
          legend(key, {"src_first", "dst_first"});
        } else if (key == "ops") {
          std::set<std::string> inner;
          r.expect('{', "'{' opening \"ops\"");
          if (!r.accept('}')) do {
              const std::string k = "ops." + r.string();
              r.expect(':', "':'");
              if (!inner.insert(k).second) bad("JSON: duplicate key '" + k + "'");
              if (cols.count(k))
                array(k);
              else
                r.skip();
            } while (r.accept(','));
          r.expect('}', "'}' closing \"ops\"");
          seen.insert(inner.begin(), inner.end());
        } else if (cols.count(key)) {
          array(key);
        } else {
          r.skip();
        }
      } while (r.accept(','));
    r.expect('}', "'}' closing the schedule");
    r.ws();
    if (r.peek() != EOF) bad("JSON: text after the schedule's object");
  }
  if (format != "collkit-schedule")
    bad("not a collkit schedule: \"format\" must be \"collkit-schedule\"");
  if (version != "1") bad("unsupported JSON schedule version (this collkit reads 1)");
  for (const char* k : {"collective", "algorithm", "P", "count", "elem_size", "root"})
    if (!seen.count(k)) bad(std::string("JSON schedule has no '") + k + "'");
  for (const auto& [name, c] : cols)
    if (c.offset < 0 && name != "ops.cpu" && name != "ops.nic")
      bad("JSON schedule has no '" + name + "'");
  const bool units = cols["ops.cpu"].offset >= 0 || cols["ops.nic"].offset >= 0;
  if (units && (cols["ops.cpu"].offset < 0 || cols["ops.nic"].offset < 0))
    bad("JSON: 'ops.cpu' and 'ops.nic' come together");
  const size_t n = cols["ops.rank"].size;
  for (const auto& [name, c] : cols)
    if (name.starts_with("ops.") && c.offset >= 0 && c.size != n)
      bad("'" + name + "' has " + std::to_string(c.size) + " entries, 'ops.rank' " +
          std::to_string(n));
  if (cols["dep_begin"].size != n + 1)
    bad("'dep_begin' needs " + std::to_string(n + 1) + " entries (ops + 1)");
  if (cols["scratch_begin"].size != static_cast<size_t>(h.P) + 1)
    bad("'scratch_begin' needs " + std::to_string(h.P + 1) + " entries (P + 1)");
  check_header_fields(h);
  on_header(h);

  // Pass 2: every column at once, one rank at a time.
  std::map<std::string, Cursor> cur;
  for (const auto& [name, c] : cols)
    if (c.offset >= 0) cur.emplace(name, Cursor(src, "'" + name + "'", c));
  auto at = [&](const char* k) -> Cursor& { return cur.at(k); };
  RankProgram p;
  std::vector<OpId> deps;
  size_t op = 0;
  // Each column's cursor found once (a map lookup per element was most of the time).
  Cursor &c_rank = at("ops.rank"), &c_kind = at("ops.kind"), &c_side = at("ops.side");
  Cursor &c_peer = at("ops.peer"), &c_buf = at("ops.buf"), &c_off = at("ops.off");
  Cursor &c_src = at("ops.src"), &c_src_off = at("ops.src_off"), &c_len = at("ops.len");
  Cursor &c_stage = at("ops.stage"), &c_dep_begin = at("dep_begin"), &c_deps = at("deps");
  Cursor &c_scratch_begin = at("scratch_begin"), &c_scratch = at("scratch");
  Cursor* c_cpu = units ? &at("ops.cpu") : nullptr;
  Cursor* c_nic = units ? &at("ops.nic") : nullptr;
  int64_t dep_at = c_dep_begin.next(), scratch_at = c_scratch_begin.next();
  int64_t next_rank = op < n ? c_rank.next() : -1;
  const int64_t n_deps = static_cast<int64_t>(cols["deps"].size);
  const int64_t n_scratch = static_cast<int64_t>(cols["scratch"].size);
  if (dep_at != 0 || scratch_at != 0) bad("'dep_begin' and 'scratch_begin' must start at 0");
  for (int64_t r = 0; r < h.P; ++r) {
    p.clear(r);
    const int64_t se = c_scratch_begin.next();
    if (se < scratch_at || se > n_scratch)
      bad("'scratch_begin' must rise from 0 to the length of 'scratch'");
    for (; scratch_at < se; ++scratch_at) p.scratch.push_back(c_scratch.next());
    if (next_rank >= 0 && next_rank < r) bad("ops.'rank' must be sorted and hold ranks in [0, P)");
    while (op < n && next_rank == r) {
      Op o;
      const int64_t kind = c_kind.next(), side = c_side.next();
      if (kind > static_cast<int64_t>(OpKind::sleep) || side > 1)
        bad("op " + std::to_string(op) + " has an unknown kind or side");
      o.kind = static_cast<OpKind>(kind);
      o.side = static_cast<Side>(side);
      o.peer = static_cast<int32_t>(c_peer.next());
      o.buf = static_cast<BufId>(c_buf.next());
      o.off = c_off.next();
      o.src = static_cast<BufId>(c_src.next());
      o.src_off = c_src_off.next();
      o.len = c_len.next();
      const auto stage = static_cast<uint16_t>(c_stage.next());
      if (units) {
        const int64_t c = c_cpu->next(), k = c_nic->next();
        if (c > kMaxCpu || k > kMaxNic)
          bad("op " + std::to_string(op) + " has a cpu or nic above collkit's limit");
        o.cpu = static_cast<uint8_t>(c);
        o.nic = static_cast<uint8_t>(k);
      }
      const int64_t de = c_dep_begin.next();
      if (de < dep_at || de > n_deps) bad("'dep_begin' must rise from 0 to the length of 'deps'");
      deps.clear();
      for (; dep_at < de; ++dep_at) deps.push_back(static_cast<OpId>(c_deps.next()));
      p.append(o, deps, stage);
      ++op;
      next_rank = op < n ? c_rank.next() : -1;
    }
    check_rank_fields(h, p.view());
    on_rank(p.view());
  }
  if (op != n) bad("ops.'rank' must be sorted and hold ranks in [0, P)");
  if (dep_at != n_deps || scratch_at != n_scratch)
    bad("'dep_begin' / 'scratch_begin' must end at the length of the array they index");
}

}  // namespace

void read_json_file(const std::string& path,
                    const std::function<void(const ScheduleHeader&)>& on_header,
                    const std::function<void(const RankView&)>& on_rank) {
  read_json(JsonSource{path}, on_header, on_rank);
}

void read_json_text(std::string_view text,
                    const std::function<void(const ScheduleHeader&)>& on_header,
                    const std::function<void(const RankView&)>& on_rank) {
  read_json(JsonSource{"the JSON text", &text}, on_header, on_rank);
}

}  // namespace collkit
