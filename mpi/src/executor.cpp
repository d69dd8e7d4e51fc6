#include "executor.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <unordered_map>

#include "env.hpp"
#include "fast_reduce.hpp"
#include "waiting.hpp"

namespace collkit::mpi {

void Arena::grow(size_t bytes) {
  mem_.resize(std::max(bytes, mem_.size() * 2));
}

namespace {

// A temporary of n elements of the type, its element 0 at the returned pointer.
std::byte* temp_elems(Arena& arena, const TypeInfo& t, int64_t n) {
  return element0_in_block(arena.get(span_bytes(t, n) + 64), t, n);
}

}  // namespace

int copy_elements(const void* src, void* dst, int64_t n, const TypeInfo& t, Arena& pack) {
  if (src == dst || n == 0) return MPI_SUCCESS;  // in-place: `in` aliases `out`
  if (t.dense_run(n)) {
    std::memmove(offset(dst, t.true_lb), offset(src, t.true_lb), static_cast<size_t>(n * t.size));
    return MPI_SUCCESS;
  }
  // A type with gaps: pack and unpack so the gaps of `dst` are left alone.
  std::byte* packed = pack.get(static_cast<size_t>(n * t.size) + 1);
  const int rc = collkit::mpi::pack(src, n, t, packed);
  return rc == MPI_SUCCESS ? unpack(packed, dst, n, t) : rc;
}

namespace {

// dst = src (+) dst on k dense elements of a predefined type (predefined ops commute).
int reduce_basic(const void* src, void* dst, int64_t k, MPI_Datatype basic, MPI_Op op) {
  if (fast_reduce(src, dst, k, basic, op)) return MPI_SUCCESS;
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(basic, &lb, &extent);
  const int64_t chunk = max_chunk_elems();
  for (int64_t done = 0; done < k; done += chunk) {
    const int c = static_cast<int>(std::min(chunk, k - done));
    const int rc =
        MPI_Reduce_local(offset(src, done * extent), offset(dst, done * extent), c, basic, op);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

}  // namespace

bool is_predefined(MPI_Op op) {
  for (MPI_Op p : {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND,
                   MPI_BOR, MPI_BXOR, MPI_MINLOC, MPI_MAXLOC})
    if (op == p) return true;
  return false;
}

int reduce_local(const void* src, void* dst, int64_t n, Side side, const RunArgs& a, RunState& st) {
  if (n == 0) return MPI_SUCCESS;
  if (a.fast != nullptr) {  // a predefined type and op: a loop the compiler vectorises
    a.fast(src, dst, dst, n);
    return MPI_SUCCESS;
  }
  const TypeInfo& t = a.type;
  if (t.type != t.basic && t.basic != MPI_DATATYPE_NULL && is_predefined(a.op)) {
    // A predefined op on a derived type is the op on its basic elements (MPI says so). MPICH's
    // MPI_Reduce_local refuses many such types (hindexed, struct), so collkit does it: on the
    // elements where they lie when the layout is dense, else on packed copies.
    MPI_Aint blb = 0, bextent = 0;
    MPI_Count bsize = 0;
    MPI_Type_get_extent(t.basic, &blb, &bextent);
    MPI_Type_size_x(t.basic, &bsize);
    if (bsize > 0 && bextent == bsize && t.size % bsize == 0) {
      const int64_t k = n * (t.size / bsize);
      if (t.dense_run(n))
        return reduce_basic(offset(src, t.true_lb), offset(dst, t.true_lb), k, t.basic, a.op);
      const size_t bytes = static_cast<size_t>(n * t.size);
      std::byte* ps = st.temp.get(2 * bytes + 64);
      std::byte* pd = ps + bytes + 32;
      int rc = pack(src, n, t, ps);
      if (rc == MPI_SUCCESS) rc = pack(dst, n, t, pd);
      if (rc == MPI_SUCCESS) rc = reduce_basic(ps, pd, k, t.basic, a.op);
      return rc == MPI_SUCCESS ? unpack(pd, dst, n, t) : rc;
    }
  }
  const int64_t chunk = max_chunk_elems();
  for (int64_t done = 0; done < n; done += chunk) {
    const int c = static_cast<int>(std::min(chunk, n - done));
    void* s = element(src, done, a.type);
    void* d = element(dst, done, a.type);
    // MPI_Reduce_local(inbuf, inoutbuf) computes inoutbuf = inbuf (+) inoutbuf: src_first.
    if (side == Side::src_first || a.commutative) {
      int rc = MPI_Reduce_local(s, d, c, a.type.type, a.op);
      if (rc != MPI_SUCCESS) return rc;
      continue;
    }
    // dst_first on a non-commutative op: t = src; t = dst (+) t; dst = t.
    std::byte* tmp = temp_elems(st.temp, a.type, c);
    int rc = copy_elements(s, tmp, c, a.type, st.pack);
    if (rc == MPI_SUCCESS) rc = MPI_Reduce_local(d, tmp, c, a.type.type, a.op);
    if (rc == MPI_SUCCESS) rc = copy_elements(tmp, d, c, a.type, st.pack);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

namespace {

// The ops that wait on step i.
std::span<const uint32_t> successors(const Plan& plan, uint32_t i) {
  const Step& s = plan.steps[i];
  if (s.nsucc == 1) return {&s.succ, 1};
  return {plan.succ_list.data() + s.succ, s.nsucc};
}

// Dependencies op j still waits on (its state word without the flag bits).
uint32_t deps_left(const Plan& plan, uint32_t j) {
  return plan.state[j] & Plan::kCount;
}

// MPI_Waitall on the requests in flight is safe (and cheaper than several MPI_Waitsome) when no
// part of them alone lets another op start: every successor whose remaining dependencies are
// all in flight waits on all of them. Checked for a few ops in flight only (rd, binomial trees,
// dissemination); otherwise MPI_Waitsome decides, as it always may.
bool waitall_is_safe(const Plan& plan, const RunState& st, size_t head) {
  constexpr size_t kMaxOps = 4;
  uint32_t ops[kMaxOps];
  size_t k = 0;
  for (size_t r = head; r < st.reqs.size(); ++r) {
    if (st.reqs[r] == MPI_REQUEST_NULL) continue;
    const uint32_t i = st.req_op[r];
    if (std::find(ops, ops + k, i) != ops + k) continue;
    if (k == kMaxOps) return false;
    ops[k++] = i;
  }
  for (size_t x = 0; x < k; ++x)
    for (const uint32_t j : successors(plan, ops[x])) {
      // How many of the ops in flight j waits on (deps are listed once per op).
      uint32_t in_flight = 0;
      for (size_t y = 0; y < k; ++y)
        for (const uint32_t s : successors(plan, ops[y]))
          if (s == j) {
            ++in_flight;
            break;
          }
      if (deps_left(plan, j) == in_flight && in_flight < k) return false;
    }
  return true;
}

// Neither of two ops in flight lets another op start alone: no successor of either has just one
// dependency left. (Then waiting for both at once delays nothing.)
bool pair_gates_all(const Plan& plan, uint32_t x, uint32_t y) {
  for (uint32_t a : {x, y})
    for (const uint32_t j : successors(plan, a))
      if (deps_left(plan, j) == 1) return false;
  return true;
}

}  // namespace

namespace {

// The order in which a rank may run its plan's ops one at a time, each waited for (a send for its
// slot, a receive for its data), or nothing when such a run could wait where the dataflow run
// would not. A list schedule: ops that wait on no peer in this call (copies, reduces, and sends:
// with at most K messages to a peer in a call, a send's slot waits only for the peer to release an
// earlier call's message, which nothing in this call holds back) run as soon as their deps have;
// only when none is left does the rank wait on a receive, and then only on one that every send not
// yet run depends on. So a rank waiting on a receive holds back no send the dataflow run would
// have made by then: by induction on the dataflow run's order, this order makes every send it
// makes, and completes wherever it completes (which the verifier proves). Empty when some message
// goes through MPI, or the plan is large (the check is O(n^2 / 64) once; large plans are large
// messages, where the loop's cost does not show).
// Returns why not ("" when `order` is set).
// `framed` (run_framed): every message is one head on the shared-memory channel, its data past
// the slot size by MPI_Isend, posted before the head: a send still waits for nothing of its call.
std::string in_turn_order(const Plan& plan, const ShmTransport& shm, std::vector<uint32_t>& order,
                          bool framed = false) {
  constexpr size_t kMaxOps = 1024;
  order.clear();
  const size_t n = plan.steps.size();
  if (n > kMaxOps) return "more than " + std::to_string(kMaxOps) + " ops";
  std::vector<uint32_t> sends;
  for (size_t i = 0; i < n; ++i) {
    const Step& s = plan.steps[i];
    if (s.kind != OpKind::send && s.kind != OpKind::recv) continue;
    if (s.shm_seq == Plan::kViaMpi && !framed) return "messages on MPI point-to-point";
    if (s.kind == OpKind::send) sends.push_back(static_cast<uint32_t>(i));
  }
  // A send waits for nothing of its own call when the call's messages to its peer (counted in
  // plan.shm_sent) fit their window: K, or 4 for messages in small bodies (ShmTransport::window).
  // A framed run has one message a peer (run_framed checks), within every window.
  std::unordered_map<int32_t, uint64_t> window;  // per peer: the smallest of its messages'
  for (const uint32_t i : sends) {
    const Step& s = plan.steps[i];
    uint64_t& w = window.try_emplace(s.peer, UINT64_MAX).first->second;
    w = std::min(w, shm.window(s.len * plan.header.elem_size));
  }
  for (const auto& [peer, k] : plan.shm_sent)
    if (const uint64_t w = window.at(peer); k > w && !framed)
      return "more than " + std::to_string(w) + " messages to one peer";
  // below[i]: the ops op i waits on, transitively (n bits). Deps come before their op.
  const size_t words = (n + 63) / 64;
  std::vector<uint64_t> below(n * words, 0);
  auto waits_on = [&](size_t i, size_t d) { return (below[i * words + d / 64] >> (d % 64)) & 1; };
  for (size_t i = 0; i < n; ++i)
    for (const uint32_t j : successors(plan, static_cast<uint32_t>(i))) {
      for (size_t w = 0; w < words; ++w) below[j * words + w] |= below[i * words + w];
      below[j * words + i / 64] |= uint64_t{1} << (i % 64);
    }

  std::vector<uint32_t> ready, receives;  // ready: ops that wait on no peer, first in first out
  std::vector<uint32_t> left(plan.num_deps);
  std::vector<bool> ran(n, false);
  order.reserve(n);
  auto arrive = [&](uint32_t i) {
    (plan.steps[i].kind == OpKind::recv ? receives : ready).push_back(i);
  };
  auto run = [&](uint32_t i) {
    order.push_back(i);
    ran[i] = true;
    for (const uint32_t j : successors(plan, i))
      if (--left[j] == 0) arrive(j);
  };
  for (const uint32_t i : plan.roots) arrive(i);
  size_t head = 0;
  while (order.size() < n) {
    if (head < ready.size()) {
      run(ready[head++]);
      continue;
    }
    // Only receives can run: one that every send still to come waits on, else none.
    auto pick = std::find_if(receives.begin(), receives.end(), [&](uint32_t r) {
      return std::all_of(sends.begin(), sends.end(),
                         [&](uint32_t s) { return ran[s] || waits_on(s, r); });
    });
    if (pick == receives.end()) {
      order.clear();
      return "no receive that every send still to come waits on";
    }
    const uint32_t r = *pick;
    receives.erase(pick);
    run(r);
  }
  return "";
}

// Copy forwarding, in a plan run in turn: `copy B[lo:hi] = in[..]`, then sends that read within
// B[lo:hi], then a fused receive whose reduce is exactly B[lo:hi] (+)= the message, with no other
// op in between touching B[lo:hi] or writing `in`. When the call's (type, op) has a loop
// (RunArgs::fast, commutative and exact under operand swap) and `in` is a buffer of its own (not
// MPI_IN_PLACE, where a write to `out` may be one to `in`), the sends read `in` and the reduce
// writes B = in (+) message, so the copy is never made: it was ~10 % of an 8-byte allreduce:rd's
// instructions, and at 4 KiB a pass over the data before the send could leave. The flags are only
// read by run_in_turn; every other run does the ops as written.
// Returns how many copies may be skipped.
int forward_copies(Plan& plan) {
  int forwarded = 0;
  const std::vector<uint32_t>& order = plan.in_turn;
  for (size_t k = 0; k < order.size(); ++k) {
    Step& c = plan.steps[order[k]];
    if (c.kind != OpKind::copy || c.src != kIn || c.buf == kIn) continue;
    const int64_t lo = c.off, hi = c.off + c.len;
    auto overlaps = [&](BufId b, int64_t off, int64_t len) {  // B[lo:hi]
      return b == c.buf && off < hi && off + len > lo;
    };
    std::vector<uint32_t> sends;
    for (size_t j = k + 1; j < order.size(); ++j) {
      Step& s = plan.steps[order[j]];
      if (s.kind == OpKind::send) {
        if (s.buf == c.buf && s.off >= lo && s.off + s.len <= hi)
          sends.push_back(order[j]);
        else if (overlaps(s.buf, s.off, s.len))
          break;  // reads part of it
        continue;
      }
      if (s.kind == OpKind::recv && (s.flags & Step::kFused) != 0 && j + 1 < order.size() &&
          order[j + 1] == s.succ) {
        const Step& r = plan.steps[s.succ];
        if (r.buf == c.buf && r.off == lo && r.len == c.len) {
          c.flags |= Step::kForward;
          ++forwarded;
          for (const uint32_t i : sends) {
            plan.steps[i].flags |= Step::kFromIn;
            plan.steps[i].src = kIn;
            plan.steps[i].src_off = c.src_off + (plan.steps[i].off - lo);
          }
          s.flags |= Step::kThree;
          s.src = kIn;
          s.src_off = c.src_off;
          break;
        }
      }
      // Any other op: it must neither write `in` nor touch B[lo:hi].
      const bool writes =
          s.kind == OpKind::copy || s.kind == OpKind::reduce || s.kind == OpKind::recv;
      const bool reads = s.kind == OpKind::copy || s.kind == OpKind::reduce;
      if ((writes && (overlaps(s.buf, s.off, s.len) || s.buf == kIn)) ||
          (reads && overlaps(s.src, s.src_off, s.len)))
        break;
    }
  }
  return forwarded;
}

// COLLKIT_VERBOSE: any value but 0 is level 1 (the transport), 2 also each plan's way of running,
// 3 also each dataflow run's counts (RunState::Counts).
bool verbose(int level) {
  return env_int("COLLKIT_VERBOSE", 0, 0, 9, "a level") >= level;
}

// The plan's view of the shared-memory transport: which messages go through it (and their index
// among the pair's shared-memory messages), and which receives reduce straight out of the slot.
// The choice depends only on the plan (peer, message bytes) and the slot size, agreed on the node:
// both sides of a pair choose alike.
void prepare_shm(Plan& plan, ShmTransport& shm) {
  const size_t n = plan.ops.size();
  plan.shm_bytes = shm.slot_bytes();
  std::unordered_map<int32_t, uint32_t> sends, recvs;
  for (size_t i = 0; i < n; ++i) {
    Step& op = plan.steps[i];
    op.shm_seq = Plan::kViaMpi;
    op.flags &=
        static_cast<uint8_t>(~(Step::kFused | Step::kForward | Step::kFromIn | Step::kThree));
    if (op.kind != OpKind::send && op.kind != OpKind::recv) continue;
    const int64_t bytes = op.len * plan.header.elem_size;
    if (!shm.carries(op.peer, bytes)) continue;
    op.shm_seq = (op.kind == OpKind::send ? sends : recvs)[op.peer]++;
    shm.map_bodies(op.peer, bytes, op.kind == OpKind::send);
  }
  plan.shm_sent.assign(sends.begin(), sends.end());
  plan.shm_received.assign(recvs.begin(), recvs.end());

  // Channels: the sends to a peer, then the receives from one, in the order of those lists.
  plan.shm_begin.assign(1, 0);
  plan.shm_window.clear();
  std::unordered_map<int64_t, uint32_t> channel;  // 2 * peer + (recv ? 1 : 0) -> channel
  for (const auto* list : {&plan.shm_sent, &plan.shm_received})
    for (const auto& [peer, k] : *list) {
      const int64_t key = 2 * int64_t{peer} + (list == &plan.shm_received ? 1 : 0);
      channel.emplace(key, static_cast<uint32_t>(plan.shm_window.size()));
      plan.shm_window.push_back(0);
      plan.shm_begin.push_back(plan.shm_begin.back() + k);
    }
  plan.shm_op.assign(plan.shm_begin.back(), 0);
  plan.shm_chan.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Step& op = plan.steps[i];
    if (op.shm_seq == Plan::kViaMpi || (op.kind != OpKind::send && op.kind != OpKind::recv))
      continue;
    const uint32_t c = channel.at(2 * int64_t{op.peer} + (op.kind == OpKind::recv ? 1 : 0));
    plan.shm_chan[i] = c;
    plan.shm_op[plan.shm_begin[c] + op.shm_seq] = static_cast<uint32_t>(i);
    const uint64_t w = shm.window(op.len * plan.header.elem_size);
    plan.shm_window[c] = static_cast<uint32_t>(std::max<uint64_t>(plan.shm_window[c], w));
  }
  plan.shm_low.assign(plan.shm_window.size(), 0);
  plan.shm_mark.assign(plan.shm_op.size(), 0);

  // Fusion: a shared-memory receive into scratch whose one successor is a reduce of exactly that
  // region, where no other op reads what the receive wrote: when the data arrives and the reduce
  // waits on nothing else by then (rd's reduce also waits on its send, done long before the peer's
  // data comes), the reduce reads the slot and the scratch is never written; else the receive
  // copies as usual and the reduce runs later. "What the receive wrote" is by region and by order:
  // the plan's order is a topological order of its dependencies and the schedule is race-free (as
  // the verifier proves), so of two ops touching the same bytes, one of them writing, the one that
  // comes first in the plan runs first. So an op touching the region before the receive, or after
  // a later write that covers the whole region, cannot see the received bytes (rd at P >= 4
  // receives every round into the same scratch: the previous round's reduce read it before, the
  // next round's receive overwrites it).
  struct Access {
    BufId buf;
    int64_t off, end;
    uint32_t op;
    bool reads, overwrites;  // overwrites: writes the region without reading it first
  };
  std::vector<Access> accesses;
  for (size_t i = 0; i < n; ++i) {
    const Op& op = plan.ops[i];
    const auto id = static_cast<uint32_t>(i);
    const bool to_scratch = op.buf >= kFirstScratch;
    switch (op.kind) {
      case OpKind::send:
        if (to_scratch) accesses.push_back({op.buf, op.off, op.off + op.len, id, true, false});
        break;
      case OpKind::recv:
        if (to_scratch) accesses.push_back({op.buf, op.off, op.off + op.len, id, false, true});
        break;
      case OpKind::copy:
      case OpKind::reduce:  // a reduce reads its destination too
        if (op.src >= kFirstScratch)
          accesses.push_back({op.src, op.src_off, op.src_off + op.len, id, true, false});
        if (to_scratch)
          accesses.push_back({op.buf, op.off, op.off + op.len, id, op.kind == OpKind::reduce,
                              op.kind == OpKind::copy});
        break;
      default:
        break;
    }
  }
  auto before = [](const Access& x, const Access& y) {
    return x.buf != y.buf ? x.buf < y.buf : x.off < y.off;
  };
  std::sort(accesses.begin(), accesses.end(), before);
  std::vector<int64_t> reach(accesses.size());  // the furthest end so far within the buffer
  for (size_t k = 0; k < accesses.size(); ++k)
    reach[k] = k > 0 && accesses[k - 1].buf == accesses[k].buf
                   ? std::max(reach[k - 1], accesses[k].end)
                   : accesses[k].end;
  int fused = 0;
  constexpr int kLooks = 64;  // accesses to a region looked at, at most (else not fused)
  std::vector<const Access*> near;
  for (size_t i = 0; i < n; ++i) {
    const Op& op = plan.ops[i];
    if (plan.steps[i].shm_seq == Plan::kViaMpi || op.kind != OpKind::recv || op.buf < kFirstScratch)
      continue;
    const auto next = plan.succ.of(static_cast<uint32_t>(i));
    if (next.size() != 1) continue;
    const uint32_t j = next[0];
    const Op& r = plan.ops[j];
    if (r.kind != OpKind::reduce || r.src != op.buf || r.src_off != op.off || r.len != op.len)
      continue;
    const int64_t lo = op.off, hi = op.off + op.len;
    if (r.buf == op.buf && r.off < hi && r.off + r.len > lo) continue;  // it reduces into it
    // Every access overlapping the region (the sort is by start; reach bounds the walk back).
    auto k = static_cast<size_t>(std::lower_bound(accesses.begin(), accesses.end(),
                                                  Access{op.buf, hi, 0, 0, false, false}, before) -
                                 accesses.begin());
    near.clear();
    bool few = true;
    for (; k > 0; --k) {
      const Access& x = accesses[k - 1];
      if (x.buf != op.buf || reach[k - 1] <= lo) break;
      if (x.end <= lo) continue;
      if (near.size() == kLooks) {
        few = false;
        break;
      }
      near.push_back(&x);
    }
    if (!few) continue;
    // The first op after the receive that overwrites the whole region: the received bytes live
    // until then, and only the reduce may read them.
    uint32_t until = UINT32_MAX;
    for (const Access* x : near)
      if (x->op > i && x->overwrites && x->off <= lo && x->end >= hi)
        until = std::min(until, x->op);
    bool alone = j < until;
    for (const Access* x : near)
      if (x->reads && x->op > i && x->op < until && x->op != j) alone = false;
    if (alone) {
      plan.steps[i].flags |= Step::kFused;
      ++fused;
    }
  }
  // COLLKIT_SHM_IN_TURN=0: every plan through the general loop (to compare the two; docs/mpi.md).
  std::string why = "COLLKIT_SHM_IN_TURN=0";
  if (env_flag("COLLKIT_SHM_IN_TURN", true))
    why = in_turn_order(plan, shm, plan.in_turn);
  else
    plan.in_turn.clear();
  const int forwarded = forward_copies(plan);
  if (plan.rank == 0 && verbose(2)) {
    std::string how = why.empty() ? "in turn" : "dataflow (" + why + ")";
    if (fused > 0)
      how += ", " + std::to_string(fused) + (fused == 1 ? " receive" : " receives") + " fused";
    if (forwarded > 0)
      how +=
          ", " + std::to_string(forwarded) + (forwarded == 1 ? " copy" : " copies") + " forwarded";
    std::fprintf(stderr, "collkit: plan %s P=%lld %lld B, rank 0 (%zu ops): %s\n",
                 plan.header.algorithm.c_str(), static_cast<long long>(plan.header.P),
                 static_cast<long long>(plan.header.count * plan.header.elem_size), n, how.c_str());
  }
}

// How long a waiting rank polls before it yields the core between polls (waiting.hpp).
std::chrono::nanoseconds spin_limit() {
  return wait_policy().spin;
}

// A rank waiting inside collkit's call is, for the program, inside its MPI collective, and the MPI
// must go on moving the program's own messages meanwhile (MPI's progress rule): a send the program
// started before the call (MPI_Isend), whose receiver waits for it before it joins the collective,
// completes only if this rank's MPI progresses it. MPICH without CMA and Open MPI without single
// copy move a large message's data only from inside an MPI call, so a wait that never entered the
// MPI hung such a program where the MPI's own collective completes it. So a wait past the first
// microsecond pokes the MPI's progress engine every 256 polls: an MPI_Iprobe on the call's private
// communicator, which receives nothing (a probe on MPI_COMM_SELF left the program hung on
// MPICH). The general loop's MPI_Testsome does the same while collkit's own MPI requests are in
// flight.
void poke_mpi_progress(MPI_Comm comm) {
  int flag = 0;
  PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE);
}

class Backoff {
 public:
  explicit Backoff(MPI_Comm comm) : comm_(comm) {}
  void moved() { idle_ = 0; }
  void idle() {
    if (++idle_ % kSpins != 0) return;  // the clock is read once every kSpins polls
    const auto now = std::chrono::steady_clock::now();
    if (idle_ == kSpins) {
      since_ = now;
      return;
    }
    if (idle_ % (4 * kSpins) == 0 && now - since_ > std::chrono::microseconds(1))
      poke_mpi_progress(comm_);
    if (now - since_ > spin_limit()) sched_yield();
  }

 private:
  static constexpr unsigned kSpins = 64;
  MPI_Comm comm_;
  unsigned idle_ = 0;
  std::chrono::steady_clock::time_point since_{};
};

// An op that involves no peer: a reduce or a copy between the call's buffers (compute and sleep
// are the simulator's: nothing to do on a real machine).
int run_local(const Step& op, std::byte* const* bufs, const RunArgs& a, RunState& st) {
  const TypeInfo& t = a.type;
  if (op.kind == OpKind::reduce)
    return reduce_local(element(bufs[op.src], op.src_off, t), element(bufs[op.buf], op.off, t),
                        op.len, op.side(), a, st);
  if (op.kind == OpKind::copy)
    return copy_elements(element(bufs[op.src], op.src_off, t), element(bufs[op.buf], op.off, t),
                         op.len, t, st.pack);
  return MPI_SUCCESS;
}

// A message's packed bytes into its slot, and out of it into the buffer.
int put(std::byte* slot, const std::byte* p, const Step& op, const TypeInfo& t) {
  if (!t.dense_run(op.len)) return pack(p, op.len, t, slot);
  if (op.len > 0) std::memcpy(slot, offset(p, t.true_lb), static_cast<size_t>(op.len * t.size));
  return MPI_SUCCESS;
}

int take(const std::byte* slot, std::byte* p, const Step& op, const TypeInfo& t) {
  if (!t.dense_run(op.len)) return unpack(slot, p, op.len, t);
  if (op.len > 0) std::memcpy(offset(p, t.true_lb), slot, static_cast<size_t>(op.len * t.size));
  return MPI_SUCCESS;
}

// Every message of the call is done: the next call's shared-memory messages count on from here.
void count_messages(const Plan& plan, ShmTransport& shm) {
  for (const auto& [peer, k] : plan.shm_sent) shm.sent[static_cast<size_t>(peer)] += k;
  for (const auto& [peer, k] : plan.shm_received) shm.received[static_cast<size_t>(peer)] += k;
}

// The plan's ops one at a time in plan.in_turn, each waited for: every message goes through
// shared memory, so a call is copies into and out of slots, reductions and polls of a stamp, with
// no ready queue, no dependency counts and no MPI call (a small plan's general loop cost more
// than its messages: benchmarks/results/executor-call-instructions.md).
int run_in_turn(Plan& plan, std::byte* const* bufs, const RunArgs& a, RunState& st,
                ShmTransport& shm, bool fuse) {
  const TypeInfo& t = a.type;
  const size_t n = plan.in_turn.size();
  // forward_copies' flags apply: its checks are by buffer, so not where `in` and `out` are one.
  const bool forward = fuse && a.fast != nullptr && !a.one_buffer;
  for (size_t k = 0; k < n; ++k) {
    const Step& op = plan.steps[plan.in_turn[k]];
    int rc = MPI_SUCCESS;
    switch (op.kind) {
      case OpKind::send: {
        const uint64_t q = shm.sent[static_cast<size_t>(op.peer)] + op.shm_seq;
        const int64_t bytes = op.len * t.size;
        std::byte* slot = shm.send_slot(op.peer, q, bytes);
        for (Backoff wait(a.comm); slot == nullptr; slot = shm.send_slot(op.peer, q, bytes))
          wait.idle();
        const bool from_in = forward && (op.flags & Step::kFromIn) != 0;
        rc = put(slot,
                 from_in ? element(bufs[op.src], op.src_off, t) : element(bufs[op.buf], op.off, t),
                 op, t);
        shm.publish(op.peer, q);
        break;
      }
      case OpKind::recv: {
        const uint64_t q = shm.received[static_cast<size_t>(op.peer)] + op.shm_seq;
        const int64_t bytes = op.len * t.size;
        const std::byte* slot = shm.recv_slot(op.peer, q, bytes);
        for (Backoff wait(a.comm); slot == nullptr; slot = shm.recv_slot(op.peer, q, bytes))
          wait.idle();
        if (fuse && (op.flags & Step::kFused) != 0 && k + 1 < n && plan.in_turn[k + 1] == op.succ) {
          // The reduce is next and reads only this message: straight out of the slot.
          const Step& r = plan.steps[op.succ];
          if (forward && (op.flags & Step::kThree) != 0)  // out = in (+) message: no copy
            a.fast(offset(slot, -t.true_lb), element(bufs[op.src], op.src_off, t),
                   element(bufs[r.buf], r.off, t), r.len);
          else
            rc = reduce_local(offset(slot, -t.true_lb), element(bufs[r.buf], r.off, t), r.len,
                              r.side(), a, st);
          ++k;
        } else {
          rc = take(slot, element(bufs[op.buf], op.off, t), op, t);
        }
        shm.release(op.peer, q);
        break;
      }
      default:
        if (!forward || (op.flags & Step::kForward) == 0) rc = run_local(op, bufs, a, st);
    }
    if (rc != MPI_SUCCESS) return rc;
  }
  count_messages(plan, shm);
  return MPI_SUCCESS;
}

// What a framed run needs of its plan, made by its first framed run: the order of its ops
// (in_turn_order, framed) and the peers it has no message to or from. Refused (a message to or
// from itself, two to or from one peer, no such order) where the algorithm does not fit it.
std::string prepare_framed(Plan& plan, const ShmTransport& shm) {
  const auto P = static_cast<size_t>(plan.header.P);
  std::vector<uint8_t> to(P, 0), from(P, 0);
  for (const Step& op : plan.steps) {
    if (op.kind != OpKind::send && op.kind != OpKind::recv) continue;
    uint8_t& k = (op.kind == OpKind::send ? to : from)[static_cast<size_t>(op.peer)];
    if (op.peer == plan.rank || ++k > 1)
      return "a framed run takes one message to and from each other rank at most";
  }
  if (std::string why = in_turn_order(plan, shm, plan.framed_order, true); !why.empty()) return why;
  plan.framed_silent_to.clear();
  plan.framed_silent_from.clear();
  for (size_t r = 0; r < P; ++r) {
    if (static_cast<int64_t>(r) == plan.rank) continue;
    if (to[r] == 0) plan.framed_silent_to.push_back(static_cast<int32_t>(r));
    if (from[r] == 0) plan.framed_silent_from.push_back(static_cast<int32_t>(r));
  }
  plan.framed_shm_bytes = shm.slot_bytes();
  return "";
}

// A framed message's length that says its sender could not run the call (refuse_framed).
constexpr int64_t kRefused = -1;

// A framed message to `peer`: the head with its length, its data in the slot up to the slot
// size, else by MPI_Isend (tag 0: one message a pair a call, MPI keeps a pair's order), posted
// before the head is published so that the receiver that reads the head finds it.
// The slot of this call's framed message to `peer`, `bytes` of data in it (0: the head alone),
// once the peer has released the message it last held.
std::byte* framed_slot(ShmTransport& shm, int peer, int64_t bytes, MPI_Comm comm) {
  const uint64_t q = shm.sent[static_cast<size_t>(peer)];
  std::byte* slot = shm.send_slot(peer, q, bytes);
  for (Backoff wait(comm); slot == nullptr; slot = shm.send_slot(peer, q, bytes)) wait.idle();
  return slot;
}

int send_framed(ShmTransport& shm, int peer, const std::byte* p, int64_t n, const TypeInfo& t,
                const RunArgs& a, RunState& st) {
  const uint64_t q = shm.sent[static_cast<size_t>(peer)];
  const int64_t bytes = n * t.size;
  const bool by_mpi = !shm.carries(peer, bytes);
  std::byte* slot = framed_slot(shm, peer, by_mpi ? 0 : bytes, a.comm);
  int rc = MPI_SUCCESS;
  if (by_mpi) {
    const int64_t chunk = max_chunk_elems();
    int64_t done = 0;
    do {
      const int c = static_cast<int>(std::min(chunk, n - done));
      MPI_Request r;
      rc = MPI_Isend(element(const_cast<std::byte*>(p), done, t), c, t.type, peer, 0, a.comm, &r);
      if (rc != MPI_SUCCESS) return rc;
      st.reqs.push_back(r);
      done += c;
    } while (done < n);
  } else if (!t.dense_run(n)) {
    rc = pack(p, n, t, slot);
  } else if (n > 0) {
    std::memcpy(slot, offset(p, t.true_lb), static_cast<size_t>(bytes));
  }
  shm.set_length(peer, q, bytes);
  shm.publish(peer, q);
  return rc;
}

// A framed message from `peer`, `n` elements of t expected at p (nullptr: none expected). A
// length other than the expected one is the program's error: its data is taken off the channel
// (or off MPI) and dropped, so the pair's next messages are matched as ever, and the call fails
// on this rank with what each side said.
int recv_framed(ShmTransport& shm, int peer, std::byte* p, int64_t n, const TypeInfo& t,
                const RunArgs& a, RunState& st) {
  const uint64_t q = shm.received[static_cast<size_t>(peer)];
  const std::byte* slot = shm.recv_slot(peer, q, 0);
  for (Backoff wait(a.comm); slot == nullptr; slot = shm.recv_slot(peer, q, 0)) wait.idle();
  const int64_t bytes = shm.length(peer, q), expected = n * t.size;
  const bool by_mpi = bytes != kRefused && !shm.carries(peer, bytes);
  int rc = MPI_SUCCESS;
  if (bytes == kRefused) {
    shm.release(peer, q);
    if (st.mismatch.empty())  // the first a call met
      st.mismatch = "rank " + std::to_string(peer) +
                    " could not run this call (its own call says why: a count or a limit on its "
                    "row or column)";
    return MPI_ERR_TRUNCATE;
  }
  if (bytes != expected) {
    if (by_mpi) {  // dropped: a scratch buffer of its length, in MPI_BYTE (any signature)
      std::byte* sink = st.temp.get(static_cast<size_t>(std::min<int64_t>(bytes, INT_MAX)));
      for (int64_t done = 0; done < bytes && rc == MPI_SUCCESS;) {
        const int c = static_cast<int>(std::min<int64_t>(INT_MAX, bytes - done));
        rc = MPI_Recv(sink, c, MPI_BYTE, peer, 0, a.comm, MPI_STATUS_IGNORE);
        done += c;
      }
    }
    shm.release(peer, q);
    if (st.mismatch.empty())
      st.mismatch = "rank " + std::to_string(peer) + " sends " + std::to_string(bytes) +
                    " bytes where this rank's counts x type say " + std::to_string(expected) +
                    ": the type signatures must match";
    return rc != MPI_SUCCESS ? rc : MPI_ERR_TRUNCATE;
  }
  if (by_mpi) {
    shm.release(peer, q);
    const int64_t chunk = max_chunk_elems();
    for (int64_t done = 0; done < n && rc == MPI_SUCCESS;) {
      const int c = static_cast<int>(std::min(chunk, n - done));
      rc = MPI_Recv(element(p, done, t), c, t.type, peer, 0, a.comm, MPI_STATUS_IGNORE);
      done += c;
    }
    return rc;
  }
  slot = shm.recv_slot(peer, q, bytes);  // where a message of this length lies
  if (!t.dense_run(n))
    rc = unpack(slot, p, n, t);
  else if (n > 0)
    std::memcpy(offset(p, t.true_lb), slot, static_cast<size_t>(bytes));
  shm.release(peer, q);
  return rc;
}

// A framed run (RunArgs::framed): a blocking alltoallv whose counts were not exchanged (capi.cpp:
// rank r's program reads only row r and column r of the count matrix, and every rank shares the
// node). Each rank sends every other rank exactly one message a call, an empty one where its row
// says 0 (first: a send waits for nothing of the call), with its length in the head; each
// receiver checks it against its column before it takes a byte (the peers it expects nothing
// from, last). So counts that disagree, an erroneous program, fail the call on the rank that
// sees them, and the channels carry one message a pair a call on both sides whatever the counts
// said: the next calls are matched as ever. The plan's ops run one at a time in the framed
// order, as run_in_turn's.
// Not inlined: inlined into run_plan it changes how run_plan's other paths compile, ~60
// instructions more a small allgatherv call (callgrind).
[[gnu::noinline]] int run_framed(Plan& plan, std::byte* const* bufs, const RunArgs& a, RunState& st,
                                 ShmTransport* transport) {
  if (transport == nullptr || transport->node_size() != plan.header.P) {
    st.mismatch = "a framed run needs every rank on the shared-memory transport";
    return MPI_ERR_INTERN;
  }
  ShmTransport& shm = *transport;
  const TypeInfo& t = a.type;
  if (plan.framed_shm_bytes != shm.slot_bytes())
    if (std::string why = prepare_framed(plan, shm); !why.empty()) {
      bool all = false;  // the peers wait for this rank's messages: refusals
      const int rc = refuse_framed(a.comm, st, all);
      st.mismatch = why;
      return rc != MPI_SUCCESS ? rc : MPI_ERR_INTERN;
    }
  st.reqs.clear();
  st.mismatch.clear();
  int failed = MPI_SUCCESS;  // the first mismatch: the call still takes every message
  auto note = [&](int rc) {
    if (rc == MPI_ERR_TRUNCATE && failed == MPI_SUCCESS) failed = rc;
    return rc == MPI_ERR_TRUNCATE ? MPI_SUCCESS : rc;
  };
  for (const int32_t peer : plan.framed_silent_to)
    if (int rc = send_framed(shm, peer, nullptr, 0, t, a, st); rc != MPI_SUCCESS) return rc;
  for (const uint32_t i : plan.framed_order) {
    const Step& op = plan.steps[i];
    int rc = MPI_SUCCESS;
    if (op.kind == OpKind::send)
      rc = send_framed(shm, op.peer, element(bufs[op.buf], op.off, t), op.len, t, a, st);
    else if (op.kind == OpKind::recv)
      rc = note(recv_framed(shm, op.peer, element(bufs[op.buf], op.off, t), op.len, t, a, st));
    else
      rc = run_local(op, bufs, a, st);
    if (rc != MPI_SUCCESS) return rc;
  }
  for (const int32_t peer : plan.framed_silent_from)
    if (int rc = note(recv_framed(shm, peer, nullptr, 0, t, a, st)); rc != MPI_SUCCESS) return rc;
  for (size_t r = 0; r < shm.sent.size(); ++r)
    if (static_cast<int64_t>(r) != plan.rank) {
      ++shm.sent[r];
      ++shm.received[r];
    }
  if (!st.reqs.empty())
    if (int rc = MPI_Waitall(static_cast<int>(st.reqs.size()), st.reqs.data(), MPI_STATUSES_IGNORE);
        rc != MPI_SUCCESS)
      return rc;
  return failed;
}

}  // namespace

int refuse_framed(MPI_Comm comm, RunState& st, bool& all_refused) {
  ShmTransport* shm = transport(comm, st);
  int rank = 0, size = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  all_refused = true;
  if (size == 1) return MPI_SUCCESS;                                      // no peer to tell
  if (shm == nullptr || shm->node_size() != size) return MPI_ERR_INTERN;  // not framed
  RunArgs a;
  a.comm = comm;
  a.type = TypeInfo::bytes();
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    const uint64_t q = shm->sent[static_cast<size_t>(peer)];
    framed_slot(*shm, peer, 0, comm);  // the head alone
    shm->set_length(peer, q, kRefused);
    shm->publish(peer, q);
  }
  int rc = MPI_SUCCESS;
  for (int peer = 0; peer < size && rc == MPI_SUCCESS; ++peer) {
    if (peer == rank) continue;
    // What the peer sends, dropped (none expected: any length but kRefused is "not refused").
    st.mismatch.clear();
    const int got = recv_framed(*shm, peer, nullptr, 0, a.type, a, st);
    if (got != MPI_ERR_TRUNCATE || st.mismatch.find("could not run") == std::string::npos)
      all_refused = false;
    if (got != MPI_SUCCESS && got != MPI_ERR_TRUNCATE) rc = got;
  }
  st.mismatch.clear();
  for (int peer = 0; peer < size; ++peer)
    if (peer != rank) {
      ++shm->sent[static_cast<size_t>(peer)];
      ++shm->received[static_cast<size_t>(peer)];
    }
  return rc;
}

ShmTransport* set_up_transport(MPI_Comm comm, RunState& st) {
  // The first run on a communicator sets up its transport, on every rank alike (collective).
  if (!st.shm_checked) {
    std::string why;
    st.shm = ShmTransport::create(comm, why);
    st.shm_checked = true;
    st.transport = st.shm ? "shm" : "p2p (" + why + ")";
    int rank = 0, size = 1;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    if (rank == 0 && verbose(1))
      std::fprintf(stderr, "collkit: transport on a communicator of %d ranks: %s\n", size,
                   st.shm ? st.shm->describe().c_str() : st.transport.c_str());
  }
  return st.shm.get();
}

int run_plan(Plan& plan, const RunArgs& a, RunState& st) {
  const size_t n = plan.ops.size();
  const TypeInfo& t = a.type;

  ShmTransport* shm = transport(a.comm, st);
  if (shm != nullptr && plan.shm_bytes != shm->slot_bytes()) prepare_shm(plan, *shm);
  // Reducing out of a slot needs the slot's packed bytes to be elements where they lie.
  const bool fuse = shm != nullptr && t.dense && t.extent == t.size;

  // Buffer addresses: in, out, then the scratch buffers carved from one reused arena.
  // Uninitialised on purpose: zeroing every possible scratch slot was a third of a small call;
  // make_plan refuses a program naming a buffer past its scratch list.
  std::byte* bufs[kFirstScratch + kMaxScratch];
  bufs[kIn] = static_cast<std::byte*>(a.in);
  bufs[kOut] = static_cast<std::byte*>(a.out);
  Plan::ScratchLayout& sl = plan.scratch_layout;
  if (sl.extent != t.extent || sl.true_extent != t.true_extent) {
    sl.extent = t.extent;
    sl.true_extent = t.true_extent;
    sl.at.clear();
    size_t at = 0;
    for (const int64_t e : plan.scratch) {
      sl.at.push_back(at);
      at += (span_bytes(t, e) + 63) / 64 * 64 + 64;
    }
    sl.bytes = at + 64;
  }
  if (!plan.scratch.empty()) {
    std::byte* base = st.scratch.get(sl.bytes);
    for (size_t k = 0; k < plan.scratch.size(); ++k)
      bufs[kFirstScratch + k] = element0_in_block(base + sl.at[k], t, plan.scratch[k]);
  }

  if (a.framed && plan.header.P > 1) return run_framed(plan, bufs, a, st, shm);
  if (shm != nullptr && !plan.in_turn.empty()) return run_in_turn(plan, bufs, a, st, *shm, fuse);

  // A copy into a vector already of that size (every run but the first): assign() is an
  // out-of-line loop of ~70 instructions a small call.
  plan.state.resize(plan.start_state.size());
  std::copy(plan.start_state.begin(), plan.start_state.end(), plan.state.begin());
  // Ready ops run in the order they became ready (first in, first out), roots in program order:
  // a pipeline then posts segment 0 first, as its peers expect to use it first.
  plan.ready.assign(plan.start.begin(), plan.start.end());
  size_t ready_head = 0;
  st.reqs.clear();
  st.req_op.clear();
  size_t req_head = 0;  // requests before it have all completed
  size_t completed = 0;
  const int64_t chunk = max_chunk_elems();
  const int64_t tag_mod = int64_t{a.tag_ub} + 1;
  Backoff wait(a.comm);

  st.shm_wait.clear();
  if (plan.windowed) std::fill(plan.msg_done.begin(), plan.msg_done.end(), 0);
  if (shm != nullptr) {
    std::fill(plan.shm_low.begin(), plan.shm_low.end(), 0);
    std::fill(plan.shm_mark.begin(), plan.shm_mark.end(), 0);
  }
  st.counts = {};
  st.counts.shm_messages = plan.shm_op.size();
  auto window_of = [&](const Step& op) {
    return 2 * static_cast<size_t>(op.peer) + (op.kind == OpKind::recv ? 1 : 0);
  };

  // A shared-memory message done: its channel's messages done without a gap may grow, and so
  // let in those of its messages held back (below) that are now inside the window.
  auto shm_done = [&](uint32_t i, const Step& op) {
    const uint32_t c = plan.shm_chan[i];
    const uint64_t base = plan.shm_begin[c], end = plan.shm_begin[c + 1] - base;
    const uint32_t w = plan.shm_window[c];
    plan.shm_mark[base + op.shm_seq] = Plan::kShmDone;
    uint32_t& low = plan.shm_low[c];
    const uint64_t was = low;
    while (low < end && plan.shm_mark[base + low] == Plan::kShmDone) ++low;
    for (uint64_t q = was + w; q < low + w && q < end; ++q)
      if (plan.shm_mark[base + q] == Plan::kShmHeld) {
        plan.shm_mark[base + q] = 0;
        plan.ready.push_back(plan.shm_op[base + q]);
      }
  };
  auto complete = [&](uint32_t i) {
    ++completed;
    const Step& op = plan.steps[i];
    if (shm != nullptr && op.shm_seq != Plan::kViaMpi &&
        (op.kind == OpKind::send || op.kind == OpKind::recv))
      shm_done(i, op);
    if (plan.windowed && (op.kind == OpKind::send || op.kind == OpKind::recv)) {
      // One more message of the pair done: message done + window - 1 of the pair is now inside
      // the window (one per completion); if it was held back, it may start.
      const size_t w = window_of(op);
      const uint64_t next = plan.win_begin[w] + ++plan.msg_done[w] + kMessageWindow - 1;
      if (next < plan.win_begin[w + 1]) {
        const uint32_t h = plan.msg_op[next];
        if ((plan.state[h] & Plan::kHeld) != 0) {
          plan.state[h] &= ~Plan::kHeld;
          plan.ready.push_back(h);
        }
      }
    }
    if (op.nsucc == 1) {
      if ((--plan.state[op.succ] & Plan::kCount) == 0) plan.ready.push_back(op.succ);
      return;
    }
    for (const uint32_t j : successors(plan, i))
      if ((--plan.state[j] & Plan::kCount) == 0) plan.ready.push_back(j);
  };
  // A shared-memory message: 1 when done, 0 while its slot is busy or its data not there yet.
  auto shm_try = [&](uint32_t i, int& rc) -> bool {
    ++st.counts.shm_tries;
    const Step& op = plan.steps[i];
    const auto peer = static_cast<size_t>(op.peer);
    std::byte* p = element(bufs[op.buf], op.off, t);
    const int64_t bytes = op.len * t.size;
    if (op.kind == OpKind::send) {
      const uint64_t q = shm->sent[peer] + op.shm_seq;
      std::byte* slot = shm->send_slot(op.peer, q, bytes);
      if (slot == nullptr) return false;
      rc = put(slot, p, op, t);
      shm->publish(op.peer, q);
      return true;
    }
    const uint64_t q = shm->received[peer] + op.shm_seq;
    const std::byte* slot = shm->recv_slot(op.peer, q, bytes);
    if (slot == nullptr) return false;
    const bool fused = fuse && (op.flags & Step::kFused) != 0;
    if (fused && deps_left(plan, op.succ) == 1) {
      // The reduce now waits on this receive alone: straight out of the slot.
      const Step& r = plan.steps[op.succ];
      rc = reduce_local(offset(slot, -t.true_lb), element(bufs[r.buf], r.off, t), r.len, r.side(),
                        a, st);
      plan.state[op.succ] |= Plan::kEarly;
    } else {
      rc = take(slot, p, op, t);
    }
    shm->release(op.peer, q);
    return true;
  };
  auto request_done = [&](size_t r) {
    const uint32_t i = st.req_op[r];
    if (--plan.state[i] == 0) complete(i);
  };

  while (true) {
    while (ready_head < plan.ready.size()) {
      const uint32_t i = plan.ready[ready_head++];
      const Step& op = plan.steps[i];
      int rc = MPI_SUCCESS;
      switch (op.kind) {
        case OpKind::send:
        case OpKind::recv: {
          if (plan.windowed && op.seq >= plan.msg_done[window_of(op)] + kMessageWindow) {
            plan.state[i] |= Plan::kHeld;  // past the pair's window: complete() lets it in
            continue;
          }
          if (shm != nullptr && op.shm_seq != Plan::kViaMpi) {
            // Past its channel's window it cannot move (plan.hpp): shm_done lets it in.
            const uint32_t c = plan.shm_chan[i];
            if (op.shm_seq >= plan.shm_low[c] + plan.shm_window[c]) {
              plan.shm_mark[plan.shm_begin[c] + op.shm_seq] = Plan::kShmHeld;
              continue;
            }
            if (shm_try(i, rc)) {
              if (rc != MPI_SUCCESS) return rc;
              complete(i);
            } else {
              st.shm_wait.push_back(i);
              st.counts.shm_waiting_most =
                  std::max<uint64_t>(st.counts.shm_waiting_most, st.shm_wait.size());
            }
            continue;
          }
          const int tag = static_cast<int>(op.seq % tag_mod);
          // Blocking fast path: with nothing in flight, a lone message (a tree's send or
          // receive), or a send and a receive that everything next waits on both of (rd's
          // exchange, a dissemination round) need no request: MPI_Send / MPI_Recv /
          // MPI_Sendrecv, as the MPI's own algorithms do. Safe: this rank has nothing else it
          // could do meanwhile.
          if (req_head == st.reqs.size() && st.shm_wait.empty() && op.len <= chunk) {
            const size_t left = plan.ready.size() - ready_head;
            std::byte* p = element(bufs[op.buf], op.off, t);
            const int c = static_cast<int>(op.len);
            if (left == 0) {
              rc = op.kind == OpKind::send
                       ? MPI_Send(p, c, t.type, op.peer, tag, a.comm)
                       : MPI_Recv(p, c, t.type, op.peer, tag, a.comm, MPI_STATUS_IGNORE);
              if (rc != MPI_SUCCESS) return rc;
              complete(i);
              continue;
            }
            const uint32_t j = plan.ready[ready_head];
            const Step& other = plan.steps[j];
            if (left == 1 && other.len <= chunk &&
                (shm == nullptr || other.shm_seq == Plan::kViaMpi) &&
                !(plan.windowed && other.seq >= plan.msg_done[window_of(other)] + kMessageWindow) &&
                (other.kind == OpKind::send || other.kind == OpKind::recv) &&
                other.kind != op.kind && pair_gates_all(plan, i, j)) {
              ++ready_head;
              const bool i_sends = op.kind == OpKind::send;
              const Step& s_op = i_sends ? op : other;
              const Step& r_op = i_sends ? other : op;
              rc = MPI_Sendrecv(element(bufs[s_op.buf], s_op.off, t), static_cast<int>(s_op.len),
                                t.type, s_op.peer, static_cast<int>(s_op.seq % tag_mod),
                                element(bufs[r_op.buf], r_op.off, t), static_cast<int>(r_op.len),
                                t.type, r_op.peer, static_cast<int>(r_op.seq % tag_mod), a.comm,
                                MPI_STATUS_IGNORE);
              if (rc != MPI_SUCCESS) return rc;
              complete(i);
              complete(j);
              continue;
            }
          }
          int64_t done = 0;
          do {  // a zero-length message is still one message: both sides must agree
            const int c = static_cast<int>(std::min(chunk, op.len - done));
            MPI_Request r;
            std::byte* p = element(bufs[op.buf], op.off + done, t);  // MPI_BOTTOM + offset too
            rc = op.kind == OpKind::send ? MPI_Isend(p, c, t.type, op.peer, tag, a.comm, &r)
                                         : MPI_Irecv(p, c, t.type, op.peer, tag, a.comm, &r);
            if (rc != MPI_SUCCESS) return rc;
            st.reqs.push_back(r);
            st.req_op.push_back(i);
            ++plan.state[i];  // its deps are done: the word counts its requests now
            done += c;
          } while (done < op.len);
          continue;  // completes below
        }
        case OpKind::reduce:
          if ((plan.state[i] & Plan::kEarly) != 0) break;  // done by its receive, out of the slot
          rc = run_local(op, bufs, a, st);
          break;
        default:
          rc = run_local(op, bufs, a, st);
      }
      if (rc != MPI_SUCCESS) return rc;
      complete(i);
    }
    if (completed == n) break;
    while (req_head < st.reqs.size() && st.reqs[req_head] == MPI_REQUEST_NULL) ++req_head;
    const size_t live = st.reqs.size() - req_head;

    if (!st.shm_wait.empty()) {
      // Both transports at once: every waiting shared-memory message, then the MPI requests
      // without blocking. Nothing moved: spin a little, then yield the core (oversubscribed
      // runs must not starve the rank being waited for).
      bool moved = false;
      size_t w = 0;
      ++st.counts.shm_passes;
      for (size_t k = 0; k < st.shm_wait.size(); ++k) {
        const uint32_t i = st.shm_wait[k];
        int rc = MPI_SUCCESS;
        if (shm_try(i, rc)) {
          if (rc != MPI_SUCCESS) return rc;
          moved = true;
          complete(i);
        } else {
          st.shm_wait[w++] = i;
        }
      }
      st.shm_wait.resize(w);
      if (live > 0) {
        st.done_idx.resize(live);
        int outcount = 0;
        const int rc = MPI_Testsome(static_cast<int>(live), st.reqs.data() + req_head, &outcount,
                                    st.done_idx.data(), MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) return rc;
        if (outcount != MPI_UNDEFINED && outcount > 0) {
          moved = true;
          for (int k = 0; k < outcount; ++k)
            request_done(req_head + static_cast<size_t>(st.done_idx[k]));
        }
      }
      if (moved) {
        wait.moved();
      } else {
        wait.idle();
      }
      continue;
    }
    if (live == 0) return MPI_ERR_INTERN;  // ops left but nothing in flight: a cycle
    MPI_Request* reqs = st.reqs.data() + req_head;

    if (waitall_is_safe(plan, st, req_head)) {
      // Every op that can run next waits on all of these (rd's send and receive before its
      // reduce): one MPI_Waitall, as MPI_Sendrecv does.
      const int rc = MPI_Waitall(static_cast<int>(live), reqs, MPI_STATUSES_IGNORE);
      if (rc != MPI_SUCCESS) return rc;
      for (size_t r = req_head; r < st.reqs.size(); ++r) request_done(r);
      st.reqs.clear();
      st.req_op.clear();
      req_head = 0;
      continue;
    }

    // Completions come mostly in posting order: test the oldest requests most often, so a
    // schedule with thousands in flight (tiny segments) costs O(window) per completion, and all
    // of them every few rounds, so a completion anywhere is never missed for long.
    constexpr size_t kWindow = 64;
    st.done_idx.resize(live);
    int outcount = 0;
    size_t base = req_head;
    if (live <= kWindow) {
      const int rc = MPI_Waitsome(static_cast<int>(live), reqs, &outcount, st.done_idx.data(),
                                  MPI_STATUSES_IGNORE);
      if (rc != MPI_SUCCESS) return rc;
    } else {
      for (unsigned round = 1; outcount == 0 || outcount == MPI_UNDEFINED; ++round) {
        const bool all = round % 8 == 0;
        const int count = static_cast<int>(all ? live : kWindow);
        const int rc =
            MPI_Testsome(count, reqs, &outcount, st.done_idx.data(), MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) return rc;
      }
    }
    for (int k = 0; k < outcount; ++k) request_done(base + static_cast<size_t>(st.done_idx[k]));
    // Drop the finished requests once they are half the array (amortised O(1) per request).
    if (req_head > st.reqs.size() / 2) {
      size_t w = 0;
      for (size_t r = req_head; r < st.reqs.size(); ++r)
        if (st.reqs[r] != MPI_REQUEST_NULL) {
          st.reqs[w] = st.reqs[r];
          st.req_op[w++] = st.req_op[r];
        }
      st.reqs.resize(w);
      st.req_op.resize(w);
      req_head = 0;
    }
  }
  if (shm != nullptr) count_messages(plan, *shm);
  static const bool say_counts = verbose(3);
  if (say_counts && plan.rank == 0)
    std::fprintf(stderr,
                 "collkit: run %s P=%lld %lld B, rank 0: %llu shm messages, %llu tries in %llu "
                 "passes, %llu waiting at most\n",
                 plan.header.algorithm.c_str(), static_cast<long long>(plan.header.P),
                 static_cast<long long>(plan.header.count * plan.header.elem_size),
                 static_cast<unsigned long long>(st.counts.shm_messages),
                 static_cast<unsigned long long>(st.counts.shm_tries),
                 static_cast<unsigned long long>(st.counts.shm_passes),
                 static_cast<unsigned long long>(st.counts.shm_waiting_most));
  return MPI_SUCCESS;
}

void read_settings() {
  static const bool once = [] {
    const WaitPolicy& w = wait_policy();
    int rank = 0, init = 0;
    PMPI_Initialized(&init);
    if (init) PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0 && verbose(1))
      std::fprintf(stderr, "collkit: waiting: %s (%d ranks on this node, %d cores)\n", w.why,
                   w.local_ranks, w.cores);
    static_cast<void>(max_chunk_elems());
    static_cast<void>(requested_slot_bytes());
    static_cast<void>(env_flag("COLLKIT_SHM", true));
    static_cast<void>(env_flag("COLLKIT_SHM_IN_TURN", true));
    return true;
  }();
  static_cast<void>(once);
}

}  // namespace collkit::mpi
