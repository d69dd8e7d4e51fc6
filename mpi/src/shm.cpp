#include "shm.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "env.hpp"
#include "placement.hpp"

namespace collkit::mpi {
namespace {

constexpr size_t kLine = 64;
// The largest message through a slot, unless COLLKIT_SHM_MAX says otherwise (bytes). Above it,
// MPI point-to-point (with its own single-copy paths) is as fast or faster: see docs/mpi.md.
constexpr int64_t kDefaultSlotBytes = 32768;
constexpr size_t kPage = 4096;
constexpr size_t kColours = 4;  // offsets of a channel's counter and heads: 0-3 lines
constexpr size_t kBudget = size_t{256} << 20;  // the segment's size at most

size_t round_up(size_t x, size_t to) {
  return (x + to - 1) / to * to;
}

// 64-bit FNV-1a: the same key from the same text in every process, whatever its build.
uint64_t fnv1a(const std::string& text) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return h;
}

// This rank's operating system as a key (>= 0; -1 with why not): ranks with one key see one
// /dev/shm. COLLKIT_TEST_RPN's fake nodes are the placement's (node_id, no MPI call then).
long long os_key(MPI_Comm comm, std::string& why) {
  if (std::getenv("COLLKIT_TEST_RPN") != nullptr) return node_id(comm, why);
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) {
    why = "gethostname failed";
    return -1;
  }
  std::string text = host;
  if (FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    char boot[64] = {};
    if (std::fgets(boot, sizeof boot, f) != nullptr) text += std::string("\n") + boot;
    std::fclose(f);
  }
  // Emulated nodes (network namespaces, collkit cluster) share the kernel and its boot id.
  struct stat ns{};
  if (stat("/proc/self/ns/net", &ns) == 0) text += "\nnet:" + std::to_string(ns.st_ino);
  return static_cast<long long>(fnv1a(text) >> 1);
}

}  // namespace

// The slot size this rank asks for: COLLKIT_SHM_MAX, or the default.
int64_t requested_slot_bytes() {
  static const int64_t bytes =
      env_int("COLLKIT_SHM_MAX", kDefaultSlotBytes, 0, int64_t{1} << 30, "a number of bytes");
  return bytes;
}

// Where a channel's small bodies start: on a page of their own after the counter and the heads.
// Each small body is one page with an untouched page after it: bodies packed 4 KiB apart, each
// sharing pages with the next, gained nothing at 4 KiB; a page each, packed, gained half of what
// a page apart did (shm-small-bodies.md; the hardware prefetchers, reading on past a body into
// the next one that its sender is writing, are the likely cause, not shown).
size_t ShmTransport::small_offset(uint32_t k) {
  return round_up((kColours - 1) * kLine + kLine + k * kHead, kPage);
}

