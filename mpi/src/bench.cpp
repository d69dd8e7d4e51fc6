// collkit_bench: times collectives the way OSU / IMB / ReproMPI do, for collkit's algorithms and
// the MPI's native call, and prints one JSON object per (algorithm, size) on rank 0's stdout.
//
// Per measured size: `warmup` untimed calls; then iterations, each a synchronisation (a barrier,
// or a start window on clocks aligned to rank 0 as in ReproMPI / SKaMPI) followed by a block of
// `block` back-to-back calls; a rank's time is the block's time / block; an iteration's time is the
// maximum over ranks (the collective is done when its last rank is). Statistics are over those
// per-iteration maxima, in microseconds; --raw adds the samples. Each row also gives the median
// of the per-iteration means over ranks (rank_mean_median_us; --raw: rank_mean_samples), what
// IMB's t_avg and OSU's average latency report: a rank that leaves a call early (a bcast's
// root) counts for its own time, as in a program that goes on computing. --validate first checks
// the algorithm's result against the native call on the same data.
//
// Patterns (--pattern), the ways programs call a collective (docs/tuning.md, "Patterns"):
//   back_to_back  the default: after the iteration's synchronisation, `block` calls on one buffer
//                 set, timed together (IMB's -sync 0 within a block; at --block 1 one call after
//                 a barrier).
//   barrier       a PMPI_Barrier before every call, each call timed alone (IMB's default): an
//                 iteration's time is the mean of its `block` calls, the barriers not counted.
//   rotate_root   as back_to_back, the root moving one rank each call (IMB's -root_shift 1);
//                 rooted collectives only.
//   buffers       as back_to_back, each call on the next of several buffer sets whose total is
//                 twice the last-level cache (a program whose calls use other buffers).
//   evict         as barrier, with local work before every call that writes an array of twice
//                 the last-level cache (IMB's -off_cache -1); the work is not timed.
// Each row and block line says its pattern; the meta line says the last-level cache assumed.
//
// Blocks and rounds: a row's iterations are split over `rounds` blocks. With --interleave (what
// `collkit bench` and `collkit tune` use), each size is measured round by round, and in each round
// the native call is re-measured around every candidate: native, c1, native, c2, ..., native, so
// drift hits native and candidates alike and every candidate has a native block on either side.
// Before and after every block, a core-to-core probe (a cache-line ping-pong between the first
// two ranks of a node through an MPI shared-memory window, the fastest round trip in ns) tells
// whether the machine's state moved. Each block prints a "block" line (its median, quartiles and
// the probes), each (algorithm, size) a "row" line over all its blocks.
//
//   collkit_bench --collective allreduce --algos rd,native --sizes 8,64,1024 [--datatype double]
//                 [--iters 200] [--warmup 20] [--block 1] [--sync barrier|window] [--window-us N]
//                 [--max-ms 2000] [--root 0] [--raw] [--validate] [--native-label mpich:ring]
//                 [--interleave] [--rounds 1]
//                 [--pattern back_to_back|barrier|rotate_root|buffers|evict] [--barrier ALGO]
//                 [--vectors 3,0,5;8,8,8]
// --barrier: the barrier before each collkit call of the patterns barrier and evict, "native"
// (the default, PMPI_Barrier) or a collkit barrier algorithm: what a program's MPI_Barrier runs
// under a table that routes it (a bcast right after a barrier starts where that barrier left its
// ranks). The native call keeps the MPI's own barrier: the program without collkit
// (--native-after-barrier: native's calls after --barrier's too, what a barrier rule costs the
// MPI's own calls after it). A row's "barrier" says which ran before its calls ("": the MPI's).
//
// The irregular collectives (allgatherv, alltoallv, gatherv, scatterv, reduce_scatter) take
// their count vectors with --vectors, `;` between the measured points and `,` between a point's
// entries, in elements: P entries (alltoallv: P^2, row r what rank r sends), alike on every rank.
// Each point replaces a size: its rows and blocks say "point": its index, and "bytes": the sum
// of its entries times the type size (the whole vector's; alltoallv: the whole matrix's).
// Buffers are packed, block b right after block b - 1, as the regular call's.
#include <mpi.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "calls.hpp"
#include "collkit.h"
#include "collkit/collective.hpp"
#include "collkit/schedule.hpp"

using namespace collkit;
using namespace collkit::mpi;

