// The JSON writer: column by column, rank by rank (see collkit/json.hpp).
#include "collkit/json.hpp"

#include <array>
#include <cstdio>

#include "collkit/error.hpp"
#include "text_detail.hpp"

namespace collkit {

namespace {

void hex4(std::string& out, uint32_t v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\u%04x", v & 0xffffu);
  out += buf;
}

// Text handed to the sink in pieces of about a megabyte.
class Chunked {
 public:
  explicit Chunked(const Sink& sink) : sink_(sink) { buf_.reserve(kChunk + 256); }
  std::string& out() { return buf_; }
  void maybe_flush() {
    if (buf_.size() >= kChunk) flush();
  }
  void flush() {
    if (!buf_.empty()) sink_(buf_);
    buf_.clear();
  }

 private:
  static constexpr size_t kChunk = size_t{1} << 20;
  const Sink& sink_;
  std::string buf_;
};

enum Column : int {
  kRank,
  kKind,
  kPeer,
  kBuf,
  kOff,
  kSrc,
  kSrcOff,
  kLen,
  kSide,
  kStage,
  kCpu,
  kNic,
  kColumns
};
constexpr std::array<const char*, kColumns> kNames = {
    "rank", "kind", "peer", "buf", "off", "src", "src_off", "len", "side", "stage", "cpu", "nic"};

int64_t field(const RankView& v, size_t i, int c) {
  const Op& op = v.ops[i];
  switch (c) {
    case kRank:
      return v.rank;
    case kKind:
      return static_cast<int64_t>(op.kind);
    case kPeer:
      return op.peer;
    case kBuf:
      return op.buf;
    case kOff:
      return op.off;
    case kSrc:
      return op.src;
    case kSrcOff:
      return op.src_off;
    case kLen:
      return op.len;
    case kSide:
      return static_cast<int64_t>(op.side);
    case kStage:
      return v.stage[i];
    case kCpu:
      return op.cpu;
    default:
      return op.nic;
  }
}

}  // namespace

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      if (c == '"' || c == '\\') {
        out.push_back('\\');
        out.push_back(static_cast<char>(c));
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c == '\b') {
        out += "\\b";
      } else if (c == '\f') {
        out += "\\f";
      } else if (c < 0x20 || c == 0x7f) {
        hex4(out, c);
      } else {
        out.push_back(static_cast<char>(c));
      }
      continue;
    }
    // A UTF-8 sequence: its code point as \uXXXX (a surrogate pair above U+FFFF).
    const int len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    uint32_t cp = len == 4 ? c & 0x07u : len == 3 ? c & 0x0fu : len == 2 ? c & 0x1fu : c;
    bool ok = len > 1 && i + static_cast<size_t>(len) <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      ok = (b & 0xc0) == 0x80;
      cp = cp << 6 | (b & 0x3fu);
    }
    if (!ok) {  // not UTF-8: the byte alone
      hex4(out, c);
      ++i;
      continue;
    }
    i += static_cast<size_t>(len);
    if (cp >= 0x10000) {
      cp -= 0x10000;
      hex4(out, 0xd800 | (cp >> 10));
      hex4(out, 0xdc00 | (cp & 0x3ff));
    } else {
      hex4(out, cp);
    }
  }
  out.push_back('"');
  return out;
}

void write_json(const ScheduleHeader& h, const RankSource& rank, const Sink& sink) {
  Chunked w(sink);
  std::string& out = w.out();
  auto key = [&](const char* k, int indent) {
    out.append(static_cast<size_t>(indent), ' ');
    out.push_back('"');
    out += k;
    out += "\": ";
  };
  out += "{\n";
  key("format", 2);
  out += "\"collkit-schedule\",\n";
  key("version", 2);
  out += "1,\n";
  key("collective", 2);
  out += json_quote(to_string(h.collective)) + ",\n";
  key("algorithm", 2);
  out += json_quote(h.algorithm) + ",\n";
  const std::pair<const char*, int64_t> ints[] = {
      {"P", h.P}, {"count", h.count}, {"elem_size", h.elem_size}, {"root", h.root}};
  for (auto [k, v] : ints) {
    key(k, 2);
    io::write_int(out, v);
    out += ",\n";
  }
  if (h.placement.given()) {  // absent for flat schedules, as in the text form
    key("placement", 2);
    out += "{\"rpn\":";
    io::write_int(out, h.placement.rpn);
    out += ",\"order\":" + json_quote(to_string(h.placement.order)) + "},\n";
  }
  for (const auto& [k, v] :
       {std::pair<const char*, const std::vector<int64_t>*>{"counts", &h.counts},
        {"in_displs", &h.in_displs},
        {"out_displs", &h.out_displs}}) {
    if (v->empty()) continue;  // absent for a regular header, as placement is
    key(k, 2);
    out.push_back('[');
    for (size_t i = 0; i < v->size(); ++i) {
      if (i) out.push_back(',');
      io::write_int(out, (*v)[i]);
    }
    out += "],\n";
  }
  key("op_kinds", 2);
  out += "[\"send\",\"recv\",\"reduce\",\"copy\",\"compute\",\"sleep\"],\n";
  key("reduce_sides", 2);
  out += "[\"src_first\",\"dst_first\"],\n";
  key("ops", 2);
  out += "{\n";
  // One pass per column; the first also learns whether cpu / nic are needed.
  bool units = false;
  for (int c = 0; c < kColumns; ++c) {
    if (c == kCpu && !units) break;
    if (c > 0) out += ",\n";
    key(kNames[static_cast<size_t>(c)], 4);
    out.push_back('[');
    bool first = true;
    for (int64_t r = 0; r < h.P; ++r) {
      const RankView v = rank(r);
      for (size_t i = 0; i < v.size(); ++i) {
        if (c == kRank) units = units || v.ops[i].cpu != 0 || v.ops[i].nic != 0;
        if (!first) out.push_back(',');
        first = false;
        io::write_int(out, field(v, i, c));
      }
      w.maybe_flush();
    }
    out.push_back(']');
  }
  out += "\n  },\n";
  // dep_begin (ops + 1 entries, over all ranks), deps, scratch_begin (P + 1), scratch.
  for (int pass = 0; pass < 4; ++pass) {
    static constexpr const char* names[] = {"dep_begin", "deps", "scratch_begin", "scratch"};
    key(names[pass], 2);
    out.push_back('[');
    int64_t total = 0;
    bool first = true;
    auto put = [&](int64_t x) {
      if (!first) out.push_back(',');
      first = false;
      io::write_int(out, x);
    };
    if (pass == 0 || pass == 2) put(0);
    for (int64_t r = 0; r < h.P; ++r) {
      const RankView v = rank(r);
      if (pass == 0) {
        for (size_t i = 0; i < v.size(); ++i)
          put(total += static_cast<int64_t>(v.deps_of(i).size()));
      } else if (pass == 1) {
        for (OpId d : v.deps) put(d);
      } else if (pass == 2) {
        put(total += static_cast<int64_t>(v.scratch.size()));
      } else {
        for (int64_t e : v.scratch) put(e);
      }
      w.maybe_flush();
    }
    out += pass < 3 ? "],\n" : "]\n";
  }
  out += "}\n";
  w.flush();
}

std::string to_json(const Schedule& s) {
  if (!s.complete()) fail(ErrorKind::invalid_argument, "the schedule does not hold all P ranks");
  std::string out;
  write_json(s.header, [&](int64_t r) { return s.rank(r); }, [&](std::string_view t) { out += t; });
  return out;
}

}  // namespace collkit
