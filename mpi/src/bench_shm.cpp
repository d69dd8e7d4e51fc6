// The shared-memory transport against the MPI, in one job (benchmarks/bench_executor.py --shm):
//
// 1. The physical limit: an 8-byte exchange between two ranks through the transport's slots
//    (each rank publishes 8 bytes to the other and waits for the other's), ns per exchange,
//    beside the MPI's MPI_Sendrecv of 8 bytes and its native MPI_Allreduce of one double.
// 2. Per collective and size: the MPI's native call, collkit with shared memory, and collkit
//    without (a communicator set up while COLLKIT_SHM=0), interleaved round by round (the order
//    rotated each round), each round a block of back-to-back calls as OSU measures, the per-call
//    time of a block being the maximum over ranks.
//
//   collkit_bench_shm [--sizes 8,64,1024] [--rounds 15] [--block 200]
//                     [--collectives allreduce,reduce,bcast,barrier,allgather,alltoall]
//                     [--algos allreduce:rd,reduce:binomial,...] [--limit-iters 100000]
// One JSON object per line on rank 0: {"kind":"limit",...} and {"kind":"row",...}.
//
// 3. --segments 1024,65536,...: time per segment of tiny-segment schedules,
//    reduce:binomial(seg=16) and bcast:pipeline(seg=16) on ints, with shared memory, without
//    it, and the data's own cost ("floor": the same bytes through a plain local reduce / copy
//    in 16-byte pieces, between two buffers of the call's size), every (segments, variant)
//    once per round, rounds interleaved; one {"kind":"segments",...} line per round and row.
//
// 4. --exchange 4096,16384: what a two-way exchange of B bytes costs, ranks 0
//    and 1 each sending B bytes to the other and waiting for the other's, ns per exchange, in
//    rotated order round by round; one {"kind":"exchange",...} line per round, size and variant:
//    - slots: the transport as the executor uses it (the next of its 32 slots each call: copy in,
//      publish, wait, copy out, free); slots-reduce: reducing (doubles, SUM) out of the slot
//      instead of copying out (allreduce:rd's receive); one-slot: a transport whose ring is one
//      slot (K = 1), the lines staying hot; one-way: rank 0 streams to rank 1 (no reply);
//    - raw-flag-apart / raw-flag-inline: a bare one-slot channel in an MPI_Win_allocate_shared
//      segment, its stamp on a line of its own or on the data's first line (as the transport's
//      slots have it); -pause: polling with a pause instruction;
//    - sendrecv: MPI_Sendrecv of B bytes; allreduce: the MPI's native MPI_Allreduce of B bytes;
//    - slots-reduce-4-pieces: slots-reduce in 4 messages of B / 4, each rank sending piece i
//      before reducing the peer's piece i - 1;
//    - bcast: the MPI's native MPI_Bcast of B bytes from rank 0 (its one-way stream);
//      one-way-4-slots / one-way-one-slot: the one-way stream through a ring of four / one slot.
//
// 5. --check-order N: the ring's no-overwrite guarantee when the reader releases out of order
//    (tests/mpi/test_shm_mpi.py); prints "check-order ok N".
#include <mpi.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "collkit.h"
#include "fast_reduce.hpp"
#include "shm.hpp"

using namespace collkit::mpi;

namespace {

double now_ns() {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count());
}

double max_over_ranks(double x, MPI_Comm comm) {
  double m = 0;
  MPI_Allreduce(&x, &m, 1, MPI_DOUBLE, MPI_MAX, comm);
  return m;
}

// ns per 8-byte exchange through the transport's slots (ranks 0 and 1).
double shm_exchange_ns(ShmTransport& t, int rank, long iters) {
  const int peer = 1 - rank;
  double v = 1.0, got = 0;
  uint64_t q = 0;
  const double t0 = now_ns();
  for (long i = 0; i < iters; ++i, ++q) {
    std::byte* s = nullptr;
    while ((s = t.send_slot(peer, q, 8)) == nullptr) {
    }
    std::memcpy(s, &v, 8);
    t.publish(peer, q);
    const std::byte* r = nullptr;
    while ((r = t.recv_slot(peer, q, 8)) == nullptr) {
    }
    std::memcpy(&got, r, 8);
    t.release(peer, q);
    v += got * 0;
  }
  return (now_ns() - t0) / static_cast<double>(iters);
}