namespace {

enum class Pattern { back_to_back, barrier, rotate_root, buffers, evict };
constexpr const char* kPatternNames[] = {"back_to_back", "barrier", "rotate_root", "buffers",
                                         "evict"};

const char* pattern_name(Pattern p) {
  return kPatternNames[static_cast<int>(p)];
}

bool timed_alone(Pattern p) {
  return p == Pattern::barrier || p == Pattern::evict;
}

// The last-level cache of this machine in bytes: sysfs's largest cache level of cpu0, else
// 32 MiB (what the pattern `buffers` and `evict` must exceed; a guess too large costs time only).
size_t llc_bytes() {
  size_t best = 0;
  for (int i = 0; i < 8; ++i) {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
    std::string v;
    if (!(f >> v) || v.empty()) continue;
    size_t mult = 1;
    if (v.back() == 'K') mult = size_t{1} << 10;
    if (v.back() == 'M') mult = size_t{1} << 20;
    const size_t n = static_cast<size_t>(std::atoll(v.c_str())) * mult;
    best = std::max(best, n);
  }
  return best > 0 ? best : size_t{32} << 20;
}

struct Setup {
  Collective collective = Collective::allreduce;
  const CollectiveSpec* spec = nullptr;
  MPI_Datatype type = MPI_DOUBLE;
  std::string type_name;
  int elem = 8;
  int root = 0;
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, size = 1;
  Pattern pattern = Pattern::back_to_back;
  // The barrier before each call of the patterns barrier and evict: "native" (PMPI_Barrier), or a
  // collkit barrier algorithm, the one a program's MPI_Barrier runs under a table routing it.
  std::string barrier = "native";
  bool native_after_barrier = false;  // --native-after-barrier: native's calls after it too
  size_t llc = size_t{32} << 20;
  // The irregular collectives' points (--vectors): for them `count` below is a point's index.
  std::vector<std::vector<int64_t>> vectors;
  bool irregular() const { return spec->counts != Counts::none; }
  // A point's call at `at`: its header, and its arguments with the buffers left out (made once
  // per point and root, so that no call pays for building them).
  mutable std::map<std::pair<long long, int>, CallArgs> vargs;
  ScheduleHeader header(long long point, int at) const {
    ScheduleHeader h;
    h.collective = collective;
    h.P = size;
    h.elem_size = elem;
    h.root = spec->rooted ? at : 0;
    h.counts = vectors[static_cast<size_t>(point)];
    for (int64_t c : h.counts) h.count = std::max(h.count, c);
    return h;
  }
  CallArgs& irregular_args(long long point, int at) const {
    auto it = vargs.find({point, at});
    if (it != vargs.end()) return it->second;
    CallArgs& a = vargs[{point, at}];
    const ScheduleHeader h = header(point, at);
    const BlockLayout in(h, Io::in, rank), out(h, Io::out, rank);
    // A side of P blocks takes counts and displacements; a side of one block its count.
    const auto side = [&](const BlockLayout& l, const BufferShape& shape,
                          std::vector<MPI_Count>& counts, std::vector<MPI_Aint>& displs,
                          MPI_Count& one) {
      if ((spec->rooted && rank == at ? shape.at_root : shape.elsewhere) != Blocks::P) {
        if (l.blocks() == 1) one = l.len(0);
        return;
      }
      for (int64_t b = 0; b < l.blocks(); ++b) {
        counts.push_back(l.len(b));
        displs.push_back(l.offset(b));
      }
    };
    side(in, spec->in, a.sendcounts, a.sdispls, a.sendcount);
    side(out, spec->out, a.recvcounts, a.rdispls, a.recvcount);
    // MPI_Reduce_scatter's one vector is its recvcounts, read for both sides.
    if (spec->counts == Counts::per_rank && a.recvcounts.empty()) a.recvcounts = a.sendcounts;
    return a;
  }
  // Bytes of `in` and `out` on this rank for `count` elements per block (the spec's shapes), at
  // `root`; with a rotating root, the most any root needs.
  size_t in_bytes(long long count, int at) const {
    if (irregular())
      return static_cast<size_t>(BlockLayout(header(count, at), Io::in, rank).elems()) * elem;
    return static_cast<size_t>(buffer_elems(spec->in, size, count, at, rank)) * elem;
  }
  size_t out_bytes(long long count, int at) const {
    if (irregular())
      return static_cast<size_t>(BlockLayout(header(count, at), Io::out, rank).elems()) * elem;
    return static_cast<size_t>(buffer_elems(spec->out, size, count, at, rank)) * elem;
  }
  // The count of a measured size (irregular: the size is the point's index).
  long long count_of(long long size) const { return irregular() ? size : size / elem; }
  // A row's "bytes" for `count` (irregular: the point's entries times the type size).
  long long row_bytes(long long count) const {
    if (!irregular()) return count * elem;
    long long total = 0;
    for (int64_t c : vectors[static_cast<size_t>(count)]) total += c;
    return total * elem;
  }
  size_t in_bytes(long long count) const { return most(count, true); }
  size_t out_bytes(long long count) const { return most(count, false); }
  size_t most(long long count, bool in) const {
    if (pattern != Pattern::rotate_root) return in ? in_bytes(count, root) : out_bytes(count, root);
    size_t m = 0;
    for (int r = 0; r < size; ++r) m = std::max(m, in ? in_bytes(count, r) : out_bytes(count, r));
    return m;
  }
};

struct Buffers {
  std::vector<unsigned char> in, out;
};

int call(const Setup& s, const std::string& algo, void* in, void* out, long long count, int root) {
  if (s.irregular()) {
    CallArgs& v = s.irregular_args(count, root);
    v.sendbuf = in;
    v.recvbuf = out;
    v.sendtype = v.recvtype = s.type;
    v.op = MPI_SUM;
    v.root = root;
    v.comm = s.comm;
    return algo == "native" ? call_mpi(s.collective, v)
                            : call_collkit(s.collective, v, algo.c_str());
  }
  CallArgs a;
  a.sendbuf = in;
  a.sendcount = a.recvcount = count;
  a.sendtype = a.recvtype = s.type;
  a.recvbuf = out;
  a.op = MPI_SUM;
  a.root = root;
  a.comm = s.comm;
  // "native": the MPI's own call, not through collkit's C API.
  return algo == "native" ? call_mpi(s.collective, a) : call_collkit(s.collective, a, algo.c_str());
}

int call(const Setup& s, const std::string& algo, Buffers& b, long long count) {
  return call(s, algo, b.in.data(), b.out.data(), count, s.root);
}

// Small integers in every type: sums are exact, so validation can compare bitwise.
void fill_values(const Setup& s, std::vector<unsigned char>& buf) {
  const size_t n = buf.size() / static_cast<size_t>(s.elem);
  for (size_t i = 0; i < n; ++i) {
    const int v = static_cast<int>((static_cast<long long>(i) * 7 + s.rank * 3) % 5);
    unsigned char* p = buf.data() + i * static_cast<size_t>(s.elem);
    if (s.type == MPI_DOUBLE) {
      double x = v;
      std::memcpy(p, &x, 8);
    } else if (s.type == MPI_FLOAT) {
      float x = static_cast<float>(v);
      std::memcpy(p, &x, 4);
    } else if (s.type == MPI_INT) {
      int x = v;
      std::memcpy(p, &x, 4);
    } else {
      *p = static_cast<unsigned char>(v);
    }
  }
}

void fill(const Setup& s, Buffers& b) {
  fill_values(s, b.in);
  fill_values(s, b.out);  // bcast's root sends from `out`
}

// Offset of this rank's clock from rank 0's: the ping-pong with the smallest round trip wins.
double clock_offset(const Setup& s) {
  double best_rtt = 1e30, offset = 0;
  for (int peer = 1; peer < s.size; ++peer) {
    for (int k = 0; k < 20; ++k) {
      if (s.rank == 0) {
        double t0 = MPI_Wtime(), tr = 0;
        MPI_Send(&t0, 1, MPI_DOUBLE, peer, 7, s.comm);
        MPI_Recv(&tr, 1, MPI_DOUBLE, peer, 7, s.comm, MPI_STATUS_IGNORE);
        double t1 = MPI_Wtime();
        double msg[2] = {t1 - t0, tr - (t0 + t1) / 2};
        MPI_Send(msg, 2, MPI_DOUBLE, peer, 8, s.comm);
      } else if (s.rank == peer) {
        double t0 = 0;
        MPI_Recv(&t0, 1, MPI_DOUBLE, 0, 7, s.comm, MPI_STATUS_IGNORE);
        double tr = MPI_Wtime();
        MPI_Send(&tr, 1, MPI_DOUBLE, 0, 7, s.comm);
        double msg[2];
        MPI_Recv(msg, 2, MPI_DOUBLE, 0, 8, s.comm, MPI_STATUS_IGNORE);
        if (msg[0] < best_rtt) {
          best_rtt = msg[0];
          offset = msg[1];
        }
      }
    }
  }
  return offset;  // local time - rank 0 time
}

struct Measure {
  std::vector<double> samples;    // per-iteration maxima, microseconds
  std::vector<double> rank_mean;  // per-iteration means over ranks (IMB's t_avg, OSU's average)
  long long late = 0;             // window mode: iterations dropped because a rank missed the start
  int error = MPI_SUCCESS;
};

// What a pattern keeps between calls: the buffer sets of `buffers` (one arena, a set every
// `set_bytes`, cache-line aligned), the array `evict` writes, the calls made (`rotate_root`'s root
// is the next rank each call). Every rank makes the same calls in the same order, so they agree
// on the root and the set without a word.
struct Calls {
  const Setup& s;
  std::vector<unsigned char> arena;
  size_t set_bytes = 0, in_part = 0, sets = 1, next_set = 0;
  long long arena_count = -1;
  std::vector<unsigned char> evict;
  unsigned char stamp = 0;
  long long calls = 0;

