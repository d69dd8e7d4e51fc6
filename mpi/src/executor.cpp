#include "executor.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "fast_reduce.hpp"

namespace collkit::mpi {

std::byte* Arena::get(size_t bytes) {
  if (bytes > mem_.size()) mem_.resize(std::max(bytes, mem_.size() * 2));
  return mem_.data();
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
  const TypeInfo& t = a.type;
  if (t.type == t.basic) {  // a predefined type: a loop the compiler vectorises, or MPI's
    if (fast_reduce(src, dst, n, t.type, a.op)) return MPI_SUCCESS;
  } else if (t.basic != MPI_DATATYPE_NULL && is_predefined(a.op)) {
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
    for (const uint32_t j : plan.succ.of(ops[x])) {
      // How many of the ops in flight j waits on (deps are listed once per op).
      uint32_t in_flight = 0;
      for (size_t y = 0; y < k; ++y)
        for (const uint32_t s : plan.succ.of(ops[y]))
          if (s == j) {
            ++in_flight;
            break;
          }
      if (plan.remaining[j] == in_flight && in_flight < k) return false;
    }
  return true;
}

// Neither of two ops in flight lets another op start alone: no successor of either has just one
// dependency left. (Then waiting for both at once delays nothing.)
bool pair_gates_all(const Plan& plan, uint32_t x, uint32_t y) {
  for (uint32_t a : {x, y})
    for (const uint32_t j : plan.succ.of(a))
      if (plan.remaining[j] == 1) return false;
  return true;
}

}  // namespace

int run_plan(Plan& plan, const RunArgs& a, RunState& st) {
  const size_t n = plan.ops.size();
  const TypeInfo& t = a.type;

  // Buffer addresses: in, out, then the scratch buffers carved from one reused arena.
  // Uninitialised on purpose: zeroing every possible scratch slot was a third of a small call;
  // make_plan refuses a program naming a buffer past its scratch list.
  std::byte* bufs[kFirstScratch + kMaxScratch];
  bufs[kIn] = static_cast<std::byte*>(a.in);
  bufs[kOut] = static_cast<std::byte*>(a.out);
  {
    size_t total = 0;
    for (int64_t e : plan.scratch) total += (span_bytes(t, e) + 63) / 64 * 64 + 64;
    std::byte* base = st.scratch.get(total + 64);
    size_t at = 0;
    for (size_t k = 0; k < plan.scratch.size(); ++k) {
      bufs[kFirstScratch + k] = element0_in_block(base + at, t, plan.scratch[k]);
      at += (span_bytes(t, plan.scratch[k]) + 63) / 64 * 64 + 64;
    }
  }

  plan.remaining.assign(plan.num_deps.begin(), plan.num_deps.end());
  plan.pending.assign(n, 0);
  // Ready ops run in the order they became ready (first in, first out), roots in program order:
  // a pipeline then posts segment 0 first, as its peers expect to use it first.
  plan.ready.assign(plan.roots.begin(), plan.roots.end());
  size_t ready_head = 0;
  st.reqs.clear();
  st.req_op.clear();
  size_t req_head = 0;  // requests before it have all completed
  size_t completed = 0;
  const int64_t chunk = max_chunk_elems();
  const int64_t tag_mod = int64_t{a.tag_ub} + 1;

  auto complete = [&](uint32_t i) {
    ++completed;
    for (const uint32_t j : plan.succ.of(i))
      if (--plan.remaining[j] == 0) plan.ready.push_back(j);
  };
  auto request_done = [&](size_t r) {
    const uint32_t i = st.req_op[r];
    if (--plan.pending[i] == 0) complete(i);
  };

  while (true) {
    while (ready_head < plan.ready.size()) {
      const uint32_t i = plan.ready[ready_head++];
      const Op& op = plan.ops[i];
      int rc = MPI_SUCCESS;
      switch (op.kind) {
        case OpKind::send:
        case OpKind::recv: {
          const int tag = static_cast<int>(plan.seq[i] % tag_mod);
          // Blocking fast path: with nothing in flight, a lone message (a tree's send or
          // receive), or a send and a receive that everything next waits on both of (rd's
          // exchange, a dissemination round) need no request: MPI_Send / MPI_Recv /
          // MPI_Sendrecv, as the MPI's own algorithms do. Safe: this rank has nothing else it
          // could do meanwhile.
          if (req_head == st.reqs.size() && op.len <= chunk) {
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
            const Op& other = plan.ops[j];
            if (left == 1 && other.len <= chunk &&
                (other.kind == OpKind::send || other.kind == OpKind::recv) &&
                other.kind != op.kind && pair_gates_all(plan, i, j)) {
              ++ready_head;
              const bool i_sends = op.kind == OpKind::send;
              const Op& s_op = i_sends ? op : other;
              const Op& r_op = i_sends ? other : op;
              const uint32_t si = i_sends ? i : j, ri = i_sends ? j : i;
              rc = MPI_Sendrecv(element(bufs[s_op.buf], s_op.off, t), static_cast<int>(s_op.len),
                                t.type, s_op.peer, static_cast<int>(plan.seq[si] % tag_mod),
                                element(bufs[r_op.buf], r_op.off, t), static_cast<int>(r_op.len),
                                t.type, r_op.peer, static_cast<int>(plan.seq[ri] % tag_mod), a.comm,
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
            ++plan.pending[i];
            done += c;
          } while (done < op.len);
          continue;  // completes below
        }
        case OpKind::reduce:
          rc = reduce_local(element(bufs[op.src], op.src_off, t), element(bufs[op.buf], op.off, t),
                            op.len, op.side, a, st);
          break;
        case OpKind::copy:
          rc = copy_elements(element(bufs[op.src], op.src_off, t), element(bufs[op.buf], op.off, t),
                             op.len, t, st.pack);
          break;
        case OpKind::compute:
        case OpKind::sleep:
          break;  // simulator-only: nothing to do on a real machine
      }
      if (rc != MPI_SUCCESS) return rc;
      complete(i);
    }
    if (completed == n) return MPI_SUCCESS;
    while (req_head < st.reqs.size() && st.reqs[req_head] == MPI_REQUEST_NULL) ++req_head;
    const size_t live = st.reqs.size() - req_head;
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
}

}  // namespace collkit::mpi
