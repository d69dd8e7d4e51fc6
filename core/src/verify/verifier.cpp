// The verifier's passes, in order; each stops the run if it finds problems that make the next
// one meaningless: structure -> dependency cycles -> hazards -> matching -> execution (deadlock,
// values) -> the collective's postcondition. See collkit/verify.hpp for what each proves.
#include <algorithm>
#include <memory>
#include <numeric>
#include <unordered_map>

#include "collkit/error.hpp"
#include "collkit/verify.hpp"
#include "expr.hpp"

namespace collkit {

std::string_view to_string(DiagKind k) {
  static const char* names[] = {"bad_op",
                                "dep_cycle",
                                "hazard",
                                "unmatched_send",
                                "unmatched_recv",
                                "size_mismatch",
                                "deadlock",
                                "uninitialized",
                                "wrong_result",
                                "inconsistent_tree",
                                "needs_commutativity"};
  return names[static_cast<size_t>(k)];
}

namespace {

using verify_detail::ExprTable;
using verify_detail::kUndef;
using verify_detail::Val;

constexpr uint32_t kNone = UINT32_MAX;

std::string region_text(BufId b, int64_t off, int64_t len) {
  return buffer_name(b) + "[" + std::to_string(off) + ":" + std::to_string(off + len) + "]";
}

std::string op_text(const Op& op) {
  switch (op.kind) {
    case OpKind::send:
      return "send " + region_text(op.buf, op.off, op.len) + " to " + std::to_string(op.peer);
    case OpKind::recv:
      return "recv " + region_text(op.buf, op.off, op.len) + " from " + std::to_string(op.peer);
    case OpKind::reduce:
      return "reduce " + region_text(op.buf, op.off, op.len) + " with " +
             region_text(op.src, op.src_off, op.len);
    case OpKind::copy:
      return "copy " + region_text(op.src, op.src_off, op.len) + " to " +
             region_text(op.buf, op.off, op.len);
    case OpKind::compute:
      return "compute " + std::to_string(op.len) + "ns";
    case OpKind::sleep:
      return "sleep " + std::to_string(op.len) + "ns";
  }
  return "?";
}

std::string ordinal(uint64_t k) {
  uint64_t n = k + 1;
  const char* suf = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                    : n % 10 == 1                    ? "st"
                    : n % 10 == 2                    ? "nd"
                    : n % 10 == 3                    ? "rd"
                                                     : "th";
  return std::to_string(n) + suf;
}

struct Access {
  BufId buf;
  int64_t lo, hi;  // [lo, hi)
  uint32_t op;
  bool write;
};

class Verifier {
 public:
  // `shared`: an expression table to intern into (to compare two schedules' trees); else own.
  Verifier(const Schedule& s, const VerifyOptions& o, ExprTable* shared = nullptr)
      : s_(s), h_(s.header), opts_(o), shared_(shared) {}

  // After run(): the final value of out[i] on rank r.
  Val out_value(int64_t r, int64_t i) const {
    return mem_[static_cast<size_t>(r)][0][static_cast<size_t>(i)];
  }
  const ExprTable& table() const { return *expr_; }

  // Under MPI_IN_PLACE, whether this rank's `out` starts with its input.
  bool in_place_rank(int64_t r) const {
    return opts_.in_place && (h_.collective == Collective::allreduce ||
                              (h_.collective == Collective::reduce && r == h_.root));
  }

  VerifyResult run() {
    if (!s_.complete())
      fail(ErrorKind::invalid_argument, "schedule holds " + std::to_string(s_.num_ranks()) +
                                            " of its P = " + std::to_string(h_.P) + " ranks");
    if (s_.total_ops() >= kNone) fail(ErrorKind::invalid_argument, "too many ops to verify");
    res_.ops = s_.total_ops();
    if (check_structure() && check_cycles() && check_hazards() && match_messages() && execute())
      check_postcondition();
    res_.ok = res_.total_problems == 0;
    return std::move(res_);
  }

 private:
  void add(DiagKind k, int64_t rank, int64_t op, std::string msg) {
    ++res_.total_problems;
    if (res_.diagnostics.size() < opts_.max_diagnostics)
      res_.diagnostics.push_back({k, rank, op, std::move(msg)});
  }
  std::string where(int64_t r, size_t i, const RankView& v) const {
    return "rank " + std::to_string(r) + " op " + std::to_string(i) + " (" + op_text(v.ops[i]) +
           ")";
  }
  uint32_t gid(int64_t r, size_t i) const {
    return static_cast<uint32_t>(s_.rank_op_begin()[static_cast<size_t>(r)] + i);
  }
  int64_t rank_of(uint32_t g) const {
    auto b = s_.rank_op_begin();
    return static_cast<int64_t>(std::upper_bound(b.begin(), b.end(), g) - b.begin()) - 1;
  }
  std::string where_g(uint32_t g) const {
    int64_t r = rank_of(g);
    return where(r, g - s_.rank_op_begin()[static_cast<size_t>(r)], s_.rank(r));
  }

