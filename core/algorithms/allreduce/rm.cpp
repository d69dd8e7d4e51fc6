// allreduce:rm: its summary, phases in brief, cost and reference are said once, in its
// Registrar at the end of this file (`collkit algorithms allreduce:rm` prints them).
// Algorithm:    recursive multiplying (allreduce:rm), the generalisation of recursive doubling to
//               multi-way exchanges; the stages are given in the schedule language of
//               collkit/rm/stages.hpp, e.g. rm(a8,a4), rm(c6m2,a2,a2,e6m2), rm(m1g2a3,n1g3a2).
// Phases:       0. copy in -> out; collapse (split schedules): each group of B ranks below T
//                  sends to its last rank, which combines the B values in rank order;
//               1..s. factor stages on the hypercuboid of active ranks: stage i with base B and
//                  stage mask m (product of the earlier bases) exchanges the whole vector with
//                  the B-1 ranks whose virtual rank differs only in digit (w / m) mod B, by
//                  non-blocking sends to (d+1, d+2, ... mod B) as the seed's Algorithm 2, and
//                  folds the B values left to right in digit order, so every rank of the group
//                  computes the same tree. A merge stage also folds in (first, ascending) the
//                  values of the remainder ranks assigned to the group; the inverse merge also
//                  sends the pre-exchange values of group r mod G to remainder rank r, which
//                  folds them in the same digit order;
//               s+1. expand (split schedules): the last rank of each group sends the result back.
// Restrictions: commutative op for merged schedules (a remainder rank's value enters the tree
//               inside a group, out of rank order). Factored and split schedules combine in
//               rank order and serve non-commutative ops as well; the registry declares the
//               weaker guarantee since it is per algorithm, not per schedule. Reading of the seed
//               (its Algorithms 2-6 have typos; the text and Figs. 5-7, 20-22 decide):
//   * Alg. 2 line 17 tests `rpeer < pthres` before rpeer exists: the test is on the virtual
//     peer, `peer < pthres / pbase`; Alg. 3 line 44 shifts ranks above the threshold by
//     pthres/pbase*(pbase-1), the inverse of line 20.
//   * Alg. 2 lines 24-27 reduce in arrival order; that breaks bitwise identity, so values are
//     folded in digit order instead (the text's "consistent ordering" requirement, §1).
//   * Merges: remainder ranks are 0..R-1 (Alg. 5 line 61), internal ranks R..N-1; the merge is
//     the first factor stage (stage mask 1) so its groups are consecutive blocks of B
//     (line 64); the inverse merge is the last, its groups are the residues w mod G (Alg. 6
//     line 92). G must be the number of groups of that face, (N-R)/B: the seed's examples
//     m1g2a3,n1g3a2 and m3g2a2,n3g2a2 at N = 7 all have it so.
//   * No arrival-order variant is offered: every schedule is bitwise consistent.
#include <any>
#include <vector>

#include "collkit/registry.hpp"
#include "collkit/rm/stages.hpp"

namespace collkit {
namespace {

using rm::Plan;
using rm::Shape;
using rm::StageKind;

// One rank's generator state: the value in `out`, the scratch buffers and who last touched them.
class RankState {
 public:
  RankState(RankBuilder& b, const Plan& plan, int64_t count)
      : b_(b), plan_(plan), n_(count), out_{kOut, 0, count} {}

  void run() {
    const int64_t x = b_.rank();
    b_.set_stage(0);
    out_ready_ = b_.copy(out_, {kIn, 0, n_});
    if (plan_.P == 1) return;
    const auto& st = plan_.stages;
    const int label0 = !st.empty() && st[0].kind == StageKind::collapse ? 0 : 1;
    for (size_t i = 0; i < st.size(); ++i) {
      b_.set_stage(static_cast<uint16_t>(i + label0));
      const rm::Stage& s = st[i];
      const int64_t w = virtual_rank(x);
      switch (s.kind) {
        case StageKind::collapse:
          collapse(x, s.threshold, s.base);
          break;
        case StageKind::expand:
          expand(x, s.threshold, s.base);
          break;
        case StageKind::factor:
          if (w >= 0) exchange(w, plan_.mask[i], s.base, {}, {});
          break;
        case StageKind::merge:
          merge(x, w, plan_.mask[i], s);
          break;
        case StageKind::invmerge:
          invmerge(x, w, plan_.mask[i], s);
          break;
      }
    }
  }

