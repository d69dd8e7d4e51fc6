// Non-blocking runs of a plan (ck_i<coll>, MPI_I<coll> through the interposition library): the
// plan's ops started as their inputs are ready, with MPI_Isend / MPI_Irecv only (no blocking fast
// path, no shared-memory slots), each run on its own state so that any number are in flight on a
// communicator at once. The user holds a generalized request (MPI_Grequest_start), completed by
// collkit when the run's last op completes.
//
// Progress: MPI does not call back into a generalized request, so collkit moves its runs whenever
// the program enters one of the calls collkit sees: the completion calls (MPI_Wait, MPI_Test and
// their -all / -any / -some forms, MPI_Request_get_status, defined in this library over PMPI_),
// every ck_* call, and with the interposition library every collective it routes. A program that
// computes without entering MPI gets no progress until it does (as with most MPIs' own
// non-blocking collectives without an asynchronous progress thread); a rank that blocks in another
// MPI call (MPI_Recv, MPI_Probe) moves no collkit run meanwhile.
#pragma once
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "executor.hpp"
#include "plan.hpp"

namespace collkit::mpi {

// The memory one running call owns: the executor's state and the temporaries of the C API
// (packed datatypes with gaps, staged MPI_BOTTOM reductions, an in-place input's copy).
struct Workspace {
  RunState run;
  Arena packed_in, packed_out, staged_in, staged_out;
};

// One non-blocking run: the caller fills plan, args (with args.comm the communicator reserved for
// non-blocking runs), tag_base / tag_span, work and after, then hands it to start_nonblocking.
// A run whose plan needs the ranks' counts first (gatherv, scatterv, alltoallv) starts without a
// plan: `exchange` is the MPI's non-blocking exchange of the counts, tested by the run's progress,
// and once it completes `exchanged` sets plan, args and after (or returns the MPI error code the
// run then fails with), and the run goes on as any other.
struct NbRun {
  std::shared_ptr<Plan> plan;
  MPI_Request exchange = MPI_REQUEST_NULL;
  std::function<int(NbRun&)> exchanged;
  RunArgs args;
  int tag_base = 0;  // the call's own tags: tag_base + seq % tag_span
  int tag_span = 1;
  // Where a pair of ranks has more messages than tag_span, two of its messages with one tag could
  // be in flight at once and match out of order: then message q of a pair is posted only once
  // every message of the pair before q - tag_span + 1 has completed (on both sides alike), so
  // the pair's messages in flight have distinct tags. set by launch from the plan.
  bool tag_window = false;
  std::vector<uint32_t> msg_base;  // per pair (plan.win_begin's index): first incomplete message
  std::vector<uint8_t> msg_state;  // per op: 1 held back by the tag window, 2 message complete
  Workspace work;
  std::function<int()> after;  // once every op is done (copy back, unpack): an MPI error code

  // The run's own progress (a plan may be in flight several times at once).
  std::vector<uint32_t> remaining, pending, ready;
  size_t ready_head = 0, completed = 0;
  std::vector<MPI_Request> reqs;
  std::vector<uint32_t> req_op;
  std::vector<int> done_idx;
  std::vector<std::byte*> bufs;
  int error = MPI_SUCCESS;
  MPI_Request request = MPI_REQUEST_NULL;  // the user's generalized request
  // A persistent call's run (owned by its Persistent, started again and again): freeing the
  // request does not delete it; keep_alive holds its owner while a run the user has freed goes on.
  bool owned = false;
  std::shared_ptr<void> keep_alive;
};

// Starts `run` and gives the user its request; MPI_SUCCESS or the MPI error code of the start.
int start_nonblocking(std::unique_ptr<NbRun> run, MPI_Request* request);
// The same for a run owned elsewhere (a persistent call's, run.owned), which may have run before.
int start_nonblocking(NbRun& run, MPI_Request* request);

// A persistent collective (ck_<coll>_init, MPI_<Coll>_init through the interposition library).
// A generalized request cannot be started again, so the user's handle is a persistent request of
// the MPI that is never started (a receive from MPI_PROC_NULL: valid, inactive), and collkit
// keeps what the handle stands for here, keyed by it: MPI_Start / MPI_Startall on it start a run
// (`start`: the plan built at init, with the buffers bound at init) whose own request (`inner`)
// the completion calls wait on in its place; once that completes the handle is inactive again.
// MPI_Request_free on it frees this (a run still going on finishes first).
struct Persistent {
  std::function<int(Persistent&, MPI_Request* inner)> start;
  std::unique_ptr<NbRun> run;  // collkit's run, reused by every start (none for a native call)
  MPI_Request handle = MPI_REQUEST_NULL;  // the user's
  MPI_Request inner = MPI_REQUEST_NULL;   // the run of the latest start, while active
  bool active = false;
};

// Registers `p` and gives the user its handle (made on `comm`).
int make_persistent(std::shared_ptr<Persistent> p, MPI_Comm comm, MPI_Request* request);

// How many runs are in flight, read without a lock (nbc.cpp keeps it).
extern std::atomic<int> g_nonblocking_runs;

// Whether any run is in flight (one relaxed atomic load: the completion calls' fast path).
inline bool nonblocking_active() {
  return g_nonblocking_runs.load(std::memory_order_relaxed) > 0;
}

// Moves every run in flight as far as it goes without blocking (progress_runs_in_flight);
// completes the requests of those that finish. Safe to call from any thread and re-entrantly (a
// nested call returns at once). Inline: every collkit call makes it, and mostly none is in flight.
void progress_runs_in_flight();
inline void progress_nonblocking() {
  if (nonblocking_active()) progress_runs_in_flight();
}

}  // namespace collkit::mpi
