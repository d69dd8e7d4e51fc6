// The shared-memory transport of the executor: the ranks of a communicator that share a node
// exchange a schedule's small messages through one POSIX shared-memory segment, created once per
// communicator (the first collective on it) and kept until the communicator is freed. Messages
// between nodes, and messages above the slot size, stay on MPI point-to-point.
//
// Layout: one channel per ordered pair (sender, receiver) of the node's ranks; a channel is a
// `released` counter on a cache line of its own, K heads of 256 bytes, four small bodies of 4 KiB
// and K bodies of the slot size. Message q of a channel (q counts the channel's shared-memory
// messages from the first call on the communicator) has its stamp in head q mod K; its data goes
// into the same head after the stamp when it fits there (at most kInline = 240 bytes), else into
// small body q mod 4 up to kSmall = 4 KiB, else into body q mod K. (Where the node's many ranks
// shrink the slots to 4 KiB or less, to fit the segment's budget, there are no small bodies.) A
// message's window is how far its sender may run ahead: K for heads and bodies, 4 for small bodies
// (min(4, K)):
//   - the sender of q waits until every message before q - W + 1 has been released (released >
//     q - W, or q < W), copies the data and publishes it with full[s] = q + 1 (release);
//   - the receiver waits for full[s] == q + 1 (acquire), reads the data (copies it, or reduces
//     straight out of the slot) and releases the message; `released` (release) counts the
//     channel's messages released without a gap (the receiver keeps a bit mask of the ones it
//     released out of order, at most K - 1 past the gap, since message q + K cannot be sent
//     before q is released).
// So message q is never overwritten before it is read: the next message to use its head is
// q + K, the next to use its body q + K or later (q + 4 or later for a small body: a message in
// small body q mod 4 is q + 4j), and each waits until q is released (W <= K). The receiver of
// message q reads that message and no other (the stamp names it), whatever order the executor
// runs the pair's messages in: pairwise order is the stamps' order, as the MPI tags' order is on
// the MPI path. No MPI call on this path. Both sides know a message's size (the schedule says
// it), so both find its data in the same place.
// Why small bodies: a stream of 1-4 KiB messages through K = 32 bodies cycles 128 KiB of lines
// between the two cores, where four keep them in the first-level caches. On the AMD EPYC VM,
// bcast at 512 B and 4 KiB took 21-44 % less time a call on MPICH and Open MPI, reduce at 4 KiB
// 17-21 % (benchmarks/results/shm-small-bodies.md); a window of four alone, cycling 32 bodies,
// gained nothing. Tiny messages
// keep K heads (a sender then reads `released` once per K messages) and large ones K bodies
// (run-ahead pays there).
// The heads are why a communicator's setup is cheap: each page of a channel is a page fault the
// first time a rank touches it (2-5 us on the 2-core VM), and the counter and K heads are 3 pages
// where K slots of 32 KiB are 256. Setup maps the heads; the bodies are mapped up to a message's
// size when a plan first sends or receives one that large (map_bodies), so a program whose
// collectives are small never pays for the pages of large messages, and one whose are large pays
// in the first call of that size, not in each of its first K calls.
// Waiting for all of q - W's predecessors rather than for q - W alone waits for nothing that a
// rank running its ops in program order would not have waited for (it releases in order), so a
// schedule that completes in program order completes here, as before.
//
// Setting up is collective over the communicator and decided alike on every rank: any failure
// (no /dev/shm, no room, COLLKIT_SHM=0 on some rank) leaves every rank on MPI point-to-point.
#pragma once
#include <mpi.h>

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace collkit::mpi {

// COLLKIT_SHM_MAX, or the default slot size (32 KiB).
int64_t requested_slot_bytes();

class ShmTransport {
 public:
  // Collective over `comm`. Returns nullptr on every rank alike when shared memory is off
  // (COLLKIT_SHM=0), useless (no two ranks share a node) or could not be set up; `why` says which.
  // `slots`: K, the ring's length (the executor's is 32; collkit_bench_shm --exchange also times
  // a ring of one slot, its lines kept hot), taken down to a power of two, at most 64.
  static std::unique_ptr<ShmTransport> create(MPI_Comm comm, std::string& why, uint32_t slots = 32);
  ~ShmTransport();
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;

  // Whether messages to or from comm rank `peer` of `bytes` bytes go through shared memory.
  bool carries(int peer, int64_t bytes) const {
    return bytes <= slot_bytes_ && local_[static_cast<size_t>(peer)] >= 0;
  }
  int64_t slot_bytes() const { return slot_bytes_; }
  // W: how many of a channel's messages of `bytes` bytes the sender may have unreleased.
  uint64_t window(int64_t bytes) const {
    return bytes > kInline && bytes <= small_max_ ? small_window_ : k_;
  }
  int node_size() const { return n_; }
  std::string describe() const;

  // Message q to `peer`, of `bytes` bytes: where to write it, or nullptr while its slot still
  // holds message q - K.
  std::byte* send_slot(int peer, uint64_t q, int64_t bytes);
  void publish(int peer, uint64_t q);
  // Message q from `peer`, of `bytes` bytes: its data, or nullptr until it has arrived.
  const std::byte* recv_slot(int peer, uint64_t q, int64_t bytes);
  void release(int peer, uint64_t q);
  // Maps the pages of the bodies of this rank's channel to (`sending`) or from `peer` up to
  // `bytes` bytes, if not mapped yet: before the first message of that size, so that it and the
  // next K - 1 take no page fault in the call. Messages that fit a head need none.
  void map_bodies(int peer, int64_t bytes, bool sending);
  // A framed message (executor.cpp, run_framed): its length travels in its head, beside the
  // stamp, so the receiver finds its data (and checks it against what it expects) without
  // knowing the size beforehand. A message past the slot size has a head alone: its data goes
  // by MPI. length() reads a head that recv_slot has seen arrive.
  void set_length(int peer, uint64_t q, int64_t bytes) {
    std::memcpy(out(peer).heads + (q & mask_) * kHead + kLengthAt, &bytes, sizeof bytes);
  }
  int64_t length(int peer, uint64_t q) {
    int64_t bytes = 0;
    std::memcpy(&bytes, in(peer).heads + (q & mask_) * kHead + kLengthAt, sizeof bytes);
    return bytes;
  }
  static constexpr int64_t kInline = 240;  // the largest message carried in its slot's head
  static constexpr int64_t kSmall = 4096;  // the largest message carried in a small body

  // Messages this rank has sent to / received from each comm rank through shared memory in the
  // calls before this one: the bases of the next call's q.
  std::vector<uint64_t> sent, received;

 private:
  ShmTransport() = default;
  // Sets the channels up in the mapped segment and maps the pages of their counters and heads;
  // false when the pages cannot be had.
  bool map_channels(size_t channel_bytes);
  struct Channel {
    std::atomic<uint64_t>* released;  // messages released without a gap, by the receiver
    std::byte* heads;                 // K heads: the stamp, then a small message's data
    std::byte* small;                 // 4 small bodies of kSmall bytes, kSmallStride apart
    std::byte* bodies;                // K bodies of stride_ bytes: a larger message's data
    // Local memory. Sender: its last look at `released`. Receiver: the messages it has released
    // without a gap (`low`, what `released` holds) and those released past it (bit k: low + k).
    uint64_t known = 0, low = 0, past = 0;
    bool small_mapped = false;  // this rank has mapped the small bodies
    int64_t mapped = 0;         // this rank has mapped every body up to this many bytes
  };
  Channel& out(int peer) { return out_[static_cast<size_t>(local_[static_cast<size_t>(peer)])]; }
  Channel& in(int peer) { return in_[static_cast<size_t>(local_[static_cast<size_t>(peer)])]; }
  std::atomic<uint64_t>* full(const Channel& c, uint64_t q) const {
    return reinterpret_cast<std::atomic<uint64_t>*>(c.heads + (q & mask_) * kHead);
  }
  std::byte* data(const Channel& c, uint64_t q, int64_t bytes) const {
    if (bytes <= kInline) return c.heads + (q & mask_) * kHead + kHead - kInline;
    if (bytes <= small_max_) return c.small + (q & (kSmallSlots - 1)) * kSmallStride;
    return c.bodies + (q & mask_) * stride_;
  }
  static constexpr size_t kHead = 256;    // a head: the stamp, padded to 16 bytes, and kInline
  static constexpr size_t kLengthAt = 8;  // a framed message's length, in the stamp's padding
  static constexpr uint64_t kSmallSlots = 4;
  static constexpr uint64_t kSmallStride = 8192;  // a page of data and an untouched page
  static size_t small_offset(uint32_t k);         // a channel's small bodies, from its start

  int n_ = 0, me_ = 0;             // ranks on this node, this rank's index among them
  uint32_t k_ = 0;                 // slots per channel: a power of two
  uint64_t small_window_ = 0;      // min(kSmallSlots, K)
  int64_t small_max_ = kInline;    // kSmall, or kInline where there are no small bodies
  uint64_t mask_ = 0;              // k_ - 1: message q's slot is q & mask_
  int64_t slot_bytes_ = 0;         // the largest message a slot takes
  size_t stride_ = 0;              // bytes from one body to the next
  std::vector<int> local_;         // comm rank -> index on this node, -1 off the node
  std::vector<Channel> out_, in_;  // by the peer's index on the node
  void* base_ = nullptr;
  size_t bytes_ = 0;
};

// The four steps of a message, inline: they are most of a small call's work (a function call
// each, with the polls of a waiting rank, was ~10 % of an 8-byte call's instructions).
inline std::byte* ShmTransport::send_slot(int peer, uint64_t q, int64_t bytes) {
  Channel& c = out(peer);
  const uint64_t w = window(bytes);
  if (q >= c.known + w) {  // the last look does not cover message q - W: look again
    c.known = c.released->load(std::memory_order_acquire);
    if (q >= c.known + w) return nullptr;
  }
  return data(c, q, bytes);
}

inline void ShmTransport::publish(int peer, uint64_t q) {
  full(out(peer), q)->store(q + 1, std::memory_order_release);
}

inline const std::byte* ShmTransport::recv_slot(int peer, uint64_t q, int64_t bytes) {
  const Channel& c = in(peer);
  if (full(c, q)->load(std::memory_order_acquire) != q + 1) return nullptr;
  return data(c, q, bytes);
}

inline void ShmTransport::release(int peer, uint64_t q) {
  Channel& c = in(peer);
  // q - low < K: message q was sent, so every message before q - K + 1 had been released.
  c.past |= uint64_t{1} << (q - c.low);
  if ((c.past & 1) == 0) return;  // a gap before q: `released` stays
  const auto run = static_cast<unsigned>(std::countr_one(c.past));
  c.past = run == 64 ? 0 : c.past >> run;
  c.low += run;
  c.released->store(c.low, std::memory_order_release);
}

}  // namespace collkit::mpi