struct Call {
  std::string coll;
  int64_t bytes;
  std::vector<char> sb, rb;
  void run(MPI_Comm comm, const char* algo) {
    const auto n = static_cast<MPI_Count>(bytes);
    const MPI_Count doubles = std::max<int64_t>(bytes / 8, 1);
    if (coll == "allreduce")
      ck_allreduce(sb.data(), rb.data(), doubles, MPI_DOUBLE, MPI_SUM, comm, algo);
    else if (coll == "reduce")
      ck_reduce(sb.data(), rb.data(), doubles, MPI_DOUBLE, MPI_SUM, 0, comm, algo);
    else if (coll == "bcast")
      ck_bcast(rb.data(), n, MPI_BYTE, 0, comm, algo);
    else if (coll == "barrier")
      ck_barrier(comm, algo);
    else if (coll == "allgather")
      ck_allgather(sb.data(), n, MPI_BYTE, rb.data(), n, MPI_BYTE, comm, algo);
    else if (coll == "alltoall")
      ck_alltoall(sb.data(), n, MPI_BYTE, rb.data(), n, MPI_BYTE, comm, algo);
  }
};

void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// A bare one-slot channel per direction in a shared window: [stamp line][data] or the stamp on
// the data's first line; message i: the sender waits for free == i, writes, full = i + 1; the
// reader waits for full == i + 1, reads, free = i + 1.
struct RawChannel {
  std::atomic<uint64_t>* full;
  std::atomic<uint64_t>* free;
  std::byte* data;
};

double raw_exchange_ns(RawChannel out, RawChannel in, int64_t bytes, std::vector<std::byte>& mine,
                       std::vector<std::byte>& got, long iters, bool pause, uint64_t& i0) {
  const auto b = static_cast<size_t>(bytes);
  const double t0 = now_ns();
  for (long k = 0; k < iters; ++k, ++i0) {
    while (out.free->load(std::memory_order_acquire) != i0)
      if (pause) cpu_pause();
    std::memcpy(out.data, mine.data(), b);
    out.full->store(i0 + 1, std::memory_order_release);
    while (in.full->load(std::memory_order_acquire) != i0 + 1)
      if (pause) cpu_pause();
    std::memcpy(got.data(), in.data, b);
    in.free->store(i0 + 1, std::memory_order_release);
  }
  return (now_ns() - t0) / static_cast<double>(iters);
}

// Through the transport's slots; `sent` and `received` number this rank's messages to and from
// the peer (apart: the one-way stream moves one direction only). reduce: sum (doubles) out of the
// slot into `got`; one_way: rank 0 only sends, rank 1 only receives.
double slot_exchange_ns(ShmTransport& t, int rank, int64_t bytes, std::vector<std::byte>& mine,
                        std::vector<std::byte>& got, long iters, uint64_t& sent, uint64_t& received,
                        bool reduce, bool one_way) {
  const int peer = 1 - rank;
  const auto b = static_cast<size_t>(bytes);
  t.map_bodies(peer, bytes, true);  // as the executor's plan maps them: no page fault timed
  t.map_bodies(peer, bytes, false);
  const double t0 = now_ns();
  for (long k = 0; k < iters; ++k) {
    if (!one_way || rank == 0) {
      std::byte* s = nullptr;
      while ((s = t.send_slot(peer, sent, bytes)) == nullptr) {
      }
      std::memcpy(s, mine.data(), b);
      t.publish(peer, sent++);
    }
    if (!one_way || rank == 1) {
      const std::byte* r = nullptr;
      while ((r = t.recv_slot(peer, received, bytes)) == nullptr) {
      }
      if (reduce) {
        fast_reduce(r, got.data(), bytes / 8, MPI_DOUBLE, MPI_SUM);
      } else {
        std::memcpy(got.data(), r, b);
      }
      t.release(peer, received++);
    }
  }
  return (now_ns() - t0) / static_cast<double>(iters);
}