 private:
  // Operand of a fold: a scratch buffer filled by `recv`, or this rank's own value in `out`.
  struct Operand {
    int k = -1;  // scratch index; -1: own value
    OpId recv = kNoOp;
  };

  Region sbuf(int k) { return {scratch(k), 0, n_}; }
  BufId scratch(int k) {
    while (static_cast<int>(bufs_.size()) <= k) {
      bufs_.push_back(b_.scratch(n_));
      free_.push_back(kNoOp);
    }
    return bufs_[static_cast<size_t>(k)];
  }

  int64_t virtual_rank(int64_t x) const { return plan_.virtual_rank(x); }
  int64_t real_rank(int64_t w) const { return plan_.real_rank(w); }

  OpId recv_into(int64_t peer, int k) {
    const Region into = sbuf(k);  // allocates the buffer (and its free_ entry) first
    return b_.recv(peer, into, {free_[static_cast<size_t>(k)]});
  }

  // Left fold of `ops` into `out`; `sends` are this stage's sends of `out`, which the first
  // write of `out` must wait for.
  void fold(const std::vector<Operand>& ops, const std::vector<OpId>& sends) {
    std::vector<OpId> deps;
    bool wrote_out = false;
    auto guard = [&] {
      deps.clear();
      if (wrote_out) return;
      if (sends.empty())
        deps.push_back(out_ready_);
      else
        deps.insert(deps.end(), sends.begin(), sends.end());
    };
    int acc = ops[0].k;  // scratch index of the accumulator; -1: out
    OpId acc_op = ops[0].recv;
    for (size_t i = 1; i < ops.size(); ++i) {
      const Operand& o = ops[i];
      if (acc < 0) {
        guard();
        deps.push_back(acc_op);
        deps.push_back(o.recv);
        acc_op = b_.reduce(out_, sbuf(o.k), Side::dst_first, deps);
        free_[static_cast<size_t>(o.k)] = acc_op;
        wrote_out = true;
      } else if (o.k < 0) {
        guard();
        deps.push_back(acc_op);
        acc_op = b_.reduce(out_, sbuf(acc), Side::src_first, deps);
        free_[static_cast<size_t>(acc)] = acc_op;
        acc = -1;
        wrote_out = true;
      } else {
        acc_op = b_.reduce(sbuf(acc), sbuf(o.k), Side::dst_first, {acc_op, o.recv});
        free_[static_cast<size_t>(acc)] = free_[static_cast<size_t>(o.k)] = acc_op;
      }
    }
    if (wrote_out) out_ready_ = acc_op;
  }

  // One factor stage for active virtual rank w: exchange with the group along digit
  // (w / mask) mod B. `from` are remainder ranks whose values are folded in first, `to` are
  // remainder ranks that get this rank's pre-exchange value.
  void exchange(int64_t w, int64_t mask, int64_t B, const std::vector<int64_t>& from,
                const std::vector<int64_t>& to) {
    const int64_t d = (w / mask) % B, first = w - d * mask;
    std::vector<OpId> sends;
    for (int64_t k = 1; k < B; ++k)
      sends.push_back(b_.send(real_rank(first + (d + k) % B * mask), out_, {out_ready_}));
    for (int64_t r : to) sends.push_back(b_.send(r, out_, {out_ready_}));
    std::vector<Operand> ops;
    int k = 0;
    for (int64_t r : from) {
      ops.push_back({k, recv_into(r, k)});
      ++k;
    }
    for (int64_t j = 0; j < B; ++j) {
      if (j == d) {
        ops.push_back({-1, kNoOp});
        continue;
      }
      ops.push_back({k, recv_into(real_rank(first + j * mask), k)});
      ++k;
    }
    fold(ops, sends);
  }

  void collapse(int64_t x, int64_t T, int64_t B) {
    if (x >= T) return;
    const int64_t leader = x / B * B + B - 1;
    if (x != leader) {
      pending_ = {b_.send(leader, out_, {out_ready_})};
      return;
    }
    std::vector<Operand> ops;
    for (int64_t j = 0; j < B - 1; ++j)
      ops.push_back({static_cast<int>(j), recv_into(x - (B - 1) + j, static_cast<int>(j))});
    ops.push_back({-1, kNoOp});
    fold(ops, {});
  }