  explicit Calls(const Setup& setup) : s(setup) {
    if (s.pattern == Pattern::evict) evict.assign(2 * s.llc, 0);
  }

  // The buffer sets for `count`, their total twice the last-level cache, each filled as `b` is.
  void prepare(long long count, const Buffers& b) {
    if (s.pattern != Pattern::buffers || arena_count == count) return;
    in_part = (b.in.size() + 63) / 64 * 64;
    set_bytes = in_part + (b.out.size() + 63) / 64 * 64;
    sets = std::max<size_t>(2, (2 * s.llc + set_bytes - 1) / set_bytes);
    arena.assign(sets * set_bytes, 0);
    for (size_t k = 0; k < sets; ++k) {
      std::memcpy(arena.data() + k * set_bytes, b.in.data(), b.in.size());
      std::memcpy(arena.data() + k * set_bytes + in_part, b.out.data(), b.out.size());
    }
    arena_count = count;
    next_set = 0;
  }

  int one(const std::string& algo, Buffers& b, long long count) {
    int root = s.root;
    if (s.pattern == Pattern::rotate_root)
      root = static_cast<int>((s.root + calls) % static_cast<long long>(s.size));
    ++calls;
    if (s.pattern == Pattern::buffers) {
      unsigned char* at = arena.data() + next_set * set_bytes;
      next_set = (next_set + 1) % sets;
      return call(s, algo, at, at + in_part, count, root);
    }
    return call(s, algo, b.in.data(), b.out.data(), count, root);
  }