// slots-reduce in `chunks` messages of bytes / chunks each, sending chunk i before reducing the
// peer's chunk i - 1: whether publishing in pieces lets the peer's reads of the first pieces
// overlap this rank's writes of the later ones (a transport that split large messages).
double chunked_exchange_ns(ShmTransport& t, int rank, int64_t bytes, int chunks,
                           std::vector<std::byte>& mine, std::vector<std::byte>& got, long iters,
                           uint64_t& sent, uint64_t& received) {
  const int peer = 1 - rank;
  const int64_t piece = bytes / chunks;
  const auto b = static_cast<size_t>(piece);
  t.map_bodies(peer, piece, true);
  t.map_bodies(peer, piece, false);
  auto take = [&](int i) {
    const std::byte* r = nullptr;
    while ((r = t.recv_slot(peer, received, piece)) == nullptr) {
    }
    fast_reduce(r, got.data() + static_cast<size_t>(i) * b, piece / 8, MPI_DOUBLE, MPI_SUM);
    t.release(peer, received++);
  };
  const double t0 = now_ns();
  for (long k = 0; k < iters; ++k) {
    for (int i = 0; i < chunks; ++i) {
      std::byte* s = nullptr;
      while ((s = t.send_slot(peer, sent, piece)) == nullptr) {
      }
      std::memcpy(s, mine.data() + static_cast<size_t>(i) * b, b);
      t.publish(peer, sent++);
      if (i > 0) take(i - 1);
    }
    take(chunks - 1);
  }
  return (now_ns() - t0) / static_cast<double>(iters);
}