  void expand(int64_t x, int64_t T, int64_t B) {
    if (x >= T) return;
    const int64_t leader = x / B * B + B - 1;
    if (x != leader) {
      out_ready_ = b_.recv(leader, out_, pending_);
      return;
    }
    for (int64_t j = 0; j < B - 1; ++j) b_.send(x - (B - 1) + j, out_, {out_ready_});
  }

  void merge(int64_t x, int64_t w, int64_t mask, const rm::Stage& s) {
    const int64_t R = s.remainder, G = s.groups, B = s.base;
    if (w < 0) {  // remainder rank: its value goes to every rank of group x mod G
      const int64_t g = x % G;
      pending_.clear();
      for (int64_t j = 0; j < B; ++j)
        pending_.push_back(b_.send(real_rank(g * B + j), out_, {out_ready_}));
      return;
    }
    std::vector<int64_t> from;
    for (int64_t r = w / B; r < R; r += G) from.push_back(r);
    exchange(w, mask, B, from, {});
  }

  void invmerge(int64_t x, int64_t w, int64_t mask, const rm::Stage& s) {
    const int64_t R = s.remainder, G = s.groups, B = s.base;
    if (w < 0) {  // remainder rank: fold the B pre-exchange values of group x mod G
      const int64_t g = x % G;
      OpId acc = b_.recv(real_rank(g), out_, pending_);
      std::vector<OpId> recvs;
      for (int64_t j = 1; j < B; ++j)
        recvs.push_back(recv_into(real_rank(g + j * mask), static_cast<int>(j - 1)));
      for (int64_t j = 1; j < B; ++j) {
        const int k = static_cast<int>(j - 1);
        acc = b_.reduce(out_, sbuf(k), Side::dst_first, {acc, recvs[static_cast<size_t>(k)]});
        free_[static_cast<size_t>(k)] = acc;
      }
      out_ready_ = acc;
      return;
    }
    std::vector<int64_t> to;
    for (int64_t r = w % mask; r < R; r += G) to.push_back(r);
    exchange(w, mask, B, {}, to);
  }

  RankBuilder& b_;
  const Plan& plan_;
  int64_t n_;
  Region out_;
  OpId out_ready_ = kNoOp;
  std::vector<BufId> bufs_;
  std::vector<OpId> free_;     // per scratch buffer: the last op that used it
  std::vector<OpId> pending_;  // sends of `out` by an idle rank, awaited before `out` is written
};

void generate_rm(const GenArgs& a, RankBuilder& b) {
  RankState(b, std::any_cast<const Plan&>(*a.prepared), a.header.count).run();
}

const Registrar reg{{
    .collective = Collective::allreduce,
    .name = "rm",
    .summary = "recursive multiplying: multi-way exchanges by a stage list (a8,a4 / c6m2,...)",
    .phases = "optional collapse (cTmB) or merge (mRgGaB); factor stages aB exchanging with B-1 "
              "peers by non-blocking sends, folded in digit order; expand (eTmB) or inverse merge "
              "(nRgGaB). No stages: MPICH recursive doubling (c2rm2, a2..., e2rm2)",
    // Cost: per stage (seed Eq. 3, b = B-1, c = alpha_r + n beta, g = n gamma, k = ceil(R/G)): aB:
    //   alpha_p + b (c + g); cTmB: alpha_p + c + b g; eTmB: alpha_p + b c; mRgGaB: alpha_p + B c +
    //   (b + k) g; nRgGaB: alpha_p + (b + k) c + b g. A factored schedule with n = 0 costs alpha_p
    //   s + alpha_r sum b_i (collkit.analysis.recmult.schedule_cost).
    .cost = "sum_i (alpha_p + b_i (alpha_r + n beta + n gamma)), b_i = B_i - 1 (pipelining postal)",
    .reference = "Ruefenacht, Bull, Booth, Parallel Computing 2017, §3-4, Algs. 2-6",
    .params = {{.name = "stages",
                .type = ParamType::list,
                .default_value = "",
                .doc = "the schedule, e.g. a8,a4 or c6m2,a2,a2,e6m2 or m1g2a3,n1g3a2; "
                       "empty: recursive doubling"}},
    .restrictions = {.commutative_op = true, .power_of_two = false, .min_P = 1},
    .prepare = [](const GenArgs& a) -> std::any {
      return rm::make_plan(a.params->list("stages"), a.header.P);
    },
    .generate = generate_rm,
}};

}  // namespace
}  // namespace collkit