  // evict's local work before a call: every byte of an array twice the last-level cache written
  // (the asm keeps the compiler from dropping stores nobody reads).
  void before_call() {
    if (evict.empty()) return;
    std::memset(evict.data(), ++stamp, evict.size());
    asm volatile("" : : "r"(evict.data()) : "memory");
  }

  // The barrier before a call timed alone: the MPI's own before the MPI's own call (the program
  // without collkit), --barrier's before collkit's (the program under the table).
  void sync(const std::string& algo) {
    if ((algo == "native" && !s.native_after_barrier) || s.barrier == "native") {
      PMPI_Barrier(s.comm);
      return;
    }
    CallArgs a;
    a.comm = s.comm;
    call_collkit(Collective::barrier, a, s.barrier.c_str());
  }

  // barrier and evict: `block` calls, each after its local work and a barrier, timed alone;
  // returns this rank's seconds in the calls.
  double alone(const std::string& algo, Buffers& b, long long count, long long block) {
    double t = 0;
    for (long long k = 0; k < block; ++k) {
      before_call();
      sync(algo);
      const double t0 = MPI_Wtime();
      one(algo, b, count);
      t += MPI_Wtime() - t0;
    }
    return t;
  }
};

Measure measure(const Setup& s, Calls& c, const std::string& algo, Buffers& b, long long count,
                long long iters, long long warmup, long long block, bool window, double window_s,
                double offset, double max_seconds) {
  Measure m;
  c.prepare(count, b);
  for (long long i = 0; i < std::max(1LL, warmup) && m.error == MPI_SUCCESS; ++i)
    m.error = c.one(algo, b, count);
  int err = m.error;
  MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_INT, MPI_MAX, s.comm);
  if (err != MPI_SUCCESS) {
    m.error = err;
    return m;
  }
  const bool alone = timed_alone(s.pattern);

  // Pilot: how long one block takes (the pattern's local work and barriers included), to fit
  // the iterations in max_seconds and size the window.
  MPI_Barrier(s.comm);
  double t0 = MPI_Wtime();
  if (alone)
    c.alone(algo, b, count, block);
  else
    for (long long k = 0; k < block; ++k) c.one(algo, b, count);
  double pilot = MPI_Wtime() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &pilot, 1, MPI_DOUBLE, MPI_MAX, s.comm);
  const double per_iter = pilot + (window ? window_s : 0.0) + 1e-6;
  const long long fit = static_cast<long long>(max_seconds / per_iter);
  iters = std::max(10LL, std::min(iters, fit));

  std::vector<double> local(static_cast<size_t>(iters)), bad(static_cast<size_t>(iters), 0.0);
  const double win = window ? std::max(window_s, 4 * pilot + 20e-6) : 0.0;
  double start0 = 0;
  if (window) {
    if (s.rank == 0) start0 = MPI_Wtime() + 10 * win + 1e-3;
    MPI_Bcast(&start0, 1, MPI_DOUBLE, 0, s.comm);
  }
  for (long long i = 0; i < iters; ++i) {
    if (alone) {  // each call after its own barrier: those are the synchronisation
      local[static_cast<size_t>(i)] =
          c.alone(algo, b, count, block) / static_cast<double>(block) * 1e6;
      continue;
    }
    double begin;
    if (window) {
      begin = start0 + static_cast<double>(i) * win + offset;  // on this rank's clock
      double now = MPI_Wtime();
      if (now > begin) bad[static_cast<size_t>(i)] = 1;
      while (now < begin) now = MPI_Wtime();
    } else {
      MPI_Barrier(s.comm);
      begin = MPI_Wtime();
    }
    for (long long k = 0; k < block; ++k) c.one(algo, b, count);
    local[static_cast<size_t>(i)] = (MPI_Wtime() - begin) / static_cast<double>(block) * 1e6;
  }
  std::vector<double> worst(local.size()), sum(local.size()), anybad(bad.size());
  MPI_Reduce(local.data(), worst.data(), static_cast<int>(iters), MPI_DOUBLE, MPI_MAX, 0, s.comm);
  MPI_Reduce(local.data(), sum.data(), static_cast<int>(iters), MPI_DOUBLE, MPI_SUM, 0, s.comm);
  MPI_Reduce(bad.data(), anybad.data(), static_cast<int>(iters), MPI_DOUBLE, MPI_MAX, 0, s.comm);
  for (size_t i = 0; i < worst.size(); ++i) {
    if (anybad[i] > 0) {
      ++m.late;
    } else {
      m.samples.push_back(worst[i]);
      m.rank_mean.push_back(sum[i] / s.size);
    }
  }
  return m;
}