std::unique_ptr<ShmTransport> ShmTransport::create(MPI_Comm comm, std::string& why,
                                                   uint32_t slots) {
  // At most 64 (`past` holds K bits), a power of two: a slot's index is then q & (K - 1), where
  // q % K was a 64-bit division (tens of cycles) in each of a message's steps.
  const uint32_t k_slots = std::bit_floor(std::clamp<uint32_t>(slots, 1, 64));
  int rank = 0, size = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  const bool want = env_flag("COLLKIT_SHM", true);
  std::string why_node;
  // What every rank knows, so every rank decides alike: the key of its operating system (host
  // name, boot id, network namespace: ranks with one key share /dev/shm), whether it wants shared
  // memory, and the slot size it asks for. No MPI_Comm_split_type: on MPICH it took 1.5 ms of
  // the first call after the communicator's MPI_Comm_dup; one allgather takes microseconds.
  const long long key = os_key(comm, why_node);
  long long mine[3] = {key, want ? 1 : 0, requested_slot_bytes()};
  std::vector<long long> all(static_cast<size_t>(3 * size));
  if (PMPI_Allgather(mine, 3, MPI_LONG_LONG, all.data(), 3, MPI_LONG_LONG, comm) != MPI_SUCCESS) {
    why = "MPI_Allgather of the node keys failed";
    return nullptr;
  }
  // A node is named by its smallest rank, as the placement names it.
  std::vector<long long> keys(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) keys[static_cast<size_t>(r)] = all[static_cast<size_t>(3 * r)];
  for (int r = 0; r < size; ++r) {
    if (keys[static_cast<size_t>(r)] < 0) continue;
    int first = 0;
    while (keys[static_cast<size_t>(first)] != keys[static_cast<size_t>(r)]) ++first;
    all[static_cast<size_t>(3 * r)] = first;
  }
  const int id = key < 0 ? -1 : static_cast<int>(all[static_cast<size_t>(3 * rank)]);
  int64_t slot_bytes = INT64_MAX;
  for (int r = 0; r < size; ++r) {
    const long long* a = &all[static_cast<size_t>(3 * r)];
    if (a[1] == 0) {
      why = "COLLKIT_SHM=0";
      return nullptr;
    }
    if (a[0] < 0) {
      why = why_node.empty() ? "finding the nodes failed on another rank" : why_node;
      return nullptr;
    }
    slot_bytes = std::min<int64_t>(slot_bytes, a[2]);
  }
  std::unique_ptr<ShmTransport> t(new ShmTransport());
  t->local_.assign(static_cast<size_t>(size), -1);
  std::vector<int> node_size_of(static_cast<size_t>(size), 0);  // by node id (a rank)
  int largest = 0;
  for (int r = 0; r < size; ++r) {
    const auto nid = static_cast<size_t>(all[static_cast<size_t>(3 * r)]);
    if (nid >= node_size_of.size()) {
      why = "node ids out of range";
      return nullptr;
    }
    const int at = node_size_of[nid]++;
    largest = std::max(largest, node_size_of[nid]);
    if (static_cast<int>(nid) == id) {
      t->local_[static_cast<size_t>(r)] = at;
      if (r == rank) t->me_ = at;
    }
  }
  if (largest < 2) {
    why = "no two ranks share a node";
    return nullptr;
  }
  const int n = node_size_of[static_cast<size_t>(id)];
  t->n_ = n;
  t->k_ = k_slots;
  t->mask_ = k_slots - 1;
  // The segment: n x n channels (the diagonal unused), each a counter line, K heads, the small
  // bodies and K bodies. Bodies shrink (never below 1 KiB) until the segment fits the budget; the
  // size depends on n and the agreed request only, so it is the same on every rank of the node.
  // With small bodies, whole pages, so that every channel's small bodies start on a page. None
  // where a slot is 4 KiB or less: its K bodies are then as small, and the channel is packed as
  // before them (a counter line, the heads, the bodies), so that a node of 80 ranks still fits.
  auto chan_bytes = [&](int64_t sb) {
    const size_t bodies = k_slots * round_up(static_cast<size_t>(sb), kLine);
    if (sb <= kSmall) return kLine + k_slots * kHead + bodies;
    return round_up(small_offset(k_slots) + kSmallSlots * kSmallStride + bodies, kPage);
  };
  const auto nn = static_cast<size_t>(n) * static_cast<size_t>(n);
  while (slot_bytes > 1024 && nn * chan_bytes(slot_bytes) > kBudget) slot_bytes /= 2;
  t->slot_bytes_ = slot_bytes;
  t->small_max_ = slot_bytes > kSmall ? kSmall : kInline;
  t->small_window_ = std::min<uint64_t>(kSmallSlots, k_slots);
  t->stride_ = round_up(static_cast<size_t>(slot_bytes), kLine);
  const size_t cb = chan_bytes(slot_bytes);
  t->bytes_ = nn * cb;

  // The node's ranks (faked ones too: COLLKIT_TEST_RPN) make one communicator; its first rank
  // creates the segment and tells the others its name.
  int ok = 1;
  MPI_Comm node = MPI_COMM_NULL;
  if (PMPI_Comm_split(comm, id, rank, &node) != MPI_SUCCESS) {
    why = "MPI_Comm_split by node failed";
    ok = 0;
  }
  char name[64] = {};
  bool created = false;
  if (ok && n >= 2) {
    if (t->bytes_ > kBudget) {
      why = "a node of " + std::to_string(n) + " ranks needs more than " +
            std::to_string(kBudget >> 20) + " MiB of shared memory";
      name[0] = '\0';
    } else if (t->me_ == 0) {
      static int serial = 0;
      std::snprintf(name, sizeof name, "/collkit-%ld-%d-%d", static_cast<long>(getpid()), rank,
                    serial++);
      // Sparse: the pages are had when first touched (setup maps the heads; the bodies are
      // mapped when a plan first needs them), so /dev/shm must have room for the whole segment
      // now: a page it cannot give later would be a SIGBUS in a call. Checked, not reserved
      // (reserving the whole segment, posix_fallocate, took 1.2 ms of the first call).
      struct statvfs fs{};
      const bool room = statvfs("/dev/shm", &fs) == 0 &&
                        static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize) >=
                            static_cast<double>(t->bytes_);
      const int fd = room ? shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600) : -1;
      if (fd >= 0) {
        created = true;
        if (ftruncate(fd, static_cast<off_t>(t->bytes_)) != 0) name[0] = '\0';
        close(fd);
      } else {
        name[0] = '\0';
      }
      if (!room)
        why =
            "/dev/shm has less than the segment's " + std::to_string(t->bytes_ >> 10) + " KiB free";
      else if (name[0] == '\0')
        why = "creating a shared-memory segment failed (/dev/shm)";
    }
    if (PMPI_Bcast(name, sizeof name, MPI_CHAR, 0, node) != MPI_SUCCESS) name[0] = '\0';
    if (name[0] == '\0') {
      ok = 0;
      if (why.empty()) why = "the node's first rank could not create the shared-memory segment";
    } else {
      const int fd = shm_open(name, O_RDWR, 0600);
      void* p =
          fd < 0 ? MAP_FAILED : mmap(nullptr, t->bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p == MAP_FAILED) {
        ok = 0;
        why = "mapping the shared-memory segment failed";
      } else {
        t->base_ = p;
        if (!t->map_channels(cb)) {
          ok = 0;
          why = "mapping the shared-memory channels' pages failed (/dev/shm full?)";
        }
      }
      if (fd >= 0) close(fd);
    }
  }
  // One answer for all: every rank has mapped the segment and reserved its pages (or failed)
  // before any unlinks it.
  int all_ok = 0;
  if (PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) all_ok = 0;
  if (created) shm_unlink(name);
  if (node != MPI_COMM_NULL) PMPI_Comm_free(&node);
  if (!all_ok) {
    if (why.empty()) why = "setting up shared memory failed on another rank";
    return nullptr;  // the destructor unmaps
  }
  t->sent.assign(static_cast<size_t>(size), 0);
  t->received.assign(static_cast<size_t>(size), 0);
  return t;
}

