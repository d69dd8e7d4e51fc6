// The text form of a Schedule: writer and parser (grammar in docs/schedule-formats.md).
#include "collkit/text.hpp"

#include <algorithm>
#include <charconv>
#include <functional>
#include <istream>

#include "collkit/error.hpp"
#include "collkit/registry.hpp"
#include "scanner.hpp"
#include "text_detail.hpp"

namespace collkit {

namespace io {

namespace {
constexpr std::string_view kMagic = "# collkit schedule v";
constexpr int64_t kMaxTextP = int64_t{1} << 31;  // peers are int32

void write_region(std::string& out, BufId b, int64_t off, int64_t len) {
  out += buffer_name(b);
  out.push_back('[');
  write_int(out, off);
  out.push_back(':');
  int64_t stop;
  if (!__builtin_add_overflow(off, len, &stop)) {
    write_int(out, stop);
  } else {
    // Only an invalid op gets here; write the true sum so that the parser rejects it.
    write_wide_int(out, static_cast<wide_int>(off) + len);
  }
  out.push_back(']');
}

BufId parse_buffer(Scanner& sc, size_t num_scratch) {
  sc.skip_ws();
  size_t b = sc.pos();
  std::string_view name = sc.ident("a buffer (in, out, s0, s1, ...)");
  if (name == "in") return kIn;
  if (name == "out") return kOut;
  if (name.size() >= 2 && name[0] == 's') {
    int64_t k = 0;
    bool digits = true;
    for (char c : name.substr(1)) {
      if (!is_digit(c))
        digits = false;
      else if (k < 1000)
        k = k * 10 + (c - '0');
    }
    if (digits) {
      if (static_cast<size_t>(k) >= num_scratch)
        sc.fail_msg(b, "buffer " + std::string(name) + " does not exist: this rank has " +
                           std::to_string(num_scratch) + " scratch buffer(s)" +
                           (num_scratch ? " (s0..s" + std::to_string(num_scratch - 1) + ")" : ""));
      return scratch_buf(static_cast<int>(k));
    }
  }
  sc.set_pos(b);
  sc.fail_here("a buffer (in, out, s0, s1, ...)");
}

}  // namespace

std::string too_large(std::string_view what, int64_t elems, int64_t elem_size) {
  return std::string(what) + " of " + std::to_string(elems) + " elements of " +
         std::to_string(elem_size) + " B: a buffer holds at most 2^48 elements and 2^63 bytes";
}

namespace {

struct ParsedRegion {
  BufId buf;
  int64_t off, len;
};

ParsedRegion parse_region(Scanner& sc, size_t num_scratch, int32_t elem_size) {
  ParsedRegion r;
  r.buf = parse_buffer(sc, num_scratch);
  sc.expect("[", "'[' opening a region such as out[0:4]");
  sc.skip_ws();
  size_t b = sc.pos();
  r.off = sc.integer("a region start", INT64_MIN, INT64_MAX);
  sc.expect(":", "':' between the start and the stop of a region");
  int64_t stop = sc.integer("a region stop", INT64_MIN, INT64_MAX);
  if (stop < r.off) sc.fail_msg(b, "region stop is before its start (a negative length)");
  if (__builtin_sub_overflow(stop, r.off, &r.len))
    sc.fail_msg(b, "region length does not fit in 64 bits");
  if (!buffer_fits(r.len, elem_size)) sc.fail_msg(b, too_large("a region", r.len, elem_size));
  sc.expect("]", "']' closing the region");
  return r;
}

}  // namespace

bool fast_op_body(Strict& c, int64_t P, size_t num_scratch, int32_t elem_size, Op& op) {
  return fast_op_body_in(c, P, num_scratch, elem_size, op);
}

namespace {

void write_deps(std::string& out, std::span<const OpId> deps) {
  out += "  after ";
  for (size_t k = 0; k < deps.size(); ++k) {
    if (k) out.push_back(',');
    write_int(out, deps[k]);
  }
}

void write_op_line(std::string& out, const RankView& r, size_t i) {
  out += "  ";
  write_int(out, static_cast<int64_t>(i));
  out += ": ";
  write_op_body(out, r.ops[i]);
  auto deps = r.deps_of(i);
  if (!deps.empty()) write_deps(out, deps);
  if (r.stage[i] != 0) {
    out += "  stage ";
    write_int(out, r.stage[i]);
  }
  out.push_back('\n');
}

}  // namespace

void write_int(std::string& out, int64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

void write_wide_int(std::string& out, wide_int v) {
  __extension__ typedef unsigned __int128 wide_uint;
  const bool neg = v < 0;
  wide_uint m = neg ? -static_cast<wide_uint>(v) : static_cast<wide_uint>(v);
  std::string digits;
  do {
    digits.push_back(static_cast<char>('0' + static_cast<int>(m % 10)));
    m /= 10;
  } while (m != 0);
  if (neg) out.push_back('-');
  out.append(digits.rbegin(), digits.rend());
}

void write_op_body(std::string& out, const Op& op) {
  out += to_string(op.kind);
  out.push_back(' ');
  switch (op.kind) {
    case OpKind::send:
    case OpKind::recv:
      write_region(out, op.buf, op.off, op.len);
      out += op.kind == OpKind::send ? " to " : " from ";
      if (op.kind == OpKind::recv && op.peer == kAnySource)
        out += "any";
      else
        write_int(out, op.peer);
      break;
    case OpKind::reduce:
      write_region(out, op.buf, op.off, op.len);
      out += " = ";
      if (op.side == Side::src_first) {
        write_region(out, op.src, op.src_off, op.len);
        out += " + ";
        out += buffer_name(op.buf);
      } else {
        out += buffer_name(op.buf);
        out += " + ";
        write_region(out, op.src, op.src_off, op.len);
      }
      break;
    case OpKind::copy:
      write_region(out, op.buf, op.off, op.len);
      out += " = ";
      write_region(out, op.src, op.src_off, op.len);
      break;
    case OpKind::compute:
    case OpKind::sleep:
      write_int(out, op.len);
      out += "ns";
      break;
  }
  // Written only when set, so that schedules without them read as they always did.
  if (op.cpu != 0) {
    out += " cpu ";
    write_int(out, op.cpu);
  }
  if (op.nic != 0) {
    out += " nic ";
    write_int(out, op.nic);
  }
}

Op parse_op_body(Scanner& sc, int64_t P, size_t num_scratch, int32_t elem_size) {
  constexpr std::string_view kinds = "an op (send, recv, reduce, copy, compute, sleep)";
  sc.skip_ws();
  size_t kb = sc.pos();
  std::string_view kind = sc.ident(kinds);
  Op op;
  if (kind == "send" || kind == "recv") {
    op.kind = kind == "send" ? OpKind::send : OpKind::recv;
    ParsedRegion r = parse_region(sc, num_scratch, elem_size);
    op.buf = r.buf, op.off = r.off, op.len = r.len;
    if (op.kind == OpKind::send)
      sc.expect("to", "'to' and the receiving rank");
    else
      sc.expect("from", "'from' and the sending rank (or 'any')");
    if (op.kind == OpKind::recv && sc.accept("any"))
      op.peer = kAnySource;
    else
      op.peer = static_cast<int32_t>(sc.integer_lazy(
          [&] {
            return op.kind == OpKind::recv ? "a rank of P = " + std::to_string(P) + " or 'any'"
                                           : "a rank of P = " + std::to_string(P);
          },
          0, P - 1));
  } else if (kind == "reduce" || kind == "copy") {
    op.kind = kind == "reduce" ? OpKind::reduce : OpKind::copy;
    ParsedRegion dst = parse_region(sc, num_scratch, elem_size);
    op.buf = dst.buf, op.off = dst.off, op.len = dst.len;
    sc.expect("=", "'=' after the destination region");
    ParsedRegion src;
    sc.skip_ws();
    size_t sb = sc.pos();
    if (op.kind == OpKind::reduce) {
      // Either "SRC[a:b] + DST" (src first) or "DST + SRC[a:b]" (dst first): the operand
      // written as a bare buffer name is the destination.
      size_t save = sc.pos();
      BufId first = parse_buffer(sc, num_scratch);
      bool bare = sc.peek() != '[';
      if (bare) {
        if (first != dst.buf)
          sc.fail_msg(sb, "the bare operand of a reduce must name the destination buffer " +
                              buffer_name(dst.buf));
        op.side = Side::dst_first;
        sc.expect("+", "'+' between the operands");
        sc.skip_ws();
        sb = sc.pos();
        src = parse_region(sc, num_scratch, elem_size);
      } else {
        sc.set_pos(save);
        src = parse_region(sc, num_scratch, elem_size);
        op.side = Side::src_first;
        sc.expect("+", "'+' between the operands");
        sc.skip_ws();
        size_t db = sc.pos();
        BufId again = parse_buffer(sc, num_scratch);
        if (again != dst.buf || sc.peek() == '[')
          sc.fail_msg(db, "expected the destination buffer " + buffer_name(dst.buf) +
                              " alone (as in 'reduce out[0:4] = s0[0:4] + out')");
      }
    } else {
      src = parse_region(sc, num_scratch, elem_size);
    }
    if (src.len != dst.len)
      sc.fail_msg(sb, "the source region has " + std::to_string(src.len) +
                          " elements, the destination " + std::to_string(dst.len));
    op.src = src.buf, op.src_off = src.off;
  } else if (kind == "compute" || kind == "sleep") {
    op.kind = kind == "compute" ? OpKind::compute : OpKind::sleep;
    op.len = sc.integer("a duration in nanoseconds (as in 500ns)", 0, INT64_MAX, false);
    if (!sc.accept_char_here('n') || !sc.accept_char_here('s') ||
        (sc.pos() < sc.line().size() && is_ident_char(sc.line()[sc.pos()])))
      sc.fail_here("'ns' right after the duration, as in 500ns");
  } else {
    sc.set_pos(kb);
    sc.fail_here(kinds);
  }
  if (sc.accept("cpu")) op.cpu = static_cast<uint8_t>(sc.integer("a CPU number", 0, kMaxCpu));
  if (sc.accept("nic")) op.nic = static_cast<uint8_t>(sc.integer("a NIC number", 0, kMaxNic));
  return op;
}

bool parse_stage(Scanner& sc, uint16_t& stage) {
  if (!sc.accept("stage")) return false;
  stage = static_cast<uint16_t>(sc.integer("a stage number", 0, UINT16_MAX));
  return true;
}

bool HeaderReader::line(Scanner& sc) {
  static constexpr std::string_view keys[10] = {"collective", "algorithm", "P",         "count",
                                                "elem_size",  "root",      "placement", "counts",
                                                "in_displs",  "out_displs"};
  sc.skip_ws();
  size_t b = sc.pos();
  int k = -1;
  for (int j = 0; j < 10; ++j)
    if (sc.accept(keys[j])) {
      k = j;
      break;
    }
  if (k < 0) return false;
  if (seen[k]) sc.fail_msg(b, "'" + std::string(keys[k]) + "' given twice");
  seen[k] = true;
  switch (k) {
    case 0: {
      sc.skip_ws();
      size_t cb = sc.pos();
      const std::string what = "a collective (" + std::string(collective_names()) + ")";
      std::string_view c = sc.ident(what);
      try {
        h.collective = collective_from_string(c);
      } catch (const Error&) {
        sc.set_pos(cb);
        sc.fail_here(what);
      }
      break;
    }
    case 1:
      h.algorithm = sc.string_value("an algorithm name (\"\" for none)");
      break;
    case 2:
      h.P = sc.integer("a process count", 1, kMaxTextP);
      break;
    case 3:
      h.count = sc.integer("an element count", 0, INT64_MAX);
      break;
    case 4:
      h.elem_size = static_cast<int32_t>(sc.integer("an element size in bytes", 1, INT32_MAX));
      break;
    case 5:
      h.root = sc.integer("a root rank", 0, INT64_MAX);
      break;
    case 6: {  // placement <ranks per node> <contiguous|round_robin>
      h.placement.rpn = sc.integer("ranks per node", 1, kMaxTextP);
      sc.skip_ws();
      size_t ob = sc.pos();
      std::string_view o = sc.ident("a rank order (contiguous, round_robin)");
      try {
        h.placement.order = node_order_from_string(o);
      } catch (const Error&) {
        sc.set_pos(ob);
        sc.fail_here("a rank order (contiguous, round_robin)");
      }
      break;
    }
    case 7:
    case 8:
    case 9: {  // counts / in_displs / out_displs: the entries, one or more, on one line
      std::vector<int64_t>& v = k == 7 ? h.counts : k == 8 ? h.in_displs : h.out_displs;
      const std::string what = k == 7 ? "an element count" : "a displacement in elements";
      do {
        v.push_back(sc.integer(what, 0, kMaxElems));
      } while (!sc.at_end());
      break;
    }
  }
  sc.expect_end();
  return true;
}

void HeaderReader::finish(const Scanner& where, size_t pos) const {
  std::string missing;
  for (int k : {0, 2, 3})
    if (!seen[k])
      missing += std::string(missing.empty() ? "" : ", ") + (k == 0   ? "collective"
                                                             : k == 2 ? "P"
                                                                      : "count");
  if (!missing.empty())
    where.fail_msg(pos,
                   "the header needs 'collective', 'P' and 'count' (missing: " + missing + ")");
  if (h.root >= h.P)
    where.fail_msg(
        pos, "root " + std::to_string(h.root) + " is not a rank of P = " + std::to_string(h.P));
  if (!buffer_fits(h.count, h.elem_size))
    where.fail_msg(pos, too_large("count: a buffer", h.count, h.elem_size));
  try {
    check_counts(h);
  } catch (const Error& e) {
    where.fail_msg(pos, e.what());
  }
}

}  // namespace io

using io::Scanner;

std::string header_to_text(const ScheduleHeader& h) {
  std::string out = "# collkit schedule v1\ncollective ";
  out += to_string(h.collective);
  out += "\nalgorithm ";
  out += io::quote_string(h.algorithm);
  out += "\nP ";
  io::write_int(out, h.P);
  out += "\ncount ";
  io::write_int(out, h.count);
  out += "\nelem_size ";
  io::write_int(out, h.elem_size);
  out += "\nroot ";
  io::write_int(out, h.root);
  if (h.placement.given()) {  // absent for flat schedules, so files from before still match
    out += "\nplacement ";
    io::write_int(out, h.placement.rpn);
    out += ' ';
    out += to_string(h.placement.order);
  }
  // Absent for a regular header, as placement is.
  for (const auto& [key, v] :
       {std::pair<const char*, const std::vector<int64_t>*>{"counts", &h.counts},
        {"in_displs", &h.in_displs},
        {"out_displs", &h.out_displs}}) {
    if (v->empty()) continue;
    out += '\n';
    out += key;
    for (int64_t x : *v) {
      out += ' ';
      io::write_int(out, x);
    }
  }
  out.push_back('\n');
  return out;
}

std::string rank_to_text(const ScheduleHeader& h, const RankView& r) {
  (void)h;
  std::string out = "rank ";
  io::write_int(out, r.rank);
  if (!r.scratch.empty()) {
    out += " scratch";
    for (int64_t e : r.scratch) {
      out.push_back(' ');
      io::write_int(out, e);
    }
  }
  out.push_back('\n');
  for (size_t i = 0; i < r.size(); ++i) io::write_op_line(out, r, i);
  return out;
}

std::string to_text(const Schedule& s) {
  std::string out = header_to_text(s.header);
  for (int64_t r = 0; r < s.num_ranks(); ++r) out += rank_to_text(s.header, s.rank(r));
  return out;
}

void write_text(const ScheduleHeader& h, const RankSource& rank, const Sink& sink) {
  sink(header_to_text(h));
  for (int64_t r = 0; r < h.P; ++r) sink(rank_to_text(h, rank(r)));
}

namespace {

// A dependency as written, kept until the rank's op count is known.
struct PendingDep {
  int64_t line, column;
};

// Line by line, so that a file streams through it: each rank goes to `on_rank` as its block
// ends (after `on_header` once the header is complete), and nothing else is kept.
class TextParser {
 public:
  using OnHeader = io::OnHeader;
  using OnRank = io::OnRank;
  TextParser(OnHeader on_header, OnRank on_rank)
      : on_header_(std::move(on_header)), on_rank_(std::move(on_rank)) {}