void run_exchange(const Args& args, int rank, int size) {
  if (size != 2) {
    if (rank == 0) std::fprintf(stderr, "--exchange needs exactly 2 ranks\n");
    return;
  }
  const long rounds = args.num("rounds", 5), iters = args.num("iters", 20000);
  std::vector<int64_t> sizes;
  for (const auto& x : split(args.get("exchange", "4096,16384"), ','))
    sizes.push_back(std::strtoll(x.c_str(), nullptr, 10));
  const int64_t most = *std::max_element(sizes.begin(), sizes.end());
  MPI_Comm c = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  std::string why;
  auto t = ShmTransport::create(c, why);
  // one-slot: a transport of its own, with a ring of one slot.
  MPI_Comm c1 = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &c1);
  auto t1 = ShmTransport::create(c1, why, 1);
  // one-way-4-slots: a ring of four slots, as MPICH's shared-memory bcast has four cells.
  MPI_Comm c4 = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &c4);
  auto t4 = ShmTransport::create(c4, why, 4);
  if (!t || !t1 || !t4 || t->slot_bytes() < most) {
    if (rank == 0)
      std::fprintf(stderr, "--exchange: no shared-memory transport with slots of %lld B (%s)\n",
                   static_cast<long long>(most), why.c_str());
    MPI_Comm_free(&c);
    MPI_Comm_free(&c1);
    MPI_Comm_free(&c4);
    return;
  }
  // The raw channels: each rank's region holds the two it sends on, [apart][inline].
  const auto region = static_cast<size_t>(3 * 64 + most + 64);
  MPI_Win win = MPI_WIN_NULL;
  std::byte* base = nullptr;
  MPI_Win_allocate_shared(static_cast<MPI_Aint>(2 * region), 1, MPI_INFO_NULL, c, &base, &win);
  MPI_Aint got_size = 0;
  int disp = 0;
  std::byte* mine_region = nullptr;
  std::byte* peer_region = nullptr;
  MPI_Win_shared_query(win, rank, &got_size, &disp, &mine_region);
  MPI_Win_shared_query(win, 1 - rank, &got_size, &disp, &peer_region);
  std::memset(mine_region, 0, 2 * region);
  MPI_Barrier(c);
  // A rank's region holds the channel it sends on: [0, region) apart, [region, 2 region) inline.
  auto channel = [&](std::byte* r) {  // apart: the stamp, the free stamp, the data: 3 lines
    return RawChannel{reinterpret_cast<std::atomic<uint64_t>*>(r),
                      reinterpret_cast<std::atomic<uint64_t>*>(r + 64), r + 128};
  };
  // inline: the stamp sits on the data's first line (data from byte 16 of the stamp's line), as
  // in the transport's slots; the free stamp on a line of its own.
  auto inline_channel = [&](std::byte* r) {
    std::byte* at = r + region;
    return RawChannel{reinterpret_cast<std::atomic<uint64_t>*>(at + 64),
                      reinterpret_cast<std::atomic<uint64_t>*>(at), at + 64 + 16};
  };
  const char* names[] = {"slots",           "slots-reduce",          "one-slot",
                         "one-way",         "raw-flag-apart",        "raw-flag-apart-pause",
                         "raw-flag-inline", "raw-flag-inline-pause", "sendrecv",
                         "allreduce",       "slots-reduce-4-pieces", "bcast",
                         "one-way-4-slots", "one-way-one-slot"};
  constexpr int kVariants = 14;
  uint64_t sent = 0, received = 0, sent1 = 0, received1 = 0, sent4 = 0, received4 = 0,
           raw_apart = 0, raw_inline = 0;
  for (long r = 0; r < rounds + 1; ++r) {  // round 0 warms up
    for (int64_t bytes : sizes) {
      std::vector<std::byte> mine(static_cast<size_t>(bytes), std::byte{1}),
          got(static_cast<size_t>(bytes));
      double ns[kVariants];
      for (int k = 0; k < kVariants; ++k) {
        const int v = static_cast<int>((k + r) % kVariants);
        // Every slot variant sends and reads all its messages (the one-way stream too: rank 1
        // reads all that rank 0 sent), so the next goes on with the ring's next message.
        MPI_Barrier(c);
        double x = 0;
        switch (v) {
          case 0:
          case 1:
          case 3:
            x = slot_exchange_ns(*t, rank, bytes, mine, got, iters, sent, received, v == 1, v == 3);
            break;
          case 2:
            x = slot_exchange_ns(*t1, rank, bytes, mine, got, iters, sent1, received1, false,
                                 false);
            break;
          case 4:
          case 5:
            x = raw_exchange_ns(channel(mine_region), channel(peer_region), bytes, mine, got, iters,
                                v == 5, raw_apart);
            break;
          case 6:
          case 7:
            x = raw_exchange_ns(inline_channel(mine_region), inline_channel(peer_region), bytes,
                                mine, got, iters, v == 7, raw_inline);
            break;
          case 8: {
            const double t0 = now_ns();
            for (long i = 0; i < iters; ++i)
              MPI_Sendrecv(mine.data(), static_cast<int>(bytes), MPI_BYTE, 1 - rank, 0, got.data(),
                           static_cast<int>(bytes), MPI_BYTE, 1 - rank, 0, c, MPI_STATUS_IGNORE);
            x = (now_ns() - t0) / static_cast<double>(iters);
            break;
          }
          case 10:
            x = chunked_exchange_ns(*t, rank, bytes, 4, mine, got, iters, sent, received);
            break;
          case 11: {
            const double t0 = now_ns();
            for (long i = 0; i < iters; ++i)
              MPI_Bcast(rank == 0 ? mine.data() : got.data(), static_cast<int>(bytes), MPI_BYTE, 0,
                        c);
            x = (now_ns() - t0) / static_cast<double>(iters);
            break;
          }
          case 12:
            x = slot_exchange_ns(*t4, rank, bytes, mine, got, iters, sent4, received4, false, true);
            break;
          case 13:
            x = slot_exchange_ns(*t1, rank, bytes, mine, got, iters, sent1, received1, false, true);
            break;
          default: {
            const double t0 = now_ns();
            for (long i = 0; i < iters; ++i)
              MPI_Allreduce(mine.data(), got.data(), static_cast<int>(bytes / 8), MPI_DOUBLE,
                            MPI_SUM, c);
            x = (now_ns() - t0) / static_cast<double>(iters);
          }
        }
        ns[v] = max_over_ranks(x, c);
      }
      if (rank == 0 && r > 0) {
        for (int v = 0; v < kVariants; ++v)
          std::printf(
              "{\"kind\":\"exchange\",\"round\":%ld,\"bytes\":%lld,\"variant\":\"%s\","
              "\"ns\":%.1f}\n",
              r, static_cast<long long>(bytes), names[v], ns[v]);
        std::fflush(stdout);
      }
    }
  }
  MPI_Win_free(&win);
  t.reset();
  t1.reset();
  t4.reset();
  MPI_Comm_free(&c);
  MPI_Comm_free(&c1);
  MPI_Comm_free(&c4);
}