  // ---- Pass 1: every op is well formed. -------------------------------------------------
  bool check_structure() {
    size_t before = res_.total_problems;
    for (int64_t r = 0; r < h_.P; ++r) {
      RankView v = s_.rank(r);
      for (size_t i = 0; i < v.size(); ++i) {
        const Op& op = v.ops[i];
        auto bad = [&](const std::string& why) {
          add(DiagKind::bad_op, r, int64_t(i), where(r, i, v) + ": " + why);
        };
        if (static_cast<uint8_t>(op.kind) > static_cast<uint8_t>(OpKind::sleep)) {
          bad("unknown op kind");
          continue;
        }
        auto region_ok = [&](BufId b, int64_t off, const char* what) {
          int64_t size = v.buffer_elems(h_, b);
          if (op.len < 0) {
            bad("negative length " + std::to_string(op.len));
            return;
          }
          if (size < 0) {
            bad(std::string(what) + " buffer " + buffer_name(b) + " does not exist on this rank");
            return;
          }
          if (off < 0 || op.len < 0 || off > size || op.len > size - off)
            bad(std::string(what) + " region " + region_text(b, off, op.len) + " is outside " +
                buffer_name(b) + ", which has " + std::to_string(size) + " elements");
        };
        switch (op.kind) {
          case OpKind::send:
          case OpKind::recv:
            if (op.peer < 0 || op.peer >= h_.P)
              bad("peer " + std::to_string(op.peer) +
                  " is not a rank of P = " + std::to_string(h_.P));
            region_ok(op.buf, op.off, op.kind == OpKind::send ? "source" : "destination");
            if (op.kind == OpKind::recv && op.buf == kIn)
              bad("writes the input buffer, which is read-only (MPI's sendbuf is const)");
            break;
          case OpKind::reduce:
          case OpKind::copy:
            region_ok(op.buf, op.off, "destination");
            region_ok(op.src, op.src_off, "source");
            if (op.buf == kIn)
              bad("writes the input buffer, which is read-only (MPI's sendbuf is const)");
            if (op.buf == op.src && op.off < op.src_off + op.len && op.src_off < op.off + op.len &&
                op.len > 0)
              bad("source and destination overlap");
            if (op.side != Side::src_first && op.side != Side::dst_first) bad("unknown side");
            break;
          case OpKind::compute:
          case OpKind::sleep:
            if (op.len < 0) bad("negative duration");
            break;
        }
        for (OpId d : v.deps_of(i))
          if (d >= v.size() || d == i)
            bad("depends on op " + std::to_string(d) + ", which " +
                (d == i ? std::string("is itself")
                        : "does not exist (the rank has " + std::to_string(v.size()) + " ops)"));
      }
    }
    return res_.total_problems == before;
  }

  // ---- Pass 2: no dependency cycles; a topological position for every op. ----------------
  bool check_cycles() {
    size_t before = res_.total_problems;
    topo_.assign(s_.total_ops(), 0);
    std::vector<uint32_t> indeg, order, dependents, dep_begin;
    for (int64_t r = 0; r < h_.P; ++r) {
      RankView v = s_.rank(r);
      size_t n = v.size();
      indeg.assign(n, 0);
      reverse_deps(v, dep_begin, dependents);
      for (size_t i = 0; i < n; ++i) indeg[i] = static_cast<uint32_t>(v.deps_of(i).size());
      order.clear();
      for (size_t i = 0; i < n; ++i)
        if (indeg[i] == 0) order.push_back(static_cast<uint32_t>(i));
      for (size_t k = 0; k < order.size(); ++k) {
        uint32_t i = order[k];
        topo_[gid(r, i)] = static_cast<uint32_t>(k);
        for (uint32_t j = dep_begin[i]; j < dep_begin[i + 1]; ++j)
          if (--indeg[dependents[j]] == 0) order.push_back(dependents[j]);
      }
      if (order.size() == n) continue;
      // Walk back along unfinished dependencies until an op repeats: that is a cycle.
      uint32_t start = 0;
      while (indeg[start] == 0) ++start;
      std::vector<uint32_t> seen(n, kNone), path;
      uint32_t cur = start;
      while (seen[cur] == kNone) {
        seen[cur] = static_cast<uint32_t>(path.size());
        path.push_back(cur);
        for (OpId d : v.deps_of(cur))
          if (indeg[d] != 0) {
            cur = d;
            break;
          }
      }
      std::string cyc;
      for (size_t k = seen[cur]; k < path.size(); ++k)
        cyc += "op " + std::to_string(path[k]) + " waits on ";
      cyc += "op " + std::to_string(cur);
      add(DiagKind::dep_cycle, r, cur, "rank " + std::to_string(r) + ": dependency cycle: " + cyc);
    }
    return res_.total_problems == before;
  }

  static void reverse_deps(const RankView& v, std::vector<uint32_t>& begin,
                           std::vector<uint32_t>& out) {
    size_t n = v.size();
    begin.assign(n + 1, 0);
    for (size_t i = 0; i < n; ++i)
      for (OpId d : v.deps_of(i)) ++begin[d + 1];
    std::partial_sum(begin.begin(), begin.end(), begin.begin());
    out.assign(begin[n], 0);
    std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
    for (size_t i = 0; i < n; ++i)
      for (OpId d : v.deps_of(i)) out[fill[d]++] = static_cast<uint32_t>(i);
  }

