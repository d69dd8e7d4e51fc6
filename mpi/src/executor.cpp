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

int TypeInfo::get(MPI_Datatype t, TypeInfo& out) {
  out.type = t;
  int rc = MPI_Type_get_extent(t, &out.lb, &out.extent);
  if (rc == MPI_SUCCESS) rc = MPI_Type_get_true_extent(t, &out.true_lb, &out.true_extent);
  if (rc == MPI_SUCCESS) rc = MPI_Type_size_x(t, &out.size);
  out.contiguous = out.true_lb == 0 && out.true_extent == out.extent &&
                   static_cast<MPI_Count>(out.extent) == out.size;
  return rc;
}

int64_t max_chunk_elems() {
  static const int64_t chunk = [] {
    int64_t c = INT_MAX;
    if (const char* e = std::getenv("COLLKIT_MAX_CHUNK")) {
      const long long v = std::atoll(e);
      if (v > 0 && v < c) c = v;
    }
    return c;
  }();
  return chunk;
}

namespace {

// Bytes a buffer of `elems` elements of this type spans, and where element 0 sits in it.
size_t span_bytes(const TypeInfo& t, int64_t elems) {
  if (elems <= 0) return 0;
  return static_cast<size_t>((elems - 1) * t.extent + t.true_extent);
}

std::byte* elem(void* base, int64_t i, const TypeInfo& t) {
  return static_cast<std::byte*>(base) + i * t.extent;
}

// A temporary of n elements of the type, its element 0 at the returned pointer.
std::byte* temp_elems(Arena& arena, const TypeInfo& t, int64_t n) {
  return arena.get(span_bytes(t, n) + 64) - t.true_lb;
}

int copy_local(const void* src, void* dst, int64_t n, const RunArgs& a, Arena& pack) {
  if (src == dst || n == 0) return MPI_SUCCESS;  // in-place: `in` aliases `out`
  const TypeInfo& t = a.type;
  if (t.contiguous) {
    std::memmove(dst, src, static_cast<size_t>(n) * static_cast<size_t>(t.extent));
    return MPI_SUCCESS;
  }
  // A type with gaps: pack and unpack so the gaps of `dst` are left alone.
  const int64_t chunk = std::max<int64_t>(
      1, std::min<int64_t>(max_chunk_elems(), INT_MAX / std::max<MPI_Count>(t.size, 1)));
  for (int64_t done = 0; done < n; done += chunk) {
    const int c = static_cast<int>(std::min(chunk, n - done));
    MPI_Count bytes = static_cast<MPI_Count>(c) * t.size;
    void* packed = pack.get(static_cast<size_t>(bytes) + 1);
    if (bytes > INT_MAX) return MPI_ERR_COUNT;
    int pos = 0;
    int rc = MPI_Pack(elem(const_cast<void*>(src), done, t), c, t.type, packed,
                      static_cast<int>(bytes), &pos, MPI_COMM_SELF);
    if (rc != MPI_SUCCESS) return rc;
    pos = 0;
    rc = MPI_Unpack(packed, static_cast<int>(bytes), &pos, elem(dst, done, t), c, t.type,
                    MPI_COMM_SELF);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

}  // namespace

int reduce_local(const void* src, void* dst, int64_t n, Side side, const RunArgs& a, RunState& st) {
  if (n == 0) return MPI_SUCCESS;
  if (fast_reduce(src, dst, n, a.type.type, a.op)) return MPI_SUCCESS;
  const int64_t chunk = max_chunk_elems();
  for (int64_t done = 0; done < n; done += chunk) {
    const int c = static_cast<int>(std::min(chunk, n - done));
    void* s = elem(const_cast<void*>(src), done, a.type);
    void* d = elem(dst, done, a.type);
    // MPI_Reduce_local(inbuf, inoutbuf) computes inoutbuf = inbuf (+) inoutbuf: src_first.
    if (side == Side::src_first || a.commutative) {
      int rc = MPI_Reduce_local(s, d, c, a.type.type, a.op);
      if (rc != MPI_SUCCESS) return rc;
      continue;
    }
    // dst_first on a non-commutative op: t = src; t = dst (+) t; dst = t.
    std::byte* t = temp_elems(st.temp, a.type, c);
    int rc = copy_local(s, t, c, a, st.pack);
    if (rc == MPI_SUCCESS) rc = MPI_Reduce_local(d, t, c, a.type.type, a.op);
    if (rc == MPI_SUCCESS) rc = copy_local(t, d, c, a, st.pack);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

int run_plan(Plan& plan, const RunArgs& a, RunState& st) {
  const size_t n = plan.ops.size();
  const TypeInfo& t = a.type;

  // Buffer addresses: in, out, then the scratch buffers carved from one reused arena.
  std::byte* bufs[kFirstScratch + kMaxScratch] = {};
  bufs[kIn] = static_cast<std::byte*>(a.in);
  bufs[kOut] = static_cast<std::byte*>(a.out);
  {
    size_t total = 0;
    for (int64_t e : plan.scratch) total += (span_bytes(t, e) + 63) / 64 * 64 + 64;
    std::byte* base = st.scratch.get(total + 64);
    size_t at = 0;
    for (size_t k = 0; k < plan.scratch.size(); ++k) {
      bufs[kFirstScratch + k] = base + at - t.true_lb;
      at += (span_bytes(t, plan.scratch[k]) + 63) / 64 * 64 + 64;
    }
  }

  plan.remaining.assign(plan.num_deps.begin(), plan.num_deps.end());
  plan.pending.assign(n, 0);
  plan.ready.assign(plan.roots.begin(), plan.roots.end());
  st.reqs.clear();
  st.req_op.clear();
  size_t completed = 0;
  const int64_t chunk = max_chunk_elems();
  const int64_t tag_mod = int64_t{a.tag_ub} + 1;

  auto complete = [&](uint32_t i) {
    ++completed;
    for (uint32_t k = plan.succ_begin[i]; k < plan.succ_begin[i + 1]; ++k)
      if (--plan.remaining[plan.succ[k]] == 0) plan.ready.push_back(plan.succ[k]);
  };

  while (true) {
    while (!plan.ready.empty()) {
      const uint32_t i = plan.ready.back();
      plan.ready.pop_back();
      const Op& op = plan.ops[i];
      int rc = MPI_SUCCESS;
      switch (op.kind) {
        case OpKind::send:
        case OpKind::recv: {
          const int tag = static_cast<int>(plan.seq[i] % tag_mod);
          int64_t done = 0;
          do {  // a zero-length message is still one message: both sides must agree
            const int c = static_cast<int>(std::min(chunk, op.len - done));
            MPI_Request r;
            std::byte* p = bufs[op.buf] ? elem(bufs[op.buf], op.off + done, t) : nullptr;
            rc = op.kind == OpKind::send ? MPI_Isend(p, c, t.type, op.peer, tag, a.comm, &r)
                                         : MPI_Irecv(p, c, t.type, op.peer, tag, a.comm, &r);
            if (rc != MPI_SUCCESS) return rc;
            st.reqs.push_back(r);
            st.req_op.push_back(i);
            ++plan.pending[i];
            done += c;
          } while (done < op.len);
          continue;  // completes in Waitsome
        }
        case OpKind::reduce:
          rc = reduce_local(elem(bufs[op.src], op.src_off, t), elem(bufs[op.buf], op.off, t),
                            op.len, op.side, a, st);
          break;
        case OpKind::copy:
          rc = copy_local(elem(bufs[op.src], op.src_off, t), elem(bufs[op.buf], op.off, t), op.len,
                          a, st.pack);
          break;
        case OpKind::compute:
        case OpKind::sleep:
          break;  // simulator-only: nothing to do on a real machine
      }
      if (rc != MPI_SUCCESS) return rc;
      complete(i);
    }
    if (completed == n) return MPI_SUCCESS;
    if (st.reqs.empty()) return MPI_ERR_INTERN;  // ops left but nothing in flight: a cycle
    int outcount = 0;
    st.done_idx.resize(st.reqs.size());
    int rc = MPI_Waitsome(static_cast<int>(st.reqs.size()), st.reqs.data(), &outcount,
                          st.done_idx.data(), MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) return rc;
    for (int k = 0; k < outcount; ++k) {
      const uint32_t i = st.req_op[static_cast<size_t>(st.done_idx[static_cast<size_t>(k)])];
      if (--plan.pending[i] == 0) complete(i);
    }
    // Drop the finished requests (Waitsome set them to MPI_REQUEST_NULL).
    size_t w = 0;
    for (size_t r = 0; r < st.reqs.size(); ++r)
      if (st.reqs[r] != MPI_REQUEST_NULL) {
        st.reqs[w] = st.reqs[r];
        st.req_op[w++] = st.req_op[r];
      }
    st.reqs.resize(w);
    st.req_op.resize(w);
  }
}

}  // namespace collkit::mpi