namespace {

// MADV_POPULATE_{READ,WRITE} (Linux 5.14, <linux/mman.h>): map a range's pages without touching
// the data. Before 5.14 (EINVAL) a read of each page maps it. False when the pages cannot be had.
bool populate(uintptr_t lo, uintptr_t hi, bool write) {
  constexpr int kPopulateRead = 22, kPopulateWrite = 23;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  lo = lo / page * page;
  hi = round_up(hi, page);
  if (madvise(reinterpret_cast<void*>(lo), hi - lo, write ? kPopulateWrite : kPopulateRead) == 0)
    return true;
  if (errno != EINVAL) return false;  // ENOMEM, EFAULT: the pages cannot be had
  for (uintptr_t at = lo; at < hi; at += page)
    (void)reinterpret_cast<const std::atomic<uint64_t>*>(at)->load(std::memory_order_relaxed);
  return true;
}

}  // namespace

bool ShmTransport::map_channels(size_t cb) {
  auto* base = static_cast<std::byte*>(base_);
  auto channel = [&](int from, int to) {
    const size_t idx =
        static_cast<size_t>(from) * static_cast<size_t>(n_) + static_cast<size_t>(to);
    std::byte* start = base + idx * cb;  // a page, where there are small bodies
    if (small_max_ == kInline)           // packed: a counter line, the heads, the bodies
      return Channel{reinterpret_cast<std::atomic<uint64_t>*>(start), start + kLine, nullptr,
                     start + kLine + k_ * kHead};
    // The counter and heads start a line further on in each of four channels in turn: with
    // every channel page-aligned, a rank's stamp in its out channel and its poll of the same
    // head in its in channel sat at one page offset, and those channels' barrier and 8-byte
    // calls got 3-11 % slower (shm-small-bodies.md; the CPUs' 4 KiB aliasing of a load with an
    // earlier store is the likely cause).
    std::byte* c = start + (idx % kColours) * kLine;
    std::byte* small = start + small_offset(k_);
    return Channel{reinterpret_cast<std::atomic<uint64_t>*>(c), c + kLine, small,
                   small + kSmallSlots * kSmallStride};
  };
  for (int j = 0; j < n_; ++j) {
    out_.push_back(channel(me_, j));
    in_.push_back(channel(j, me_));
  }
  // Map now the counter and the heads of every channel of this rank, for writing (a sender
  // writes the heads, a receiver the counter): else each of a ring's first K messages takes a
  // page fault in the call (~2-5 us a fault on this VM).
  for (int j = 0; j < n_; ++j) {
    if (j == me_) continue;
    for (const Channel* c : {&out_[static_cast<size_t>(j)], &in_[static_cast<size_t>(j)]}) {
      const auto lo = reinterpret_cast<uintptr_t>(c->released);
      if (!populate(lo, reinterpret_cast<uintptr_t>(c->heads + k_ * kHead), true)) return false;
    }
  }
  return true;
}