// 1: same result as native at `root`, 0: differs, -1: error.
int validate_at(const Setup& s, const std::string& algo, Buffers& b, long long count, int root) {
  fill(s, b);
  // Where the output is written over (every rank but a bcast's root), start from other bytes.
  if (!(s.spec->root_input_in_out && s.rank == root)) std::memset(b.out.data(), 0xEE, b.out.size());
  Buffers ref = b;
  int rc = call(s, algo, b.in.data(), b.out.data(), count, root);
  int rc2 = call(s, "native", ref.in.data(), ref.out.data(), count, root);
  int ok = rc == MPI_SUCCESS && rc2 == MPI_SUCCESS;
  // The output the spec's postcondition speaks of on this rank.
  if (ok && applies_to(s.spec->post.ranks, root, s.rank) &&
      std::memcmp(b.out.data(), ref.out.data(), s.out_bytes(count, root)) != 0)
    ok = 0;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, s.comm);
  return ok;
}

// The result checked at the root the pattern starts from; rotate_root: at the first roots it
// moves to (up to 8) and the last rank too.
int validate(const Setup& s, const std::string& algo, Buffers& b, long long count) {
  if (s.pattern != Pattern::rotate_root) return validate_at(s, algo, b, count, s.root);
  int ok = 1;
  for (int k = 0; k < s.size && ok == 1; ++k) {
    if (k >= 8 && k != s.size - 1) continue;
    ok = validate_at(s, algo, b, count, (s.root + k) % s.size);
  }
  return ok;
}

// A number for JSON: NaN (no probe) is null.
std::string json_number(double x) {
  if (std::isnan(x)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", x);
  return buf;
}

// The core-to-core probe: one cache line in an MPI-3 shared-memory window, bounced between the
// first two ranks of each node. Rank 0 of the node writes an odd number and waits for the next
// even one, written by rank 1; the probe is the fastest round trip of at least kMinTrips (up to
// kTrips within kProbeSeconds, never past kProbeMaxSeconds). The fastest, not the median: on a
// loaded machine most round trips wait for a descheduled partner, while the fastest still shows
// where the two cores are. On a VM the same two ranks see ~115 ns or ~510 ns depending on where
// the host places them (docs/tuning.md), and the winner of a comparison can change with it. A
// waiting side yields the CPU now and then, so that a partner sharing its core gets to answer.
struct Probe {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Win win = MPI_WIN_NULL;
  long long* line = nullptr;  // null: fewer than two ranks on this node, no probe
  int node_rank = 0;
};

constexpr int kTrips = 400;
constexpr int kMinTrips = 8;
constexpr double kProbeSeconds = 2e-3;
constexpr double kProbeMaxSeconds = 20e-3;
constexpr int kSpinsBeforeYield = 4096;

Probe make_probe(MPI_Comm comm, int rank) {
  Probe p;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &p.node);
  int n = 1;
  MPI_Comm_size(p.node, &n);
  MPI_Comm_rank(p.node, &p.node_rank);
  void* base = nullptr;
  // No shared-memory window (an MPI without one): no probe, rather than an abort.
  MPI_Comm_set_errhandler(p.node, MPI_ERRORS_RETURN);
  // Every rank of the node takes part in the window; only node rank 0 gives it memory.
  const MPI_Aint bytes = p.node_rank == 0 ? 128 : 0;
  if (MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, p.node, &base, &p.win) != MPI_SUCCESS) {
    p.win = MPI_WIN_NULL;
    return p;
  }
  MPI_Aint size = 0;
  int disp = 1;
  void* at = nullptr;
  MPI_Win_shared_query(p.win, 0, &size, &disp, &at);
  if (n >= 2 && at != nullptr) p.line = static_cast<long long*>(at);
  if (p.line && p.node_rank == 0) std::atomic_ref<long long>(*p.line).store(0);
  MPI_Barrier(p.node);
  return p;
}

void free_probe(Probe& p) {
  if (p.win != MPI_WIN_NULL) MPI_Win_free(&p.win);
  if (p.node != MPI_COMM_NULL) MPI_Comm_free(&p.node);
}

