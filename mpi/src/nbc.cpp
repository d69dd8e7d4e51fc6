// Non-blocking runs of plans and the completion calls that progress them (nbc.hpp).
#include "nbc.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "layout.hpp"

namespace collkit::mpi {
namespace {

std::mutex g_lock;             // guards g_runs
std::vector<NbRun*> g_runs;    // in flight, owned here until their request completes
std::atomic<int> g_active{0};  // g_runs.size(), read without the lock
thread_local bool g_in_progress = false;

// The generalized request's callbacks: the status of a collective (no source, tag or elements),
// the run's error code, and the run's end when the user frees the request.
int query(void* state, MPI_Status* status) {
  auto* r = static_cast<NbRun*>(state);
  MPI_Status_set_elements(status, MPI_BYTE, 0);
  MPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  return r->error;
}

int free_run(void* state) {
  delete static_cast<NbRun*>(state);
  return MPI_SUCCESS;
}

int cancel(void*, int) {
  return MPI_SUCCESS;  // a collective cannot be cancelled: it completes as usual
}

void complete_op(NbRun& r, uint32_t i) {
  ++r.completed;
  for (const uint32_t j : r.plan->succ.of(i))
    if (--r.remaining[j] == 0) r.ready.push_back(j);
}

// Runs every ready op (posting messages, reducing, copying), then tests the messages in flight,
// until nothing more moves. true when the run is over (done or failed).
bool advance(NbRun& r) {
  const Plan& plan = *r.plan;
  const TypeInfo& t = r.args.type;
  const int64_t chunk = max_chunk_elems();
  while (true) {
    while (r.ready_head < r.ready.size()) {
      const uint32_t i = r.ready[r.ready_head++];
      const Op& op = plan.ops[i];
      int rc = MPI_SUCCESS;
      switch (op.kind) {
        case OpKind::send:
        case OpKind::recv: {
          const int tag = r.tag_base + static_cast<int>(plan.seq[i] % uint32_t(r.tag_span));
          int64_t done = 0;
          do {  // a zero-length message is still one message: both sides must agree
            const int c = static_cast<int>(std::min(chunk, op.len - done));
            MPI_Request q;
            std::byte* p = element(r.bufs[op.buf], op.off + done, t);
            rc = op.kind == OpKind::send ? MPI_Isend(p, c, t.type, op.peer, tag, r.args.comm, &q)
                                         : MPI_Irecv(p, c, t.type, op.peer, tag, r.args.comm, &q);
            if (rc != MPI_SUCCESS) break;
            r.reqs.push_back(q);
            r.req_op.push_back(i);
            ++r.pending[i];
            done += c;
          } while (done < op.len);
          if (rc != MPI_SUCCESS) break;
          continue;  // completes when its requests do
        }
        case OpKind::reduce:
          rc =
              reduce_local(element(r.bufs[op.src], op.src_off, t),
                           element(r.bufs[op.buf], op.off, t), op.len, op.side, r.args, r.work.run);
          break;
        case OpKind::copy:
          rc = copy_elements(element(r.bufs[op.src], op.src_off, t),
                             element(r.bufs[op.buf], op.off, t), op.len, t, r.work.run.pack);
          break;
        case OpKind::compute:
        case OpKind::sleep:
          break;  // simulator-only
      }
      if (rc != MPI_SUCCESS) {
        r.error = rc;
        return true;
      }
      complete_op(r, i);
    }
    if (r.completed == plan.ops.size()) {
      r.error = r.after ? r.after() : MPI_SUCCESS;
      return true;
    }
    if (r.reqs.empty()) {
      r.error = MPI_ERR_INTERN;  // ops left but nothing in flight: a cycle
      return true;
    }
    r.done_idx.resize(r.reqs.size());
    int outcount = 0;
    const int rc = PMPI_Testsome(static_cast<int>(r.reqs.size()), r.reqs.data(), &outcount,
                                 r.done_idx.data(), MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
      r.error = rc;
      return true;
    }
    if (outcount == MPI_UNDEFINED || outcount == 0) return false;
    for (int k = 0; k < outcount; ++k) {
      const uint32_t i = r.req_op[static_cast<size_t>(r.done_idx[k])];
      if (--r.pending[i] == 0) complete_op(r, i);
    }
    // Drop the completed requests (MPI set them to MPI_REQUEST_NULL).
    size_t w = 0;
    for (size_t k = 0; k < r.reqs.size(); ++k)
      if (r.reqs[k] != MPI_REQUEST_NULL) {
        r.reqs[w] = r.reqs[k];
        r.req_op[w++] = r.req_op[k];
      }
    r.reqs.resize(w);
    r.req_op.resize(w);
  }
}

// A failed run's messages still in flight: cancelled and freed, so nothing writes later.
void abandon(NbRun& r) {
  for (MPI_Request& q : r.reqs) {
    MPI_Cancel(&q);
    MPI_Request_free(&q);
  }
  r.reqs.clear();
}

}  // namespace

bool nonblocking_active() {
  return g_active.load(std::memory_order_relaxed) > 0;
}

int start_nonblocking(std::unique_ptr<NbRun> run, MPI_Request* request) {
  NbRun& r = *run;
  const Plan& plan = *r.plan;
  const size_t n = plan.ops.size();
  r.remaining.assign(plan.num_deps.begin(), plan.num_deps.end());
  r.pending.assign(n, 0);
  r.ready.assign(plan.roots.begin(), plan.roots.end());
  r.work.run.shm_checked = true;  // point-to-point only
  // Buffer addresses: in, out, then the scratch buffers carved from the run's own arena.
  r.bufs.assign(kFirstScratch + plan.scratch.size(), nullptr);
  r.bufs[kIn] = static_cast<std::byte*>(r.args.in);
  r.bufs[kOut] = static_cast<std::byte*>(r.args.out);
  const TypeInfo& t = r.args.type;
  size_t total = 0;
  for (int64_t e : plan.scratch) total += (span_bytes(t, e) + 63) / 64 * 64 + 64;
  std::byte* base = r.work.run.scratch.get(total + 64);
  size_t at = 0;
  for (size_t k = 0; k < plan.scratch.size(); ++k) {
    r.bufs[kFirstScratch + k] = element0_in_block(base + at, t, plan.scratch[k]);
    at += (span_bytes(t, plan.scratch[k]) + 63) / 64 * 64 + 64;
  }
  if (int rc = MPI_Grequest_start(query, free_run, cancel, &r, &r.request); rc != MPI_SUCCESS)
    return rc;
  *request = r.request;
  // The first ops start now; what is over at once (P = 1, nothing to receive) completes now.
  bool over = false;
  {
    const bool nested = g_in_progress;
    g_in_progress = true;
    over = advance(r);
    g_in_progress = nested;
  }
  if (over) {
    if (r.error != MPI_SUCCESS) abandon(r);
    NbRun* raw = run.release();  // free_run deletes it when the user frees the request
    MPI_Grequest_complete(raw->request);
    return MPI_SUCCESS;
  }
  std::lock_guard<std::mutex> g(g_lock);
  g_runs.push_back(run.release());
  g_active.store(static_cast<int>(g_runs.size()), std::memory_order_relaxed);
  return MPI_SUCCESS;
}

void progress_nonblocking() {
  if (g_in_progress || !nonblocking_active()) return;
  std::unique_lock<std::mutex> g(g_lock, std::try_to_lock);
  if (!g.owns_lock()) return;  // another thread is moving them
  g_in_progress = true;
  std::vector<NbRun*> over;
  size_t w = 0;
  for (NbRun* r : g_runs) {
    if (advance(*r))
      over.push_back(r);
    else
      g_runs[w++] = r;
  }
  g_runs.resize(w);
  g_active.store(static_cast<int>(w), std::memory_order_relaxed);
  g.unlock();
  // Completed outside the lock: completing may free the run (a request already freed by the user).
  for (NbRun* r : over) {
    if (r->error != MPI_SUCCESS) abandon(*r);
    MPI_Grequest_complete(r->request);
  }
  g_in_progress = false;
}

}  // namespace collkit::mpi

