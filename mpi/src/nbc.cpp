// Non-blocking runs of plans and the completion calls that progress them (nbc.hpp).
#include "nbc.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "layout.hpp"
#include "waiting.hpp"

namespace collkit::mpi {

std::atomic<int> g_nonblocking_runs{0};  // g_runs.size(), read without the lock

namespace {

std::mutex g_lock;           // guards g_runs
std::vector<NbRun*> g_runs;  // in flight, owned here until their request completes
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
  auto* r = static_cast<NbRun*>(state);
  if (!r->owned) delete r;  // a persistent call's run stays for its next start
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

// The pair (plan.win_begin's index) of a message op.
size_t pair_of(const Op& op) {
  return 2 * static_cast<size_t>(op.peer) + (op.kind == OpKind::recv ? 1 : 0);
}

// Whether message op i must wait for the tag window (NbRun::tag_window); if so it is marked held.
bool held_by_tag_window(NbRun& r, uint32_t i) {
  if (!r.tag_window) return false;
  const uint32_t base = r.msg_base[pair_of(r.plan->ops[i])];
  if (r.plan->seq[i] - base < static_cast<uint32_t>(r.tag_span)) return false;
  r.msg_state[i] = 1;
  return true;
}

// Message op i completed: its pair's first incomplete message moves on, and the messages that
// lets into the window and that were held back become ready.
void message_done(NbRun& r, uint32_t i) {
  const Plan& plan = *r.plan;
  r.msg_state[i] = 2;
  const size_t w = pair_of(plan.ops[i]);
  const uint64_t begin = plan.win_begin[w], count = plan.win_begin[w + 1] - begin;
  const auto span = static_cast<uint64_t>(r.tag_span);
  uint32_t& base = r.msg_base[w];
  const uint64_t before = base;
  while (base < count && r.msg_state[plan.msg_op[begin + base]] == 2) ++base;
  for (uint64_t q = before + span; q < base + span && q < count; ++q) {
    const uint32_t j = plan.msg_op[begin + q];
    if (r.msg_state[j] == 1) {
      r.msg_state[j] = 0;
      r.ready.push_back(j);
    }
  }
}

void setup(NbRun& r);

// Runs every ready op (posting messages, reducing, copying), then tests the messages in flight,
// until nothing more moves. true when the run is over (done or failed). A run still waiting for
// its counts exchange (NbRun::exchange) first tests that, and sets itself up once it completes.
bool advance(NbRun& r) {
  if (!r.plan) {
    int flag = 0;
    int rc = PMPI_Test(&r.exchange, &flag, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && !flag) return false;
    if (rc == MPI_SUCCESS) rc = r.exchanged ? r.exchanged(r) : MPI_ERR_INTERN;
    if (rc == MPI_SUCCESS && !r.plan) rc = MPI_ERR_INTERN;
    if (rc != MPI_SUCCESS) {
      r.error = rc;
      return true;
    }
    setup(r);
  }
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
          if (held_by_tag_window(r, i)) continue;  // posted when message_done lets it in
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
      if (--r.pending[i] != 0) continue;
      if (r.tag_window) message_done(r, i);
      complete_op(r, i);
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

// A failed run's messages still in flight. A receive is cancelled and completed, so nothing
// writes into the user's memory later; a send is freed, not cancelled (MPI 4.1 deprecates
// cancelling a send, and Open MPI refuses it): it completes on its own, and only reads. A
// request the MPI already completed and set to MPI_REQUEST_NULL (a PMPI_Testsome that failed
// part way) is skipped: cancelling it is erroneous, and fatal on MPI_COMM_WORLD's handler.
void abandon(NbRun& r) {
  for (size_t k = 0; k < r.reqs.size(); ++k) {
    MPI_Request& q = r.reqs[k];
    if (q == MPI_REQUEST_NULL) continue;
    if (r.plan->ops[r.req_op[k]].kind == OpKind::recv) {
      PMPI_Cancel(&q);
      PMPI_Wait(&q, MPI_STATUS_IGNORE);
    } else {
      PMPI_Request_free(&q);
    }
  }
  r.reqs.clear();
}

// A run is over: its request completes. A persistent call the user freed while this run went on
// (keep_alive holds it) ends here: nobody will wait on the request, so it is freed now, and with
// the last reference the call and this run are deleted (r is not touched after).
void complete(NbRun* r) {
  if (r->error != MPI_SUCCESS) abandon(*r);
  MPI_Request q = r->request;
  std::shared_ptr<void> orphan = std::move(r->keep_alive);
  MPI_Grequest_complete(q);
  if (orphan) MPI_Request_free(&q);
}

// Sets up a run's progress state and buffers from its plan (a persistent call's run again at each
// start).
void setup(NbRun& r) {
  const Plan& plan = *r.plan;
  const size_t n = plan.ops.size();
  r.remaining.assign(plan.num_deps.begin(), plan.num_deps.end());
  r.pending.assign(n, 0);
  r.ready.assign(plan.roots.begin(), plan.roots.end());
  r.ready_head = 0;
  r.completed = 0;
  r.reqs.clear();
  r.req_op.clear();
  r.error = MPI_SUCCESS;
  r.work.run.shm_checked = true;  // point-to-point only
  r.tag_window = plan.max_pair_messages > static_cast<uint64_t>(r.tag_span);
  if (r.tag_window) {  // plan.msg_op is there: the pair has more than kMessageWindow messages
    r.msg_base.assign(plan.win_begin.size() - 1, 0);
    r.msg_state.assign(n, 0);
  }
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
}

// Sets the run up (a run without a plan once its counts exchange completes), gives the user its
// generalized request and starts the first ops; `over` when it is done at once (P = 1, nothing to
// receive).
int launch(NbRun& r, MPI_Request* request, bool& over) {
  r.error = MPI_SUCCESS;
  if (r.plan) setup(r);
  if (int rc = MPI_Grequest_start(query, free_run, cancel, &r, &r.request); rc != MPI_SUCCESS)
    return rc;
  *request = r.request;
  const bool nested = g_in_progress;
  g_in_progress = true;
  over = advance(r);
  g_in_progress = nested;
  return MPI_SUCCESS;
}

// A launched run: completed now if it is over, else moved by progress_nonblocking from now on.
void queue(NbRun* r, bool over) {
  if (over) {
    complete(r);
    return;
  }
  std::lock_guard<std::mutex> g(g_lock);
  g_runs.push_back(r);
  g_nonblocking_runs.store(static_cast<int>(g_runs.size()), std::memory_order_relaxed);
}

}  // namespace

int start_nonblocking(std::unique_ptr<NbRun> run, MPI_Request* request) {
  bool over = false;
  if (int rc = launch(*run, request, over); rc != MPI_SUCCESS) return rc;
  queue(run.release(), over);  // free_run deletes it when the user frees the request
  return MPI_SUCCESS;
}

int start_nonblocking(NbRun& run, MPI_Request* request) {
  bool over = false;
  if (int rc = launch(run, request, over); rc != MPI_SUCCESS) return rc;
  queue(&run, over);
  return MPI_SUCCESS;
}

void progress_runs_in_flight() {
  if (g_in_progress) return;
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
  g_nonblocking_runs.store(static_cast<int>(w), std::memory_order_relaxed);
  g.unlock();
  // Completed outside the lock: completing may free the run (a request already freed by the user).
  for (NbRun* r : over) complete(r);
  g_in_progress = false;
}

namespace {

// The persistent calls, by the user's handle.
std::mutex g_plock;  // guards g_persistent
std::unordered_map<MPI_Request, std::shared_ptr<Persistent>> g_persistent;
std::atomic<int> g_npersistent{0};  // g_persistent.size(), read without the lock

std::shared_ptr<Persistent> find_persistent(MPI_Request handle, bool take = false) {
  if (g_npersistent.load(std::memory_order_relaxed) == 0 || handle == MPI_REQUEST_NULL) return {};
  std::lock_guard<std::mutex> g(g_plock);
  auto it = g_persistent.find(handle);
  if (it == g_persistent.end()) return {};
  std::shared_ptr<Persistent> p = it->second;
  if (take) {
    g_persistent.erase(it);
    g_npersistent.store(static_cast<int>(g_persistent.size()), std::memory_order_relaxed);
  }
  return p;
}

// Whether `r` is still moving (in g_runs); if so it keeps `owner` alive until it is over.
bool orphan_if_running(NbRun& r, std::shared_ptr<void> owner) {
  std::lock_guard<std::mutex> g(g_lock);
  if (std::find(g_runs.begin(), g_runs.end(), &r) == g_runs.end()) return false;
  r.keep_alive = std::move(owner);
  return true;
}

}  // namespace

int make_persistent(std::shared_ptr<Persistent> p, MPI_Comm, MPI_Request* request) {
  // Never started: its only use is a handle the MPI knows as an inactive persistent request, so
  // MPI_Wait* / MPI_Test* on it (and arrays holding it) mean what they mean for one.
  if (int rc = PMPI_Recv_init(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, &p->handle);
      rc != MPI_SUCCESS)
    return rc;
  *request = p->handle;
  std::lock_guard<std::mutex> g(g_plock);
  g_persistent[p->handle] = std::move(p);
  g_npersistent.store(static_cast<int>(g_persistent.size()), std::memory_order_relaxed);
  return MPI_SUCCESS;
}

}  // namespace collkit::mpi

// The completion calls, over PMPI_: with a collkit run in flight they test instead of blocking and
// move collkit's runs between tests (a run may be what the awaited request, or a peer, waits on);
// with none they are the MPI's own call. An active persistent collkit handle is replaced, for the
// MPI's call, by its run's request; once that completes the handle is inactive (and stays the
// user's, as a persistent request does).
namespace {

using collkit::mpi::nonblocking_active;
using collkit::mpi::Persistent;
using collkit::mpi::progress_nonblocking;

// Polls `test` (true when done, or an error in rc) with progress between polls, yielding the core
// after a while only where the waiting policy yields (an oversubscribed peer gets to run;
// waiting.hpp); `wait` once no collkit run is left.
template <class Test, class Wait>
int poll(Test&& test, Wait&& wait) {
  if (!nonblocking_active()) return wait();
  const bool yields = collkit::mpi::wait_policy().spin != std::chrono::nanoseconds::max();
  unsigned idle = 0;
  while (true) {
    progress_nonblocking();
    int rc = MPI_SUCCESS;
    if (test(rc) || rc != MPI_SUCCESS) return rc;
    if (!nonblocking_active()) return wait();
    if (yields && ++idle > 64) sched_yield();
  }
}

// The user's array of requests as the MPI's call sees it: each active persistent collkit handle
// replaced by its run's request (a copy, only where there is one). done() hands back what the MPI
// did: the user's own requests as the MPI left them, a persistent handle whose run completed (its
// request freed by the MPI) inactive.
class Swapped {
 public:
  Swapped(int n, MPI_Request* user) : n_(n), user_(user) {
    using collkit::mpi::find_persistent;
    for (int i = 0; i < n; ++i) {
      std::shared_ptr<Persistent> p = find_persistent(user[i]);
      if (!p || !p->active) continue;
      if (copy_.empty()) copy_.assign(user, user + n);
      copy_[static_cast<size_t>(i)] = p->inner;
      who_.emplace_back(i, std::move(p));
    }
  }
  MPI_Request* reqs() { return copy_.empty() ? user_ : copy_.data(); }
  void done() {
    if (copy_.empty()) return;
    size_t k = 0;
    for (int i = 0; i < n_; ++i) {
      const MPI_Request q = copy_[static_cast<size_t>(i)];
      if (k < who_.size() && who_[k].first == i) {
        Persistent& p = *who_[k++].second;
        p.inner = q;
        p.active = q != MPI_REQUEST_NULL;
      } else {
        user_[i] = q;
      }
    }
  }