// Median ns per round trip on this node (NAN where there is no probe); collective over `comm`.
double probe(const Probe& p, MPI_Comm comm) {
  double ns = NAN;
  MPI_Barrier(comm);
  if (p.line && p.node_rank <= 1) {
    std::atomic_ref<long long> f(*p.line);
    using clock = std::chrono::steady_clock;
    if (p.node_rank == 0) {
      f.store(0);
      MPI_Barrier(p.node);
      std::vector<double> trips;
      trips.reserve(kTrips);
      const auto start = clock::now();
      for (long long k = 0; k < kTrips; ++k) {
        const auto t0 = clock::now();
        f.store(2 * k + 1);
        for (int spins = 0; f.load() != 2 * k + 2;)
          if (++spins % kSpinsBeforeYield == 0) sched_yield();
        const auto t1 = clock::now();
        trips.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
        const double spent = std::chrono::duration<double>(t1 - start).count();
        if ((spent > kProbeSeconds && k + 1 >= kMinTrips) || spent > kProbeMaxSeconds) break;
      }
      f.store(-1);  // stop
      ns = summarize(trips).min;
    } else {
      MPI_Barrier(p.node);
      long long expect = 1;
      for (int spins = 0;;) {
        const long long x = f.load();
        if (x == -1) break;
        if (x == expect) {
          f.store(expect + 1);
          expect += 2;
        } else if (++spins % kSpinsBeforeYield == 0) {
          sched_yield();
        }
      }
    }
  } else if (p.line) {
    MPI_Barrier(p.node);
  }
  MPI_Barrier(comm);
  return ns;
}

// What a (algorithm, size) measured over all its blocks, and what it needs between them.
struct State {
  Buffers b;
  int valid = -2;
  bool warmed = false;
  Measure all;  // every block's samples
  std::string error_message;
  double probe_first = NAN, probe_last = NAN;
};

void print_row(const Setup& s, const std::string& collective, const std::string& name,
               const std::string& native_label, long long bytes, const State& done,
               long long rounds, bool interleave, bool do_validate, bool raw, bool window,
               long long block, long long warmup) {
  const Measure& m = done.all;
  const long long count = s.count_of(bytes);
  const bool native = name == "native";
  std::string label = native ? native_label : name;
  if (!native && label.find(':') == std::string::npos) label = collective + ":" + label;
  std::printf(
      "{\"kind\": \"row\", \"collective\": \"%s\", \"algorithm\": \"%s\", \"P\": %d, "
      "\"bytes\": %lld, \"count\": %lld, \"datatype\": \"%s\", \"block\": %lld, "
      "\"sync\": \"%s\", \"pattern\": \"%s\", \"barrier\": \"%s\", \"warmup\": %lld, "
      "\"rounds\": %lld, \"interleaved\": %s, \"probe_rtt_ns_before\": %s, "
      "\"probe_rtt_ns_after\": %s",
      collective.c_str(), json_escape(label).c_str(), s.size, s.row_bytes(count),
      s.row_bytes(count) / s.elem, s.type_name.c_str(), block, window ? "window" : "barrier",
      pattern_name(s.pattern),
      (native && !s.native_after_barrier) || s.barrier == "native" ? ""
                                                                   : json_escape(s.barrier).c_str(),
      warmup, rounds, interleave ? "true" : "false", json_number(done.probe_first).c_str(),
      json_number(done.probe_last).c_str());
  if (s.irregular()) std::printf(", \"point\": %lld", count);
  if (m.error != MPI_SUCCESS) {
    std::printf(", \"error\": \"%s\"}\n", json_escape(done.error_message).c_str());
    std::fflush(stdout);
    return;
  }
  Stats st = summarize(m.samples);
  std::printf(
      ", \"iterations\": %zu, \"late\": %lld, \"min_us\": %.4f, \"q1_us\": %.4f, "
      "\"median_us\": %.4f, \"q3_us\": %.4f, \"mean_us\": %.4f, \"p99_us\": %.4f, "
      "\"max_us\": %.4f",
      m.samples.size(), m.late, st.min, st.q1, st.median, st.q3, st.mean, st.p99, st.max);
  std::printf(", \"rank_mean_median_us\": %.4f", summarize(m.rank_mean).median);
  if (do_validate && !native) std::printf(", \"valid\": %s", done.valid == 1 ? "true" : "false");
  if (!native) std::printf(", \"transport\": \"%s\"", json_escape(ck_transport(s.comm)).c_str());
  if (raw) {
    std::printf(", \"samples\": [");
    for (size_t i = 0; i < m.samples.size(); ++i)
      std::printf("%s%.4f", i ? ", " : "", m.samples[i]);
    std::printf("], \"rank_mean_samples\": [");
    for (size_t i = 0; i < m.rank_mean.size(); ++i)
      std::printf("%s%.4f", i ? ", " : "", m.rank_mean[i]);
    std::printf("]");
  }
  std::printf("}\n");
  std::fflush(stdout);
}