  void line(std::string_view line, int64_t number) {
    last_line_ = number;
    if (open_ && fast_op_line(line, number)) return;
    Scanner sc(line, number, "#");
    if (line.starts_with(io::kMagic)) {
      std::string_view v = line.substr(io::kMagic.size());
      v = v.substr(0, std::min(v.size(), v.find_first_of(" \t#")));
      if (v != "1")
        sc.fail_msg(io::kMagic.size(), "unsupported format version 'v" + Scanner::printable(v) +
                                           "' (this collkit reads v1)");
      return;
    }
    if (sc.at_end()) return;
    if (in_header_) {
      if (hr_.line(sc)) return;
      if (!sc.accept("rank"))
        sc.fail_here(
            "a header line (collective, algorithm, P, count, elem_size, root, placement, counts, "
            "in_displs, out_displs) or "
            "'rank'");
      hr_.finish(sc, 0);
      in_header_ = false;
      h_ = hr_.h;
      on_header_(h_);
      start_rank(sc);
      return;
    }
    if (sc.accept("rank")) {
      end_rank();
      start_rank(sc);
      return;
    }
    op_line(sc);
  }

  void finish() {
    Scanner eof("", last_line_ + 1);
    if (in_header_)
      eof.fail_msg(0,
                   "expected a header ('collective', 'P', 'count', ...) and 'rank 0', found "
                   "the end of the text");
    end_rank();
    if (ranks_ != h_.P)
      eof.fail_msg(0, "expected 'rank " + std::to_string(ranks_) +
                          "', found the end of the text (P = " + std::to_string(h_.P) +
                          " ranks are needed)");
  }