 private:
  int n_;
  MPI_Request* user_;
  std::vector<MPI_Request> copy_;
  std::vector<std::pair<int, std::shared_ptr<Persistent>>> who_;
};

int start_one(MPI_Request* request) {
  std::shared_ptr<Persistent> p = collkit::mpi::find_persistent(*request);
  if (!p) return PMPI_Start(request);
  if (p->active) return MPI_ERR_REQUEST;  // started twice without completing
  const int rc = p->start(*p, &p->inner);
  p->active = rc == MPI_SUCCESS && p->inner != MPI_REQUEST_NULL;
  return rc;
}

}  // namespace

extern "C" {

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  Swapped sw(1, request);
  MPI_Request* q = sw.reqs();
  const int rc = poll(
      [&](int& rc) {
        int flag = 0;
        rc = PMPI_Test(q, &flag, status);
        return flag != 0;
      },
      [&] { return PMPI_Wait(q, status); });
  sw.done();
  return rc;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  Swapped sw(count, requests);
  MPI_Request* q = sw.reqs();
  const int rc = poll(
      [&](int& rc) {
        int flag = 0;
        rc = PMPI_Testall(count, q, &flag, statuses);
        return flag != 0;
      },
      [&] { return PMPI_Waitall(count, q, statuses); });
  sw.done();
  return rc;
}

int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  Swapped sw(count, requests);
  MPI_Request* q = sw.reqs();
  const int rc = poll(
      [&](int& rc) {
        int flag = 0;
        rc = PMPI_Testany(count, q, index, &flag, status);
        return flag != 0;
      },
      [&] { return PMPI_Waitany(count, q, index, status); });
  sw.done();
  return rc;
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  Swapped sw(incount, requests);
  MPI_Request* q = sw.reqs();
  const int rc = poll(
      [&](int& rc) {
        rc = PMPI_Testsome(incount, q, outcount, indices, statuses);
        return *outcount != 0;  // some completed, or MPI_UNDEFINED: no active request
      },
      [&] { return PMPI_Waitsome(incount, q, outcount, indices, statuses); });
  sw.done();
  return rc;
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  progress_nonblocking();
  Swapped sw(1, request);
  const int rc = PMPI_Test(sw.reqs(), flag, status);
  sw.done();
  return rc;
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  progress_nonblocking();
  Swapped sw(count, requests);
  const int rc = PMPI_Testall(count, sw.reqs(), flag, statuses);
  sw.done();
  return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  progress_nonblocking();
  Swapped sw(count, requests);
  const int rc = PMPI_Testany(count, sw.reqs(), index, flag, status);
  sw.done();
  return rc;
}