  // ---- Pass 3: conflicting accesses are ordered by dependencies. --------------------------
  // Dependencies are the only order an executor keeps between ops of one rank (a send's buffer
  // is free again only once the send completes), so two ops that touch overlapping elements, one
  // of them writing, must be ordered by a path of dependencies. `in` is read-only, so skipped.
  bool check_hazards() {
    size_t before = res_.total_problems;
    std::vector<Access> acc, active;
    std::vector<uint32_t> stamp;
    uint32_t epoch = 0;
    for (int64_t r = 0; r < h_.P; ++r) {
      RankView v = s_.rank(r);
      acc.clear();
      for (size_t i = 0; i < v.size(); ++i) {
        const Op& op = v.ops[i];
        if (op.len == 0) continue;
        auto push = [&](BufId b, int64_t off, bool w) {
          if (b != kIn) acc.push_back({b, off, off + op.len, static_cast<uint32_t>(i), w});
        };
        switch (op.kind) {
          case OpKind::send:
            push(op.buf, op.off, false);
            break;
          case OpKind::recv:
            push(op.buf, op.off, true);
            break;
          case OpKind::reduce:
          case OpKind::copy:
            push(op.src, op.src_off, false);
            push(op.buf, op.off, true);
            break;
          default:
            break;
        }
      }
      std::sort(acc.begin(), acc.end(), [](const Access& a, const Access& b) {
        return std::tie(a.buf, a.lo) < std::tie(b.buf, b.lo);
      });
      stamp.assign(v.size(), 0);
      active.clear();
      size_t reported = 0;
      for (const Access& a : acc) {
        std::erase_if(active, [&](const Access& x) { return x.buf != a.buf || x.hi <= a.lo; });
        for (const Access& x : active) {
          if (!(x.write || a.write) || x.op == a.op) continue;
          uint32_t p = x.op, q = a.op;
          if (topo_[gid(r, p)] > topo_[gid(r, q)]) std::swap(p, q);
          if (v.size() <= kBitsetOps) {
            // Ancestor sets, built once per rank that has a conflict: each query is then one bit.
            if (anc_rank_ != r) ancestors(v, r);
            if (anc_[size_t{q} * anc_words_ + p / 64] >> (p % 64) & 1) continue;
          } else {
            if (++epoch == 0) std::fill(stamp.begin(), stamp.end(), 0), epoch = 1;
            if (reaches(v, r, p, q, stamp, epoch)) continue;
          }
          if (reported++ < 3)
            hazard(r, v, x, a);
          else
            ++res_.total_problems;
        }
        active.push_back(a);
      }
    }
    return res_.total_problems == before;
  }

  // For ranks of up to kBitsetOps ops: the set of ancestors of every op, as bitsets, in
  // topological order (a dependency's set is complete before its dependents read it).
  static constexpr size_t kBitsetOps = 8192;
  void ancestors(const RankView& v, int64_t r) {
    const size_t n = v.size();
    anc_words_ = (n + 63) / 64;
    anc_.assign(n * anc_words_, 0);
    std::vector<uint32_t> order(n);
    for (size_t i = 0; i < n; ++i) order[topo_[gid(r, i)]] = static_cast<uint32_t>(i);
    for (uint32_t i : order) {
      uint64_t* mine = &anc_[size_t{i} * anc_words_];
      for (OpId d : v.deps_of(i)) {
        const uint64_t* theirs = &anc_[size_t{d} * anc_words_];
        for (size_t w = 0; w < anc_words_; ++w) mine[w] |= theirs[w];
        mine[d / 64] |= uint64_t{1} << (d % 64);
      }
    }
    anc_rank_ = r;
  }

  // Whether op p is an ancestor of op q (topo(p) < topo(q)) through dependencies.
  bool reaches(const RankView& v, int64_t r, uint32_t p, uint32_t q, std::vector<uint32_t>& stamp,
               uint32_t epoch) {
    uint32_t tp = topo_[gid(r, p)];
    stack_.clear();
    stack_.push_back(q);
    stamp[q] = epoch;
    while (!stack_.empty()) {
      uint32_t cur = stack_.back();
      stack_.pop_back();
      for (OpId d : v.deps_of(cur)) {
        if (d == p) return true;
        if (stamp[d] == epoch || topo_[gid(r, d)] < tp) continue;
        stamp[d] = epoch;
        stack_.push_back(d);
      }
    }
    return false;
  }

  void hazard(int64_t r, const RankView& v, const Access& x, const Access& a) {
    int64_t lo = std::max(x.lo, a.lo), hi = std::min(x.hi, a.hi);
    const std::string reg = region_text(a.buf, lo, hi - lo);
    auto name = [&](const Access& acc) {
      return "op " + std::to_string(acc.op) + " (" + op_text(v.ops[acc.op]) + ")";
    };
    // Say it from the side of the message in flight, if one of the two is a message.
    std::string msg;
    for (int pass = 0; pass < 2 && msg.empty(); ++pass) {
      const Access& m = pass ? a : x;
      const Access& o = pass ? x : a;
      const OpKind k = v.ops[m.op].kind;
      if (k == OpKind::send && o.write)
        msg = name(o) + " may overwrite " + reg + " while the message sent from it by " + name(m) +
              " is in flight";
      else if (k == OpKind::recv)
        msg = name(o) + (o.write ? " may write " : " may read ") + reg +
              " while the message received into it by " + name(m) + " is in flight";
    }
    if (msg.empty()) msg = name(x) + " and " + name(a) + " race on " + reg + " (one writes it)";
    add(DiagKind::hazard, r, a.op,
        "rank " + std::to_string(r) + ": " + msg + "; no dependency path orders the two");
  }