void ShmTransport::map_bodies(int peer, int64_t bytes, bool sending) {
  if (bytes <= kInline || local_[static_cast<size_t>(peer)] < 0) return;
  Channel& c = sending ? out(peer) : in(peer);
  if (bytes <= small_max_) {  // the four small bodies: four pages
    if (!c.small_mapped) {
      for (uint64_t s = 0; s < kSmallSlots; ++s) {
        const auto lo = reinterpret_cast<uintptr_t>(c.small + s * kSmallStride);
        (void)populate(lo, lo + kSmall, sending);
      }
      c.small_mapped = true;
    }
    return;
  }
  if (bytes <= c.mapped) return;
  bytes = std::min(bytes, slot_bytes_);
  // Each body up to `bytes` (a body is 32 KiB: mapping all of it for an 8 KiB message would
  // cost 8 pages a slot where 2 do). A page that cannot be had stays unmapped and is had at
  // its first touch (setup checked that /dev/shm has room for the whole segment).
  for (uint32_t s = 0; s < k_; ++s) {
    const auto lo = reinterpret_cast<uintptr_t>(c.bodies + s * stride_);
    (void)populate(lo, lo + static_cast<uintptr_t>(bytes), sending);
  }
  c.mapped = bytes;
}

ShmTransport::~ShmTransport() {
  if (base_ != nullptr) munmap(base_, bytes_);
}

std::string ShmTransport::describe() const {
  return "shm (" + std::to_string(n_) + " ranks on this node; " + std::to_string(k_) +
         " slots of " + std::to_string(slot_bytes_) + " B per pair; larger messages on MPI)";
}

}  // namespace collkit::mpi
