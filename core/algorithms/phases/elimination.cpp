// Reduce-scatter and allgather with 3-2 or 2-1 elimination for any P (see elimination.hpp).
//
// The ranks form one group; a group of m members splits into a lower and an upper child group
// of floor(m/2) members each, the lower child keeping the lower half of the group's blocks.
// Members pair up, (2c, 2c+1) for even m; for odd m the pairs are (2c+1, 2c+2), c >= 1, and the
// first three members are either a triple (3-2: members 0 and 1 exchange halves like a pair and
// member 2 sends its lower half to 0, its upper half to 1) or a 2-1 elimination (member 0 sends
// the whole segment to member 1, which then pairs with member 2). Eliminated members get the
// result back in the allgather. Members are in rank order at every level, and every combination
// puts the lower members' partial result on the left: any op, not only commutative ones.
#include "elimination.hpp"

#include <bit>

#include "collkit/error.hpp"

namespace collkit::phases {
namespace {

// Index in the parent group of child member c (of the lower or upper child).
int64_t parent_index(int64_t m, bool upper, int64_t c, Elimination mode) {
  if (m % 2 == 0) return 2 * c + (upper ? 1 : 0);
  if (mode == Elimination::three_two && c == 0) return upper ? 1 : 0;
  return 2 * c + 1 + (upper ? 1 : 0);
}

}  // namespace

ElimPlan::ElimPlan(int64_t P, int64_t rank, Elimination mode_) : mode(mode_) {
  int64_t m = P, i = rank, lo = 0,
          hi = int64_t{1} << (std::bit_width(static_cast<uint64_t>(P)) - 1);
  while (m > 1) {
    ElimLevel& L = levels[static_cast<size_t>(levels_count++)];
    L.m = m;
    L.index = i;
    L.lo = lo;
    L.hi = hi;
    const int64_t mid = lo + (hi - lo) / 2;
    if (m % 2 == 0) {
      L.role = (i % 2 == 0) ? ElimRole::pair_lower : ElimRole::pair_upper;
    } else if (mode == Elimination::three_two && i <= 2) {
      L.role = i == 0 ? ElimRole::triple_0 : i == 1 ? ElimRole::triple_1 : ElimRole::triple_2;
    } else if (mode == Elimination::two_one && i == 0) {
      L.role = ElimRole::handed_over;
    } else {
      L.role = ((i - 1) % 2 == 0) ? ElimRole::pair_lower : ElimRole::pair_upper;
    }
    if (L.role == ElimRole::triple_2 || L.role == ElimRole::handed_over) {
      eliminated = true;
      return;
    }
    L.upper = L.role == ElimRole::pair_upper || L.role == ElimRole::triple_1;
    const int64_t c = m % 2 == 0 ? i / 2
                      : (L.role == ElimRole::triple_0 || L.role == ElimRole::triple_1)
                          ? 0
                          : (i - 1) / 2;
    if (L.upper)
      lo = mid;
    else
      hi = mid;
    i = c;
    m /= 2;
  }
}

int64_t ElimPlan::member(int l, int64_t j) const {
  for (int k = l - 1; k >= 0; --k) {
    const ElimLevel& L = levels[static_cast<size_t>(k)];
    j = parent_index(L.m, L.upper, j, mode);
  }
  return j;
}

int64_t ElimPlan::partner(int l) const {
  const ElimLevel& L = levels[static_cast<size_t>(l)];
  switch (L.role) {
    case ElimRole::pair_lower:
      return member(l, L.index + 1);
    case ElimRole::pair_upper:
      return member(l, L.index - 1);
    case ElimRole::triple_0:
      return member(l, 1);
    case ElimRole::triple_1:
      return member(l, 0);
    default:
      return -1;
  }
}

ElimScatter reduce_scatter_elim(RankBuilder& b, const ElimPlan& plan, const Blocks& blk, BufId vec,
                                OpId vec_ready, BufId tmp, BufId tmp2, uint16_t stage0) {
  ElimScatter res;
  res.ready = vec_ready;
  OpId tmp_free = kNoOp, tmp2_free = kNoOp;
  for (int l = 0; l < plan.levels_count; ++l) {
    const ElimLevel& L = plan.levels[static_cast<size_t>(l)];
    b.set_stage(static_cast<uint16_t>(stage0 + l));
    const int64_t mid = L.lo + (L.hi - L.lo) / 2;
    const Region lower = blk.region(vec, L.lo, mid), upper = blk.region(vec, mid, L.hi);
    const Region whole = blk.region(vec, L.lo, L.hi);
    auto& sent = res.sent[static_cast<size_t>(l)];
    sent = {kNoOp, kNoOp};
    if (L.role == ElimRole::triple_2) {  // 3-2: hand both halves over, done
      if (lower.len > 0) sent[0] = b.send(plan.member(l, 0), lower, {res.ready});
      if (upper.len > 0) sent[1] = b.send(plan.member(l, 1), upper, {res.ready});
      break;
    }
    if (L.role == ElimRole::handed_over) {  // 2-1: hand the whole segment over, done
      if (whole.len > 0) sent[0] = b.send(plan.member(l, 1), whole, {res.ready});
      break;
    }
    if (plan.mode == Elimination::two_one && L.m % 2 == 1 && L.index == 1 && whole.len > 0) {
      // 2-1: first take in member 0's segment; its partial goes on the left.
      const Region t{tmp, whole.off, whole.len};
      OpId r = b.recv(plan.member(l, 0), t, {tmp_free});
      res.ready = tmp_free = b.reduce(whole, t, Side::src_first, {res.ready, r});
    }
    const int64_t peer = plan.partner(l);
    const Region keep = L.upper ? upper : lower, give = L.upper ? lower : upper;
    if (give.len > 0) sent[0] = b.send(peer, give, {res.ready});
    if (keep.len == 0) continue;
    const Region t{tmp, keep.off, keep.len};
    OpId r = b.recv(peer, t, {tmp_free});
    res.ready = tmp_free =
        b.reduce(keep, t, L.upper ? Side::src_first : Side::dst_first, {res.ready, r});
    if (L.role == ElimRole::triple_0 || L.role == ElimRole::triple_1) {
      // 3-2: member 2's half comes last, on the right.
      const Region t2{tmp2, keep.off, keep.len};
      OpId r2 = b.recv(plan.member(l, 2), t2, {tmp2_free});
      res.ready = tmp2_free = b.reduce(keep, t2, Side::dst_first, {res.ready, r2});
    }
  }
  return res;
}

std::vector<OpId> allgather_elim(RankBuilder& b, const ElimPlan& plan, const Blocks& blk, BufId vec,
                                 const ElimScatter& rs, uint16_t stage0) {
  std::vector<OpId> writers{rs.ready};
  const int last = plan.levels_count - 1;
  for (int l = last; l >= 0; --l) {
    const ElimLevel& L = plan.levels[static_cast<size_t>(l)];
    b.set_stage(static_cast<uint16_t>(stage0 + (last - l)));
    const int64_t mid = L.lo + (L.hi - L.lo) / 2;
    const Region lower = blk.region(vec, L.lo, mid), upper = blk.region(vec, mid, L.hi);
    const Region whole = blk.region(vec, L.lo, L.hi);
    const auto& sent = rs.sent[static_cast<size_t>(l)];
    if (L.role == ElimRole::triple_2) {
      if (lower.len > 0) writers.push_back(b.recv(plan.member(l, 0), lower, {sent[0]}));
      if (upper.len > 0) writers.push_back(b.recv(plan.member(l, 1), upper, {sent[1]}));
      continue;
    }
    if (L.role == ElimRole::handed_over) {
      if (whole.len > 0) writers.push_back(b.recv(plan.member(l, 1), whole, {sent[0]}));
      continue;
    }
    const int64_t peer = plan.partner(l);
    const Region have = L.upper ? upper : lower, get = L.upper ? lower : upper;
    if (have.len > 0) b.send(peer, have, writers);
    if (L.role == ElimRole::triple_0 || L.role == ElimRole::triple_1) {
      if (have.len > 0) b.send(plan.member(l, 2), have, writers);
    }
    if (get.len > 0) writers.push_back(b.recv(peer, get, {sent[0]}));
    if (plan.mode == Elimination::two_one && L.m % 2 == 1 && L.index == 1 && whole.len > 0)
      b.send(plan.member(l, 0), whole, writers);
  }
  return writers;
}

}  // namespace collkit::phases