int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  progress_nonblocking();
  Swapped sw(incount, requests);
  const int rc = PMPI_Testsome(incount, sw.reqs(), outcount, indices, statuses);
  sw.done();
  return rc;
}

int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  progress_nonblocking();
  Swapped sw(1, &request);
  return PMPI_Request_get_status(*sw.reqs(), flag, status);
}

// MPI_Start / MPI_Startall: a collkit persistent handle starts a run of its plan; any other
// request is the MPI's. Startall starts them in array order (collectives on a communicator are
// matched in start order).
int MPI_Start(MPI_Request* request) {
  return start_one(request);
}

int MPI_Startall(int count, MPI_Request requests[]) {
  if (collkit::mpi::g_npersistent.load(std::memory_order_relaxed) == 0)
    return PMPI_Startall(count, requests);
  for (int i = 0; i < count; ++i)
    if (int rc = start_one(&requests[i]); rc != MPI_SUCCESS) return rc;
  return MPI_SUCCESS;
}

// A collkit persistent handle: its state freed, and the handle. A run still going on (freeing an
// active request is allowed for point-to-point; MPI 4 makes it erroneous for collectives, but it
// must not crash) finishes first: collkit's in the background, the MPI's own waited for here.
int MPI_Request_free(MPI_Request* request) {
  std::shared_ptr<Persistent> p = collkit::mpi::find_persistent(*request, true);
  if (!p) return PMPI_Request_free(request);
  if (p->active) {
    if (!p->run || !collkit::mpi::orphan_if_running(*p->run, p))
      PMPI_Wait(&p->inner, MPI_STATUS_IGNORE);
    p->active = false;
  }
  const int rc = PMPI_Request_free(&p->handle);
  *request = MPI_REQUEST_NULL;
  return rc;
}

}  // extern "C"
