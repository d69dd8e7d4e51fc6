// A compact, executable form of one rank's program: the ops, how many ops each waits on, who
// waits on each (so completing an op releases its successors in O(successors)), and for every
// send / recv its sequence number within its (me, peer) pair, used as the MPI tag so messages
// match in program order whatever order their requests are posted in.
#pragma once
#include <cstdint>
#include <vector>

#include "collkit/schedule.hpp"

namespace collkit::mpi {

// Messages of one (peer, kind) in flight at once at most, counted in the pair's order: message q
// starts only once q - kMessageWindow messages of the pair have completed (executor.cpp).
constexpr uint32_t kMessageWindow = 256;

// The blocking executor's form of one op: everything run_plan reads about an op on its hot path
// in one 48-byte record (the Schedule IR's op, its message number, its shared-memory number and
// its successors), so a step touches one record, not seven parallel arrays; ops are visited
// nearly in order, so the records stream through the caches as the data does.
struct Step {
  int64_t off = 0, src_off = 0, len = 0;
  int32_t peer = -1;
  OpKind kind = OpKind::compute;
  BufId buf = kOut, src = kIn;
  uint8_t flags = 0;     // kDstFirst, kFused, kForward, kFromIn, kThree
  uint32_t seq = 0;      // send / recv: index of the message within its (peer, kind)
  uint32_t shm_seq = 0;  // send / recv: index among the pair's shm messages, or kViaMpi
  uint32_t succ = 0;     // nsucc == 1: the successor; nsucc > 1: where its list starts
  uint32_t nsucc = 0;    // successors (ops that wait on this one)
  static constexpr uint8_t kDstFirst = 1;  // reduce: Side::dst_first
  static constexpr uint8_t kFused = 2;     // recv: may reduce out of the slot (executor.cpp)
  // Copy forwarding (executor.cpp, forward_copies): a copy from `in` that the run may skip, the
  // sends that then read `in` at src_off, and the fused receive whose reduce then takes `in` at
  // src_off as its other operand.
  static constexpr uint8_t kForward = 4;  // copy
  static constexpr uint8_t kFromIn = 8;   // send
  static constexpr uint8_t kThree = 16;   // recv
  Side side() const { return (flags & kDstFirst) != 0 ? Side::dst_first : Side::src_first; }
};
static_assert(sizeof(Step) == 48, "a step is kept at 48 bytes (the hot path's footprint)");

struct Plan {
  ScheduleHeader header;
  int64_t rank = 0;
  // The IR's form, read by the non-blocking runs (nbc.cpp) and the plan's checks.
  std::vector<Op> ops;
  std::vector<uint32_t> num_deps;  // per op
  Successors succ;                 // ops that wait on op i: succ.of(i)
  std::vector<uint32_t> roots;     // ops with no deps
  std::vector<uint32_t> seq;       // send / recv: index of the message within its pair
  std::vector<int64_t> scratch;    // elements of each scratch buffer
  // Where each scratch buffer's block starts in the run's scratch arena, for the element type's
  // span it was computed for (extent, true_extent; extent -1: not yet): a loop's calls reuse it
  // instead of measuring every buffer again.
  struct ScratchLayout {
    int64_t extent = -1, true_extent = 0;
    size_t bytes = 0;
    std::vector<size_t> at;  // from the arena's start
  } scratch_layout;

  // The blocking executor's compiled form: one record per op, the successor lists of ops with
  // more than one, and per run one 32-bit word per op (state, below) and the ready queue.
  std::vector<Step> steps;
  std::vector<uint32_t> succ_list;
  std::vector<uint32_t> state;  // per run: deps left, then requests pending; flag bits above
  std::vector<uint32_t> ready;
  // How a run starts: the state words (num_deps, with kHeld on the roots that are messages past
  // their pair's window, which every run holds back at its start) and the roots it starts with.
  // So a run never visits the held-back roots until the window lets them in: at 1 Mi segments a
  // first pass over them would read every record twice (a cache miss each time).
  std::vector<uint32_t> start_state;
  std::vector<uint32_t> start;
  static constexpr uint32_t kCount = 0x3fffffff;  // state: the count
  static constexpr uint32_t kHeld = 0x40000000;   // state: held back by the pair's window
  static constexpr uint32_t kEarly = 0x80000000;  // state: a reduce its receive did early

  // Messages in flight per (peer, kind) are bounded (executor.cpp): set when some pair has more
  // messages than the window. msg_op lists each window's ops by their seq, from win_begin[w]
  // (w = 2 * peer + (recv ? 1 : 0)), so the op a completion lets in is found in O(1).
  bool windowed = false;
  uint64_t max_pair_messages = 0;   // the most messages of one (peer, kind)
  std::vector<uint32_t> msg_done;   // per run, [w]
  std::vector<uint64_t> win_begin;  // 2P + 1 offsets into msg_op
  std::vector<uint32_t> msg_op;

  // The shared-memory transport's view of the plan, filled by the executor the first time the
  // plan runs with it (shm_bytes: the slot size it was computed for, -1 before; the steps' shm_seq
  // and kFused).
  static constexpr uint32_t kViaMpi = UINT32_MAX;
  int64_t shm_bytes = -1;
  std::vector<std::pair<int32_t, uint32_t>> shm_sent, shm_received;  // per peer: messages
  // The shared-memory messages by channel (one per peer and direction that has some), each
  // channel's by shm_seq from shm_begin[c] in shm_op; shm_chan: each such op's channel. A
  // channel's message q can move only while q < (its messages done without a gap) + W, W the
  // transport's window for its size (shm.hpp: a sender runs at most W ahead of the receiver's
  // releases), so the dataflow run holds the others back and tries only those: a call of many
  // segments then tries at most W messages of a channel per pass, not every one it has started
  // (executor.cpp, run_plan).
  std::vector<uint64_t> shm_begin;   // channels + 1 offsets into shm_op
  std::vector<uint32_t> shm_op;      // per message of a channel, by shm_seq: its op
  std::vector<uint32_t> shm_window;  // per channel: W, the largest of its messages' windows
  std::vector<uint32_t> shm_chan;    // per op: its channel (read for shm messages only)
  std::vector<uint32_t> shm_low;     // per run, per channel: messages done without a gap
  std::vector<uint8_t> shm_mark;     // per run, per message: 0, kShmHeld or kShmDone
  static constexpr uint8_t kShmHeld = 1;
  static constexpr uint8_t kShmDone = 2;
  // The ops in the order the executor may run them one at a time, each waiting until it is done,
  // with no queue and no dependency counts (executor.cpp, in_turn_order): set by the same first
  // run when every message goes through shared memory and that order provably completes wherever
  // the dataflow run does; empty otherwise.
  std::vector<uint32_t> in_turn;
  // A framed run's (executor.cpp, run_framed): its ops' order, the peers this rank has no message
  // to or from (each gets an empty one), and the slot size they were made for (-1: not yet).
  std::vector<uint32_t> framed_order;
  std::vector<int32_t> framed_silent_to, framed_silent_from;
  int64_t framed_shm_bytes = -1;
};

// Builds the plan of `program` (this rank's program of a schedule with header `h`). Throws
// Error(format) for a program that refers to a rank, buffer or op that does not exist.
Plan make_plan(const ScheduleHeader& h, const RankProgram& program);

}  // namespace collkit::mpi