 private:
  void start_rank(Scanner& sc) {
    int64_t expected = ranks_;
    if (expected >= h_.P) {
      sc.skip_ws();
      sc.fail_msg(sc.pos(), "rank " + std::to_string(expected) +
                                " is one too many: the header says P = " + std::to_string(h_.P));
    }
    sc.integer_lazy(
        [&] { return "rank " + std::to_string(expected) + " (ranks come in order, from 0)"; },
        expected, expected);
    p_.clear(expected);
    deps_.clear();
    if (sc.accept("scratch")) {
      do {
        if (p_.scratch.size() >= static_cast<size_t>(kMaxScratch)) {
          sc.skip_ws();
          sc.fail_msg(sc.pos(), "more than " + std::to_string(kMaxScratch) + " scratch buffers");
        }
        sc.skip_ws();
        const size_t b = sc.pos();
        p_.scratch.push_back(sc.integer("a scratch buffer size in elements", 0, INT64_MAX));
        if (!buffer_fits(p_.scratch.back(), h_.elem_size))
          sc.fail_msg(b, io::too_large("a scratch buffer", p_.scratch.back(), h_.elem_size));
      } while (!sc.at_end());
    }
    sc.expect_end();
    open_ = true;
  }

  // "  N: BODY[  after D,D,...][  stage S]" as write_op_line writes it, without the Scanner:
  // false (having changed nothing) for anything else, which op_line then reads or refuses. An
  // accepted line is ASCII and read whole, so its columns are its bytes.
  bool fast_op_line(std::string_view line, int64_t number) {
    io::Strict c(line);
    int64_t i;
    Op op;
    if (!c.lit("  ") || !c.num(i) || i != static_cast<int64_t>(p_.ops.size()) || !c.lit(": ") ||
        !io::fast_op_body(c, h_.P, p_.scratch.size(), h_.elem_size, op))
      return false;
    tmp_.clear();
    if (c.lit("  after ")) {
      do {
        int64_t d;
        const int64_t column = c.p - line.data() + 1;
        if (!c.num(d, int64_t{kNoOp} - 1)) {
          deps_.resize(deps_.size() - tmp_.size());
          return false;
        }
        tmp_.push_back(static_cast<OpId>(d));
        deps_.push_back({number, column});
      } while (c.lit(","));
    }
    int64_t stage = 0;
    if ((c.lit("  stage ") && !c.num(stage, UINT16_MAX)) || !c.done()) {
      deps_.resize(deps_.size() - tmp_.size());
      return false;
    }
    p_.append(op, tmp_, static_cast<uint16_t>(stage));
    return true;
  }

