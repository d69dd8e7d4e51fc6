// GOAL (LogGOPSim's schedule language) writer and reader; the mapping is described in
// collkit/goal.hpp and docs/schedule-formats.md.
#include "collkit/goal.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <istream>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "collkit/error.hpp"
#include "collkit/registry.hpp"
#include "collkit/text.hpp"
#include "scanner.hpp"
#include "text_detail.hpp"

namespace collkit {

namespace {

using io::Scanner;
constexpr std::string_view kDirective = "// collkit:";
constexpr int64_t kMaxGoalP = int64_t{1} << 31;
constexpr int64_t kMaxTag = int64_t{UINT32_MAX} - 1;  // UINT32_MAX is LogGOPSim's "any tag"

// a * b as decimal, exact even when it overflows 64 bits (only invalid ops get that far).
void write_product(std::string& out, int64_t a, int64_t b) {
  int64_t p;
  if (!__builtin_mul_overflow(a, b, &p)) {
    io::write_int(out, p);
    return;
  }
  io::write_wide_int(out, static_cast<io::wide_int>(a) * b);
}

// The calc time of a reduce or copy of `len` elements. A time past 2^63 ns (292 years) is
// refused, not capped: a capped calc would be a wrong time in the file, said nowhere.
int64_t calc_cost(int64_t len, int32_t elem_size, double ns_per_byte, const char* what,
                  const char* option) {
  double v = std::round(static_cast<double>(len) * elem_size * ns_per_byte);
  if (!(v > 0)) return 0;
  if (v >= 0x1p63) {
    char msg[256];
    std::snprintf(msg, sizeof msg,
                  "the GOAL calc of a %s of %lld x %d B at %g ns/B would be past 2^63 ns (292 "
                  "years): lower %s",
                  what, static_cast<long long>(len), elem_size, ns_per_byte, option);
    fail(ErrorKind::invalid_argument, msg);
  }
  return static_cast<int64_t>(v);
}

// The calc a reduce, copy, compute or sleep op is written as.
int64_t calc_of(const Op& op, int32_t elem_size, const GoalOptions& o) {
  if (op.kind == OpKind::reduce)
    return calc_cost(op.len, elem_size, o.reduce_ns_per_byte, "reduce",
                     "--gamma (reduce_ns_per_byte)");
  if (op.kind == OpKind::copy)
    return calc_cost(op.len, elem_size, o.copy_ns_per_byte, "copy",
                     "--copy-beta (copy_ns_per_byte)");
  return op.len;
}

// Whether `digits` (decimal, no leading zero) is a * b: as numbers when both fit 64 bits, else
// as text (exact past 64 bits).
bool is_product(std::string_view digits, int64_t a, int64_t b) {
  int64_t p;
  if (digits.size() <= 18 && !__builtin_mul_overflow(a, b, &p)) {
    int64_t v = 0;
    for (char ch : digits) v = v * 10 + (ch - '0');
    return v == p;
  }
  std::string text;
  write_product(text, a, b);
  return text == digits;
}

void write_label_dep(std::string& out, size_t i, OpId d) {
  out += "l";
  io::write_int(out, static_cast<int64_t>(i));
  out += " requires l";
  io::write_int(out, d);
  out.push_back('\n');
}

}  // namespace

void check_goal_calcs(const ScheduleHeader& h, const RankSource& rank, const GoalOptions& o) {
  // No region holds more than kMaxElems elements (buffer_fits): below this, no calc can refuse.
  const double most = static_cast<double>(kMaxElems) * h.elem_size *
                      std::max(o.reduce_ns_per_byte, o.copy_ns_per_byte);
  if (!(most >= 0x1p62)) return;
  for (int64_t r = 0; r < h.P; ++r) {
    RankView v = rank(r);
    for (size_t i = 0; i < v.size(); ++i)
      if (v.ops[i].kind == OpKind::reduce || v.ops[i].kind == OpKind::copy)
        (void)calc_of(v.ops[i], h.elem_size, o);
  }
}

void write_goal(const ScheduleHeader& h, const RankSource& rank, const Sink& sink,
                const GoalOptions& o) {
  std::string out =
      "// GOAL schedule for LogGOPSim, written by collkit. The \"// collkit:\" lines carry what\n"
      "// GOAL cannot say (buffers, offsets, reduce sides, stages); collkit reads them back.\n";
  out += kDirective;
  out += " schedule v1\n";
  std::string header = header_to_text(h);
  size_t b = header.find('\n') + 1;  // skip "# collkit schedule v1"
  while (b < header.size()) {
    size_t e = header.find('\n', b);
    out += kDirective;
    out.push_back(' ');
    out.append(header, b, e - b + 1);
    b = e + 1;
  }
  out += "num_ranks ";
  io::write_int(out, h.P);
  out.push_back('\n');

  // Sequence numbers of messages per peer of the rank being written: memory of one rank's ops,
  // whatever P, so that a schedule streams from its generator to a file.
  std::unordered_map<int64_t, std::pair<uint32_t, uint32_t>> seqs;  // peer -> sent, received
  std::vector<size_t> deferred;
  for (int64_t r = 0; r < h.P; ++r) {
    sink(out);
    out.clear();
    RankView v = rank(r);
    seqs.clear();
    out += "\nrank ";
    io::write_int(out, r);
    out += " {\n";
    if (!v.scratch.empty()) {
      out += kDirective;
      out += " scratch";
      for (int64_t e : v.scratch) {
        out.push_back(' ');
        io::write_int(out, e);
      }
      out.push_back('\n');
    }
    deferred.clear();
    // A rank with a wildcard receive matches every message by its source alone (LogGOPSim's
    // first posted receive that fits): its receives are written with any tag.
    const bool any_tag = std::any_of(v.ops.begin(), v.ops.end(), [](const Op& op) {
      return op.kind == OpKind::recv && op.peer == kAnySource;
    });
    for (size_t i = 0; i < v.size(); ++i) {
      const Op& op = v.ops[i];
      out += kDirective;
      out.push_back(' ');
      io::write_int(out, static_cast<int64_t>(i));
      out += ": ";
      io::write_op_body(out, op);
      if (v.stage[i] != 0) {
        out += " stage ";
        io::write_int(out, v.stage[i]);
      }
      out += "\nl";
      io::write_int(out, static_cast<int64_t>(i));
      out += ": ";
      bool message = op.kind == OpKind::send || op.kind == OpKind::recv;
      if (message) {
        out += op.kind == OpKind::send ? "send " : "recv ";
        write_product(out, op.len, h.elem_size);
        out += op.kind == OpKind::send ? "b to " : "b from ";
        io::write_int(out, op.peer);
        int64_t tag = 0;
        if (any_tag && op.kind == OpKind::recv) {
          tag = -1;
        } else if (op.peer >= 0 && op.peer < h.P) {
          auto& seq = seqs[op.peer];
          tag = (op.kind == OpKind::send ? seq.first : seq.second)++;
        }
        out += " tag ";
        io::write_int(out, tag);
      } else {
        out += "calc ";
        io::write_int(out, calc_of(op, h.elem_size, o));
      }
      if (op.cpu != 0) {
        out += " cpu ";
        io::write_int(out, op.cpu);
      }
      if (op.nic != 0) {
        out += " nic ";
        io::write_int(out, op.nic);
      }
      out.push_back('\n');
      // LogGOPSim needs a label defined before a `requires` names it: an op that waits on a
      // later one has its requires lines written at the end of the block.
      auto deps = v.deps_of(i);
      bool backward = std::all_of(deps.begin(), deps.end(), [&](OpId d) { return d < i; });
      if (backward)
        for (OpId d : deps) write_label_dep(out, i, d);
      else
        deferred.push_back(i);
    }
    for (size_t i : deferred)
      for (OpId d : v.deps_of(i)) write_label_dep(out, i, d);
    out += "}\n";
  }
  sink(out);
}

std::string to_goal(const Schedule& s, const GoalOptions& o) {
  if (!s.complete()) fail(ErrorKind::invalid_argument, "the schedule does not hold all P ranks");
  std::string out;
  write_goal(
      s.header, [&](int64_t r) { return s.rank(r); }, [&](std::string_view t) { out += t; }, o);
  return out;
}

namespace {

enum class GoalKind : uint8_t { send, recv, calc };

struct GoalOp {
  GoalKind kind;
  int64_t value;  // send / recv: bytes; calc: the cost
  // collkit files: the size as written, since len * elem_size may exceed 64 bits. A view into
  // the parser's copy of the text.
  std::string_view size_digits;
  int64_t peer = -1;
  int64_t tag = 0;  // -1: any tag
  uint8_t cpu = 0, nic = 0;
  int64_t line, column;
  Op op;  // from the collkit comment, or built from the GOAL op
  uint16_t stage = 0;
};

struct GoalDep {
  std::string from, to;  // `from requires to`
  bool start;            // irequires
  int64_t line, col_from, col_to;
  uint32_t a = UINT32_MAX, t = UINT32_MAX;  // the ops, when both labels were known at once
};

constexpr uint32_t kNoLabel = UINT32_MAX;
constexpr uint32_t kMaxNumbered = 1u << 22;

// A rank's labels: the op each names. Labels l0, l1, ... (as collkit and Schedgen write them,
// digits without a leading zero, below 2^22) are looked up by their number; others by name.
class Labels {
 public:
  // k for a label l<k> looked up by number, else kNoLabel.
  static uint32_t number(std::string_view label) {
    if (label.size() < 2 || label.size() > 8 || label[0] != 'l' ||
        (label[1] == '0' && label.size() > 2))
      return kNoLabel;
    uint32_t k = 0;
    for (size_t i = 1; i < label.size(); ++i) {
      if (!io::is_digit(label[i])) return kNoLabel;
      k = k * 10 + static_cast<uint32_t>(label[i] - '0');
    }
    return k < kMaxNumbered ? k : kNoLabel;
  }
  // The op of label l<k>, k a number().
  uint32_t at(uint32_t k) const { return k < numbered_.size() ? numbered_[k] : kNoLabel; }
  uint32_t find(std::string_view label) const {
    const uint32_t k = number(label);
    if (k != kNoLabel) return k < numbered_.size() ? numbered_[k] : kNoLabel;
    auto it = named_.find(std::string(label));
    return it == named_.end() ? kNoLabel : it->second;
  }
  // False if the label was defined already.
  bool define(std::string_view label, uint32_t op) {
    const uint32_t k = number(label);
    if (k == kNoLabel) return named_.emplace(std::string(label), op).second;
    if (k >= numbered_.size())
      numbered_.resize(std::max<size_t>(k + 1, numbered_.size() * 2), kNoLabel);
    if (numbered_[k] != kNoLabel) return false;
    numbered_[k] = op;
    return true;
  }
  void clear() {
    numbered_.clear();
    named_.clear();
  }

