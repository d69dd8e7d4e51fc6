// Pass 5: execute the schedule symbolically, under rendezvous semantics (a send completes only
// once its receive is posted). Every element is an interned expression over the ranks' inputs
// (expr.hpp); reads of data nothing wrote are reported, and ops that never complete are searched
// for a cycle of waits (a deadlock). For a barrier, each op also carries the set of ranks whose
// start it has heard of ("knowledge"), which the postcondition reads.
#include <algorithm>

#include "collkit/error.hpp"
#include "verifier.hpp"

namespace collkit::verify_detail {

int64_t leaf_stride(const ScheduleHeader& h) {
  const CollectiveSpec& c = h.spec();
  int64_t stride = 0;
  if (!h.irregular()) {
    stride = std::max(buffer_elems(c.in, h.P, h.count, 0, 0),
                      buffer_elems(c.in, h.P, h.count, 0, 1));  // at the root, elsewhere
  } else {
    for (int64_t r = 0; r < h.P; ++r) stride = std::max(stride, h.in_elems(r));
  }
  return c.root_input_in_out ? std::max(stride, h.count) : stride;
}

Val Verifier::read(int64_t r, BufId b, int64_t i) const {
  if (b == kIn) return expr_->leaf(r, i);
  return mem_[static_cast<size_t>(r)][b - 1][static_cast<size_t>(i)];
}

// Every rank's `out` and scratch start undefined, except where the spec puts an input in `out`:
// the root of a collective whose input lives there (bcast), and ranks aliased by MPI_IN_PLACE.
void Verifier::init_memory() {
  const int64_t P = h_.P;
  if (shared_) {
    expr_ = shared_;
  } else {
    own_expr_ = std::make_unique<ExprTable>(P, leaf_stride(h_));
    expr_ = own_expr_.get();
  }
  mem_.assign(static_cast<size_t>(P), {});
  for (int64_t r = 0; r < P; ++r) {
    RankView v = s_.rank(r);
    auto& m = mem_[static_cast<size_t>(r)];
    m.resize(1 + v.scratch.size());
    m[0].assign(static_cast<size_t>(out_elems(r)), kUndef);
    for (size_t k = 0; k < v.scratch.size(); ++k)
      m[k + 1].assign(static_cast<size_t>(v.scratch[k]), kUndef);
    if (c_.root_input_in_out && r == h_.root)
      for (int64_t i = 0; i < h_.count; ++i) m[0][static_cast<size_t>(i)] = expr_->leaf(r, i);
    if (aliased(r)) {
      const int64_t at = in_place_in_at(h_, r), n = h_.in_elems(r);
      for (int64_t k = 0; k < n; ++k) m[0][static_cast<size_t>(at + k)] = expr_->leaf(r, k);
    }
  }
  if (c_.post.kind == Postcondition::Kind::synchronized) {
    if (P > (int64_t{1} << 16))
      fail(ErrorKind::invalid_argument, "barrier verification is limited to P <= 65536");
    kwords_ = static_cast<size_t>((P + 63) / 64);
    knowledge_.assign(s_.total_ops() * kwords_, 0);
  }
}

bool Verifier::execute() {
  const size_t M = s_.total_ops();
  init_memory();
  succ_.clear();
  pending_.assign(M, 0);
  state_.assign(M, 0);
  op_rank_.assign(M, 0);
  ready_.clear();
  for (int64_t r = 0; r < h_.P; ++r) {
    RankView v = s_.rank(r);
    succ_.append_rank(v);
    for (size_t i = 0; i < v.size(); ++i) {
      uint32_t g = gid(r, i);
      op_rank_[g] = r;
      pending_[g] = static_cast<uint32_t>(v.deps_of(i).size()) + has_channel_pred_[g];
      if (pending_[g] == 0) ready_.push_back(g);
    }
  }
  std::reverse(ready_.begin(), ready_.end());  // start low ranks / low ops first
  payload_.clear();
  payload_off_.assign(M, 0);
  reported_undef_.assign(static_cast<size_t>(h_.P), 0);
  while (!ready_.empty()) {
    uint32_t g = ready_.back();
    ready_.pop_back();
    start(g);
  }
  if (std::all_of(state_.begin(), state_.end(), [](uint8_t x) { return x == 2; }))
    return messages_ok_;
  report_stuck();
  return false;
}

// Op g's dependencies (and message ordering) are met: run it, or for a message, post it and
// complete both sides once its partner is posted too.
void Verifier::start(uint32_t g) {
  const Op& op = s_.all_ops()[g];
  const int64_t r = op_rank_[g];
  state_[g] = 1;
  switch (op.kind) {
    case OpKind::send:
    case OpKind::recv: {
      if (next_in_channel_[g] != kNone) release(next_in_channel_[g]);
      if (op.kind == OpKind::send) {
        payload_off_[g] = payload_.size();
        bool bad = false;
        for (int64_t j = 0; j < op.len; ++j) {
          Val x = read(r, op.buf, op.off + j);
          bad |= x == kUndef;
          payload_.push_back(x);
        }
        if (bad) undef(r, g, "sends");
        if (kwords_) learn(g, r, kNone);  // a send's knowledge is fixed when it starts
      }
      uint32_t m = match_[g];
      if (m != kNone && state_[m] == 1) {
        uint32_t snd = op.kind == OpKind::send ? g : m;
        uint32_t rcv = op.kind == OpKind::send ? m : g;
        // The send's knowledge was set at its start; complete() would add its deps again.
        state_[snd] = 2;
        for (uint32_t j : succ_.of(snd)) release(j);
        complete(rcv);
      }
      return;
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
      break;
    }
    case OpKind::copy:
      for (int64_t j = 0; j < op.len; ++j)
        cell(r, op.buf, op.off + j) = read(r, op.src, op.src_off + j);
      break;
    case OpKind::compute:
    case OpKind::sleep:
      break;
  }
  complete(g);
}

void Verifier::complete(uint32_t g) {
  state_[g] = 2;
  const Op& op = s_.all_ops()[g];
  const int64_t r = op_rank_[g];
  if (op.kind == OpKind::recv) {
    const Val* src = payload_.data() + payload_off_[match_[g]];
    for (int64_t j = 0; j < op.len; ++j) cell(r, op.buf, op.off + j) = src[j];
  }
  if (kwords_) learn(g, r, op.kind == OpKind::recv ? match_[g] : kNone);
  for (uint32_t j : succ_.of(g)) release(j);
}

// Barrier knowledge of op g of rank r: its own rank, what its dependencies knew, and what the
// message it receives (sent by op `from`) carried.
void Verifier::learn(uint32_t g, int64_t r, uint32_t from) {
  uint64_t* k = &knowledge_[g * kwords_];
  k[static_cast<size_t>(r) / 64] |= uint64_t{1} << (r % 64);
  for (OpId d : s_.rank(r).deps_of(local(g, r))) {
    const uint64_t* kd = &knowledge_[gid(r, d) * kwords_];
    for (size_t w = 0; w < kwords_; ++w) k[w] |= kd[w];
  }
  if (from != kNone) {
    const uint64_t* ks = &knowledge_[from * kwords_];
    for (size_t w = 0; w < kwords_; ++w) k[w] |= ks[w];
  }
}

void Verifier::undef(int64_t r, uint32_t g, const std::string& what) {
  if (reported_undef_[static_cast<size_t>(r)]++) return;
  add(DiagKind::uninitialized, r, int64_t(local(g, r)),
      where_g(g) + ": " + what + " data that nothing wrote");
}

// Some ops never completed. Find a cycle of waits among them (a deadlock) and show it; ops that
// only wait on unmatched messages are consequences of problems already reported.
void Verifier::report_stuck() {
  const std::vector<uint8_t>& state = state_;
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

}  // namespace collkit::verify_detail
