// Pass 6: every rank ends with what the collective's spec (collective.hpp) says, element by
// element: one input element copied, or the reduction over all ranks of one input element with
// the same tree wherever it is computed (up to swapped operands for a commutative op, exactly and
// in rank order for a non-commutative one), or a prefix's (ranks 0..r, or 0..r-1), in rank order
// for a non-commutative op; gaps between displaced blocks never written; for a barrier, that no
// rank leaves before hearing, through a chain of messages, from every rank's start.
#include "verifier.hpp"

namespace collkit::verify_detail {

namespace {
std::string elem(int64_t r, int64_t i) {
  return "rank " + std::to_string(r) + " out[" + std::to_string(i) + "]";
}
}  // namespace

void Verifier::check_postcondition() {
  res_.consistent_commutative = res_.consistent_noncommutative = true;
  listed_ = 0;
  const int64_t P = h_.P;
  if (c_.post.kind == Postcondition::Kind::synchronized) {
    check_synchronized();
    return;
  }
  // What each rank's out must hold, as runs in increasing offset (collective.hpp).
  std::vector<std::vector<ExpectedRun>> runs(static_cast<size_t>(P));
  for (int64_t r = 0; r < P; ++r) runs[static_cast<size_t>(r)] = expected_runs(h_, r);
  // Gaps between an out's blocks: an MPI call never writes there (the user's data lies there).
  for (int64_t r = 0; r < P; ++r)
    for (const ExpectedRun& run : runs[static_cast<size_t>(r)]) {
      if (!run.untouched) continue;
      int64_t i = run.out_off;
      while (i < run.out_off + run.len && out_value(r, i) == kUndef) ++i;
      if (i < run.out_off + run.len) {
        add(DiagKind::wrong_result, r, -1,
            elem(r, i) + " lies between the blocks the displacements place (out[" +
                std::to_string(run.out_off) + ":" + std::to_string(run.out_off + run.len) +
                "]) and was written: an MPI call leaves the rest of the receive buffer as it was");
        fail_both();
        break;
      }
    }
  const auto at = [](const Expected& w, int64_t j) {
    Expected e = w;
    e.index += j;
    return e;
  };
  if (c_.post.kind == Postcondition::Kind::copied) {
    for (int64_t r = 0; r < P; ++r)
      for (const ExpectedRun& run : runs[static_cast<size_t>(r)])
        if (run.want.kind == Expected::Kind::element)
          for (int64_t j = 0; j < run.len; ++j)
            check_copied(r, run.out_off + j, at(run.want, j), out_value(r, run.out_off + j));
    return;
  }
  hash_prefix_.assign(static_cast<size_t>(P) + 1, 0);  // the fingerprints of ranks 0..q-1
  for (int64_t q = 0; q < P; ++q)
    hash_prefix_[static_cast<size_t>(q) + 1] = hash_prefix_[static_cast<size_t>(q)] + rank_hash(q);
  if (c_.prefix()) {
    // Each rank's result is its own (ranks 0..r): no other rank computes it to compare with,
    // and a non-commutative op needs it in rank order on every rank.
    for (int64_t r = 0; r < P; ++r)
      for (const ExpectedRun& run : runs[static_cast<size_t>(r)])
        if (run.want.kind == Expected::Kind::reduction)
          for (int64_t j = 0; j < run.len; ++j) {
            const int64_t i = run.out_off + j;
            const Val v = out_value(r, i);
            if (check_reduced(r, i, at(run.want, j), v)) check_order(r, i, v);
          }
    return;
  }
  // The first rank to compute an input element's reduction is the reference the others must
  // agree with; if its result is wrong, the others are not compared. Element by element across
  // the ranks (each rank's runs read with a cursor), so the first differences listed are the
  // lowest elements'.
  int64_t most = 0;  // the largest `out` of any rank the postcondition speaks of
  for (int64_t r = 0; r < P; ++r)
    if (!runs[static_cast<size_t>(r)].empty()) {
      const ExpectedRun& last = runs[static_cast<size_t>(r)].back();
      most = std::max(most, last.out_off + last.len);
    }
  std::vector<size_t> cursor(static_cast<size_t>(P), 0);
  enum : uint8_t { unseen, wrong, right };
  std::vector<uint8_t> ref_state(static_cast<size_t>(leaf_stride(h_)), unseen);
  std::vector<std::pair<int64_t, Val>> ref(ref_state.size());
  for (int64_t i = 0; i < most; ++i)
    for (int64_t r = 0; r < P; ++r) {
      const auto& rr = runs[static_cast<size_t>(r)];
      size_t& c = cursor[static_cast<size_t>(r)];
      while (c < rr.size() && rr[c].out_off + rr[c].len <= i) ++c;
      if (c == rr.size() || rr[c].out_off > i || rr[c].want.kind != Expected::Kind::reduction)
        continue;
      const Expected want = at(rr[c].want, i - rr[c].out_off);
      const size_t k = static_cast<size_t>(want.index);
      const Val v = out_value(r, i);
      if (ref_state[k] == wrong) continue;
      if (ref_state[k] == unseen) {
        ref_state[k] = check_reduced(r, i, want, v) ? right : wrong;
        if (ref_state[k] == right) check_order(r, i, v);
        ref[k] = {r, v};
      } else if (check_reduced(r, i, want, v)) {
        check_consistency(r, ref[k].first, want.index, v, ref[k].second);
      }
    }
}

// Barrier: the knowledge of a rank's last ops must cover every rank.
void Verifier::check_synchronized() {
  const int64_t P = h_.P;
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
}

void Verifier::check_copied(int64_t r, int64_t i, const Expected& want, Val v) {
  const ExprTable& E = *expr_;
  if (v == E.leaf(want.rank, want.index)) return;
  // The root's data of a one-buffer collective (bcast) is its out, not an `in`.
  auto input = [&](int64_t q, int64_t k) {
    return c_.root_input_in_out ? "rank " + std::to_string(q) + "'s element " + std::to_string(k)
                                : "rank " + std::to_string(q) + "'s in[" + std::to_string(k) + "]";
  };
  std::string expect =
      c_.post.source == Source::root && c_.root_input_in_out
          ? "the root's element " + std::to_string(want.index)
          : input(want.rank, want.index) +
                (c_.post.index == SourceIndex::own_block && h_.count > 0 && !h_.irregular()
                     ? " (block " + std::to_string(want.index / h_.count) + ")"
                     : "");
  std::string found = v == kUndef    ? std::string("nothing (never written)")
                      : E.is_leaf(v) ? input(E.leaf_rank(v), E.leaf_idx(v))
                                     : E.render(v);
  add(DiagKind::wrong_result, r, -1, elem(r, i) + ": expected " + expect + ", found " + found);
  fail_both();
}

// Whether out[i] of rank r is the reduction of input element want.index over ranks
// want.first..want.last, each once.
bool Verifier::check_reduced(int64_t r, int64_t i, const Expected& want, Val v) {
  const ExprTable& E = *expr_;
  const int64_t k = want.index, lo = want.first, hi = want.last;
  if (v == kUndef) {
    add(DiagKind::uninitialized, r, -1, elem(r, i) + " was never written");
    fail_both();
    return false;
  }
  const uint64_t fingerprint =
      hash_prefix_[static_cast<size_t>(hi) + 1] - hash_prefix_[static_cast<size_t>(lo)];
  if (E.idx(v) == k && E.nleaves(v) == static_cast<uint64_t>(hi - lo + 1) && E.min_rank(v) == lo &&
      E.max_rank(v) == hi && E.hash(v) == fingerprint)
    return true;
  std::string detail;
  std::vector<int64_t> lv;
  if (E.idx(v) != k) {
    detail = "it combines elements other than element " + std::to_string(k);
  } else if (E.leaves(v, lv, 4096)) {
    std::vector<int> seen(static_cast<size_t>(h_.P), 0);
    for (int64_t q : lv) ++seen[static_cast<size_t>(q)];
    std::string miss, dup, extra;
    for (int64_t q = 0; q < h_.P; ++q) {
      const int n = seen[static_cast<size_t>(q)];
      if (q >= lo && q <= hi && n == 0 && miss.size() < 60) miss += " r" + std::to_string(q);
      if (q >= lo && q <= hi && n > 1 && dup.size() < 60) dup += " r" + std::to_string(q);
      if ((q < lo || q > hi) && n > 0 && extra.size() < 60) extra += " r" + std::to_string(q);
    }
    const auto join = [&](const std::string& what, const std::string& list) {
      if (!list.empty()) detail += (detail.empty() ? "" : "; ") + what + list;
    };
    join("missing", miss);
    join("counted more than once:", dup);
    join("includes ranks outside the range:", extra);
  } else {
    detail = std::to_string(E.nleaves(v)) + " operands where " + std::to_string(hi - lo + 1) +
             " were expected";
  }
  add(DiagKind::wrong_result, r, -1,
      elem(r, i) + ": expected the reduction of element " + std::to_string(k) + " over ranks " +
          std::to_string(lo) + ".." + std::to_string(hi) + " (each once), found " + E.render(v) +
          " (" + detail + ")");
  fail_both();
  return false;
}

// Whether rank r's tree v of input element k is the reference rank r0's tree v0.
void Verifier::check_consistency(int64_t r, int64_t r0, int64_t k, Val v, Val v0) {
  const ExprTable& E = *expr_;
  if (v != v0) res_.consistent_noncommutative = false;
  if (E.canon(v) != E.canon(v0)) res_.consistent_commutative = false;
  const bool bad = !opts_.exact && (opts_.commutative ? E.canon(v) != E.canon(v0) : v != v0);
  if (bad && listed_++ < 4) {
    std::string note =
        (E.canon(v) == E.canon(v0))
            ? " (they differ only by swapped operands: consistent for a commutative op)"
            : "";
    add(DiagKind::inconsistent_tree, r, -1,
        "element " + std::to_string(k) + " is reduced with different trees: rank " +
            std::to_string(r0) + " has " + E.render(v0) + ", rank " + std::to_string(r) + " has " +
            E.render(v) + note + "; results would not be bitwise identical");
  } else if (bad) {
    ++res_.total_problems;
  }
}

// A non-commutative op needs the operands in rank order.
void Verifier::check_order(int64_t r, int64_t i, Val v) {
  const ExprTable& E = *expr_;
  if (E.ordered(v)) return;
  res_.consistent_noncommutative = false;
  if (!opts_.commutative && listed_++ < 4)
    add(DiagKind::needs_commutativity, r, -1,
        elem(r, i) + " = " + E.render(v) +
            " combines operands out of rank order: this algorithm needs a commutative op");
  else if (!opts_.commutative)
    ++res_.total_problems;
}

}  // namespace collkit::verify_detail