 private:
  std::vector<uint32_t> numbered_;
  std::unordered_map<std::string, uint32_t> named_;
};

struct GoalRank {
  std::vector<GoalOp> ops;
  std::vector<GoalDep> pending;                           // resolved when the block closes
  std::vector<std::pair<uint32_t, uint32_t>> requires_;   // (op, op it waits on), file order
  std::vector<std::pair<uint32_t, uint32_t>> irequires_;  // (op, op whose start it waits on)
  std::vector<int64_t> scratch;
  // Takes the storage of `o` (a rank done with), emptied: no allocation per block.
  void reuse(GoalRank& o) {
    auto take = [](auto& to, auto& from) {
      from.clear();
      if (to.empty() && from.capacity() > to.capacity()) std::swap(to, from);
    };
    take(ops, o.ops);
    take(requires_, o.requires_);
    take(irequires_, o.irequires_);
    take(scratch, o.scratch);
  }
};

// Messages per peer within one block, for the tag check: open addressing, cleared by the slots
// it used (a node per peer in an unordered_map was an allocation per message).
class PeerCounter {
 public:
  // The count of `peer` so far, then one more.
  int64_t next(int64_t peer) {
    if ((used_.size() + 1) * 2 > slots_.size()) grow();
    size_t i = slot(peer);
    if (slots_[i].first == kFree) {
      slots_[i] = {peer, 0};
      used_.push_back(i);
    }
    return slots_[i].second++;
  }
  // True, counting it, if `tag` is the count of `peer` so far; false (nothing counted) if not.
  bool take(int64_t peer, int64_t tag) {
    if ((used_.size() + 1) * 2 > slots_.size()) grow();
    const size_t i = slot(peer);
    if (slots_[i].first == kFree) {
      if (tag != 0) return false;
      slots_[i] = {peer, 1};
      used_.push_back(i);
      return true;
    }
    if (slots_[i].second != tag) return false;
    ++slots_[i].second;
    return true;
  }
  void clear() {
    for (size_t i : used_) slots_[i].first = kFree;
    used_.clear();
  }

 private:
  static constexpr int64_t kFree = INT64_MIN;
  size_t slot(int64_t peer) const {
    const size_t mask = slots_.size() - 1;
    size_t i =
        static_cast<size_t>(static_cast<uint64_t>(peer) * 0x9E3779B97F4A7C15ull >> 20) & mask;
    while (slots_[i].first != kFree && slots_[i].first != peer) i = (i + 1) & mask;
    return i;
  }
  void grow() {
    std::vector<std::pair<int64_t, int64_t>> old(std::max<size_t>(64, slots_.size() * 2),
                                                 {kFree, 0});
    old.swap(slots_);
    std::vector<size_t> was;
    was.swap(used_);
    for (size_t i : was) {
      const size_t j = slot(old[i].first);
      slots_[j] = old[i];
      used_.push_back(j);
    }
  }
  std::vector<std::pair<int64_t, int64_t>> slots_;
  std::vector<size_t> used_;
};

struct PendingOp {
  Op op;
  uint16_t stage;
  int64_t line, column;
};

// A plain GOAL file read from a stream in two passes: the first keeps only every send's
// destination, tag and op index (12 bytes a send), the second reads the ranks again and pairs
// each rank's receives with the sends to it by tag as it goes, so that a plain file costs its
// sends, not its size. A pairing the second pass cannot make (a send or receive without its
// match, or tags a wildcard rank cannot take) sends the reader back to the whole-file pairing,
// which says what is wrong where.
struct PairingFailed {};

struct SendIndex {
  struct Entry {
    uint32_t peer, tag, op;  // the first pass: peer = the destination; then the source
  };
  // First pass: each block's sends, in block order, in chunks (no reallocation of it all).
  std::vector<std::vector<Entry>> chunks;
  std::vector<std::pair<uint32_t, uint32_t>> blocks;  // (rank, its sends), in block order
  bool in_order = true;
  // Then: the sends to each rank, by (source, op): to[begin[r] .. begin[r + 1]).
  std::vector<uint64_t> begin;
  std::vector<Entry> to;

  void add(uint32_t dst, uint32_t tag, uint32_t op) {
    if (chunks.empty() || chunks.back().size() == chunks.back().capacity()) {
      chunks.emplace_back();
      chunks.back().reserve(size_t{1} << 20);
    }
    chunks.back().push_back({dst, tag, op});
  }
  // Sorts the sends by destination (counting sort: stable, so by source and op within one when
  // the blocks came in rank order).
  void build(int64_t P) {
    begin.assign(static_cast<size_t>(P) + 2, 0);
    for (const auto& c : chunks)
      for (const Entry& e : c) ++begin[e.peer + 2];
    for (size_t i = 2; i < begin.size(); ++i) begin[i] += begin[i - 1];
    to.resize(begin.back());
    size_t chunk = 0, at = 0;
    for (auto [rank, n] : blocks)
      for (uint32_t k = 0; k < n; ++k) {
        if (at == chunks[chunk].size()) {
          std::vector<Entry>().swap(chunks[chunk]);
          ++chunk, at = 0;
        }
        const Entry e = chunks[chunk][at++];
        to[begin[e.peer + 1]++] = {rank, e.tag, e.op};
      }
    chunks.clear();
    chunks.shrink_to_fit();
    begin.pop_back();  // begin[r] .. begin[r + 1]
    if (!in_order)
      for (size_t r = 0; r + 1 < begin.size(); ++r)
        std::sort(to.begin() + static_cast<std::ptrdiff_t>(begin[r]),
                  to.begin() + static_cast<std::ptrdiff_t>(begin[r + 1]),
                  [](const Entry& a, const Entry& b) {
                    return a.peer != b.peer ? a.peer < b.peer : a.op < b.op;
                  });
  }
};

enum class GoalPass : uint8_t { whole, index, paired };

// The text GoalParser::block expects before op i's fields, compared as bytes (reading the
// numbers cost more): "// collkit: i: ", "li: ", and before a requires line of op i - 1,
// "l<i - 1> requires l". The digits of a label as Labels::number reads it (no leading zero) are
// the only spelling that matches. Buffers of whole words, as io::Padded::bytes reads them.
class Prefixes {
 public:
  explicit Prefixes(uint32_t k) {
    if (k != 0) {  // the requires prefix of k - 1
      n_ = static_cast<size_t>(std::to_chars(d_, d_ + 10, k - 1).ptr - d_);
      set_requires();
    }
    n_ = static_cast<size_t>(std::to_chars(d_, d_ + 10, k).ptr - d_);
    build();
  }
  std::string_view comment() const { return {com_, ncom_}; }
  std::string_view label() const { return {lab_, nlab_}; }
  std::string_view requires_of_last() const { return {req_, nreq_}; }
  void next() {  // k + 1: the requires prefix names k
    set_requires();
    size_t j = n_;
    while (j > 0 && d_[j - 1] == '9') d_[--j] = '0';
    if (j > 0) {
      ++d_[j - 1];
    } else {
      std::memmove(d_ + 1, d_, n_++);
      d_[0] = '1';
    }
    build();
  }

