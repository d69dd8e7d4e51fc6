// The shared-memory transport of the executor: the ranks of a communicator that share a node
// exchange a schedule's small messages through one POSIX shared-memory segment, created once per
// communicator (the first collective on it) and kept until the communicator is freed. Messages
// between nodes, and messages above the slot size, stay on MPI point-to-point.
//
// Layout: one channel per ordered pair (sender, receiver) of the node's ranks; a channel is a
// `released` counter on a cache line of its own and a ring of K slots. Message q of a channel (q
// counts the channel's shared-memory messages from the first call on the communicator) goes into
// slot q mod K:
//   - the sender waits until every message before q - K + 1 has been released (released >
//     q - K, or q < K), copies the data and publishes it with full[s] = q + 1 (release);
//   - the receiver waits for full[s] == q + 1 (acquire), reads the data (copies it, or reduces
//     straight out of the slot) and releases the message; `released` (release) counts the
//     channel's messages released without a gap (the receiver keeps a bit mask of the ones it
//     released out of order, at most K - 1 past the gap, since message q + K cannot be sent
//     before q is released).
// So message q is never overwritten before it is read (the sender of q + K waits for released >
// q), and the receiver of message q reads that message and no other (the stamp names it),
// whatever order the executor runs the pair's messages in: pairwise order is the stamps' order,
// as the MPI tags' order is on the MPI path. No MPI call on this path.
// The sender keeps its last look at `released` in its own memory and reads the shared counter
// only when that look does not cover the slot it needs: once per K messages when the reader keeps
// up, not once per message (the counter's line lives in the reader's cache, so each look is a
// cross-core transfer on the send's critical path).
// Waiting for all of q - K's predecessors rather than for q - K alone waits for nothing that a
// rank running its ops in program order would not have waited for (it releases in order), so a
// schedule that completes in program order completes here, as before.
//
// Setting up is collective over the communicator and decided alike on every rank: any failure
// (no /dev/shm, no room, COLLKIT_SHM=0 on some rank) leaves every rank on MPI point-to-point.
#pragma once
#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace collkit::mpi {

class ShmTransport {
 public:
  // Collective over `comm`. Returns nullptr on every rank alike when shared memory is off
  // (COLLKIT_SHM=0), useless (no two ranks share a node) or could not be set up; `why` says which.
  // `slots`: K, the ring's length (the executor's is 32; collkit_bench_shm --exchange also times
  // a ring of one slot, its lines kept hot).
  static std::unique_ptr<ShmTransport> create(MPI_Comm comm, std::string& why, uint32_t slots = 32);
  ~ShmTransport();
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;

  // Whether messages to or from comm rank `peer` of `bytes` bytes go through shared memory.
  bool carries(int peer, int64_t bytes) const {
    return bytes <= slot_bytes_ && local_[static_cast<size_t>(peer)] >= 0;
  }
  int64_t slot_bytes() const { return slot_bytes_; }
  int node_size() const { return n_; }
  std::string describe() const;

  // Message q to `peer`: the slot to fill, or nullptr while it still holds message q - K.
  std::byte* send_slot(int peer, uint64_t q);
  void publish(int peer, uint64_t q);
  // Message q from `peer`: its data, or nullptr until it has arrived.
  const std::byte* recv_slot(int peer, uint64_t q);
  void release(int peer, uint64_t q);

  // Messages this rank has sent to / received from each comm rank through shared memory in the
  // calls before this one: the bases of the next call's q.
  std::vector<uint64_t> sent, received;

 private:
  ShmTransport() = default;
  // Sets the channels up in the mapped segment and reserves and maps their pages (this rank's
  // out-channels written, its in-channels read); false when the pages cannot be had.
  bool map_channels(int fd, size_t channel_bytes);
  struct Channel {
    std::atomic<uint64_t>* released;  // messages released without a gap, by the receiver
    std::byte* slots;                 // K slots of kSlotHeader + slot_bytes_
    // Local memory. Sender: its last look at `released`. Receiver: the messages it has released
    // without a gap (`low`, what `released` holds) and those released past it (bit k: low + k).
    uint64_t known = 0, low = 0, past = 0;
  };
  Channel& out(int peer) { return out_[static_cast<size_t>(local_[static_cast<size_t>(peer)])]; }
  Channel& in(int peer) { return in_[static_cast<size_t>(local_[static_cast<size_t>(peer)])]; }
  std::atomic<uint64_t>* full(std::byte* slot) {
    return reinterpret_cast<std::atomic<uint64_t>*>(slot);
  }

  int n_ = 0, me_ = 0;             // ranks on this node, this rank's index among them
  uint32_t k_ = 0;                 // slots per channel
  int64_t slot_bytes_ = 0;         // the largest message a slot takes
  size_t stride_ = 0;              // bytes from one slot to the next
  std::vector<int> local_;         // comm rank -> index on this node, -1 off the node
  std::vector<Channel> out_, in_;  // by the peer's index on the node
  void* base_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace collkit::mpi