  void op_line(Scanner& sc) {
    int64_t i = static_cast<int64_t>(p_.ops.size());
    sc.integer_lazy([&] { return "op index " + std::to_string(i); }, i, i);
    sc.expect(":", "':' after the op index");
    Op op = io::parse_op_body(sc, h_.P, p_.scratch.size(), h_.elem_size);
    tmp_.clear();
    uint16_t stage = 0;
    bool seen_after = false, seen_stage = false;
    while (!sc.at_end()) {
      if (!seen_after && sc.accept("after")) {
        seen_after = true;
        // Columns counted on from the last entry's (Scanner::column counts from the line's
        // start: per entry, that made a 10^5-entry list quadratic).
        const std::string_view line = sc.line();
        size_t at = 0;
        int64_t column = 1;
        do {
          sc.skip_ws();
          const size_t b = sc.pos();
          for (; at < b && at < line.size(); ++at)
            if ((static_cast<unsigned char>(line[at]) & 0xC0) != 0x80) ++column;
          auto d = sc.integer("an op index of this rank", 0, int64_t{kNoOp} - 1);
          tmp_.push_back(static_cast<OpId>(d));
          deps_.push_back({sc.line_number(), column});
        } while (sc.accept(","));
      } else if (!seen_stage && io::parse_stage(sc, stage)) {
        seen_stage = true;
      } else {
        sc.fail_here(seen_after && seen_stage ? "end of line"
                     : seen_after             ? "'stage' or end of line"
                     : seen_stage             ? "'after' or end of line"
                                              : "'after', 'stage' or end of line");
      }
    }
    p_.append(op, tmp_, stage);
  }