// Algorithm names split at the commas outside parentheses: "rd,rm(c4m4,e4m4)" is two names.
std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')' && depth > 0) --depth;
    if (c == ',' && depth == 0) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Args args(argc, argv);
  Setup s;
  MPI_Comm_rank(s.comm, &s.rank);
  MPI_Comm_size(s.comm, &s.size);
  const std::string collective = args.get("collective", "allreduce");
  if (!is_collective(collective)) {
    if (s.rank == 0)
      std::fprintf(stderr, "error: --collective must be one of %s\n",
                   std::string(collective_names()).c_str());
    MPI_Finalize();
    return 2;
  }
  s.collective = collective_from_string(collective);
  s.spec = &spec_of(s.collective);
  s.type_name = args.get("datatype", s.spec->reduction() ? "double" : "char");
  if (s.type_name == "double") {
    s.type = MPI_DOUBLE;
    s.elem = 8;
  } else if (s.type_name == "float") {
    s.type = MPI_FLOAT;
    s.elem = 4;
  } else if (s.type_name == "int") {
    s.type = MPI_INT;
    s.elem = 4;
  } else if (s.type_name == "char") {
    s.type = MPI_UNSIGNED_CHAR;
    s.elem = 1;
  } else {
    if (s.rank == 0) std::fprintf(stderr, "error: --datatype must be double, float, int or char\n");
    MPI_Finalize();
    return 2;
  }
  s.root = static_cast<int>(args.num("root", 0));
  if (s.spec->rooted && (s.root < 0 || s.root >= s.size)) {
    if (s.rank == 0)
      std::fprintf(stderr, "error: --root %d is not a rank of %d ranks\n", s.root, s.size);
    MPI_Finalize();
    return 2;
  }
  const auto algos = split_names(args.get("algos", "native"));
  std::vector<long long> sizes;
  for (const auto& x : split(args.get("sizes", "8"), ',')) sizes.push_back(std::atoll(x.c_str()));
  if (s.spec->post.kind == Postcondition::Kind::synchronized) sizes = {0};  // no data
  if (s.irregular()) {
    const size_t want = s.spec->counts == Counts::per_pair ? static_cast<size_t>(s.size) * s.size
                                                           : static_cast<size_t>(s.size);
    const std::string text = args.get("vectors", "");
    std::string bad;
    for (const auto& point : split(text, ';')) {
      std::vector<int64_t> v;
      for (const auto& x : split(point, ',')) {
        char* end = nullptr;
        const long long c = std::strtoll(x.c_str(), &end, 10);
        if (x.empty() || *end != '\0' || c < 0 || c > (1LL << 30))
          bad = "'" + x + "' is not a count";
        v.push_back(c);
      }
      if (bad.empty() && v.size() != want)
        bad = std::to_string(v.size()) + " entries, P = " + std::to_string(s.size) + " needs " +
              std::to_string(want);
      s.vectors.push_back(std::move(v));
    }
    if (text.empty()) bad = "it is missing";
    if (!bad.empty()) {
      if (s.rank == 0)
        std::fprintf(stderr, "error: %s takes its counts with --vectors: %s\n", collective.c_str(),
                     bad.c_str());
      MPI_Finalize();
      return 2;
    }
    sizes.clear();
    for (size_t k = 0; k < s.vectors.size(); ++k) sizes.push_back(static_cast<long long>(k));
  }
  const long long iters = args.num("iters", 200), warmup = args.num("warmup", 20);
  const long long block = std::max(1LL, args.num("block", 1));
  const bool window = args.get("sync", "barrier") == "window";
  const double window_s = static_cast<double>(args.num("window-us", 0)) * 1e-6;
  const double max_seconds = static_cast<double>(args.num("max-ms", 2000)) * 1e-3;
  const std::string native_label = args.get("native-label", "native");
  const bool raw = args.flag("raw"), do_validate = args.flag("validate");
  const std::string pattern = args.get("pattern", "back_to_back");
  bool known = false;
  for (int k = 0; k < 5; ++k)
    if (pattern == kPatternNames[k]) {
      s.pattern = static_cast<Pattern>(k);
      known = true;
    }
  const char* refusal = nullptr;
  if (!known)
    refusal = "--pattern must be back_to_back, barrier, rotate_root, buffers or evict";
  else if (s.pattern == Pattern::rotate_root && !s.spec->rooted)
    refusal = "--pattern rotate_root moves the root: it needs a rooted collective";
  else if (timed_alone(s.pattern) && window)
    refusal = "--pattern barrier and evict put a barrier before every call: not with --sync window";
  s.barrier = args.get("barrier", "native");
  s.native_after_barrier = args.flag("native-after-barrier");
  if (refusal == nullptr && s.barrier != "native" && !timed_alone(s.pattern))
    refusal = "--barrier names the barrier before each call of --pattern barrier and evict";
  if (refusal == nullptr && s.barrier != "native") {
    CallArgs a;
    a.comm = s.comm;
    int rc = call_collkit(Collective::barrier, a, s.barrier.c_str());
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, s.comm);
    if (rc != MPI_SUCCESS) refusal = "--barrier: collkit cannot run that barrier algorithm here";
  }
  if (refusal != nullptr) {
    if (s.rank == 0) std::fprintf(stderr, "error: %s\n", refusal);
    MPI_Finalize();
    return 2;
  }
  s.llc = llc_bytes();

  if (s.rank == 0) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    std::string l(lib, static_cast<size_t>(len));
    l = l.substr(0, l.find('\n'));
    std::printf(
        "{\"kind\": \"meta\", \"mpi_library\": \"%s\", \"P\": %d, \"pattern\": \"%s\", "
        "\"llc_bytes\": %zu}\n",
        json_escape(l).c_str(), s.size, pattern_name(s.pattern), s.llc);
    std::fflush(stdout);
  }
  const double offset = window ? clock_offset(s) : 0.0;

  const long long rounds = std::max(1LL, args.num("rounds", 1));
  const bool interleave = args.flag("interleave");
  Probe pr = make_probe(s.comm, s.rank);
  Calls calls(s);

  // The blocks in the order they run. --interleave: size by size, round by round, the native
  // call (when it is among the algorithms) around every candidate: N c1 N c2 ... N. Otherwise
  // algorithm by algorithm, size by size, its rounds back to back.
  struct Step {
    std::string algo;
    long long bytes;
    long long round;
  };
  std::vector<Step> order;
  const bool has_native = std::find(algos.begin(), algos.end(), "native") != algos.end();
  if (interleave) {
    for (long long bytes : sizes)
      for (long long r = 0; r < rounds; ++r) {
        for (const std::string& a : algos) {
          if (a == "native") continue;
          if (has_native) order.push_back({"native", bytes, r});
          order.push_back({a, bytes, r});
        }
        if (has_native) order.push_back({"native", bytes, r});
      }
  } else {
    for (const std::string& a : algos)
      for (long long bytes : sizes)
        for (long long r = 0; r < rounds; ++r) order.push_back({a, bytes, r});
  }
  // Blocks left per (algorithm, size), or per size with --interleave: the rows are printed after
  // the last block they wait for (interleaved: every row of a size after its last native block,
  // so that a reader has each candidate's native blocks on both sides).
  auto group = [&](const Step& st) {
    return std::pair<std::string, long long>(interleave ? "" : st.algo, st.bytes);
  };
  std::map<std::pair<std::string, long long>, long long> left;
  for (const Step& st : order) ++left[group(st)];

  std::map<std::pair<std::string, long long>, State> states;
  const long long block_iters = std::max(5LL, iters / rounds);
  const double block_seconds = max_seconds / static_cast<double>(rounds);

  for (const Step& stp : order) {
    const std::string& a = stp.algo;
    const long long bytes = stp.bytes;
    std::string algo = a;
    const bool native = a == "native";
    if (!native && a.find(':') == std::string::npos) algo = collective + ":" + a;
    const long long count = s.count_of(bytes);
    State& stt = states[{a, bytes}];
    if (!stt.warmed) {
      stt.b.in.assign(std::max<size_t>(s.in_bytes(count), 1), 0);
      stt.b.out.assign(std::max<size_t>(s.out_bytes(count), 1), 0);
      // The native call (forced or not) against itself proves nothing: only collkit rows are
      // checked.
      if (do_validate && !native) stt.valid = validate(s, algo, stt.b, count);
      fill(s, stt.b);
    }
    const std::string label = native ? native_label : algo;
    if (stt.all.error == MPI_SUCCESS) {
      const double before = probe(pr, s.comm);
      Measure m = measure(s, calls, algo, stt.b, count, block_iters, stt.warmed ? 2 : warmup, block,
                          window, window_s, offset, block_seconds);
      const double after = probe(pr, s.comm);
      stt.warmed = true;
      if (std::isnan(stt.probe_first)) stt.probe_first = before;
      stt.probe_last = after;
      if (m.error != MPI_SUCCESS) {
        stt.all.error = m.error;
        stt.error_message = ck_error_message();
      } else {
        stt.all.samples.insert(stt.all.samples.end(), m.samples.begin(), m.samples.end());
        stt.all.rank_mean.insert(stt.all.rank_mean.end(), m.rank_mean.begin(), m.rank_mean.end());
        stt.all.late += m.late;
        if (s.rank == 0) {
          Stats st = summarize(m.samples);
          std::printf(
              "{\"kind\": \"block\", \"algorithm\": \"%s\", \"pattern\": \"%s\", "
              "\"bytes\": %lld, \"point\": %lld, \"round\": %lld, "
              "\"iterations\": %zu, \"q1_us\": %.4f, \"median_us\": %.4f, \"q3_us\": %.4f, "
              "\"probe_rtt_ns_before\": %s, \"probe_rtt_ns_after\": %s}\n",
              json_escape(label).c_str(), pattern_name(s.pattern), s.row_bytes(count),
              s.irregular() ? count : -1LL, stp.round, m.samples.size(), st.q1, st.median, st.q3,
              json_number(before).c_str(), json_number(after).c_str());
          std::fflush(stdout);
        }
      }
    }
    if (--left[group(stp)] > 0) continue;
    for (const std::string& name : algos) {
      if (!interleave && name != a) continue;
      auto it = states.find({name, bytes});
      if (it == states.end()) continue;
      const State done = std::move(it->second);
      states.erase(it);
      if (s.rank == 0)
        print_row(s, collective, name, native_label, bytes, done, rounds, interleave, do_validate,
                  raw, window, block, warmup);
    }
  }
  free_probe(pr);
  MPI_Finalize();
  return 0;
}