 private:
  void set_requires() {
    std::memcpy(req_ + 1, d_, sizeof d_);
    std::memcpy(req_ + 1 + n_, " requires l", 11);
    nreq_ = n_ + 12;
  }
  void build() {
    std::memcpy(com_ + 12, d_, sizeof d_);
    std::memcpy(com_ + 12 + n_, ": ", 2);
    ncom_ = n_ + 14;
    std::memcpy(lab_ + 1, d_, sizeof d_);
    std::memcpy(lab_ + 1 + n_, ": ", 2);
    nlab_ = n_ + 3;
  }
  char d_[16] = {};  // the digits of k (at most 10)
  size_t n_;
  char com_[32] = "// collkit: ", lab_[24] = "l", req_[32] = "l";
  size_t ncom_ = 0, nlab_ = 0, nreq_ = 0;
};

// RankProgram::append's work for block(), its vector appends inlined (flatten): std::vector's
// push_back, left out of line in a function as large as block(), is a call of ~25 instructions.
[[gnu::flatten]] void append_op(RankProgram& p, const Op& op, uint16_t stage) {
  p.ops.push_back(op);
  p.stage.push_back(stage);
  p.dep_begin.push_back(static_cast<uint32_t>(p.deps.size()));
}
[[gnu::flatten]] void append_dep(RankProgram& p, OpId d) {
  p.deps.push_back(d);
  p.dep_begin.back() = static_cast<uint32_t>(p.deps.size());
}

[[noreturn]] void fail_line(int64_t line, int64_t column, const std::string& msg) {
  fail(ErrorKind::format,
       "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + msg);
}

class GoalParser {
 public:
  using OnHeader = io::OnHeader;
  using OnRank = io::OnRank;
  // Ranks go to `on_rank` in order: a collkit file's as their blocks close (memory of the
  // ranks read ahead of the next one, none for a file written by collkit), a plain file's at
  // the end (its messages are paired by tag across the whole file).
  GoalParser(OnHeader on_header, OnRank on_rank)
      : on_header_(std::move(on_header)), on_rank_(std::move(on_rank)) {}
  // A stream read twice (plain files; a collkit file is read once in the first pass).
  GoalParser(OnHeader on_header, OnRank on_rank, GoalPass pass, SendIndex* index)
      : on_header_(std::move(on_header)),
        on_rank_(std::move(on_rank)),
        pass_(pass),
        index_(index),
        direct_ok_(true) {}
  // After the first pass: a plain file, its sends indexed, to be read again.
  bool needs_second_pass() const { return pass_ == GoalPass::index && !collkit_; }

  void line(std::string_view raw, int64_t number) {
    number_ = number;
    // A line block() did not take: what it read becomes GoalOps first (a block's closing line,
    // a blank one and its scratch line before any op leave it be).
    if (direct_ && !raw.empty() && raw != "}" &&
        !(program_.ops.empty() && raw.starts_with("// collkit: scratch")))
      spill();
    if (cur_ >= 0 && !in_block_ && fast_line(raw)) return;
    std::string_view line = blank_block_comments(raw, number);
    size_t c = line.find("//");
    if (c != std::string_view::npos && line.substr(c).starts_with(kDirective)) {
      Scanner before(line.substr(0, c), number);
      if (!before.at_end())
        before.fail_msg(before.pos(), "a '// collkit:' comment must stand on its own line");
      Scanner sc(line, number, {}, c + kDirective.size());
      directive(sc);
      return;
    }
    Scanner sc(line, number, "//");
    while (!sc.at_end()) statement(sc);
  }

  // The lines of a block as collkit and Schedgen write them, read without the Scanner: false
  // (having changed nothing) for anything else, which the Scanner then reads or refuses. An
  // accepted line is ASCII and read whole, so it holds no comment and its columns are its bytes.
  bool fast_line(std::string_view s) {
    if (s.empty()) return true;
    io::Strict c(s);
    if (c.lit("l")) return fast_op(s, c);
    if (s == "}") {
      close_block();
      return true;
    }
    if (collkit_ && !pending_ && c.lit("// collkit: ")) return fast_directive(c);
    return false;
  }

  // "lN: send Xb to R tag T", "lN: recv Xb from R tag T", "lN: calc V", "lN requires lM".
  bool fast_op(std::string_view s, io::Strict& c) {
    while (!c.done() && io::is_digit(*c.p)) ++c.p;
    const std::string_view label(s.data(), static_cast<size_t>(c.p - s.data()));
    const uint32_t k = Labels::number(label);
    if (k == kNoLabel) return false;
    if (c.lit(" requires l")) {
      const char* t = c.p - 1;
      while (!c.done() && io::is_digit(*c.p)) ++c.p;
      const uint32_t kt = Labels::number({t, static_cast<size_t>(c.p - t)});
      if (!c.done() || kt == kNoLabel || !rank_->pending.empty()) return false;
      const uint32_t a = labels_.at(k), to = labels_.at(kt);
      if (a == kNoLabel || to == kNoLabel) return false;
      rank_->requires_.push_back({a, to});
      return true;
    }
    if (!c.lit(": ")) return false;
    GoalOp op;
    op.line = number_;
    op.column = c.p - s.data() + 1;
    const bool send = c.lit("send "), recv = !send && c.lit("recv ");
    if (send || recv) {
      op.kind = send ? GoalKind::send : GoalKind::recv;
      if (collkit_) {
        const char* d = c.p;
        while (!c.done() && io::is_digit(*c.p)) ++c.p;
        if (c.p == d) return false;
        op.size_digits = {d, static_cast<size_t>(c.p - d)};
        while (op.size_digits.size() > 1 && op.size_digits[0] == '0')
          op.size_digits.remove_prefix(1);
        op.value = 0;
      } else if (!c.num(op.value, kMaxElems)) {
        return false;
      }
      if (!(send ? c.lit("b to ") : c.lit("b from ")) || !c.num(op.peer, P_ - 1) ||
          !(c.done() || (c.lit(" tag ") && c.num(op.tag, kMaxTag) && c.done())))
        return false;
    } else if (c.lit("calc ")) {
      op.kind = GoalKind::calc;
      if (!c.num(op.value) || !c.done()) return false;
    } else {
      return false;
    }
    add_op(op, label);
    return true;
  }

  // "// collkit: N: BODY" with an op body as the text form writes it (no cpu, nic or 'any'),
  // then " stage S" or nothing.
  bool fast_directive(io::Strict& c) {
    GoalRank& r = *rank_;
    int64_t i;
    if (!c.num(i) || i != static_cast<int64_t>(r.ops.size()) || !c.lit(": ")) return false;
    PendingOp p;
    if (!io::fast_op_body(c, hr_.h.P, r.scratch.size(), hr_.h.elem_size, p.op)) return false;
    p.stage = 0;
    int64_t stage;
    if (c.lit(" stage ")) {
      if (!c.num(stage, UINT16_MAX)) return false;
      p.stage = static_cast<uint16_t>(stage);
    }
    if (!c.done()) return false;
    p.line = number_;
    p.column = static_cast<int64_t>(kDirective.size()) + 2;  // after "// collkit: "
    pending_ = p;
    return true;
  }

  // ---- a collkit file's blocks read straight into the rank's program --------------------------
  // While a block holds its ops as write_goal writes them (each op's comment, its GOAL op, then
  // its requires lines on earlier ops), read_goal hands the buffered text to block(), which
  // appends each op to program_ as it comes: no GoalOp, label table or sort of the deps when
  // the block closes (most of what reading cost). Anything else stops it before that line, and
  // line() first turns what it read into GoalOps (spill): every error is line()'s own.
  bool direct() const { return direct_; }
  // Reads whole lines from the start of `text` (line `number` was the last read); returns the
  // bytes and lines taken (none: the next line is line()'s).
  std::pair<size_t, int64_t> block(std::string_view text, int64_t number) {
    const char* const begin = text.data();
    const char* p = begin;
    int64_t n = 0;
    RankProgram& prog = program_;
    const size_t num_scratch = rank_->scratch.size();
    // Each line is parsed up to its '\n' (no search for it first): a line whose shape differs
    // stops before the '\n' and is left to line(). The text is followed by a NUL (buffered()).
    io::Padded c{begin, begin + text.size()};
    auto eol = [&c] {
      if (*c.p != '\n') return false;
      ++c.p;
      return true;
    };
    const uint32_t first = static_cast<uint32_t>(prog.ops.size());
    Prefixes x(first);
    for (;;) {
      c.p = p;
      const uint32_t i = static_cast<uint32_t>(prog.ops.size());
      if (i != 0 && c.bytes(x.requires_of_last().data(), x.requires_of_last().size())) {
        uint32_t to;  // a requires line of op i-1
        if (!direct_earlier(c, i - 1, to) || !eol()) break;
        append_dep(prog, to);
        p = c.p, ++n;
        continue;
      }
      if (c.lit("}\n")) {
        number_ = number + n + 1;
        close_block();
        return {static_cast<size_t>(c.p - begin), n + 1};
      }
      int64_t stage = 0;
      Op op{};
      if (!c.bytes(x.comment().data(), x.comment().size()) ||
          !io::fast_op_body_in(c, hr_.h.P, num_scratch, hr_.h.elem_size, op))
        break;
      const char* const peer = c.at;  // a message's peer: its body's last number, up to c.p
      const size_t peer_n = static_cast<size_t>(c.p - peer);
      if ((c.lit(" stage ") && !c.num(stage, UINT16_MAX)) || !eol() ||
          !c.bytes(x.label().data(), x.label().size()) || !direct_goal_op(c, op, {peer, peer_n}) ||
          !eol() || !direct_tag(op))
        break;
      append_op(prog, op, static_cast<uint16_t>(stage));
      op_lines_.push_back(number + n + 2);
      p = c.p, n += 2;
      x.next();
    }
    number_ = number + n;
    return {static_cast<size_t>(p - begin), n};
  }

  void finish() {
    if (in_block_) fail_line(block_line_, block_column_, "unterminated '/*' comment");
    Scanner eof("", number_ + 1);
    if (cur_ >= 0) eof.fail_msg(0, "rank " + std::to_string(cur_) + " has no closing '}'");
    if (P_ < 0) eof.fail_msg(0, "no 'num_ranks' line");
    if (closed_ != P_) {
      int64_t missing = 0;
      while (seen(missing)) ++missing;
      eof.fail_msg(0, "rank " + std::to_string(missing) + " has no block (num_ranks is " +
                          std::to_string(P_) + "; write 'rank " + std::to_string(missing) +
                          " { }' for a rank without ops)");
    }
    if (collkit_) return;
    if (pass_ == GoalPass::whole) return build();
    if (pass_ == GoalPass::index) return index_->build(P_);
  }

 private:
  // Block comments become blanks so that columns stay where they were; one may span lines.
  std::string_view blank_block_comments(std::string_view raw, int64_t number) {
    if (raw.find("/*") == std::string_view::npos && !in_block_) return raw;
    blanked_.assign(raw);
    std::string& out = blanked_;
    size_t i = 0;
    if (in_block_) {
      size_t e = raw.find("*/");
      size_t stop = e == std::string_view::npos ? raw.size() : e + 2;
      for (size_t k = 0; k < stop; ++k) out[k] = ' ';
      if (e == std::string_view::npos) return out;
      in_block_ = false;
      i = stop;
    }
    for (; i + 1 < out.size(); ++i) {
      if (out[i] == '/' && out[i + 1] == '/') break;
      if (out[i] == '/' && out[i + 1] == '*') {
        block_line_ = number;
        block_column_ = Scanner(raw, number).column(i);
        size_t e = raw.find("*/", i + 2);
        size_t stop = e == std::string_view::npos ? raw.size() : e + 2;
        for (size_t k = i; k < stop; ++k) out[k] = ' ';
        if (e == std::string_view::npos) {
          in_block_ = true;
          break;
        }
        i = stop - 1;
      }
    }
    return out;
  }

  // The number k of a label l<k> after its 'l', as Labels::number reads it (digits, no leading
  // zero, below 2^22).
  static bool label_number(io::Padded& c, uint32_t& k) {
    int64_t v;
    if (!c.num(v, kMaxNumbered - 1) || (*c.at == '0' && c.p - c.at > 1)) return false;
    k = static_cast<uint32_t>(v);
    return true;
  }
  // A label l<t> of an op before op k.
  static bool direct_earlier(io::Padded& c, uint32_t k, uint32_t& t) {
    return label_number(c, t) && t < k;
  }
  // The GOAL op of `op` (from its comment) after its label, as write_goal writes it, up to its
  // line's end, agreeing with it as check_agrees asks; a message's tag in tag_. A message's size
  // and peer are compared as text: the size with len * elem_size as write_goal writes it, the
  // peer with `peer`, its digits in the comment (other spellings, a product past 64 bits, are
  // line()'s).
  bool direct_goal_op(io::Padded& c, const Op& op, std::string_view peer) {
    const bool send = op.kind == OpKind::send, recv = op.kind == OpKind::recv;
    if (send || recv) {
      if (op.len != size_len_) {
        int64_t product;
        if (__builtin_mul_overflow(op.len, hr_.h.elem_size, &product)) return false;
        size_n_ = static_cast<size_t>(std::to_chars(size_, size_ + 20, product).ptr - size_);
        size_[size_n_++] = 'b';
        size_len_ = op.len;
      }
      return (send ? c.lit("send ") : c.lit("recv ")) && c.bytes(size_, size_n_) &&
             (send ? c.lit(" to ") : c.lit(" from ")) && c.bytes(peer.data(), peer.size()) &&
             c.lit(" tag ") && c.num(tag_, kMaxTag);
    }
    int64_t value;
    if (!c.lit("calc ") || !c.num(value)) return false;
    return !((op.kind == OpKind::compute || op.kind == OpKind::sleep) && value != op.len);
  }
  // The tag just read (tag_) is the next on the message's pair: counted if so. Last, once the
  // op is sure to be taken.
  bool direct_tag(const Op& op) {
    if (op.kind != OpKind::send && op.kind != OpKind::recv) return true;
    return (op.kind == OpKind::send ? sent_ : received_).take(op.peer, tag_);
  }
  // What block() read, as the GoalOps, labels and requires that line() would have made.
  void spill() {
    direct_ = false;
    GoalRank& r = *rank_;
    const RankProgram& p = program_;
    for (uint32_t k = 0; k < p.ops.size(); ++k) {
      const Op& o = p.ops[k];
      GoalOp g;
      g.kind = o.kind == OpKind::send   ? GoalKind::send
               : o.kind == OpKind::recv ? GoalKind::recv
                                        : GoalKind::calc;
      g.value = 0;
      if (g.kind != GoalKind::calc) g.peer = o.peer;
      const std::string label = "l" + std::to_string(k);
      g.line = op_lines_[k];
      g.column = static_cast<int64_t>(label.size()) + 3;  // after "lK: "
      g.op = o;
      g.stage = p.stage[k];
      labels_.define(label, k);
      r.ops.push_back(g);
      for (uint32_t e = p.dep_begin[k]; e < p.dep_begin[k + 1]; ++e)
        r.requires_.push_back({k, p.deps[e]});
    }
    program_.clear(cur_);
    op_lines_.clear();
  }

  // ---- reading -----------------------------------------------------------------------------

  void directive(Scanner& sc) {
    sc.skip_ws();
    size_t b = sc.pos();
    if (!collkit_) {
      if (!sc.accept("schedule"))
        sc.fail_msg(b, "a '// collkit:' comment before '// collkit: schedule v1'");
      if (P_ >= 0) sc.fail_msg(b, "'// collkit: schedule v1' must come before 'num_ranks'");
      sc.skip_ws();
      size_t vb = sc.pos();
      if (!sc.accept("v1"))
        sc.fail_msg(vb, "unsupported format version '" + Scanner::printable(sc.rest()) +
                            "' (this collkit reads v1)");
      sc.expect_end();
      collkit_ = true;
      return;
    }
    if (cur_ < 0) {
      if (P_ >= 0) sc.fail_msg(b, "a '// collkit:' header line after 'num_ranks'");
      if (!hr_.line(sc))
        sc.fail_here("a header line (collective, algorithm, P, count, elem_size, root)");
      return;
    }
    GoalRank& r = *rank_;
    if (sc.accept("scratch")) {
      if (!r.ops.empty() || pending_ || scratch_seen_)
        sc.fail_msg(b, "'// collkit: scratch' must come once, before the rank's first op");
      scratch_seen_ = true;
      while (!sc.at_end()) {
        if (r.scratch.size() >= static_cast<size_t>(kMaxScratch))
          sc.fail_msg(sc.pos(), "more than " + std::to_string(kMaxScratch) + " scratch buffers");
        sc.skip_ws();
        const size_t sb = sc.pos();
        r.scratch.push_back(sc.integer("a scratch buffer size in elements", 0, INT64_MAX));
        if (!buffer_fits(r.scratch.back(), hr_.h.elem_size))
          sc.fail_msg(sb, io::too_large("a scratch buffer", r.scratch.back(), hr_.h.elem_size));
      }
      return;
    }
    if (pending_) sc.fail_msg(b, "two '// collkit:' op comments without a GOAL op between them");
    int64_t i = static_cast<int64_t>(r.ops.size());
    sc.integer_lazy(
        [&] {
          return "op index " + std::to_string(i) + " (the index of the GOAL op that follows)";
        },
        i, i);
    sc.expect(":", "':' after the op index");
    PendingOp p;
    p.op = io::parse_op_body(sc, hr_.h.P, r.scratch.size(), hr_.h.elem_size);
    p.stage = 0;
    io::parse_stage(sc, p.stage);
    sc.expect_end();
    p.line = sc.line_number();
    p.column = sc.column(b);
    pending_ = p;
  }

  void statement(Scanner& sc) {
    sc.skip_ws();
    size_t b = sc.pos();
    if (cur_ < 0) {
      if (sc.accept("num_ranks")) {
        if (P_ >= 0) sc.fail_msg(b, "'num_ranks' given twice");
        P_ = sc.integer("a number of ranks", 1, kMaxGoalP);
        if (collkit_) {
          hr_.finish(sc, b);
          if (P_ != hr_.h.P)
            sc.fail_msg(b, "num_ranks " + std::to_string(P_) +
                               " disagrees with the collkit "
                               "header's P " +
                               std::to_string(hr_.h.P));
          on_header_(hr_.h);
        } else if (pass_ == GoalPass::paired) {
          on_header_(plain_header());
        } else if (pass_ == GoalPass::index) {
          opened_.assign(static_cast<size_t>(P_), false);
        }
        return;
      }
      if (sc.accept("rank")) {
        if (P_ < 0) sc.fail_msg(b, "'rank' before 'num_ranks'");
        sc.skip_ws();
        size_t rb = sc.pos();
        int64_t r = sc.integer_lazy([&] { return "a rank of num_ranks = " + std::to_string(P_); },
                                    0, P_ - 1);
        if (seen(r)) sc.fail_msg(rb, "rank " + std::to_string(r) + " has a second block");
        sc.expect("{", "'{' opening the rank's block");
        cur_ = r;
        rank_ = &ranks_[r];  // a node: stays put while other ranks come and go
        rank_->reuse(spare_);
        if (!opened_.empty()) opened_[static_cast<size_t>(r)] = true;
        scratch_seen_ = false;
        // The next rank to go out, alone on its line: block() may read it.
        direct_ = direct_ok_ && collkit_ && r == next_ && !in_block_ && sc.at_end();
        if (direct_) {
          program_.clear(r);
          op_lines_.clear();
        }
        return;
      }
      sc.fail_here("'num_ranks N' or 'rank N {'");
    }
    if (sc.accept("}")) {
      close_block();
      return;
    }
    GoalRank& r = *rank_;
    std::string_view w = sc.ident("an op (send, recv, calc), a label, a dependency or '}'");
    std::string_view label;
    if (sc.peek() == ':') {
      sc.accept(":");
      label = w;
      sc.skip_ws();
      b = sc.pos();
      w = sc.ident("send, recv or calc after the label");
    } else if (bool req = sc.accept("requires"); req || sc.accept("irequires")) {
      bool start = !req;
      sc.skip_ws();
      size_t tb = sc.pos();
      std::string_view to = sc.ident("the label of an op of this rank");
      sc.expect_end();
      // Both labels known (the usual case): resolved now; else when the block closes, and so
      // every later one, to keep the file's order.
      const uint32_t a = labels_.find(w), t = labels_.find(to);
      if (a != kNoLabel && t != kNoLabel) {
        if (r.pending.empty())
          (start ? r.irequires_ : r.requires_).push_back({a, t});
        else
          r.pending.push_back({{}, {}, start, 0, 0, 0, a, t});
        return;
      }
      r.pending.push_back(
          {std::string(w), std::string(to), start, sc.line_number(), sc.column(b), sc.column(tb)});
      return;
    }
    GoalOp op;
    op.line = sc.line_number();
    op.column = sc.column(b);
    if (w == "send" || w == "recv") {
      op.kind = w == "send" ? GoalKind::send : GoalKind::recv;
      sc.skip_ws();
      size_t db = sc.pos();
      if (collkit_) {
        size_t e = db;
        while (e < sc.line().size() && io::is_digit(sc.line()[e])) ++e;
        if (e == db) sc.fail_here("a size in bytes, as in 1024b");
        op.size_digits = sc.line().substr(db, e - db);
        while (op.size_digits.size() > 1 && op.size_digits[0] == '0')
          op.size_digits.remove_prefix(1);
        op.value = 0;
        sc.set_pos(e);
      } else {
        // a buffer holds at most 2^48 elements (buffer_fits), here of one byte each
        op.value = sc.integer("a size in bytes, as in 1024b,", 0, kMaxElems, false);
      }
      sc.expect("b", "'b' after the size, as in 1024b");
      sc.expect(op.kind == GoalKind::send ? "to" : "from", op.kind == GoalKind::send
                                                               ? "'to' and the receiving rank"
                                                               : "'from' and the sending rank");
      sc.skip_ws();
      size_t pb = sc.pos();
      op.peer = sc.integer("a rank", INT64_MIN, INT64_MAX);
      if (!(op.peer == -1 && op.kind == GoalKind::recv) && (op.peer < 0 || op.peer >= P_))
        sc.fail_msg(
            pb, "rank " + std::to_string(op.peer) + " is not in [0, " + std::to_string(P_) + ")");
    } else if (w == "calc") {
      op.kind = GoalKind::calc;
      op.value = sc.integer("a duration in nanoseconds", 0, INT64_MAX);
    } else {
      sc.set_pos(b);
      sc.fail_here("send, recv or calc");
    }
    bool seen_tag = false, seen_cpu = false, seen_nic = false;
    while (!sc.at_end()) {
      sc.skip_ws();
      size_t ob = sc.pos();
      if (!seen_tag && op.kind != GoalKind::calc && sc.accept("tag")) {
        seen_tag = true;
        sc.skip_ws();
        size_t tb = sc.pos();
        op.tag = sc.integer("a tag", INT64_MIN, INT64_MAX);
        if (op.tag == -1 && op.kind == GoalKind::send)
          sc.fail_msg(tb, "'tag -1' (any tag) is for receives; a send needs its tag");
        if (op.tag != -1 && (op.tag < 0 || op.tag > kMaxTag))
          sc.fail_msg(tb, "tag " + std::to_string(op.tag) + " is not in [0, " +
                              std::to_string(kMaxTag) + "]");
      } else if (!seen_cpu && sc.accept("cpu")) {
        // Several CPUs per host: each has its own overhead timeline in the simulator.
        seen_cpu = true;
        op.cpu = static_cast<uint8_t>(sc.integer(
            "a CPU number in [0, " + std::to_string(kMaxCpu) + "] (collkit's limit)", 0, kMaxCpu));
      } else if (!seen_nic && sc.accept("nic")) {
        seen_nic = true;
        op.nic = static_cast<uint8_t>(sc.integer(
            "a NIC number in [0, " + std::to_string(kMaxNic) + "] (collkit's limit)", 0, kMaxNic));
      } else {
        sc.set_pos(ob);
        sc.fail_here(op.kind == GoalKind::calc ? "'cpu', 'nic' or end of line"
                                               : "'tag', 'cpu', 'nic' or end of line");
      }
    }
    add_op(op, label);
  }

  // An op read (by the Scanner or the fast path) joins the rank: its label, and in a collkit file
  // the check against its comment and its tag.
  void add_op(GoalOp& op, std::string_view label) {
    if (direct_) spill();  // an op on the line that opened the block
    GoalRank& r = *rank_;
    if (!label.empty()) {
      if (!labels_.define(label, static_cast<uint32_t>(r.ops.size())))
        fail_line(
            op.line, op.column,
            "label '" + std::string(label) + "' is defined twice in rank " + std::to_string(cur_));
    }
    if (collkit_) {
      if (!pending_)
        fail_line(op.line, op.column,
                  "this op has no '// collkit:' comment before it (every "
                  "op of a collkit GOAL file has one)");
      check_agrees(*pending_, op);
      op.size_digits = {};  // a view into this line only
      if (op.kind != GoalKind::calc) {
        // collkit writes a message's sequence number on its ordered pair as the tag, so that
        // LogGOPSim pairs the messages as collkit does; an edited tag would break that.
        auto& seq = op.kind == GoalKind::send ? sent_ : received_;
        // A rank with a wildcard receive has all its receives written with any tag.
        int64_t expected = op.kind == GoalKind::recv && op.tag == -1 ? -1 : seq.next(op.peer);
        if (op.tag != expected)
          fail_line(op.line, op.column,
                    "tag " + std::to_string(op.tag) + " should be " + std::to_string(expected) +
                        ": in a collkit GOAL file the k-th message between two ranks has tag k");
      }
      op.op = pending_->op;
      op.stage = pending_->stage;
      pending_.reset();
    } else {
      op.op.kind = op.kind == GoalKind::send   ? OpKind::send
                   : op.kind == GoalKind::recv ? OpKind::recv
                                               : OpKind::compute;
      op.op.len = op.value;
      op.op.cpu = op.cpu;
      op.op.nic = op.nic;
      if (op.kind != GoalKind::calc) {
        op.op.peer = static_cast<int32_t>(op.peer);
        op.op.buf = scratch_buf(0);
      }
    }
    r.ops.push_back(op);
  }

  // The collkit comment and the GOAL op it describes must say the same thing.
  void check_agrees(const PendingOp& p, const GoalOp& g) const {
    const Op& op = p.op;
    std::string why;
    bool message = op.kind == OpKind::send || op.kind == OpKind::recv;
    if (op.kind == OpKind::send && g.kind != GoalKind::send)
      why = "a send";
    else if (op.kind == OpKind::recv && g.kind != GoalKind::recv)
      why = "a recv";
    else if (!message && g.kind != GoalKind::calc)
      why = "a calc";
    else if (message && op.peer != g.peer && !(op.peer == kAnySource && g.peer == -1))
      why = "peer " + std::to_string(op.peer);
    else if (message && !is_product(g.size_digits, op.len, hr_.h.elem_size))
      why = "a size of len * elem_size bytes";
    else if ((op.kind == OpKind::compute || op.kind == OpKind::sleep) && g.value != op.len)
      why = "calc " + std::to_string(op.len);
    else if (op.cpu != g.cpu || op.nic != g.nic)
      why = "cpu " + std::to_string(op.cpu) + " nic " + std::to_string(op.nic);
    if (!why.empty())
      fail_line(g.line, g.column,
                "this GOAL op disagrees with its '// collkit:' comment on line " +
                    std::to_string(p.line) + ", which asks for " + why);
  }

  void close_block() {
    GoalRank& r = *rank_;
    if (pending_)
      fail_line(pending_->line, pending_->column, "a '// collkit:' op comment without its op");
    for (const GoalDep& d : r.pending) {
      if (d.a != kNoLabel) {
        (d.start ? r.irequires_ : r.requires_).push_back({d.a, d.t});
        continue;
      }
      const uint32_t a = labels_.find(d.from), t = labels_.find(d.to);
      if (a == kNoLabel)
        fail_line(d.line, d.col_from,
                  "label '" + d.from + "' is not defined in rank " + std::to_string(cur_));
      if (t == kNoLabel)
        fail_line(d.line, d.col_to,
                  "label '" + d.to + "' is not defined in rank " + std::to_string(cur_));
      (d.start ? r.irequires_ : r.requires_).push_back({a, t});
    }
    r.pending.clear();
    r.pending.shrink_to_fit();
    labels_.clear();
    sent_.clear();
    received_.clear();
    const bool direct = direct_;  // program_ holds this rank, the next to go out
    direct_ = false;
    cur_ = -1;
    rank_ = nullptr;
    ++closed_;
    // A collkit file's ranks need nothing from other ranks: each goes out once those before it
    // have.
    // So do a plain file's on its second pass, its receives paired with the sends to it.
    if (collkit_ || pass_ == GoalPass::paired)
      for (auto it = ranks_.find(next_); it != ranks_.end(); it = ranks_.find(next_)) {
        if (direct && it->second.ops.empty() && program_.rank == next_) {
          program_.scratch = it->second.scratch;
          on_rank_(program_.view());
        } else {
          if (!collkit_) pair_rank(next_, it->second);
          emit(next_, it->second);
        }
        spare_.reuse(it->second);
        ranks_.erase(it);
        ++next_;
      }
    else if (pass_ == GoalPass::index)
      index_block();
  }

  bool seen(int64_t r) const {
    if (!opened_.empty()) return opened_[static_cast<size_t>(r)];
    return r < next_ || ranks_.count(r) != 0;
  }

  // ---- a plain file read twice ---------------------------------------------------------------

  // First pass: the block just closed leaves its sends in the index and goes.
  void index_block() {
    auto it = ranks_.begin();  // the only one held
    const GoalRank& r = it->second;
    const uint32_t rank = static_cast<uint32_t>(it->first);
    uint32_t n = 0;
    for (uint32_t i = 0; i < r.ops.size(); ++i)
      if (r.ops[i].kind == GoalKind::send) {
        index_->add(static_cast<uint32_t>(r.ops[i].peer), static_cast<uint32_t>(r.ops[i].tag), i);
        ++n;
      }
    if (!index_->blocks.empty() && index_->blocks.back().first >= rank) index_->in_order = false;
    index_->blocks.push_back({rank, n});
    spare_.reuse(it->second);
    ranks_.erase(it);
  }

  ScheduleHeader plain_header() const {
    ScheduleHeader h;
    h.collective = Collective::barrier;
    h.algorithm = "";
    h.P = P_;
    h.count = 0;
    h.elem_size = 1;
    h.root = 0;
    return h;
  }

  // Second pass: rank `rank`'s receives paired by tag with the sends to it (match_messages for
  // one rank): perm_[rank] when they must be reordered. A wildcard rank keeps its order and
  // must see one tag. Anything else is PairingFailed.
  void pair_rank(int64_t rank, const GoalRank& gr) {
    const auto b = index_->to.begin() + static_cast<std::ptrdiff_t>(index_->begin[rank]);
    const auto e = index_->to.begin() + static_cast<std::ptrdiff_t>(index_->begin[rank + 1]);
    bool wildcard = false;
    recvs_.clear();
    for (uint32_t i = 0; i < gr.ops.size(); ++i) {
      const GoalOp& g = gr.ops[i];
      if (g.op.kind != OpKind::recv) continue;
      wildcard = wildcard || g.op.peer == kAnySource || g.tag == -1;
      recvs_.push_back({static_cast<uint32_t>(g.op.peer), static_cast<uint32_t>(g.tag), i});
    }
    if (wildcard) {  // one tag, in its receives (but -1) and in the messages to it
      int64_t tag = -1;
      auto one = [&](int64_t t) {
        if (t == -1 || t == static_cast<int64_t>(UINT32_MAX)) return;
        if (tag == -1) tag = t;
        if (t != tag) throw PairingFailed{};
      };
      for (const auto& x : recvs_) one(x.tag);
      for (auto it = b; it != e; ++it) one(it->tag);
      return;
    }
    if (static_cast<size_t>(e - b) != recvs_.size()) throw PairingFailed{};
    auto by_src_tag = [](const SendIndex::Entry& x, const SendIndex::Entry& y) {
      return std::tie(x.peer, x.tag, x.op) < std::tie(y.peer, y.tag, y.op);
    };
    std::sort(recvs_.begin(), recvs_.end(), by_src_tag);
    sends_.assign(b, e);
    std::sort(sends_.begin(), sends_.end(), by_src_tag);
    std::vector<uint32_t>* perm = nullptr;
    for (size_t k = 0; k < sends_.size();) {
      size_t end = k;
      while (end < sends_.size() && sends_[end].peer == sends_[k].peer) ++end;
      // The k-th send and receive in (tag, op) order are a message: (send op, receive op) by
      // send op, then the receive slots of this source, in op order, take them in that order.
      pairs_.clear();
      for (size_t j = k; j < end; ++j) {
        if (recvs_[j].peer != sends_[j].peer || recvs_[j].tag != sends_[j].tag)
          throw PairingFailed{};
        pairs_.push_back({sends_[j].op, recvs_[j].op});
      }
      std::sort(pairs_.begin(), pairs_.end());
      slots_.clear();
      for (auto [s, rv] : pairs_) slots_.push_back(rv);
      std::sort(slots_.begin(), slots_.end());
      bool identity = true;
      for (size_t j = 0; j < pairs_.size(); ++j)
        identity = identity && slots_[j] == pairs_[j].second;
      if (!identity) {
        if (perm == nullptr) {
          perm = &perm_[rank];
          perm->resize(gr.ops.size());
          for (uint32_t q = 0; q < perm->size(); ++q) (*perm)[q] = q;
        }
        for (size_t j = 0; j < pairs_.size(); ++j) (*perm)[slots_[j]] = pairs_[j].second;
      }
      k = end;
    }
    if (!sends_.empty() && recvs_.back().peer != sends_.back().peer) throw PairingFailed{};
  }

  // ---- building ----------------------------------------------------------------------------

  struct Message {
    int64_t src, dst, tag, seq;
    uint32_t index;  // op index on its own rank (src for a send, dst for a recv)
  };

  // perm_[r][new position] = op index in the file. Receives are reordered so that the k-th
  // receive from a rank is the one LogGOPSim's tag matching pairs with the k-th send.
  //
  // A rank with a wildcard receive (from -1 or tag -1) is left as it is: the simulator matches
  // its messages as LogGOPSim does, each to the first posted receive that fits. It matches by
  // source only, so such a rank must use a single tag (besides -1) in its receives and in the
  // messages sent to it; anything else is refused.
  void match_messages() {
    std::unordered_map<int64_t, std::pair<int64_t, const GoalOp*>> tag_of;  // wildcard ranks
    for (auto& [r, gr] : ranks_)
      for (const GoalOp& g : gr.ops)
        if (g.op.kind == OpKind::recv && (g.op.peer == kAnySource || g.tag == -1))
          tag_of.emplace(r, std::pair<int64_t, const GoalOp*>{-1, nullptr});
    auto one_tag = [&](int64_t rank, const GoalOp& g) {
      auto& [tag, first] = tag_of[rank];
      if (g.tag == -1) return;
      if (first == nullptr) {
        tag = g.tag;
        first = &g;
      } else if (g.tag != tag) {
        fail_line(g.line, g.column,
                  "rank " + std::to_string(rank) +
                      " has a wildcard receive (from -1 or tag -1) and messages with tags " +
                      std::to_string(tag) + " (line " + std::to_string(first->line) + ") and " +
                      std::to_string(g.tag) +
                      ": collkit matches a wildcard rank's messages by source only, so it "
                      "needs one tag on that rank");
      }
    };
    std::vector<Message> sends, recvs;
    for (auto& [r, gr] : ranks_)
      for (uint32_t i = 0; i < gr.ops.size(); ++i) {
        const GoalOp& g = gr.ops[i];
        if (g.op.kind == OpKind::send) {
          if (tag_of.count(g.op.peer))
            one_tag(g.op.peer, g);
          else
            sends.push_back({r, g.op.peer, g.tag, 0, i});
        }
        if (g.op.kind == OpKind::recv) {
          if (tag_of.count(r))
            one_tag(r, g);
          else
            recvs.push_back({g.op.peer, r, g.tag, 0, i});
        }
      }
    auto by_key = [](const Message& a, const Message& b) {
      return std::tie(a.src, a.dst, a.tag, a.index) < std::tie(b.src, b.dst, b.tag, b.index);
    };
    std::sort(sends.begin(), sends.end(), by_key);
    std::sort(recvs.begin(), recvs.end(), by_key);
    auto number = [](std::vector<Message>& v) {
      for (size_t k = 1; k < v.size(); ++k)
        if (v[k].src == v[k - 1].src && v[k].dst == v[k - 1].dst && v[k].tag == v[k - 1].tag)
          v[k].seq = v[k - 1].seq + 1;
    };
    number(sends);
    number(recvs);
    // Pair them: (src, dst, tag, seq) must agree one to one.
    struct Pair {
      int64_t src, dst;
      uint32_t send_index, recv_index;
    };
    std::vector<Pair> pairs;
    pairs.reserve(sends.size());
    size_t a = 0, c = 0;
    auto key = [](const Message& m) { return std::tie(m.src, m.dst, m.tag, m.seq); };
    while (a < sends.size() || c < recvs.size()) {
      bool take_send = c == recvs.size() || (a < sends.size() && key(sends[a]) < key(recvs[c]));
      bool take_recv = a == sends.size() || (c < recvs.size() && key(recvs[c]) < key(sends[a]));
      if (take_send) {
        const Message& m = sends[a];
        const GoalOp& g = ranks_[m.src].ops[m.index];
        fail_line(g.line, g.column,
                  "this send from rank " + std::to_string(m.src) + " to rank " +
                      std::to_string(m.dst) + " with tag " + std::to_string(m.tag) +
                      " has no matching recv on rank " + std::to_string(m.dst));
      }
      if (take_recv) {
        const Message& m = recvs[c];
        const GoalOp& g = ranks_[m.dst].ops[m.index];
        fail_line(g.line, g.column,
                  "this recv on rank " + std::to_string(m.dst) + " from rank " +
                      std::to_string(m.src) + " with tag " + std::to_string(m.tag) +
                      " has no matching send on rank " + std::to_string(m.src));
      }
      pairs.push_back({sends[a].src, sends[a].dst, sends[a].index, recvs[c].index});
      ++a, ++c;
    }
    // For each ordered pair, the receive slots on dst (in op order) take the receives in the
    // order of the sends they match.
    std::sort(pairs.begin(), pairs.end(), [](const Pair& x, const Pair& y) {
      return std::tie(x.dst, x.src, x.send_index) < std::tie(y.dst, y.src, y.send_index);
    });
    std::vector<uint32_t> slots;
    for (size_t k = 0; k < pairs.size();) {
      size_t e = k;
      while (e < pairs.size() && pairs[e].dst == pairs[k].dst && pairs[e].src == pairs[k].src) ++e;
      slots.clear();
      for (size_t j = k; j < e; ++j) slots.push_back(pairs[j].recv_index);
      std::sort(slots.begin(), slots.end());
      bool identity = true;
      for (size_t j = k; j < e; ++j) identity = identity && slots[j - k] == pairs[j].recv_index;
      if (!identity) {
        auto& perm = perm_[pairs[k].dst];
        if (perm.empty()) {
          perm.resize(ranks_[pairs[k].dst].ops.size());
          for (uint32_t q = 0; q < perm.size(); ++q) perm[q] = q;
        }
        for (size_t j = k; j < e; ++j) perm[slots[j - k]] = pairs[j].recv_index;
      }
      k = e;
    }
  }

  // Dependencies of every op of one rank, in file indices: `requires` in file order, then what
  // the targets of `irequires` wait on (an op may start once its target starts, that is once
  // the target's own dependencies complete).
  std::vector<std::vector<uint32_t>> dependencies(const GoalRank& r, int64_t rank) const {
    const size_t n = r.ops.size();
    std::vector<std::vector<uint32_t>> deps(n);
    for (auto [a, t] : r.requires_) deps[a].push_back(t);
    if (r.irequires_.empty()) return deps;
    // Kahn's order over the irequires edges: an op is done once all its targets are.
    std::vector<uint32_t> waiting(n, 0);
    std::vector<std::vector<uint32_t>> targets(n), waiters(n);
    for (auto [a, t] : r.irequires_) {
      targets[a].push_back(t);
      waiters[t].push_back(a);
      ++waiting[a];
    }
    std::vector<uint32_t> ready;
    for (uint32_t i = 0; i < n; ++i)
      if (waiting[i] == 0) ready.push_back(i);
    size_t done = 0;
    // seen[y] == x + 1 while op x's list is built: no duplicate, no quadratic search.
    std::vector<uint32_t> seen(n, 0);
    while (!ready.empty()) {
      uint32_t x = ready.back();
      ready.pop_back();
      ++done;
      std::vector<uint32_t>& d = deps[x];
      for (uint32_t y : d) seen[y] = x + 1;
      for (uint32_t t : targets[x])
        for (uint32_t y : deps[t])
          if (seen[y] != x + 1) {
            seen[y] = x + 1;
            d.push_back(y);
          }
      for (uint32_t w : waiters[x])
        if (--waiting[w] == 0) ready.push_back(w);
    }
    if (done != n) {
      for (uint32_t i = 0; i < n; ++i)
        if (waiting[i] != 0) {
          const GoalOp& g = r.ops[i];
          fail_line(g.line, g.column,
                    "this op of rank " + std::to_string(rank) + " is on a cycle of 'irequires'");
        }
    }
    return deps;
  }

  // A plain file: its messages paired by tag, then every rank in order.
  void build() {
    match_messages();
    on_header_(plain_header());
    for (int64_t rank = 0; rank < P_; ++rank) {
      auto it = ranks_.find(rank);
      emit(rank, it->second);
      ranks_.erase(it);  // free as we go
    }
  }

  // Rank `rank`'s program to on_rank: collkit files keep their ops in order; a plain file's
  // receives are reordered (perm_) and its messages laid out in one scratch buffer.
  void emit(int64_t rank, const GoalRank& r) {
    const size_t n = r.ops.size();
    // Without irequires the deps are requires_ grouped by op (a counting sort, file order kept);
    // with them, dependencies() works them out.
    std::vector<std::vector<uint32_t>> deps;
    if (r.irequires_.empty()) {
      dep_at_.assign(n + 2, 0);
      for (auto [a, t] : r.requires_) ++dep_at_[a + 2];
      for (size_t i = 2; i < n + 2; ++i) dep_at_[i] += dep_at_[i - 1];
      dep_to_.resize(r.requires_.size());
      for (auto [a, t] : r.requires_) dep_to_[dep_at_[a + 1]++] = t;
    } else {
      deps = dependencies(r, rank);
    }
    auto pit = perm_.find(rank);
    const std::vector<uint32_t>* perm = pit == perm_.end() ? nullptr : &pit->second;
    inv_.resize(n);
    for (uint32_t i = 0; i < n; ++i) inv_[perm ? (*perm)[i] : i] = i;
    RankProgram& p = program_;
    p.clear(rank);
    if (collkit_) p.scratch = r.scratch;
    int64_t offset = 0;
    bool messages = false;
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t old = perm ? (*perm)[i] : i;
      const GoalOp& g = r.ops[old];
      Op op = g.op;
      if (!collkit_ && g.kind != GoalKind::calc) {
        messages = true;
        op.off = offset;
        if (__builtin_add_overflow(offset, op.len, &offset))
          fail_line(g.line, g.column,
                    "rank " + std::to_string(rank) + "'s messages add up to more than 2^63 bytes");
      }
      mapped_.clear();
      if (r.irequires_.empty()) {  // the deps of op `old` in file order: requires_ sorted by op
        for (uint32_t k = dep_at_[old]; k < dep_at_[old + 1]; ++k)
          mapped_.push_back(inv_[dep_to_[k]]);
      } else {
        for (uint32_t d : deps[old]) mapped_.push_back(inv_[d]);
      }
      p.append(op, mapped_, g.stage);
    }
    if (messages) p.scratch.push_back(offset);
    if (perm) perm_.erase(pit);
    on_rank_(p.view());
  }

  OnHeader on_header_;
  OnRank on_rank_;
  GoalPass pass_ = GoalPass::whole;
  SendIndex* index_ = nullptr;
  std::vector<bool> opened_;  // the first pass: the blocks seen (none is held)
  std::vector<SendIndex::Entry> recvs_, sends_;
  std::vector<std::pair<uint32_t, uint32_t>> pairs_;
  std::vector<uint32_t> slots_;
  RankProgram program_;
  std::vector<uint32_t> inv_, mapped_, dep_at_, dep_to_;
  std::string blanked_;
  bool in_block_ = false;
  int64_t block_line_ = 0, block_column_ = 0, number_ = 0;
  int64_t closed_ = 0, next_ = 0;  // blocks closed; the next rank to go out (collkit files)
  bool collkit_ = false;
  const bool direct_ok_ = false;   // read_goal's stream: block() may be called
  bool direct_ = false;            // the open block is read by block() into program_
  std::vector<int64_t> op_lines_;  // block(): the line of each op's GOAL op
  int64_t tag_ = 0;                // block(): the tag of the GOAL op just read
  char size_[32] = {};             // block(): size_len_ * elem_size as write_goal writes it, "b"
  size_t size_n_ = 0;
  int64_t size_len_ = -1;
  io::HeaderReader hr_;
  int64_t P_ = -1;
  int64_t cur_ = -1;
  GoalRank* rank_ = nullptr;  // ranks_[cur_] while a block is open
  bool scratch_seen_ = false;
  std::optional<PendingOp> pending_;
  std::unordered_map<int64_t, GoalRank> ranks_;
  Labels labels_;
  GoalRank spare_;               // the storage of the last rank sent on, for the next block
  PeerCounter sent_, received_;  // messages per peer in this block
  std::unordered_map<int64_t, std::vector<uint32_t>> perm_;
};

}  // namespace

Schedule from_goal(std::string_view text) {
  return io::parse_whole<GoalParser>(text);
}

void read_goal(std::istream& in, const std::function<void(const ScheduleHeader&)>& on_header,
               const std::function<void(const RankView&)>& on_rank) {
  const std::streampos start = in.tellg();
  if (start == std::streampos(-1)) {  // not seekable: a plain file is held whole
    io::parse_stream<GoalParser>(in, on_header, on_rank);
    return;
  }
  auto lines = [&](GoalParser& parser) {
    io::StreamLines l(in);
    std::string_view line;
    for (;;) {
      while (parser.direct()) {  // a block as collkit writes it, read from the buffer
        const auto [bytes, n] = parser.block(l.buffered(size_t{1} << 16), l.number());
        if (bytes == 0) break;
        l.skip(bytes, n);
      }
      if (!l.next(line)) break;
      parser.line(line, l.number());
    }
    parser.finish();
  };
  SendIndex index;
  {
    GoalParser first(on_header, on_rank, GoalPass::index, &index);
    lines(first);
    if (!first.needs_second_pass()) return;  // a collkit file: read and sent on as it came
  }
  auto again = [&] {
    in.clear();
    in.seekg(start);
    if (!in) fail(ErrorKind::format, "cannot read the GOAL file a second time");
  };
  again();
  try {
    GoalParser second(on_header, on_rank, GoalPass::paired, &index);
    lines(second);
  } catch (const PairingFailed&) {
    // The whole-file pairing says which message has no match, at its line (or pairs them: the
    // ranks are then sent again from the start).
    index = SendIndex{};
    again();
    io::parse_stream<GoalParser>(in, on_header, on_rank);
  }
}

}  // namespace collkit
