#include "plan.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "collkit/error.hpp"

namespace collkit::mpi {

Plan make_plan(const ScheduleHeader& h, const RankProgram& program) {
  const RankView v = program.view();
  const size_t n = v.size();
  if (n > Plan::kCount)
    fail(ErrorKind::unsupported,
         "rank " + std::to_string(program.rank) + ": more than 2^30 ops in one rank's program");
  Plan p;
  p.header = h;
  p.rank = program.rank;
  p.ops.assign(v.ops.begin(), v.ops.end());
  p.scratch.assign(v.scratch.begin(), v.scratch.end());
  p.num_deps.assign(n, 0);
  p.seq.assign(n, 0);

  auto bad = [&](size_t i, const std::string& what) {
    fail(ErrorKind::format,
         "rank " + std::to_string(program.rank) + " op " + std::to_string(i) + ": " + what);
  };
  const auto nbufs = static_cast<int>(kFirstScratch + p.scratch.size());
  std::unordered_map<int64_t, uint32_t> sends, recvs;  // peer -> messages so far
  for (size_t i = 0; i < n; ++i) {
    const Op& op = v.ops[i];
    for (OpId d : v.deps_of(i)) {
      if (d >= i) bad(i, "depends on op " + std::to_string(d) + ", which does not come before it");
      ++p.num_deps[i];
    }
    if (op.kind == OpKind::send || op.kind == OpKind::recv) {
      // Messages match by their order within a pair of ranks (the tag): a receive from any rank
      // has no pair, so it is a simulator-only feature (LogGOPSim's GOAL).
      if (op.kind == OpKind::recv && op.peer == kAnySource)
        bad(i, "a receive from any rank (wildcard) cannot be executed: only the simulator runs it");
      if (op.peer < 0 || op.peer >= h.P) bad(i, "peer " + std::to_string(op.peer) + " is no rank");
      p.seq[i] = (op.kind == OpKind::send ? sends : recvs)[op.peer]++;
    }
    const bool uses_buf = op.kind != OpKind::compute && op.kind != OpKind::sleep;
    if (uses_buf && op.buf >= nbufs) bad(i, "buffer " + buffer_name(op.buf) + " does not exist");
    if ((op.kind == OpKind::reduce || op.kind == OpKind::copy) && op.src >= nbufs)
      bad(i, "buffer " + buffer_name(op.src) + " does not exist");
    if (uses_buf && (op.len < 0 || op.off < 0 || op.src_off < 0)) bad(i, "negative region");
    // The executor writes into the user's memory: a region past its buffer is refused here.
    if (uses_buf && op.off + op.len > v.buffer_elems(h, op.buf))
      bad(i, "region past the end of " + buffer_name(op.buf));
    if ((op.kind == OpKind::reduce || op.kind == OpKind::copy) &&
        op.src_off + op.len > v.buffer_elems(h, op.src))
      bad(i, "region past the end of " + buffer_name(op.src));
  }
  p.succ.append_rank(v);  // the deps were checked above: all earlier ops of this rank
  for (size_t i = 0; i < n; ++i)
    if (p.num_deps[i] == 0) p.roots.push_back(static_cast<uint32_t>(i));

  // The executor's records.
  p.steps.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Op& op = v.ops[i];
    Step& s = p.steps[i];
    s.off = op.off;
    s.src_off = op.src_off;
    s.len = op.len;
    s.peer = op.peer;
    s.kind = op.kind;
    s.buf = op.buf;
    s.src = op.src;
    s.flags = op.side == Side::dst_first ? Step::kDstFirst : 0;
    s.seq = p.seq[i];
    s.shm_seq = Plan::kViaMpi;
    const auto next = p.succ.of(i);
    s.nsucc = static_cast<uint32_t>(next.size());
    if (next.size() == 1) {
      s.succ = next[0];
    } else if (next.size() > 1) {
      s.succ = static_cast<uint32_t>(p.succ_list.size());
      p.succ_list.insert(p.succ_list.end(), next.begin(), next.end());
    }
  }

  // More messages in one pair than the window: the executor bounds those in flight
  // (so the requests in flight, and each completion step's cost, do not grow with the count).
  for (const auto* m : {&sends, &recvs})
    for (const auto& [peer, k] : *m) {
      if (k > kMessageWindow) p.windowed = true;
      p.max_pair_messages = std::max<uint64_t>(p.max_pair_messages, k);
    }
  if (p.windowed) {
    const auto windows = static_cast<size_t>(2 * h.P);
    p.msg_done.assign(windows, 0);
    p.win_begin.assign(windows + 1, 0);
    for (const auto& [peer, k] : sends) p.win_begin[static_cast<size_t>(2 * peer) + 1] = k;
    for (const auto& [peer, k] : recvs) p.win_begin[static_cast<size_t>(2 * peer + 1) + 1] = k;
    for (size_t w = 0; w < windows; ++w) p.win_begin[w + 1] += p.win_begin[w];
    p.msg_op.assign(p.win_begin.back(), 0);
    for (size_t i = 0; i < n; ++i) {
      const Step& s = p.steps[i];
      if (s.kind != OpKind::send && s.kind != OpKind::recv) continue;
      const size_t w = 2 * static_cast<size_t>(s.peer) + (s.kind == OpKind::recv ? 1 : 0);
      p.msg_op[p.win_begin[w] + s.seq] = static_cast<uint32_t>(i);
    }
  }
  p.start_state = p.num_deps;
  for (const uint32_t i : p.roots) {
    const Step& s = p.steps[i];
    const bool message = s.kind == OpKind::send || s.kind == OpKind::recv;
    if (p.windowed && message && s.seq >= kMessageWindow) {
      p.start_state[i] |= Plan::kHeld;
    } else {
      p.start.push_back(i);
    }
  }
  p.state.reserve(n);
  p.ready.reserve(n);
  return p;
}

}  // namespace collkit::mpi