// --check-order N: the ring's guarantees when the reader releases out of order (what the
// executor does when a pair's receives become ready out of program order). Rank 0 sends messages
// 0 .. N-1 of 8 .. 1024 bytes, each filled from its number; rank 1 reads every message that has
// arrived among the next K, in a pseudo-random order, holds up to K - 1 of them read but not
// released, and releases them in another pseudo-random order, checking each message's bytes
// when it reads it and again when it releases it: a sender that overwrote a slot before its
// message was released would show as changed bytes (or as a stamp never seen: a hang). Prints
// "check-order ok N" on rank 0, or the first bad message, and exits 1.
int run_check_order(const Args& args, int rank, int size) {
  if (size != 2) {
    if (rank == 0) std::fprintf(stderr, "--check-order needs exactly 2 ranks\n");
    return 1;
  }
  const auto n = static_cast<uint64_t>(args.num("check-order", 100000));
  MPI_Comm c = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  std::string why;
  auto t = ShmTransport::create(c, why);
  int bad = 0;
  if (!t || t->slot_bytes() < 8192) {
    if (rank == 0) std::fprintf(stderr, "--check-order: no transport (%s)\n", why.c_str());
    bad = 1;
  }
  MPI_Bcast(&bad, 1, MPI_INT, 0, c);
  if (bad) return 1;
  // 8-8192 bytes, a third each in the heads (8-240), the small bodies (241-4096, a window of
  // four) and the bodies (4097-8192).
  auto bytes_of = [](uint64_t q) {
    const uint64_t h = (q * 2654435761u) >> 3;
    switch (h % 3) {
      case 0:
        return static_cast<size_t>(8 + h % 233);
      case 1:
        return static_cast<size_t>(241 + h % 3856);
      default:
        return static_cast<size_t>(4097 + h % 4096);
    }
  };
  t->map_bodies(1 - rank, 4096, rank == 0);
  t->map_bodies(1 - rank, 8192, rank == 0);
  auto byte_at = [](uint64_t q, size_t i) {
    return static_cast<std::byte>((q * 131 + i * 7) & 0xff);
  };
  uint64_t rng = 88172645463325252u;
  auto next_rand = [&rng] {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  };
  constexpr uint64_t kRing = 32;
  uint64_t first_bad = UINT64_MAX;
  if (rank == 0) {
    for (uint64_t q = 0; q < n; ++q) {
      std::byte* s = nullptr;
      while ((s = t->send_slot(1, q, static_cast<int64_t>(bytes_of(q)))) == nullptr) {
      }
      for (size_t i = 0; i < bytes_of(q); ++i) s[i] = byte_at(q, i);
      t->publish(1, q);
    }
  } else {
    std::vector<int> state(n, 0);  // 0 not read, 1 read and held, 2 released
    std::vector<uint64_t> held;
    uint64_t lowest = 0;  // every message before it released
    auto check = [&](uint64_t q, const std::byte* d) {
      for (size_t i = 0; i < bytes_of(q); ++i)
        if (d[i] != byte_at(q, i)) first_bad = std::min(first_bad, q);
    };
    while (lowest < n) {
      // Read one message of the next K, picked at random, if it has arrived.
      const uint64_t q = lowest + next_rand() % kRing;
      if (q < n && state[q] == 0) {
        if (const std::byte* d = t->recv_slot(0, q, static_cast<int64_t>(bytes_of(q)))) {
          check(q, d);
          state[q] = 1;
          held.push_back(q);
        }
      }
      // Release one held message, picked at random, now and then or when K - 1 are held.
      if (!held.empty() && (held.size() >= kRing - 1 || next_rand() % 4 == 0)) {
        const size_t k = next_rand() % held.size();
        const uint64_t h = held[k];
        held[k] = held.back();
        held.pop_back();
        if (const std::byte* d = t->recv_slot(
                0, h, static_cast<int64_t>(bytes_of(h)))) {  // still its stamp and its bytes
          check(h, d);
        } else {
          first_bad = std::min(first_bad, h);
        }
        t->release(0, h);
        state[h] = 2;
        while (lowest < n && state[lowest] == 2) ++lowest;
      }
    }
  }
  unsigned long long fb = first_bad, worst = 0;
  MPI_Allreduce(&fb, &worst, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, c);
  if (rank == 0) {
    if (worst == UINT64_MAX) {
      std::printf("check-order ok %llu\n", static_cast<unsigned long long>(n));
    } else {
      std::printf("check-order bad: message %llu\n", worst);
    }
  }
  t.reset();
  MPI_Comm_free(&c);
  return worst == UINT64_MAX ? 0 : 1;
}

