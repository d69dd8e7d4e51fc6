// Runs a Plan with MPI non-blocking point-to-point: every op starts as soon as the ops it waits on
// are complete; sends and receives are posted as MPI_Isend / MPI_Irecv on a private communicator
// and completed with MPI_Waitsome; reductions go through MPI_Reduce_local with the op's operand
// order, or a fast path for built-in ops on built-in types.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "layout.hpp"
#include "plan.hpp"

namespace collkit::mpi {

// Memory reused across calls: scratch buffers and temporaries are carved from here, never
// allocated per call once the largest size has been seen.
class Arena {
 public:
  std::byte* get(size_t bytes);  // valid until the next get()
  size_t capacity() const { return mem_.size(); }

 private:
  std::vector<std::byte> mem_;
};

struct RunArgs {
  MPI_Comm comm = MPI_COMM_NULL;  // the private duplicate
  int tag_ub = 32767;
  TypeInfo type;            // the IR's element: the user's datatype, or bytes (TypeInfo::bytes())
  MPI_Op op = MPI_OP_NULL;  // MPI_OP_NULL for collectives without a reduction
  bool commutative = true;
  void* in = nullptr;   // the IR's `in`
  void* out = nullptr;  // the IR's `out`
};

struct RunState {
  Arena scratch, temp, pack;
  Arena stand_in;  // `out` off the root of a reduce; the input of an in-place alltoall
  std::vector<MPI_Request> reqs;
  std::vector<uint32_t> req_op;
  std::vector<int> done_idx;
};

// Returns MPI_SUCCESS or the MPI error code of the call that failed.
int run_plan(Plan& plan, const RunArgs& a, RunState& st);

// MPI's predefined reduction ops (all commutative).
bool is_predefined(MPI_Op op);

// dst = src, n elements of t, leaving the gaps of dst alone.
int copy_elements(const void* src, void* dst, int64_t n, const TypeInfo& t, Arena& pack);

// dst = src (+) dst (src_first) or dst = dst (+) src (dst_first), `n` elements.
int reduce_local(const void* src, void* dst, int64_t n, Side side, const RunArgs& a, RunState& st);

}  // namespace collkit::mpi