  // ---- Pass 4: match sends with receives (k-th send a->b with k-th recv at b from a). ------
  bool match_messages() {
    size_t before = res_.total_problems;
    size_t M = s_.total_ops();
    match_.assign(M, kNone);
    next_in_channel_.assign(M, kNone);
    has_channel_pred_.assign(M, 0);
    struct Key {
      int64_t a, b;
      uint64_t k;
      bool operator==(const Key&) const = default;
    };
    struct KeyHash {
      size_t operator()(const Key& k) const {
        return verify_detail::rank_hash(k.a * 1000003 + k.b) ^ (k.k * 0x9e3779b97f4a7c15ULL);
      }
    };
    std::unordered_map<Key, uint32_t, KeyHash> recvs;
    std::unordered_map<int64_t, std::pair<uint64_t, uint32_t>> chan_send, chan_recv;  // count, last
    std::vector<std::pair<Key, uint32_t>> sends;
    for (int64_t r = 0; r < h_.P; ++r) {
      RankView v = s_.rank(r);
      chan_send.clear();
      chan_recv.clear();
      for (size_t i = 0; i < v.size(); ++i) {
        const Op& op = v.ops[i];
        if (op.kind != OpKind::send && op.kind != OpKind::recv) continue;
        uint32_t g = gid(r, i);
        auto& chan = (op.kind == OpKind::send ? chan_send : chan_recv);
        auto it = chan.find(op.peer);
        uint64_t k = 0;
        if (it == chan.end()) {
          chan.emplace(op.peer, std::pair<uint64_t, uint32_t>{1, g});
        } else {
          k = it->second.first++;
          next_in_channel_[it->second.second] = g;
          has_channel_pred_[g] = 1;
          it->second.second = g;
        }
        if (op.kind == OpKind::send) {
          sends.push_back({Key{r, op.peer, k}, g});
          ++res_.messages;
          res_.bytes += static_cast<uint64_t>(op.len) * static_cast<uint64_t>(h_.elem_size);
        } else {
          recvs.emplace(Key{op.peer, r, k}, g);
        }
      }
    }
    for (const auto& [key, g] : sends) {
      auto it = recvs.find(key);
      const Op& so = s_.all_ops()[g];
      if (it == recvs.end()) {
        add(DiagKind::unmatched_send, key.a, g - s_.rank_op_begin()[key.a],
            where_g(g) + ": its " + ordinal(key.k) + " message to rank " + std::to_string(key.b) +
                " has no matching receive (rank " + std::to_string(key.b) + " posts " +
                std::to_string(count_recvs(key.b, key.a)) + " receive(s) from rank " +
                std::to_string(key.a) + ")");
        continue;
      }
      uint32_t rg = it->second;
      recvs.erase(it);
      const Op& ro = s_.all_ops()[rg];
      if (so.len != ro.len) {
        add(DiagKind::size_mismatch, key.a, g - s_.rank_op_begin()[key.a],
            where_g(g) + " sends " + std::to_string(so.len) + " elements but its receive, " +
                where_g(rg) + ", expects " + std::to_string(ro.len));
        continue;
      }
      match_[g] = rg;
      match_[rg] = g;
    }
    std::vector<std::pair<Key, uint32_t>> left(recvs.begin(), recvs.end());
    std::sort(left.begin(), left.end(),
              [](const auto& x, const auto& y) { return x.second < y.second; });
    for (const auto& [key, g] : left)
      add(DiagKind::unmatched_recv, key.b, g - s_.rank_op_begin()[key.b],
          where_g(g) + ": its " + ordinal(key.k) + " receive from rank " + std::to_string(key.a) +
              " has no matching send (rank " + std::to_string(key.a) + " sends " +
              std::to_string(count_sends(key.a, key.b)) + " message(s) to rank " +
              std::to_string(key.b) + ")");
    // Unmatched messages are reported; execution still runs to find deadlocks elsewhere, but
    // results are meaningless when messages are missing.
    messages_ok_ = res_.total_problems == before;
    return true;
  }

  size_t count_kind(int64_t r, int64_t peer, OpKind kind) const {
    size_t n = 0;
    for (const Op& op : s_.rank(r).ops) n += (op.kind == kind && op.peer == peer);
    return n;
  }
  size_t count_recvs(int64_t r, int64_t from) const { return count_kind(r, from, OpKind::recv); }
  size_t count_sends(int64_t r, int64_t to) const { return count_kind(r, to, OpKind::send); }

  // ---- Pass 5: execute symbolically; find deadlocks. --------------------------------------
  bool execute();
  void report_stuck(const std::vector<uint8_t>& state);
  bool check_postcondition();

  Val read(int64_t r, BufId b, int64_t i) const {
    if (b == kIn) {
      if (h_.collective == Collective::bcast) return kUndef;
      return expr_->leaf(r, i);
    }
    return mem_[static_cast<size_t>(r)][b - 1][static_cast<size_t>(i)];
  }
  Val& cell(int64_t r, BufId b, int64_t i) {
    return mem_[static_cast<size_t>(r)][b - 1][static_cast<size_t>(i)];
  }