// The completion calls, over PMPI_: with a collkit run in flight they test instead of blocking and
// move collkit's runs between tests (a run may be what the awaited request, or a peer, waits on);
// with none they are the MPI's own call.
namespace {

using collkit::mpi::nonblocking_active;
using collkit::mpi::progress_nonblocking;

// Polls `test` (true when done, or an error in rc) with progress between polls, yielding the core
// after a while so an oversubscribed peer gets to run; `wait` once no collkit run is left.
template <class Test, class Wait>
int poll(Test&& test, Wait&& wait) {
  unsigned idle = 0;
  while (true) {
    progress_nonblocking();
    int rc = MPI_SUCCESS;
    if (test(rc) || rc != MPI_SUCCESS) return rc;
    if (!nonblocking_active()) return wait();
    if (++idle > 64) sched_yield();
  }
}

}  // namespace

extern "C" {

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  if (!nonblocking_active()) return PMPI_Wait(request, status);
  return poll(
      [&](int& rc) {
        int flag = 0;
        rc = PMPI_Test(request, &flag, status);
        return flag != 0;
      },
      [&] { return PMPI_Wait(request, status); });
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (!nonblocking_active()) return PMPI_Waitall(count, requests, statuses);
  return poll(
      [&](int& rc) {
        int flag = 0;
        rc = PMPI_Testall(count, requests, &flag, statuses);
        return flag != 0;
      },
      [&] { return PMPI_Waitall(count, requests, statuses); });
}

int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (!nonblocking_active()) return PMPI_Waitany(count, requests, index, status);
  return poll(
      [&](int& rc) {
        int flag = 0;
        rc = PMPI_Testany(count, requests, index, &flag, status);
        return flag != 0;
      },
      [&] { return PMPI_Waitany(count, requests, index, status); });
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  if (!nonblocking_active()) return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  return poll(
      [&](int& rc) {
        rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
        return *outcount != 0;  // some completed, or MPI_UNDEFINED: no active request
      },
      [&] { return PMPI_Waitsome(incount, requests, outcount, indices, statuses); });
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  progress_nonblocking();
  return PMPI_Test(request, flag, status);
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  progress_nonblocking();
  return PMPI_Testall(count, requests, flag, statuses);
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  progress_nonblocking();
  return PMPI_Testany(count, requests, index, flag, status);
}

int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  progress_nonblocking();
  return PMPI_Testsome(incount, requests, outcount, indices, statuses);
}

int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  progress_nonblocking();
  return PMPI_Request_get_status(request, flag, status);
}

}  // extern "C"
