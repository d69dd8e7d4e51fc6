#include "collkit/schedule.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>

#include "collkit/error.hpp"
#include "collkit/registry.hpp"

namespace collkit {

namespace {
constexpr std::array<std::string_view, 6> kOpNames = {"send", "recv",    "reduce",
                                                      "copy", "compute", "sleep"};

// Elements in one buffer: at most kMaxElems, so that no size computed from them wraps.
void check_elems(int64_t elems, const std::string& what) {
  if (elems < 0 || elems > kMaxElems)
    fail(ErrorKind::invalid_argument, what + " = " + std::to_string(elems) +
                                          " elements does not fit: a buffer holds at most 2^48");
}

// Physical memory of this machine, in bytes (0 if unknown).
double physical_memory() {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? static_cast<double>(pages) * static_cast<double>(size) : 0.0;
}
}  // namespace

std::string_view to_string(OpKind k) {
  return kOpNames[static_cast<size_t>(k)];
}

std::string buffer_name(BufId b) {
  if (b == kIn) return "in";
  if (b == kOut) return "out";
  std::string s = "s";  // not "s" + to_string(): GCC 12 warns -Wrestrict on that (bug 105329)
  s += std::to_string(b - kFirstScratch);
  return s;
}

int64_t ScheduleHeader::in_elems(int64_t rank) const {
  if (!irregular()) return buffer_elems(spec().in, P, count, root, rank);
  return BlockLayout(*this, Io::in, rank).elems();
}

int64_t ScheduleHeader::out_elems(int64_t rank) const {
  if (!irregular()) return buffer_elems(spec().out, P, count, root, rank);
  return BlockLayout(*this, Io::out, rank).elems();
}

namespace {
// The most entries a P^2 vector may hold: 4096 ranks (128 MiB of counts), far past what the
// verifier or a plan would hold whole.
constexpr int64_t kMaxPairEntries = int64_t{1} << 24;

std::string entries(int64_t k) {
  return std::to_string(k) + (k == 1 ? " entry" : " entries");
}

void check_layout(const ScheduleHeader& h, Io io, int64_t rank) {
  const BlockLayout l(h, io, rank);
  if (l.elems() > kMaxElems || !buffer_fits(l.elems(), h.elem_size))
    fail(ErrorKind::invalid_argument,
         "rank " + std::to_string(rank) + "'s " + (io == Io::in ? "in" : "out") + " would hold " +
             std::to_string(l.elems()) +
             " elements: a buffer holds at most 2^48 (and under 2^63 bytes)");
  if (io == Io::in || l.packed() || l.blocks() < 2) return;
  std::vector<int64_t> order;
  for (int64_t b = 0; b < l.blocks(); ++b)
    if (l.len(b) > 0) order.push_back(b);
  std::sort(order.begin(), order.end(),
            [&](int64_t x, int64_t y) { return l.offset(x) < l.offset(y); });
  for (size_t k = 1; k < order.size(); ++k) {
    const int64_t a = order[k - 1], b = order[k];
    if (l.offset(a) + l.len(a) > l.offset(b))
      fail(ErrorKind::invalid_argument,
           "rank " + std::to_string(rank) + "'s out blocks " + std::to_string(a) + " [" +
               std::to_string(l.offset(a)) + ", " + std::to_string(l.offset(a) + l.len(a)) +
               ") and " + std::to_string(b) + " [" + std::to_string(l.offset(b)) + ", " +
               std::to_string(l.offset(b) + l.len(b)) +
               ") overlap: MPI writes no location of a receive buffer twice");
  }
}
}  // namespace

void check_counts(const ScheduleHeader& h) {
  const CollectiveSpec& c = h.spec();
  const auto bad = [&](const std::string& m) { fail(ErrorKind::invalid_argument, m); };
  if (!h.irregular()) return;
  const int64_t P = h.P;
  const bool pair_fits = P <= 4096 && P * P <= kMaxPairEntries;
  const auto check_len = [&](const std::vector<int64_t>& v, const char* what, bool per_rank,
                             bool per_pair) {
    const auto n = static_cast<int64_t>(v.size());
    if (n == 0) return;
    if ((per_rank && n == P) || (per_pair && pair_fits && n == P * P)) return;
    std::string want = per_rank ? "P = " + std::to_string(P) : "";
    if (per_pair)
      want += (want.empty() ? "" : " or ") +
              (pair_fits ? "P^2 = " + std::to_string(P * P) : std::string("P^2 (P <= 4096)"));
    bad(std::string(what) + " has " + entries(n) + ", not " + want);
  };
  if (!h.counts.empty() && c.counts == Counts::none)
    bad(std::string(c.name) + " takes one count for every rank, not a count vector (" +
        entries(static_cast<int64_t>(h.counts.size())) + ")");
  check_len(h.counts, "the count vector", c.counts == Counts::per_rank,
            c.counts == Counts::per_pair);
  if (!h.in_displs.empty() && !c.in_displs())
    bad(std::string(c.name) + " takes no displacements for in" +
        (c.out_displs() ? " (only for out: out_displs)" : ""));
  if (!h.out_displs.empty() && !c.out_displs())
    bad(std::string(c.name) + " takes no displacements for out" +
        (c.in_displs() ? " (only for in: in_displs)" : ""));
  check_len(h.in_displs, "in_displs", true, true);
  check_len(h.out_displs, "out_displs", true, true);
  int64_t most = 0;
  for (size_t i = 0; i < h.counts.size(); ++i) {
    if (h.counts[i] < 0 || h.counts[i] > kMaxElems)
      bad("counts[" + std::to_string(i) + "] = " + std::to_string(h.counts[i]) +
          " is not in [0, 2^48]");
    most = std::max(most, h.counts[i]);
  }
  for (const auto* d : {&h.in_displs, &h.out_displs})
    for (size_t i = 0; i < d->size(); ++i)
      if ((*d)[i] < 0 || (*d)[i] > kMaxElems)
        bad(std::string(d == &h.in_displs ? "in_displs[" : "out_displs[") + std::to_string(i) +
            "] = " + std::to_string((*d)[i]) + " is not in [0, 2^48]");
  if (!h.counts.empty() && h.count != most)
    bad("count = " + std::to_string(h.count) + " must be the largest entry of the count vector (" +
        std::to_string(most) + ")");
  // Each rank's buffers: inside the limits, out blocks apart. Displacements alike on every rank
  // (P entries) and a per_rank vector make every rank's out layout one: checked once.
  const bool one_layout = c.counts != Counts::per_pair && h.in_displs.size() != size_t(P * P) &&
                          h.out_displs.size() != size_t(P * P);
  if (!buffer_fits(most, h.elem_size))
    bad("counts: a block of " + std::to_string(most) + " elements of " +
        std::to_string(h.elem_size) + " B does not fit in 2^63 bytes");
  for (int64_t r = 0; r < P; ++r) {
    // With one layout, the P-block buffers are the root's and any other rank's alike, and a
    // one-block buffer is one count (checked above).
    if (one_layout && r > 1 && r != h.root) continue;
    check_layout(h, Io::in, r);
    check_layout(h, Io::out, r);
  }
}

int64_t RankView::buffer_elems(const ScheduleHeader& h, BufId b) const {
  if (b == kIn) return h.in_elems(rank);
  if (b == kOut) return h.out_elems(rank);
  size_t k = static_cast<size_t>(b - kFirstScratch);
  return k < scratch.size() ? scratch[k] : -1;
}

void RankProgram::clear(int64_t new_rank) {
  rank = new_rank;
  ops.clear();
  stage.clear();
  dep_begin.assign(1, 0);
  deps.clear();
  scratch.clear();
}

RankView RankProgram::view() const {
  return RankView{rank, ops, stage, dep_begin, deps, scratch};
}

OpId RankProgram::append(const Op& op, std::span<const OpId> op_deps, uint16_t op_stage) {
  ops.push_back(op);
  stage.push_back(op_stage);
  for (OpId d : op_deps)
    if (d != kNoOp) deps.push_back(d);
  dep_begin.push_back(static_cast<uint32_t>(deps.size()));
  return static_cast<OpId>(ops.size() - 1);
}

BufId RankBuilder::scratch(int64_t elems) {
  check_elems(elems, "scratch buffer");
  if (p_.scratch.size() >= kMaxScratch) fail(ErrorKind::unsupported, "too many scratch buffers");
  p_.scratch.push_back(elems);
  return scratch_buf(static_cast<int>(p_.scratch.size() - 1));
}

OpId RankBuilder::add(const Op& op, Deps deps) {
  return p_.append(op, deps.span(), stage_);
}

// Op fields in declaration order: len, off, src_off, peer, kind, side, buf, src.
OpId RankBuilder::message(OpKind kind, int64_t peer, Region r, Deps deps) {
  return add(Op{.len = r.len,
                .off = r.off,
                .peer = static_cast<int32_t>(peer),
                .kind = kind,
                .buf = r.buf},
             deps);
}

OpId RankBuilder::send(int64_t peer, Region from, Deps deps) {
  return message(OpKind::send, peer, from, deps);
}

OpId RankBuilder::recv(int64_t peer, Region into, Deps deps) {
  return message(OpKind::recv, peer, into, deps);
}

OpId RankBuilder::reduce(Region dst, Region src, Side side, Deps deps) {
  return add(Op{.len = dst.len,
                .off = dst.off,
                .src_off = src.off,
                .kind = OpKind::reduce,
                .side = side,
                .buf = dst.buf,
                .src = src.buf},
             deps);
}

OpId RankBuilder::copy(Region dst, Region src, Deps deps) {
  return add(Op{.len = dst.len,
                .off = dst.off,
                .src_off = src.off,
                .kind = OpKind::copy,
                .buf = dst.buf,
                .src = src.buf},
             deps);
}

OpId RankBuilder::compute(int64_t ns, Deps deps) {
  return add(Op{.len = ns, .kind = OpKind::compute}, deps);
}

OpId RankBuilder::sleep(int64_t ns, Deps deps) {
  return add(Op{.len = ns, .kind = OpKind::sleep}, deps);
}

Schedule::Schedule(ScheduleHeader h) : header(std::move(h)) {}

void Schedule::reserve(size_t ops, size_t deps, size_t scratch) {
  // Refuse, with a reason, what could never fit in this machine's memory (in doubles: no wrap).
  double bytes = static_cast<double>(ops) * (sizeof(Op) + sizeof(uint16_t) + sizeof(uint32_t)) +
                 static_cast<double>(deps) * sizeof(OpId) +
                 static_cast<double>(scratch) * sizeof(int64_t) +
                 static_cast<double>(header.P) * 5 * sizeof(uint64_t);
  double have = physical_memory();
  if (have > 0 && bytes > have) {
    char msg[256];
    std::snprintf(msg, sizeof msg,
                  "a whole schedule of P = %lld needs about %.3g GiB, more than this machine's "
                  "%.3g GiB: generate ranks one at a time (generate_rank; collkit show --rank)",
                  static_cast<long long>(header.P), bytes / 1073741824.0, have / 1073741824.0);
    fail(ErrorKind::invalid_argument, msg);
  }
  ops_.reserve(ops);
  scratch_.reserve(scratch);
  stage_.reserve(ops);
  dep_begin_.reserve(ops + static_cast<size_t>(header.P));
  deps_.reserve(deps);
  rank_op_begin_.reserve(static_cast<size_t>(header.P) + 1);
  rank_dep_begin_.reserve(static_cast<size_t>(header.P) + 1);
  rank_dep_index_begin_.reserve(static_cast<size_t>(header.P) + 1);
  rank_scratch_begin_.reserve(static_cast<size_t>(header.P) + 1);
}

void Schedule::append_rank(const RankView& r) {
  if (r.rank != num_ranks())
    fail(ErrorKind::invalid_argument, "ranks must be appended in order: expected rank " +
                                          std::to_string(num_ranks()) + ", got " +
                                          std::to_string(r.rank));
  if (num_ranks() >= header.P)
    fail(ErrorKind::invalid_argument,
         "schedule already holds P = " + std::to_string(header.P) + " ranks");
  ops_.insert(ops_.end(), r.ops.begin(), r.ops.end());
  stage_.insert(stage_.end(), r.stage.begin(), r.stage.end());
  dep_begin_.insert(dep_begin_.end(), r.dep_begin.begin(), r.dep_begin.end());
  deps_.insert(deps_.end(), r.deps.begin(), r.deps.end());
  scratch_.insert(scratch_.end(), r.scratch.begin(), r.scratch.end());
  rank_op_begin_.push_back(ops_.size());
  rank_dep_begin_.push_back(deps_.size());
  rank_dep_index_begin_.push_back(dep_begin_.size());
  rank_scratch_begin_.push_back(scratch_.size());
}

RankView Schedule::rank(int64_t r) const {
  if (r < 0 || r >= num_ranks())
    fail(ErrorKind::invalid_argument,
         "rank " + std::to_string(r) + " out of range [0, " + std::to_string(num_ranks()) + ")");
  size_t i = static_cast<size_t>(r);
  size_t ob = rank_op_begin_[i], oe = rank_op_begin_[i + 1];
  size_t db = rank_dep_begin_[i], de = rank_dep_begin_[i + 1];
  size_t ib = rank_dep_index_begin_[i], ie = rank_dep_index_begin_[i + 1];
  size_t sb = rank_scratch_begin_[i], se = rank_scratch_begin_[i + 1];
  RankView v;
  v.rank = r;
  v.ops = std::span<const Op>(ops_).subspan(ob, oe - ob);
  v.stage = std::span<const uint16_t>(stage_).subspan(ob, oe - ob);
  v.dep_begin = std::span<const uint32_t>(dep_begin_).subspan(ib, ie - ib);
  v.deps = std::span<const OpId>(deps_).subspan(db, de - db);
  v.scratch = std::span<const int64_t>(scratch_).subspan(sb, se - sb);
  return v;
}

size_t Schedule::memory_bytes() const {
  return ops_.size() * sizeof(Op) + stage_.size() * sizeof(uint16_t) +
         dep_begin_.size() * sizeof(uint32_t) + deps_.size() * sizeof(OpId) +
         scratch_.size() * sizeof(int64_t) +
         (rank_op_begin_.size() + rank_dep_begin_.size() + rank_dep_index_begin_.size() +
          rank_scratch_begin_.size()) *
             sizeof(uint64_t);
}

void Successors::append_rank(const RankView& v) {
  const size_t base = size(), n = v.size();
  const uint32_t start = begin_.back();
  // Count each op's successors into begin_[base + 1 + d], then turn counts into offsets.
  begin_.resize(base + n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    for (OpId d : v.deps_of(i)) {
      if (d >= n)
        fail(ErrorKind::invalid_argument, "rank " + std::to_string(v.rank) + " op " +
                                              std::to_string(i) + " depends on op " +
                                              std::to_string(d) + ", which does not exist");
      ++begin_[base + 1 + d];
    }
  begin_[base] = start;
  for (size_t i = 0; i < n; ++i) begin_[base + 1 + i] += begin_[base + i];
  list_.resize(begin_[base + n]);
  std::vector<uint32_t> fill(begin_.begin() + static_cast<ptrdiff_t>(base),
                             begin_.begin() + static_cast<ptrdiff_t>(base + n));
  for (size_t i = 0; i < n; ++i)
    for (OpId d : v.deps_of(i)) list_[fill[d]++] = static_cast<uint32_t>(base + i);
}

namespace {
bool same_op(const Op& a, const Op& b) {
  if (a.kind != b.kind || a.len != b.len || a.cpu != b.cpu || a.nic != b.nic) return false;
  switch (a.kind) {
    case OpKind::send:
    case OpKind::recv:
      return a.peer == b.peer && a.buf == b.buf && a.off == b.off;
    case OpKind::reduce:
      return a.side == b.side && a.buf == b.buf && a.off == b.off && a.src == b.src &&
             a.src_off == b.src_off;
    case OpKind::copy:
      return a.buf == b.buf && a.off == b.off && a.src == b.src && a.src_off == b.src_off;
    case OpKind::compute:
    case OpKind::sleep:
      return true;
  }
  return false;
}
}  // namespace

bool same_program(const RankView& a, const RankView& b) {
  if (a.rank != b.rank || a.size() != b.size()) return false;
  if (!std::equal(a.scratch.begin(), a.scratch.end(), b.scratch.begin(), b.scratch.end()))
    return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!same_op(a.ops[i], b.ops[i]) || a.stage[i] != b.stage[i]) return false;
    auto da = a.deps_of(i), db = b.deps_of(i);
    if (!std::equal(da.begin(), da.end(), db.begin(), db.end())) return false;
  }
  return true;
}

bool Schedule::operator==(const Schedule& o) const {
  if (!(header == o.header) || num_ranks() != o.num_ranks()) return false;
  for (int64_t r = 0; r < num_ranks(); ++r)
    if (!same_program(rank(r), o.rank(r))) return false;
  return true;
}

}  // namespace collkit