  const Schedule& s_;
  const ScheduleHeader& h_;
  VerifyOptions opts_;
  VerifyResult res_;
  std::vector<uint32_t> topo_, stack_;
  std::vector<uint64_t> anc_;  // ancestor bitsets of rank anc_rank_'s ops
  size_t anc_words_ = 0;
  int64_t anc_rank_ = -1;
  std::vector<uint32_t> match_, next_in_channel_;
  std::vector<uint8_t> has_channel_pred_;
  bool messages_ok_ = true;
  ExprTable* shared_ = nullptr;
  std::unique_ptr<ExprTable> own_expr_;
  ExprTable* expr_ = nullptr;
  std::vector<std::vector<std::vector<Val>>> mem_;  // [rank][buf - 1][elem], buf >= out
  std::vector<uint64_t> knowledge_;                 // barrier: per op, P bits
  size_t kwords_ = 0;
};

bool Verifier::execute() {
  const size_t M = s_.total_ops();
  const int64_t P = h_.P;
  const int64_t stride = h_.collective == Collective::bcast ? h_.count : h_.in_elems(0);
  if (shared_) {
    expr_ = shared_;
  } else {
    own_expr_ = std::make_unique<ExprTable>(P, stride);
    expr_ = own_expr_.get();
  }
  mem_.assign(static_cast<size_t>(P), {});
  for (int64_t r = 0; r < P; ++r) {
    RankView v = s_.rank(r);
    auto& m = mem_[static_cast<size_t>(r)];
    m.resize(1 + v.scratch.size());
    m[0].assign(static_cast<size_t>(h_.out_elems(r)), kUndef);
    for (size_t k = 0; k < v.scratch.size(); ++k)
      m[k + 1].assign(static_cast<size_t>(v.scratch[k]), kUndef);
    if ((h_.collective == Collective::bcast && r == h_.root) || in_place_rank(r))
      for (int64_t i = 0; i < h_.count; ++i) m[0][static_cast<size_t>(i)] = expr_->leaf(r, i);
  }
  const bool barrier = h_.collective == Collective::barrier;
  if (barrier) {
    if (P > (int64_t{1} << 16))
      fail(ErrorKind::invalid_argument, "barrier verification is limited to P <= 65536");
    kwords_ = static_cast<size_t>((P + 63) / 64);
    knowledge_.assign(M * kwords_, 0);
  }

  // Reverse dependencies over global op ids.
  std::vector<uint32_t> dbeg(M + 1, 0), dents;
  for (int64_t r = 0; r < P; ++r) {
    RankView v = s_.rank(r);
    for (size_t i = 0; i < v.size(); ++i)
      for (OpId d : v.deps_of(i)) ++dbeg[gid(r, d) + 1];
  }
  std::partial_sum(dbeg.begin(), dbeg.end(), dbeg.begin());
  dents.resize(dbeg[M]);
  {
    std::vector<uint32_t> fill(dbeg.begin(), dbeg.end() - 1);
    for (int64_t r = 0; r < P; ++r) {
      RankView v = s_.rank(r);
      for (size_t i = 0; i < v.size(); ++i)
        for (OpId d : v.deps_of(i)) dents[fill[gid(r, d)]++] = gid(r, i);
    }
  }
  std::vector<uint32_t> pending(M);
  std::vector<uint8_t> state(M, 0);  // 0 waiting, 1 started, 2 complete
  std::vector<uint32_t> ready;
  std::vector<int64_t> op_rank(M);
  for (int64_t r = 0; r < P; ++r) {
    RankView v = s_.rank(r);
    for (size_t i = 0; i < v.size(); ++i) {
      uint32_t g = gid(r, i);
      op_rank[g] = r;
      pending[g] = static_cast<uint32_t>(v.deps_of(i).size()) + has_channel_pred_[g];
      if (pending[g] == 0) ready.push_back(g);
    }
  }
  std::reverse(ready.begin(), ready.end());  // start low ranks / low ops first
  std::vector<Val> payload;                  // message values, captured when a send starts
  std::vector<uint64_t> payload_off(M, 0);
  std::vector<uint8_t> reported_undef(static_cast<size_t>(P), 0);
  const std::span<const Op> ops = s_.all_ops();
  auto local_index = [&](uint32_t g) {
    return g - s_.rank_op_begin()[static_cast<size_t>(op_rank[g])];
  };

  auto release = [&](uint32_t g) {
    if (--pending[g] == 0) ready.push_back(g);
  };
  auto undef = [&](int64_t r, uint32_t g, const std::string& what) {
    if (reported_undef[static_cast<size_t>(r)]++) return;
    add(DiagKind::uninitialized, r, int64_t(local_index(g)),
        where_g(g) + ": " + what + " data that nothing wrote");
  };
  auto complete = [&](uint32_t g) {
    state[g] = 2;
    const Op& op = ops[g];
    int64_t r = op_rank[g];
    if (op.kind == OpKind::recv) {
      const Val* src = payload.data() + payload_off[match_[g]];
      for (int64_t j = 0; j < op.len; ++j) cell(r, op.buf, op.off + j) = src[j];
    }
    if (barrier) {
      uint64_t* k = &knowledge_[g * kwords_];
      k[static_cast<size_t>(r) / 64] |= uint64_t{1} << (r % 64);
      RankView v = s_.rank(r);
      for (OpId d : v.deps_of(local_index(g))) {
        const uint64_t* kd = &knowledge_[gid(r, d) * kwords_];
        for (size_t w = 0; w < kwords_; ++w) k[w] |= kd[w];
      }
      if (op.kind == OpKind::recv) {
        const uint64_t* ks = &knowledge_[match_[g] * kwords_];
        for (size_t w = 0; w < kwords_; ++w) k[w] |= ks[w];
      }
    }
    for (uint32_t j = dbeg[g]; j < dbeg[g + 1]; ++j) release(dents[j]);
  };

  while (!ready.empty()) {
    uint32_t g = ready.back();
    ready.pop_back();
    const Op& op = ops[g];
    int64_t r = op_rank[g];
    state[g] = 1;
    switch (op.kind) {
      case OpKind::send:
      case OpKind::recv: {
        if (next_in_channel_[g] != kNone) release(next_in_channel_[g]);
        if (op.kind == OpKind::send) {
          payload_off[g] = payload.size();
          bool bad = false;
          for (int64_t j = 0; j < op.len; ++j) {
            Val x = read(r, op.buf, op.off + j);
            bad |= x == kUndef;
            payload.push_back(x);
          }
          if (bad) undef(r, g, "sends");
          if (barrier) {  // a send's knowledge is fixed when it starts
            uint64_t* k = &knowledge_[g * kwords_];
            k[static_cast<size_t>(r) / 64] |= uint64_t{1} << (r % 64);
            RankView v = s_.rank(r);
            for (OpId d : v.deps_of(local_index(g))) {
              const uint64_t* kd = &knowledge_[gid(r, d) * kwords_];
              for (size_t w = 0; w < kwords_; ++w) k[w] |= kd[w];
            }
          }
        }
        uint32_t m = match_[g];
        if (m != kNone && state[m] == 1) {
          uint32_t snd = op.kind == OpKind::send ? g : m;
          uint32_t rcv = op.kind == OpKind::send ? m : g;
          // The send's knowledge was set at its start; complete() would add its deps again.
          state[snd] = 2;
          for (uint32_t j = dbeg[snd]; j < dbeg[snd + 1]; ++j) release(dents[j]);
          complete(rcv);
        }
        break;
      }
      case OpKind::reduce: {
        bool bad = false;
        for (int64_t j = 0; j < op.len; ++j) {
          Val s = read(r, op.src, op.src_off + j);
          Val& d = cell(r, op.buf, op.off + j);
          bad |= (s == kUndef || d == kUndef);
          d = op.side == Side::src_first ? expr_->combine(s, d) : expr_->combine(d, s);
        }
        if (bad) undef(r, g, "reduces");
        complete(g);
        break;
      }
      case OpKind::copy:
        for (int64_t j = 0; j < op.len; ++j)
          cell(r, op.buf, op.off + j) = read(r, op.src, op.src_off + j);
        complete(g);
        break;
      case OpKind::compute:
      case OpKind::sleep:
        complete(g);
        break;
    }
  }
  if (std::all_of(state.begin(), state.end(), [](uint8_t x) { return x == 2; }))
    return messages_ok_;
  report_stuck(state);
  return false;
}

// Some ops never completed. Find a cycle of waits among them (a deadlock) and show it; ops that
// only wait on unmatched messages are consequences of problems already reported.
void Verifier::report_stuck(const std::vector<uint8_t>& state) {
  const size_t M = s_.total_ops();
  const std::span<const Op> ops = s_.all_ops();
  // The ops a stuck op waits for directly, with the reason.
  auto blockers = [&](uint32_t g, std::vector<std::pair<uint32_t, std::string>>& out) {
    out.clear();
    int64_t r = rank_of(g);
    uint32_t base = static_cast<uint32_t>(s_.rank_op_begin()[static_cast<size_t>(r)]);
    RankView v = s_.rank(r);
    if (state[g] == 0) {
      for (OpId d : v.deps_of(g - base))
        if (state[base + d] != 2) out.push_back({base + d, "waits for its dependency"});
      if (has_channel_pred_[g])
        for (size_t i = 0; i < g - base; ++i)
          if (next_in_channel_[base + i] == g && state[base + i] == 0)
            out.push_back({base + static_cast<uint32_t>(i),
                           "is posted after the earlier message on the same pair,"});
    } else if (state[g] == 1 && match_[g] != kNone && state[match_[g]] == 0) {
      out.push_back({match_[g], ops[g].kind == OpKind::send ? "waits for its receive,"
                                                            : "waits for its send,"});
    }
  };
  std::vector<uint8_t> color(M, 0);  // 0 new, 1 on stack, 2 done
  std::vector<std::pair<uint32_t, std::string>> bl;
  struct Frame {
    uint32_t g;
    std::vector<std::pair<uint32_t, std::string>> next;
    size_t i;
  };
  size_t stuck = 0;
  for (uint32_t s = 0; s < M; ++s) {
    if (state[s] == 2) continue;
    ++stuck;
    if (color[s]) continue;
    std::vector<Frame> st;
    blockers(s, bl);
    st.push_back({s, bl, 0});
    color[s] = 1;
    while (!st.empty()) {
      Frame& f = st.back();
      if (f.i == f.next.size()) {
        color[f.g] = 2;
        st.pop_back();
        continue;
      }
      auto [n, why] = f.next[f.i++];
      if (color[n] == 1) {
        // Cycle: from n along the stack back to n.
        size_t k = 0;
        while (st[k].g != n) ++k;
        std::string msg = "deadlock: ";
        size_t shown = 0;
        for (size_t j = k; j < st.size(); ++j) {
          if (shown++ == 8) {
            msg += "... ";
            break;
          }
          const auto& edge = st[j].next[st[j].i - 1];
          msg += where_g(st[j].g) + " " + edge.second + " ";
        }
        msg += where_g(n) + ", which is where the cycle started";
        int64_t r = rank_of(n);
        add(DiagKind::deadlock, r, n - s_.rank_op_begin()[static_cast<size_t>(r)], msg);
        return;
      }
      if (color[n] == 0) {
        color[n] = 1;
        blockers(n, bl);
        st.push_back({n, bl, 0});
      }
    }
  }
  if (messages_ok_)
    add(DiagKind::deadlock, -1, -1,
        std::to_string(stuck) + " ops never completed, with no cycle of waits found");
}

bool Verifier::check_postcondition() {
  const int64_t P = h_.P, n = h_.count;
  const ExprTable& E = *expr_;
  res_.consistent_commutative = res_.consistent_noncommutative = true;
  auto fail_both = [&] { res_.consistent_commutative = res_.consistent_noncommutative = false; };
  size_t listed = 0;
  auto out_at = [&](int64_t r, int64_t i) {
    return mem_[static_cast<size_t>(r)][0][static_cast<size_t>(i)];
  };
  auto elem = [](int64_t r, const char* buf, int64_t i) {
    return "rank " + std::to_string(r) + " " + buf + "[" + std::to_string(i) + "]";
  };

  if (h_.collective == Collective::barrier) {
    for (int64_t r = 0; r < P; ++r) {
      std::vector<uint64_t> k(kwords_, 0);
      k[static_cast<size_t>(r) / 64] |= uint64_t{1} << (r % 64);
      RankView v = s_.rank(r);
      for (size_t i = 0; i < v.size(); ++i)
        for (size_t w = 0; w < kwords_; ++w) k[w] |= knowledge_[gid(r, i) * kwords_ + w];
      std::string missing;
      size_t nmiss = 0;
      for (int64_t q = 0; q < P; ++q)
        if (!(k[static_cast<size_t>(q) / 64] >> (q % 64) & 1) && nmiss++ < 8)
          missing += (missing.empty() ? "" : ", ") + std::to_string(q);
      if (nmiss)
        add(DiagKind::wrong_result, r, -1,
            "barrier: rank " + std::to_string(r) + " can leave before hearing from " +
                std::to_string(nmiss) + " rank(s) (" + missing + (nmiss > 8 ? ", ..." : "") +
                "): no chain of messages leads from their start to its end");
    }
    return true;
  }

  // Expected fingerprint of "every rank's element once".
  uint64_t all_hash = 0;
  for (int64_t q = 0; q < P; ++q) all_hash += verify_detail::rank_hash(q);

  auto check_reduced = [&](int64_t r, int64_t i, Val v) -> bool {
    if (v == kUndef) {
      add(DiagKind::uninitialized, r, -1, elem(r, "out", i) + " was never written");
      fail_both();
      return false;
    }
    if (E.idx(v) == i && E.nleaves(v) == static_cast<uint64_t>(P) && E.min_rank(v) == 0 &&
        E.max_rank(v) == P - 1 && E.hash(v) == all_hash)
      return true;
    std::string detail;
    std::vector<int64_t> lv;
    if (E.idx(v) != i) {
      detail = "it combines elements other than element " + std::to_string(i);
    } else if (E.leaves(v, lv, 4096)) {
      std::vector<int> seen(static_cast<size_t>(P), 0);
      for (int64_t q : lv) ++seen[static_cast<size_t>(q)];
      std::string miss, dup;
      for (int64_t q = 0; q < P; ++q) {
        if (seen[static_cast<size_t>(q)] == 0 && miss.size() < 60) miss += " r" + std::to_string(q);
        if (seen[static_cast<size_t>(q)] > 1 && dup.size() < 60) dup += " r" + std::to_string(q);
      }
      if (!miss.empty()) detail += "missing" + miss;
      if (!dup.empty())
        detail += std::string(detail.empty() ? "" : "; ") + "counted more than once:" + dup;
    } else {
      detail =
          std::to_string(E.nleaves(v)) + " operands where " + std::to_string(P) + " were expected";
    }
    add(DiagKind::wrong_result, r, -1,
        elem(r, "out", i) + ": expected the reduction of element " + std::to_string(i) +
            " over ranks 0.." + std::to_string(P - 1) + " (each once), found " + E.render(v) +
            " (" + detail + ")");
    fail_both();
    return false;
  };

  auto check_consistency = [&](int64_t r, int64_t r0, int64_t i, Val v, Val v0) {
    if (v != v0) res_.consistent_noncommutative = false;
    if (E.canon(v) != E.canon(v0)) res_.consistent_commutative = false;
    bool bad = opts_.commutative ? E.canon(v) != E.canon(v0) : v != v0;
    if (bad && listed++ < 4) {
      std::string note =
          (E.canon(v) == E.canon(v0))
              ? " (they differ only by swapped operands: consistent for a commutative op)"
              : "";
      add(DiagKind::inconsistent_tree, r, -1,
          "element " + std::to_string(i) + " is reduced with different trees: rank " +
              std::to_string(r0) + " has " + E.render(v0) + ", rank " + std::to_string(r) +
              " has " + E.render(v) + note + "; results would not be bitwise identical");
    } else if (bad) {
      ++res_.total_problems;
    }
  };
  auto check_order = [&](int64_t r, int64_t i, Val v) {
    if (E.ordered(v)) return;
    res_.consistent_noncommutative = false;
    if (!opts_.commutative && listed++ < 4)
      add(DiagKind::needs_commutativity, r, -1,
          elem(r, "out", i) + " = " + E.render(v) +
              " combines operands out of rank order: this algorithm needs a commutative op");
    else if (!opts_.commutative)
      ++res_.total_problems;
  };

  switch (h_.collective) {
    case Collective::allreduce:
      for (int64_t i = 0; i < n; ++i) {
        Val v0 = out_at(0, i);
        if (!check_reduced(0, i, v0)) continue;
        check_order(0, i, v0);
        for (int64_t r = 1; r < P; ++r) {
          Val v = out_at(r, i);
          if (check_reduced(r, i, v)) check_consistency(r, 0, i, v, v0);
        }
      }
      break;
    case Collective::reduce:
      for (int64_t i = 0; i < n; ++i) {
        Val v = out_at(h_.root, i);
        if (check_reduced(h_.root, i, v)) check_order(h_.root, i, v);
      }
      break;
    case Collective::bcast:
      for (int64_t r = 0; r < P; ++r)
        for (int64_t i = 0; i < n; ++i) {
          Val v = out_at(r, i), want = E.leaf(h_.root, i);
          if (v != want) {
            add(DiagKind::wrong_result, r, -1,
                elem(r, "out", i) + ": expected the root's element " + std::to_string(i) +
                    ", found " +
                    (v == kUndef ? std::string("nothing (never written)") : E.render(v)));
            fail_both();
          }
        }
      break;
    case Collective::alltoall:
      for (int64_t r = 0; r < P; ++r)
        for (int64_t q = 0; q < P; ++q)
          for (int64_t j = 0; j < n; ++j) {
            Val v = out_at(r, q * n + j), want = E.leaf(q, r * n + j);
            if (v != want) {
              std::string found = v == kUndef ? std::string("nothing (never written)")
                                  : E.is_leaf(v)
                                      ? "rank " + std::to_string(E.leaf_rank(v)) + "'s in[" +
                                            std::to_string(E.leaf_idx(v)) + "]"
                                      : E.render(v);
              add(DiagKind::wrong_result, r, -1,
                  elem(r, "out", q * n + j) + ": expected rank " + std::to_string(q) + "'s in[" +
                      std::to_string(r * n + j) + "] (block " + std::to_string(r) + "), found " +
                      found);
              fail_both();
            }
          }
      break;
    case Collective::barrier:
      break;
  }
  return true;
}

}  // namespace

// The schedule an executor runs under MPI_IN_PLACE: on the aliased ranks every access to `in`
// becomes an access to `out`, and a copy of a region onto itself becomes an empty compute (the
// executor skips it). Dependencies, op indices and messages are unchanged, so diagnoses still
// name the ops of the original schedule.
Schedule in_place_schedule(const Schedule& s) {
  const ScheduleHeader& h = s.header;
  if (h.collective != Collective::allreduce && h.collective != Collective::reduce)
    fail(ErrorKind::invalid_argument,
         "the in-place check applies to allreduce and reduce (MPI_IN_PLACE aliases sendbuf to "
         "recvbuf), not " +
             std::string(to_string(h.collective)));
  Schedule out(h);
  RankProgram p;
  for (int64_t r = 0; r < s.num_ranks(); ++r) {
    RankView v = s.rank(r);
    p.clear(r);
    p.scratch.assign(v.scratch.begin(), v.scratch.end());
    const bool alias = h.collective == Collective::allreduce || r == h.root;
    for (size_t i = 0; i < v.size(); ++i) {
      Op op = v.ops[i];
      if (alias) {
        if (op.kind == OpKind::copy && op.src == kIn && op.buf == kOut && op.src_off == op.off) {
          op = Op{};
          op.kind = OpKind::compute;
          op.len = 0;
        } else {
          if (op.src == kIn && (op.kind == OpKind::copy || op.kind == OpKind::reduce))
            op.src = kOut;
          if (op.buf == kIn && op.kind == OpKind::send) op.buf = kOut;
        }
      }
      p.append(op, v.deps_of(i), v.stage[i]);
    }
    out.append_rank(p.view());
  }
  return out;
}

VerifyResult verify(const Schedule& s, const VerifyOptions& opts) {
  if (opts.in_place) {
    Schedule aliased = in_place_schedule(s);
    return Verifier(aliased, opts).run();
  }
  return Verifier(s, opts).run();
}

TreeComparison compare_trees(const Schedule& a, const Schedule& b) {
  const ScheduleHeader &ha = a.header, &hb = b.header;
  if (ha.collective != hb.collective || ha.P != hb.P || ha.count != hb.count || ha.root != hb.root)
    fail(ErrorKind::invalid_argument,
         "compare_trees: the schedules differ in collective, P, count or root");
  if (ha.collective != Collective::allreduce && ha.collective != Collective::reduce)
    fail(ErrorKind::invalid_argument, "compare_trees: only allreduce and reduce have trees");
  ExprTable table(ha.P, ha.in_elems(0));
  VerifyOptions o;
  o.max_diagnostics = 1;
  Verifier va(a, o, &table), vb(b, o, &table);
  for (auto* pr : {&va, &vb}) {
    VerifyResult r = pr->run();
    if (!r.ok)
      fail(ErrorKind::invalid_argument,
           "compare_trees: " + std::string(pr == &va ? ha.algorithm : hb.algorithm) +
               " does not verify: " + (r.diagnostics.empty() ? "" : r.diagnostics[0].message));
  }
  TreeComparison c;
  c.same_exact = c.same_commutative = true;
  const int64_t r0 = ha.collective == Collective::reduce ? ha.root : 0;
  const int64_t r1 = ha.collective == Collective::reduce ? ha.root + 1 : ha.P;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t i = 0; i < ha.count; ++i) {
      Val x = va.out_value(r, i), y = vb.out_value(r, i);
      if (x == y) continue;
      c.same_exact = false;
      if (table.canon(x) != table.canon(y)) c.same_commutative = false;
      if (c.difference.empty())
        c.difference = "rank " + std::to_string(r) + " element " + std::to_string(i) + ": " +
                       (ha.algorithm.empty() ? "first" : ha.algorithm) + " computes " +
                       table.render(x) + ", " + (hb.algorithm.empty() ? "second" : hb.algorithm) +
                       " computes " + table.render(y);
    }
  return c;
}

}  // namespace collkit