// Two communicators: one set up with shared memory, one while COLLKIT_SHM=0 (the transport is
// chosen once per communicator, on its first collkit call).
void make_comms(MPI_Comm& with, MPI_Comm& without) {
  MPI_Comm_dup(MPI_COMM_WORLD, &with);
  MPI_Comm_dup(MPI_COMM_WORLD, &without);
  ck_barrier(with, "barrier:dissemination");
  const char* old = std::getenv("COLLKIT_SHM");
  const std::string saved = old ? old : "";
  setenv("COLLKIT_SHM", "0", 1);
  ck_barrier(without, "barrier:dissemination");
  if (old) {
    setenv("COLLKIT_SHM", saved.c_str(), 1);
  } else {
    unsetenv("COLLKIT_SHM");
  }
}

// The data's own cost of one call of n 16-byte segments: each segment reduced (4 ints, SUM) or
// copied from one buffer of the call's size into another, one segment at a time as the
// executor moves them.
void floor_call(bool reduce, const std::vector<int>& src, std::vector<int>& dst, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    if (reduce) {
      fast_reduce(&src[static_cast<size_t>(4 * k)], &dst[static_cast<size_t>(4 * k)], 4, MPI_INT,
                  MPI_SUM);
    } else {
      std::memcpy(&dst[static_cast<size_t>(4 * k)], &src[static_cast<size_t>(4 * k)], 16);
    }
    asm volatile("" ::: "memory");  // one segment at a time, as the executor does
  }
}

