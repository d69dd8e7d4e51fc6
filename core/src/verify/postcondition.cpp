// Pass 6: every rank ends with what the collective's spec (collective.hpp) says, element by
// element: one input element copied, or the reduction over all ranks of one input element with
// the same tree wherever it is computed (up to swapped operands for a commutative op, exactly and
// in rank order for a non-commutative one); for a barrier, that no rank leaves before hearing,
// through a chain of messages, from every rank's start.
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
  int64_t most = 0;  // the largest `out` of any rank the postcondition speaks of
  for (int64_t r = 0; r < P; ++r)
    if (applies_to(c_.post.ranks, h_.root, r)) most = std::max(most, h_.out_elems(r));
  auto expected = [&](int64_t r, int64_t i) {
    return expected_out(c_, P, h_.count, h_.root, r, i);
  };
  switch (c_.post.kind) {
    case Postcondition::Kind::synchronized:
      check_synchronized();
      return;
    case Postcondition::Kind::copied:
      for (int64_t r = 0; r < P; ++r)
        for (int64_t i = 0; i < h_.out_elems(r); ++i) {
          const Expected want = expected(r, i);
          if (want.kind == Expected::Kind::element) check_copied(r, i, want, out_value(r, i));
        }
      return;
    case Postcondition::Kind::reduced: {
      // The first rank to compute an input element's reduction is the reference the others
      // must agree with; if its result is wrong, the others are not compared.
      all_hash_ = 0;  // the fingerprint of "every rank's element once"
      for (int64_t q = 0; q < P; ++q) all_hash_ += rank_hash(q);
      enum : uint8_t { unseen, wrong, right };
      std::vector<uint8_t> ref_state(static_cast<size_t>(leaf_stride(h_)), unseen);
      std::vector<std::pair<int64_t, Val>> ref(ref_state.size());
      for (int64_t i = 0; i < most; ++i)
        for (int64_t r = 0; r < P; ++r) {
          const Expected want = expected(r, i);
          if (want.kind != Expected::Kind::reduction || i >= h_.out_elems(r)) continue;
          const size_t k = static_cast<size_t>(want.index);
          const Val v = out_value(r, i);
          if (ref_state[k] == wrong) continue;
          if (ref_state[k] == unseen) {
            ref_state[k] = check_reduced(r, i, want.index, v) ? right : wrong;
            if (ref_state[k] == right) check_order(r, i, v);
            ref[k] = {r, v};
          } else if (check_reduced(r, i, want.index, v)) {
            check_consistency(r, ref[k].first, want.index, v, ref[k].second);
          }
        }
      return;
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
  std::string expect = c_.post.source == Source::root && c_.root_input_in_out
                           ? "the root's element " + std::to_string(want.index)
                           : input(want.rank, want.index) +
                                 (c_.post.index == SourceIndex::own_block && h_.count > 0
                                      ? " (block " + std::to_string(want.index / h_.count) + ")"
                                      : "");
  std::string found = v == kUndef    ? std::string("nothing (never written)")
                      : E.is_leaf(v) ? input(E.leaf_rank(v), E.leaf_idx(v))
                                     : E.render(v);
  add(DiagKind::wrong_result, r, -1, elem(r, i) + ": expected " + expect + ", found " + found);
  fail_both();
}

// Whether out[i] of rank r is the reduction of input element k over all ranks, each once.
bool Verifier::check_reduced(int64_t r, int64_t i, int64_t k, Val v) {
  const ExprTable& E = *expr_;
  const int64_t P = h_.P;
  if (v == kUndef) {
    add(DiagKind::uninitialized, r, -1, elem(r, i) + " was never written");
    fail_both();
    return false;
  }
  if (E.idx(v) == k && E.nleaves(v) == static_cast<uint64_t>(P) && E.min_rank(v) == 0 &&
      E.max_rank(v) == P - 1 && E.hash(v) == all_hash_)
    return true;
  std::string detail;
  std::vector<int64_t> lv;
  if (E.idx(v) != k) {
    detail = "it combines elements other than element " + std::to_string(k);
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
      elem(r, i) + ": expected the reduction of element " + std::to_string(k) + " over ranks 0.." +
          std::to_string(P - 1) + " (each once), found " + E.render(v) + " (" + detail + ")");
  fail_both();
  return false;
}

// Whether rank r's tree v of input element k is the reference rank r0's tree v0.
void Verifier::check_consistency(int64_t r, int64_t r0, int64_t k, Val v, Val v0) {
  const ExprTable& E = *expr_;
  if (v != v0) res_.consistent_noncommutative = false;
  if (E.canon(v) != E.canon(v0)) res_.consistent_commutative = false;
  bool bad = opts_.commutative ? E.canon(v) != E.canon(v0) : v != v0;
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