namespace collkit::phases {
namespace {

// Index, in a group of level l (P >> l members), of the member that collects the group's blocks
// in the gather: the lower child's collector.
int64_t collector_index(int64_t P, int l, Elimination mode) {
  const int64_t m = P >> l;
  if (m <= 1) return 0;
  return parent_index(m, false, collector_index(P, l + 1, mode), mode);
}

}  // namespace

int64_t elim_collector(int64_t P, Elimination mode) {
  return collector_index(P, 0, mode);
}

std::vector<OpId> gather_elim(RankBuilder& b, const ElimPlan& plan, int64_t P, const Blocks& blk,
                              BufId vec, const ElimScatter& rs, uint16_t stage0) {
  std::vector<OpId> writers{rs.ready};
  if (plan.eliminated) return writers;  // handed everything over in the reduce-scatter
  const int last = plan.levels_count - 1;
  for (int l = last; l >= 0; --l) {
    const ElimLevel& L = plan.levels[static_cast<size_t>(l)];
    b.set_stage(static_cast<uint16_t>(stage0 + (last - l)));
    const int64_t child_index = l == last ? 0 : plan.levels[static_cast<size_t>(l) + 1].index;
    const int64_t child_collector = collector_index(P, l + 1, plan.mode);
    if (child_index != child_collector) break;  // sent its blocks on at a lower level
    const int64_t lower = plan.member(l, parent_index(L.m, false, child_collector, plan.mode));
    const int64_t upper = plan.member(l, parent_index(L.m, true, child_collector, plan.mode));
    const int64_t mid = L.lo + (L.hi - L.lo) / 2;
    if (L.upper) {  // the upper half goes to the lower child's collector
      const Region have = blk.region(vec, mid, L.hi);
      if (have.len > 0) b.send(lower, have, writers);
      break;
    }
    const Region get = blk.region(vec, mid, L.hi);
    if (get.len > 0) writers.push_back(b.recv(upper, get, {rs.sent[static_cast<size_t>(l)][0]}));
  }
  return writers;
}

std::any check_nonpof2(const GenArgs& a) {
  const std::string& v = a.params->word("nonpof2");
  if (v != "fold" && v != "elim" && v != "elim21")
    fail(ErrorKind::invalid_argument,
         a.header.algorithm + ": nonpof2 = '" + v +
             "' must be fold, elim (3-2 elimination) or elim21 (2-1 elimination)");
  return {};
}

ParamSpec nonpof2_param(std::string doc) {
  return ParamSpec{"nonpof2",      ParamType::word,           "fold", INT64_MIN, INT64_MAX,
                   std::move(doc), {"fold", "elim", "elim21"}};
}

}  // namespace collkit::phases
