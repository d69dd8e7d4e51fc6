// Pass 4: match sends with receives. Messages between an ordered pair of ranks match in op-index
// order: the k-th send from a to b with the k-th receive at b from a. Also links each message op
// to the next one on its channel, which execution must post in order.
#include <algorithm>
#include <unordered_map>

#include "verifier.hpp"

namespace collkit::verify_detail {

bool Verifier::match_messages() {
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
              std::to_string(count_kind(key.b, key.a, OpKind::recv)) + " receive(s) from rank " +
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
            std::to_string(count_kind(key.a, key.b, OpKind::send)) + " message(s) to rank " +
            std::to_string(key.b) + ")");
  // Unmatched messages are reported; execution still runs to find deadlocks elsewhere, but
  // results are meaningless when messages are missing.
  messages_ok_ = res_.total_problems == before;
  return true;
}

size_t Verifier::count_kind(int64_t r, int64_t peer, OpKind kind) const {
  size_t n = 0;
  for (const Op& op : s_.rank(r).ops) n += (op.kind == kind && op.peer == peer);
  return n;
}

}  // namespace collkit::verify_detail
