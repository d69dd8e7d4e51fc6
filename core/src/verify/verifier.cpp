// The verifier's driver: runs the passes in order (structure -> dependency cycles -> hazards ->
// matching -> execution (deadlock, values) -> the collective's postcondition), each stopping the
// run if it finds problems that make the next one meaningless, and the IR helpers they share.
// See collkit/verify.hpp for what each proves and verifier.hpp for where each pass lives.
#include "verifier.hpp"

#include <algorithm>

#include "collkit/error.hpp"

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

namespace verify_detail {

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

Verifier::Verifier(const Schedule& s, const VerifyOptions& o, ExprTable* shared)
    : s_(s), h_(s.header), c_(s.header.spec()), opts_(o), shared_(shared) {}

VerifyResult Verifier::run() {
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

void Verifier::add(DiagKind k, int64_t rank, int64_t op, std::string msg) {
  ++res_.total_problems;
  if (res_.diagnostics.size() < opts_.max_diagnostics)
    res_.diagnostics.push_back({k, rank, op, std::move(msg)});
}

std::string Verifier::where(int64_t r, size_t i, const RankView& v) const {
  return "rank " + std::to_string(r) + " op " + std::to_string(i) + " (" + op_text(v.ops[i]) + ")";
}

int64_t Verifier::rank_of(uint32_t g) const {
  auto b = s_.rank_op_begin();
  return static_cast<int64_t>(std::upper_bound(b.begin(), b.end(), g) - b.begin()) - 1;
}

std::string Verifier::where_g(uint32_t g) const {
  int64_t r = rank_of(g);
  return where(r, local(g, r), s_.rank(r));
}

// The schedule an executor runs under MPI_IN_PLACE: on the aliased ranks `in` and `out` are one
// buffer (held as `out`), every access to either moved to where the spec puts it, and a copy of a
// region onto itself becomes an empty compute (the executor skips it). Dependencies, op indices
// and messages are unchanged, so diagnoses still name the ops of the original schedule.
Schedule in_place_schedule(const Schedule& s) {
  const ScheduleHeader& h = s.header;
  const CollectiveSpec& c = h.spec();
  if (c.in_place == Ranks::none) {
    std::string which;
    for (const CollectiveSpec& o : all_collectives())
      if (o.in_place != Ranks::none) which += (which.empty() ? "" : ", ") + std::string(o.name);
    fail(ErrorKind::invalid_argument, "the in-place check applies to " + which +
                                          " (MPI_IN_PLACE aliases sendbuf to recvbuf), not " +
                                          std::string(c.name));
  }
  Schedule out(h);
  RankProgram p;
  for (int64_t r = 0; r < s.num_ranks(); ++r) {
    RankView v = s.rank(r);
    p.clear(r);
    p.scratch.assign(v.scratch.begin(), v.scratch.end());
    const bool alias = applies_to(c.in_place, h.root, r);
    const int64_t in_at = alias ? in_place_in_at(h, r) : 0;
    const int64_t out_at = alias ? in_place_out_at(h, r) : 0;
    // Where an access to buffer b at offset off goes in the one buffer.
    const auto move = [&](BufId& b, int64_t& off) {
      if (b == kIn) {
        b = kOut;
        off += in_at;
      } else if (b == kOut) {
        off += out_at;
      }
    };
    for (size_t i = 0; i < v.size(); ++i) {
      Op op = v.ops[i];
      if (alias) {
        if (op.kind != OpKind::compute && op.kind != OpKind::sleep) move(op.buf, op.off);
        if (op.kind == OpKind::copy || op.kind == OpKind::reduce) move(op.src, op.src_off);
        if (op.kind == OpKind::copy && op.src == op.buf && op.src_off == op.off) {
          op = Op{};
          op.kind = OpKind::compute;
          op.len = 0;
        }
      }
      p.append(op, v.deps_of(i), v.stage[i]);
    }
    out.append_rank(p.view());
  }
  return out;
}

}  // namespace verify_detail

using verify_detail::ExprTable;
using verify_detail::Val;
using verify_detail::Verifier;

VerifyResult verify(const Schedule& s, const VerifyOptions& opts) {
  if (opts.in_place) {
    Schedule aliased = verify_detail::in_place_schedule(s);
    return Verifier(aliased, opts).run();
  }
  return Verifier(s, opts).run();
}

TreeComparison compare_trees(const Schedule& a, const Schedule& b) {
  const ScheduleHeader &ha = a.header, &hb = b.header;
  if (ha.collective != hb.collective || ha.P != hb.P || ha.count != hb.count || ha.root != hb.root)
    fail(ErrorKind::invalid_argument,
         "compare_trees: the schedules differ in collective, P, count or root");
  const CollectiveSpec& c = ha.spec();
  if (!c.reduction())
    fail(ErrorKind::invalid_argument,
         "compare_trees: only reductions have trees, not " + std::string(c.name));
  ExprTable table(ha.P, verify_detail::leaf_stride(ha));
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
  TreeComparison cmp;
  cmp.same_exact = cmp.same_commutative = true;
  for (int64_t r = 0; r < ha.P; ++r) {
    if (!applies_to(c.post.ranks, ha.root, r)) continue;
    for (int64_t i = 0; i < ha.out_elems(r); ++i) {
      Val x = va.out_value(r, i), y = vb.out_value(r, i);
      if (x == y) continue;
      cmp.same_exact = false;
      if (table.canon(x) != table.canon(y)) cmp.same_commutative = false;
      if (cmp.difference.empty())
        cmp.difference = "rank " + std::to_string(r) + " element " + std::to_string(i) + ": " +
                         (ha.algorithm.empty() ? "first" : ha.algorithm) + " computes " +
                         table.render(x) + ", " + (hb.algorithm.empty() ? "second" : hb.algorithm) +
                         " computes " + table.render(y);
    }
  }
  return cmp;
}

}  // namespace collkit