  void end_rank() {
    if (!open_) return;
    const size_t n = p_.ops.size();
    for (size_t k = 0; k < p_.deps.size(); ++k) {
      if (p_.deps[k] >= n) {
        const PendingDep& d = deps_[k];
        fail(ErrorKind::format, "line " + std::to_string(d.line) + ", column " +
                                    std::to_string(d.column) + ": op " +
                                    std::to_string(p_.deps[k]) + " does not exist: rank " +
                                    std::to_string(p_.rank) + " has " + std::to_string(n) + " ops");
      }
    }
    on_rank_(p_.view());
    ++ranks_;
    open_ = false;
  }

  OnHeader on_header_;
  OnRank on_rank_;
  io::HeaderReader hr_;
  ScheduleHeader h_;
  bool in_header_ = true;
  int64_t ranks_ = 0, last_line_ = 0;
  RankProgram p_;
  std::vector<OpId> tmp_;
  std::vector<PendingDep> deps_;
  bool open_ = false;
};

}  // namespace

Schedule from_text(std::string_view text) {
  return io::parse_whole<TextParser>(text);
}

void read_text(std::istream& in, const std::function<void(const ScheduleHeader&)>& on_header,
               const std::function<void(const RankView&)>& on_rank) {
  io::parse_stream<TextParser>(in, on_header, on_rank);
}

void check_header_fields(const ScheduleHeader& h) {
  auto bad = [](const std::string& m) { fail(ErrorKind::format, m); };
  if (h.P < 1 || h.P > io::kMaxTextP) bad("P = " + std::to_string(h.P) + " is not in [1, 2^31]");
  if (h.count < 0) bad("count " + std::to_string(h.count) + " is negative");
  check_buffer_limits(h);
  if (h.elem_size < 1) bad("elem_size " + std::to_string(h.elem_size) + " is not positive");
  if (h.root < 0 || h.root >= h.P) bad("root " + std::to_string(h.root) + " is not a rank");
  if (h.placement.rpn < 0) bad("placement: ranks per node " + std::to_string(h.placement.rpn));
  try {
    check_counts(h);
  } catch (const Error& e) {
    bad(e.what());
  }
}

void check_buffer_limits(const ScheduleHeader& h) {
  if (!buffer_fits(h.count, h.elem_size))
    fail(ErrorKind::format, io::too_large("count: a buffer", h.count, h.elem_size));
}

void check_buffer_limits(const ScheduleHeader& h, const RankView& v) {
  auto bad = [](const std::string& m) { fail(ErrorKind::format, m); };
  const std::string rank = "rank " + std::to_string(v.rank);
  for (int64_t e : v.scratch)
    if (e >= 0 && !buffer_fits(e, h.elem_size))
      bad(rank + ": " + io::too_large("a scratch buffer", e, h.elem_size));
  for (size_t i = 0; i < v.size(); ++i) {
    const Op& op = v.ops[i];
    if (op.len >= 0 && op.kind != OpKind::compute && op.kind != OpKind::sleep &&
        !buffer_fits(op.len, h.elem_size))
      bad(rank + ", op " + std::to_string(i) + ": " +
          io::too_large("a region", op.len, h.elem_size));
  }
}

void check_fields(const Schedule& s) {
  const ScheduleHeader& h = s.header;
  check_header_fields(h);
  if (s.num_ranks() != h.P)
    fail(ErrorKind::format, "the schedule holds " + std::to_string(s.num_ranks()) +
                                " ranks, P = " + std::to_string(h.P));
  for (int64_t r = 0; r < s.num_ranks(); ++r) check_rank_fields(h, s.rank(r));
}

void check_rank_fields(const ScheduleHeader& h, const RankView& v) {
  auto bad = [](const std::string& m) { fail(ErrorKind::format, m); };
  const int64_t r = v.rank;
  {
    auto where = [&](size_t i) {
      return "rank " + std::to_string(r) + ", op " + std::to_string(i) + ": ";
    };
    if (v.scratch.size() > static_cast<size_t>(kMaxScratch))
      bad("rank " + std::to_string(r) + " has more than 250 scratch buffers");
    for (int64_t e : v.scratch)
      if (e < 0) bad("rank " + std::to_string(r) + " has a scratch buffer of negative size");
    check_buffer_limits(h, v);
    const size_t nbuf = kFirstScratch + v.scratch.size();
    for (size_t i = 0; i < v.size(); ++i) {
      const Op& op = v.ops[i];
      if (static_cast<int>(op.kind) > static_cast<int>(OpKind::sleep))
        bad(where(i) + "unknown op kind " + std::to_string(static_cast<int>(op.kind)));
      if (op.len < 0) bad(where(i) + "negative length " + std::to_string(op.len));
      bool has_buf = op.kind != OpKind::compute && op.kind != OpKind::sleep;
      bool has_src = op.kind == OpKind::reduce || op.kind == OpKind::copy;
      if (has_buf && op.buf >= nbuf)
        bad(where(i) + "buffer " + buffer_name(op.buf) + " does not exist");
      if (has_src && op.src >= nbuf)
        bad(where(i) + "buffer " + buffer_name(op.src) + " does not exist");
      int64_t stop;
      if (has_buf && __builtin_add_overflow(op.off, op.len, &stop))
        bad(where(i) + "region end does not fit in 64 bits");
      if (has_src && __builtin_add_overflow(op.src_off, op.len, &stop))
        bad(where(i) + "source region end does not fit in 64 bits");
      if (op.kind == OpKind::reduce && static_cast<int>(op.side) > 1)
        bad(where(i) + "unknown reduce side");
      if ((op.kind == OpKind::send || op.kind == OpKind::recv) && (op.peer < 0 || op.peer >= h.P) &&
          !(op.kind == OpKind::recv && op.peer == kAnySource))
        bad(where(i) + "peer " + std::to_string(op.peer) +
            " is not a rank of P = " + std::to_string(h.P));
      for (OpId d : v.deps_of(i))
        if (d >= v.size())
          bad(where(i) + "depends on op " + std::to_string(d) + ", which does not exist");
    }
  }
}

}  // namespace collkit
