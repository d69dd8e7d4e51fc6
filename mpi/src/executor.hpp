// Runs a Plan: every op starts as soon as the ops it waits on are complete. A message between two
// ranks of one node, up to the slot size, goes through the communicator's shared-memory segment
// (shm.hpp; a receive that only feeds a reduction reduces straight out of the slot); any other is
// posted as MPI_Isend / MPI_Irecv on a private communicator. One progress loop serves both, so a
// schedule with peers on and off the node never waits on one transport while the other could
// move. Reductions go through MPI_Reduce_local with the op's operand order, or a fast path for
// built-in ops on built-in types.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fast_reduce.hpp"
#include "layout.hpp"
#include "plan.hpp"
#include "shm.hpp"

namespace collkit::mpi {

// Memory reused across calls: scratch buffers and temporaries are carved from here, never
// allocated per call once the largest size has been seen.
class Arena {
 public:
  std::byte* get(size_t bytes) {  // valid until the next get()
    if (bytes > mem_.size()) grow(bytes);
    return mem_.data();
  }
  size_t capacity() const { return mem_.size(); }

 private:
  void grow(size_t bytes);
  std::vector<std::byte> mem_;
};

struct RunArgs {
  MPI_Comm comm = MPI_COMM_NULL;  // the private duplicate
  int tag_ub = 32767;
  TypeInfo type;            // the IR's element: the user's datatype, or bytes (TypeInfo::bytes())
  MPI_Op op = MPI_OP_NULL;  // MPI_OP_NULL for collectives without a reduction
  bool commutative = true;
  bool exact = false;       // the op is exact under any grouping on `type` (exact_op)
  ReduceFn fast = nullptr;  // the loop for (type, op) when there is one (fast_reduce.hpp)
  void* in = nullptr;       // the IR's `in`
  void* out = nullptr;      // the IR's `out`
  bool one_buffer = false;  // MPI_IN_PLACE: `in` and `out` lie in one buffer and may overlap
  // Each message carries its length, checked by its receiver, and every pair of ranks exchanges
  // one a call (executor.cpp, run_framed): an alltoallv whose counts were not exchanged.
  bool framed = false;
};

struct RunState {
  Arena scratch, temp, pack;
  Arena stand_in;  // `out` off the root of a reduce; the input of an in-place alltoall
  std::vector<MPI_Request> reqs;
  std::vector<uint32_t> req_op;
  std::vector<int> done_idx;
  std::vector<uint32_t> shm_wait;  // shared-memory messages waiting for a slot or for data
  // What the last dataflow run did (COLLKIT_VERBOSE=3 prints them on rank 0): its shared-memory
  // messages, the tries of one (shm_try: each a look at a slot), the passes over shm_wait and the
  // most messages in it at once, which the channels' windows bound (plan.hpp, shm_window). Tries
  // and passes grow while a rank waits for a peer; the most waiting does not.
  struct Counts {
    uint64_t shm_messages = 0, shm_tries = 0, shm_passes = 0, shm_waiting_most = 0;
  } counts;
  // The communicator's shared-memory transport, set up by its first run (collective): null when
  // every message goes through MPI (`transport` says why).
  std::unique_ptr<ShmTransport> shm;
  bool shm_checked = false;
  std::string transport;  // "shm" or "p2p (why)", for COLLKIT_VERBOSE and the benchmarks
  std::string mismatch;   // why the last framed run failed (lengths that disagree), else ""
};

// A framed run (RunArgs::framed) that this rank cannot make after all (a count past 2^48 bytes,
// a limit of the algorithm on its own row or column): it still sends each peer its one message
// of the call, a refusal, and takes each peer's (dropped), so that no peer waits for it and the
// channels stay in step; a peer that expected data fails saying so. `all_refused`: every peer
// refused too (every rank saw it alike). Returns MPI_SUCCESS or the MPI's error.
int refuse_framed(MPI_Comm comm, RunState& st, bool& all_refused);

// The communicator's transport, set up by the first call that asks (collective: every rank asks
// in the same call): null when every message goes through MPI.
ShmTransport* set_up_transport(MPI_Comm comm, RunState& st);
inline ShmTransport* transport(MPI_Comm comm, RunState& st) {
  return st.shm_checked ? st.shm.get() : set_up_transport(comm, st);
}

// Returns MPI_SUCCESS or the MPI error code of the call that failed.
int run_plan(Plan& plan, const RunArgs& a, RunState& st);

// Reads every setting of the executor and the transport from the environment once (env.hpp), so
// that a bad value is said at a communicator's first call, whichever path its calls take later.
void read_settings();

// MPI's predefined reduction ops (all commutative).
bool is_predefined(MPI_Op op);

// dst = src, n elements of t, leaving the gaps of dst alone.
int copy_elements(const void* src, void* dst, int64_t n, const TypeInfo& t, Arena& pack);

// dst = src (+) dst (src_first) or dst = dst (+) src (dst_first), `n` elements.
int reduce_local(const void* src, void* dst, int64_t n, Side side, const RunArgs& a, RunState& st);

}  // namespace collkit::mpi