// --segments: ns per segment of each (algorithm, segments, variant), rounds interleaved.
void run_segments(const Args& args, int rank) {
  const long rounds = args.num("rounds", 3);
  std::vector<int64_t> segs;
  for (const auto& s : split(args.get("segments", "1024,65536,1048576"), ','))
    segs.push_back(std::strtoll(s.c_str(), nullptr, 10));
  const auto algos =
      split(args.get("algos", "reduce:binomial(seg=16),bcast:pipeline(seg=16)"), ',');
  const char* variants[3] = {"shm", "p2p", "floor"};
  // --variants shm,floor: only these (e.g. under valgrind, to count one variant's instructions).
  const auto wanted = split(args.get("variants", "shm,p2p,floor"), ',');
  bool on[3];
  for (int v = 0; v < 3; ++v)
    on[v] = std::find(wanted.begin(), wanted.end(), variants[v]) != wanted.end();
  for (long r = 0; r < rounds; ++r) {
    for (int64_t n : segs) {
      const auto elems = static_cast<size_t>(4 * n);
      std::vector<int> sb(elems, 1), rb(elems, 0);
      // Calls per sample: about 64 Ki segments' worth, at least one.
      const long iters = std::max<long>(1, static_cast<long>((int64_t{1} << 16) / n));
      for (const auto& algo : algos) {
        const bool reduce = algo.rfind("reduce:", 0) == 0;
        // Fresh communicators for each row: a plan of 1 Mi segments is tens of MiB, and the
        // cache keeps every plan of a communicator until it is freed.
        MPI_Comm with = MPI_COMM_NULL, without = MPI_COMM_NULL;
        make_comms(with, without);
        double ns[3] = {0, 0, 0};
        for (int k = 0; k < 3; ++k) {
          const int v = static_cast<int>((k + r) % 3);
          if (!on[v]) continue;
          MPI_Comm comm = v == 1 ? without : with;
          auto call = [&] {
            if (v == 2) {
              floor_call(reduce, sb, rb, n);
            } else if (reduce) {
              ck_reduce(sb.data(), rb.data(), static_cast<MPI_Count>(elems), MPI_INT, MPI_SUM, 0,
                        comm, algo.c_str());
            } else {
              ck_bcast(rb.data(), static_cast<MPI_Count>(elems), MPI_INT, 0, comm, algo.c_str());
            }
          };
          call();  // builds the plan, warms the buffers
          MPI_Barrier(comm);
          const double t0 = now_ns();
          for (long i = 0; i < iters; ++i) call();
          const double per = (now_ns() - t0) / static_cast<double>(iters * n);
          ns[v] = max_over_ranks(per, comm);
        }
        if (rank == 0) {
          for (int v = 0; v < 3; ++v)
            if (on[v])
              std::printf(
                  "{\"kind\":\"segments\",\"round\":%ld,\"algorithm\":\"%s\",\"segments\":%lld,"
                  "\"bytes\":%lld,\"variant\":\"%s\",\"transport\":\"%s\",\"ns_per_segment\":%.2f,"
                  "\"calls\":%ld}\n",
                  r, algo.c_str(), static_cast<long long>(n), static_cast<long long>(16 * n),
                  variants[v],
                  v == 2 ? "local" : json_escape(ck_transport(v == 1 ? without : with)).c_str(),
                  ns[v], iters);
          std::fflush(stdout);
        }
        MPI_Comm_free(&with);
        MPI_Comm_free(&without);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Args args(argc, argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long rounds = args.num("rounds", 15), block = args.num("block", 200);
  const long limit_iters = args.num("limit-iters", 100000);
  const auto colls =
      split(args.get("collectives", "allreduce,reduce,bcast,barrier,allgather,alltoall"), ',');
  std::map<std::string, std::string> algo = {
      {"allreduce", "allreduce:rd"}, {"reduce", "reduce:binomial"},
      {"bcast", "bcast:binomial"},   {"barrier", "barrier:dissemination"},
      {"allgather", "allgather:rd"}, {"alltoall", "alltoall:pairwise"}};
  for (const auto& a : split(args.get("algos", ""), ',')) algo[a.substr(0, a.find(':'))] = a;
  std::vector<int64_t> sizes;
  for (const auto& s : split(args.get("sizes", "8,64,1024,4096,65536"), ','))
    sizes.push_back(std::strtoll(s.c_str(), nullptr, 10));

  if (!args.get("check-order", "").empty()) {
    const int rc = run_check_order(args, rank, size);
    MPI_Finalize();
    return rc;
  }
  if (!args.get("exchange", "").empty()) {
    run_exchange(args, rank, size);
    MPI_Finalize();
    return 0;
  }
  if (!args.get("segments", "").empty()) {
    run_segments(args, rank);
    MPI_Finalize();
    return 0;
  }
  MPI_Comm with = MPI_COMM_NULL, without = MPI_COMM_NULL;
  make_comms(with, without);
  if (rank == 0) {
    std::printf("{\"kind\":\"transport\",\"with\":\"%s\",\"without\":\"%s\"}\n",
                json_escape(ck_transport(with)).c_str(),
                json_escape(ck_transport(without)).c_str());
  }

  // 1. The physical limit, then the MPI's own 8-byte exchange and allreduce, same job.
  if (size == 2) {
    std::string why;
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    auto t = ShmTransport::create(c, why);
    for (int rep = 0; rep < 3; ++rep) {
      double shm_ns = -1;
      if (t) {
        MPI_Barrier(c);
        shm_exchange_ns(*t, rank, limit_iters / 10);  // warm-up
        MPI_Barrier(c);
        shm_ns = max_over_ranks(shm_exchange_ns(*t, rank, limit_iters), c);
      }
      double a = 1, b = 0;
      MPI_Barrier(c);
      double t0 = now_ns();
      for (long i = 0; i < limit_iters; ++i)
        MPI_Sendrecv(&a, 1, MPI_DOUBLE, 1 - rank, 0, &b, 1, MPI_DOUBLE, 1 - rank, 0, c,
                     MPI_STATUS_IGNORE);
      const double sr = max_over_ranks((now_ns() - t0) / static_cast<double>(limit_iters), c);
      MPI_Barrier(c);
      t0 = now_ns();
      for (long i = 0; i < limit_iters; ++i) MPI_Allreduce(&a, &b, 1, MPI_DOUBLE, MPI_SUM, c);
      const double ar = max_over_ranks((now_ns() - t0) / static_cast<double>(limit_iters), c);
      if (rank == 0)
        std::printf(
            "{\"kind\":\"limit\",\"repeat\":%d,\"shm_exchange_ns\":%.1f,\"mpi_sendrecv_8B_ns\":%."
            "1f,"
            "\"mpi_allreduce_8B_ns\":%.1f%s}\n",
            rep, shm_ns, sr, ar, t ? "" : (",\"shm\":\"" + json_escape(why) + "\"").c_str());
    }
    t.reset();
    MPI_Comm_free(&c);
  }

  // 2. native / collkit with shm / collkit without, interleaved.
  const char* variants[3] = {"native", "shm", "p2p"};
  for (const auto& coll : colls) {
    for (int64_t bytes : sizes) {
      if (coll == "barrier" && bytes != sizes.front()) continue;
      const int64_t b = coll == "barrier" ? 0 : bytes;
      Call call{coll, b, {}, {}};
      const size_t cap = static_cast<size_t>(std::max<int64_t>(b, 8)) * static_cast<size_t>(size);
      call.sb.assign(cap, 1);
      call.rb.assign(cap, 0);
      std::vector<double> t[3];
      const std::string& name = algo[coll];
      for (long r = 0; r < rounds + 1; ++r) {  // round 0 warms up
        for (int k = 0; k < 3; ++k) {
          const int v = static_cast<int>((k + r) % 3);
          MPI_Comm comm = v == 2 ? without : with;
          const char* a = v == 0 ? "native" : name.c_str();
          call.run(comm, a);
          MPI_Barrier(comm);
          const double t0 = now_ns();
          for (long i = 0; i < block; ++i) call.run(comm, a);
          const double per = max_over_ranks((now_ns() - t0) / static_cast<double>(block), comm);
          if (r > 0) t[v].push_back(per);
        }
      }
      if (rank == 0) {
        std::vector<double> shm_vs_native, p2p_vs_native, shm_vs_p2p;
        for (size_t r = 0; r < t[0].size(); ++r) {
          shm_vs_native.push_back(t[1][r] / t[0][r]);
          p2p_vs_native.push_back(t[2][r] / t[0][r]);
          shm_vs_p2p.push_back(t[1][r] / t[2][r]);
        }
        std::printf(
            "{\"kind\":\"row\",\"collective\":\"%s\",\"algorithm\":\"%s\",\"bytes\":%lld,"
            "\"P\":%d,\"%s_ns\":%.1f,\"%s_ns\":%.1f,\"%s_ns\":%.1f,\"shm_vs_native\":%.3f,"
            "\"p2p_vs_native\":%.3f,\"shm_vs_p2p\":%.3f,\"rounds\":%ld,\"block\":%ld,"
            "\"native_min_ns\":%.1f,\"shm_min_ns\":%.1f,\"p2p_min_ns\":%.1f}\n",
            coll.c_str(), name.c_str(), static_cast<long long>(b), size, variants[0],
            summarize(t[0]).median, variants[1], summarize(t[1]).median, variants[2],
            summarize(t[2]).median, summarize(shm_vs_native).median,
            summarize(p2p_vs_native).median, summarize(shm_vs_p2p).median, rounds, block,
            summarize(t[0]).min, summarize(t[1]).min, summarize(t[2]).min);
        std::fflush(stdout);
      }
    }
  }
  MPI_Comm_free(&with);
  MPI_Comm_free(&without);
  MPI_Finalize();
  return 0;
}
