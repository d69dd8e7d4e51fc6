// collkit_calibrate: the measurements behind a machine profile (`collkit calibrate`). Ranks 0 and
// 1 measure the point-to-point path between them; the fits are made in Python
// (collkit.profile). Every kernel is run in rounds, and within a round size by size with every
// kernel in turn, so a machine that is busy for a while spoils a little of every series rather
// than one series wholly (the machine may be shared).
//
// Kernels, after Hoefler, Lichei, Rehm, "Low-Overhead LogGP Parameter Assessment for Modern
// Interconnection Networks" (IPDPS 2007, Netgauge's LogGP method):
//   prtt1   PRTT(1, 0, s): a ping-pong; rank 0 sends s bytes, rank 1 answers with s bytes.
//   prttn   PRTT(n, 0, s): rank 0 sends n messages back to back, rank 1 answers the last; the
//           gap g + (s-1) G = (PRTT(n,0,s) - PRTT(1,0,s)) / (n - 1).
//   o_s     the time MPI_Send blocks, the receive already posted and the sends spaced (so no
//           send waits for the one before): o_s + (s-1) O.
//   o_r     the time MPI_Recv takes for a message that has already arrived (rank 1 waits well
//           past its arrival before it calls MPI_Recv).
//   late    the time MPI_Send blocks when the receive is posted `late-us` after the send starts:
//           an eager send returns at once, a rendezvous send waits for the receiver. The
//           transport threshold S is where this jumps.
//   reduce  collkit's local reduction (the executor's path: built-in ops as plain loops, others
//           through MPI_Reduce_local) per datatype and op, on rank 0.
//   copy    memcpy of s bytes, on rank 0.
// The same four point-to-point kernels through collkit's shared-memory transport (mpi/src/shm.cpp,
// the executor's path for messages up to its slot size between ranks of one node), as the
// executor uses it: a send waits for its slot, copies the data in and publishes it; a receive
// waits for the slot's stamp, copies the data out and releases it:
//   shm_prtt1, shm_prttn, shm_o_s (copy in and publish, the slot free), shm_o_r (copy out and
//   release, the message there), at the sizes up to the slot size. Its threshold is the slot
//   size (a line {"kind": "shm", "slot_bytes": ...}; "slot_bytes": 0 and "why" when the transport
//   is off: COLLKIT_SHM=0, or the ranks on different nodes).
//
//   collkit_calibrate [--sizes 1,8,...] [--iters 50] [--rounds 3] [--n 8] [--late-us 200]
//                     [--reduce-sizes 1024,...] [--types double,float,int,char]
//                     [--ops sum,prod,max,min]
// Prints one JSON line per (kernel, size[, datatype, op]) on rank 0, times in microseconds, the
// samples of all rounds pooled.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bench_common.hpp"
#include "fast_reduce.hpp"
#include "shm.hpp"

using namespace collkit::mpi;

namespace {

constexpr int kTag = 7;

double now() {
  return MPI_Wtime();
}

// Busy-wait (a sleep would let the scheduler take the core for longer than asked).
void spin(double seconds) {
  const double until = now() + seconds;
  while (now() < until) {
  }
}

struct Pair {
  int rank = 0;
  int peer = 1;
  bool active = false;  // ranks 0 and 1 measure; the others wait
  MPI_Comm comm = MPI_COMM_WORLD;
};

// PRTT(n, 0, s) as rank 0 sees it, in microseconds.
double prtt(const Pair& p, std::vector<char>& buf, int bytes, int n) {
  MPI_Barrier(p.comm);
  if (p.rank == 0) {
    const double t0 = now();
    for (int i = 0; i < n; ++i) MPI_Send(buf.data(), bytes, MPI_CHAR, 1, kTag, p.comm);
    MPI_Recv(buf.data(), bytes, MPI_CHAR, 1, kTag, p.comm, MPI_STATUS_IGNORE);
    return (now() - t0) * 1e6;
  }
  for (int i = 0; i < n; ++i)
    MPI_Recv(buf.data(), bytes, MPI_CHAR, 0, kTag, p.comm, MPI_STATUS_IGNORE);
  MPI_Send(buf.data(), bytes, MPI_CHAR, 0, kTag, p.comm);
  return 0;
}

// How long MPI_Send blocks: the receive posted before the send (o_s), or `late` seconds after it
// (eager or rendezvous). Rank 0's view, microseconds.
double send_time(const Pair& p, std::vector<char>& buf, int bytes, double late) {
  MPI_Request req = MPI_REQUEST_NULL;
  if (p.rank == 1 && late <= 0) MPI_Irecv(buf.data(), bytes, MPI_CHAR, 0, kTag, p.comm, &req);
  MPI_Barrier(p.comm);
  double t = 0;
  if (p.rank == 0) {
    const double t0 = now();
    MPI_Send(buf.data(), bytes, MPI_CHAR, 1, kTag, p.comm);
    t = (now() - t0) * 1e6;
  } else if (late > 0) {
    spin(late);
    MPI_Recv(buf.data(), bytes, MPI_CHAR, 0, kTag, p.comm, MPI_STATUS_IGNORE);
  } else {
    MPI_Wait(&req, MPI_STATUS_IGNORE);
  }
  // Both sides done before the next sample; the next barrier keeps sends from overlapping.
  MPI_Barrier(p.comm);
  return t;
}

// How long MPI_Recv takes for a message that arrived `wait` seconds ago (rank 1's view,
// returned to rank 0).
double recv_time(const Pair& p, std::vector<char>& buf, int bytes, double wait) {
  MPI_Barrier(p.comm);
  double t = 0;
  if (p.rank == 0) {
    MPI_Send(buf.data(), bytes, MPI_CHAR, 1, kTag, p.comm);
    MPI_Recv(&t, 1, MPI_DOUBLE, 1, kTag + 1, p.comm, MPI_STATUS_IGNORE);
  } else {
    spin(wait);
    const double t0 = now();
    MPI_Recv(buf.data(), bytes, MPI_CHAR, 0, kTag, p.comm, MPI_STATUS_IGNORE);
    t = (now() - t0) * 1e6;
    MPI_Send(&t, 1, MPI_DOUBLE, 0, kTag + 1, p.comm);
  }
  return t;
}

// The shared-memory kernels: messages numbered per direction, as the executor numbers them.
struct Shm {
  ShmTransport* t = nullptr;
  uint64_t sent = 0, received = 0;

  void send(int peer, const std::vector<char>& buf, int bytes) {
    std::byte* s = nullptr;
    while ((s = t->send_slot(peer, sent, bytes)) == nullptr) {
    }
    std::memcpy(s, buf.data(), static_cast<size_t>(bytes));
    t->publish(peer, sent++);
  }
  void recv(int peer, std::vector<char>& buf, int bytes) {
    const std::byte* r = nullptr;
    while ((r = t->recv_slot(peer, received, bytes)) == nullptr) {
    }
    std::memcpy(buf.data(), r, static_cast<size_t>(bytes));
    t->release(peer, received++);
  }
};

// PRTT(n, 0, s) through the slots, rank 0's view, microseconds.
double shm_prtt(const Pair& p, Shm& m, std::vector<char>& buf, int bytes, int n) {
  MPI_Barrier(p.comm);
  if (p.rank == 0) {
    const double t0 = now();
    for (int i = 0; i < n; ++i) m.send(1, buf, bytes);
    m.recv(1, buf, bytes);
    return (now() - t0) * 1e6;
  }
  for (int i = 0; i < n; ++i) m.recv(0, buf, bytes);
  m.send(0, buf, bytes);
  return 0;
}

// A send through a free slot (o_s + (s-1) O), rank 0's view; the receiver takes it afterwards.
double shm_send_time(const Pair& p, Shm& m, std::vector<char>& buf, int bytes) {
  MPI_Barrier(p.comm);
  double t = 0;
  if (p.rank == 0) {
    const double t0 = now();
    m.send(1, buf, bytes);
    t = (now() - t0) * 1e6;
  } else {
    m.recv(0, buf, bytes);
  }
  MPI_Barrier(p.comm);
  return t;
}

// A receive of a message published `wait` seconds ago (o_r + (s-1) O), rank 1's view returned
// to rank 0.
double shm_recv_time(const Pair& p, Shm& m, std::vector<char>& buf, int bytes, double wait) {
  MPI_Barrier(p.comm);
  double t = 0;
  if (p.rank == 0) {
    m.send(1, buf, bytes);
    MPI_Recv(&t, 1, MPI_DOUBLE, 1, kTag + 1, p.comm, MPI_STATUS_IGNORE);
  } else {
    spin(wait);
    const double t0 = now();
    m.recv(0, buf, bytes);
    t = (now() - t0) * 1e6;
    MPI_Send(&t, 1, MPI_DOUBLE, 0, kTag + 1, p.comm);
  }
  return t;
}

struct TypeOp {
  std::string type_name, op_name;
  MPI_Datatype type;
  MPI_Op op;
  int elem;
};

MPI_Datatype type_of(const std::string& t, int* elem) {
  if (t == "double") return *elem = 8, MPI_DOUBLE;
  if (t == "float") return *elem = 4, MPI_FLOAT;
  if (t == "int") return *elem = 4, MPI_INT;
  if (t == "char") return *elem = 1, MPI_UNSIGNED_CHAR;
  return MPI_DATATYPE_NULL;
}

MPI_Op op_of(const std::string& o) {
  if (o == "sum") return MPI_SUM;
  if (o == "prod") return MPI_PROD;
  if (o == "max") return MPI_MAX;
  if (o == "min") return MPI_MIN;
  return MPI_OP_NULL;
}

// One local reduction of `bytes` as the executor does it, microseconds.
double reduce_time(const TypeOp& k, std::vector<char>& a, std::vector<char>& b, int bytes) {
  const int n = bytes / k.elem;
  const double t0 = now();
  if (!fast_reduce(a.data(), b.data(), n, k.type, k.op))
    MPI_Reduce_local(a.data(), b.data(), n, k.type, k.op);
  return (now() - t0) * 1e6;
}

double copy_time(std::vector<char>& a, std::vector<char>& b, int bytes) {
  const double t0 = now();
  std::memcpy(b.data(), a.data(), static_cast<size_t>(bytes));
  // Keep the copy from being elided: its result is read.
  volatile char sink = b[static_cast<size_t>(bytes) / 2];
  (void)sink;
  return (now() - t0) * 1e6;
}

void print(const std::string& kind, int bytes, const std::string& extra,
           const std::vector<double>& v) {
  const Stats st = summarize(v);
  std::printf(
      "{\"kind\": \"%s\", \"bytes\": %d%s, \"iterations\": %zu, \"min\": %.4f, \"q1\": %.4f, "
      "\"median\": %.4f, \"q3\": %.4f, \"mean\": %.4f, \"max\": %.4f}\n",
      kind.c_str(), bytes, extra.c_str(), v.size(), st.min, st.q1, st.median, st.q3, st.mean,
      st.max);
}

std::vector<int> int_list(const std::string& s) {
  std::vector<int> out;
  for (const auto& x : split(s, ',')) out.push_back(std::atoi(x.c_str()));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Args args(argc, argv);
  Pair p;
  int P = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &p.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  if (P < 2) {
    if (p.rank == 0) std::fprintf(stderr, "error: calibration needs at least 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  // Ranks 0 and 1 measure, on a communicator of their own; the others only wait.
  p.active = p.rank < 2;
  MPI_Comm_split(MPI_COMM_WORLD, p.active ? 0 : MPI_UNDEFINED, p.rank, &p.comm);
  const auto sizes = int_list(args.get(
      "sizes", "1,8,64,256,1024,4096,8192,16384,32768,65536,131072,262144,524288,1048576"));
  const auto reduce_sizes = int_list(args.get("reduce-sizes", "1024,16384,131072,1048576"));
  const long long iters = std::max(1LL, args.num("iters", 50));
  const long long rounds = std::max(1LL, args.num("rounds", 3));
  const int n = static_cast<int>(std::max(2LL, args.num("n", 8)));
  const double late = static_cast<double>(std::max(1LL, args.num("late-us", 200))) * 1e-6;
  const auto types = split(args.get("types", "double,float,int,char"), ',');
  const auto ops = split(args.get("ops", "sum,prod,max,min"), ',');
  std::vector<TypeOp> typeops;
  for (const auto& t : types)
    for (const auto& o : ops) {
      TypeOp k{t, o, MPI_DATATYPE_NULL, op_of(o), 0};
      k.type = type_of(t, &k.elem);
      if (k.type == MPI_DATATYPE_NULL || k.op == MPI_OP_NULL) {
        if (p.rank == 0)
          std::fprintf(stderr, "error: unknown datatype '%s' or op '%s'\n", t.c_str(), o.c_str());
        MPI_Finalize();
        return 2;
      }
      typeops.push_back(k);
    }
  int largest = 1;
  for (int s : sizes) largest = std::max(largest, s);
  for (int s : reduce_sizes) largest = std::max(largest, s);
  for (int s : sizes)
    if (s < 0) {
      if (p.rank == 0) std::fprintf(stderr, "error: sizes must be >= 0\n");
      MPI_Finalize();
      return 2;
    }
  std::vector<char> buf(static_cast<size_t>(largest) + 64, 1), other(buf.size(), 2);

  if (p.rank == 0) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    std::string l(lib, static_cast<size_t>(len));
    l = l.substr(0, l.find('\n'));
    std::printf(
        "{\"kind\": \"meta\", \"mpi_library\": \"%s\", \"P\": %d, \"n\": %d, "
        "\"late_us\": %.1f, \"rounds\": %lld, \"iters\": %lld}\n",
        json_escape(l).c_str(), P, n, late * 1e6, rounds, iters);
    std::fflush(stdout);
  }

  // collkit's shared-memory transport between ranks 0 and 1 (collective over their
  // communicator), and the sizes it carries.
  std::unique_ptr<ShmTransport> shm;
  std::string shm_why;
  if (p.active) shm = ShmTransport::create(p.comm, shm_why);
  Shm sm;
  sm.t = shm.get();
  std::vector<int> shm_sizes;
  if (shm)
    for (int s : sizes)
      if (shm->carries(1 - p.rank, s)) {
        shm_sizes.push_back(s);
        shm->map_bodies(1 - p.rank, s, true);  // as a plan maps them: no page fault timed
        shm->map_bodies(1 - p.rank, s, false);
      }
  if (p.rank == 0) {
    std::printf("{\"kind\": \"shm\", \"slot_bytes\": %lld, \"why\": \"%s\"}\n",
                shm ? static_cast<long long>(shm->slot_bytes()) : 0LL,
                json_escape(shm ? shm->describe() : shm_why).c_str());
    std::fflush(stdout);
  }

  // samples[(kernel, size)]
  std::map<std::pair<std::string, int>, std::vector<double>> samples;
  std::map<std::tuple<int, int>, std::vector<double>> reduce_samples;  // (typeop index, size)
  if (p.active) {
    for (int s : sizes)  // warm-up: the first touch of each size's buffers and connections
      for (int w = 0; w < 3; ++w) prtt(p, buf, s, 1);
    for (int s : shm_sizes)
      for (int w = 0; w < 3; ++w) shm_prtt(p, sm, buf, s, 1);
    for (long long r = 0; r < rounds; ++r) {
      // Rotate the order of sizes each round.
      for (size_t k = 0; k < sizes.size(); ++k) {
        const int s = sizes[(k + static_cast<size_t>(r)) % sizes.size()];
        // The receiver's wait for o_r: well past the message's arrival (at 0.5 GB/s or more).
        for (long long i = 0; i < iters; ++i) {
          const double t1 = prtt(p, buf, s, 1);
          const double tn = prtt(p, buf, s, n);
          const double os = send_time(p, buf, s, 0);
          const double rt = recv_time(p, buf, s, 20e-6 + s * 2e-9);
          const double lt = i % 5 == 0 ? send_time(p, buf, s, late) : -1;
          if (p.rank == 0) {
            samples[{"prtt1", s}].push_back(t1);
            samples[{"prttn", s}].push_back(tn);
            samples[{"o_s", s}].push_back(os);
            samples[{"o_r", s}].push_back(rt);
            if (lt >= 0) samples[{"late", s}].push_back(lt);
          }
          if (std::find(shm_sizes.begin(), shm_sizes.end(), s) == shm_sizes.end()) continue;
          const double st1 = shm_prtt(p, sm, buf, s, 1);
          const double stn = shm_prtt(p, sm, buf, s, n);
          const double sos = shm_send_time(p, sm, buf, s);
          const double srt = shm_recv_time(p, sm, buf, s, 20e-6 + s * 2e-9);
          if (p.rank == 0) {
            samples[{"shm_prtt1", s}].push_back(st1);
            samples[{"shm_prttn", s}].push_back(stn);
            samples[{"shm_o_s", s}].push_back(sos);
            samples[{"shm_o_r", s}].push_back(srt);
          }
        }
      }
      if (p.rank == 0) {
        for (size_t k = 0; k < typeops.size(); ++k)
          for (int s : reduce_sizes)
            for (long long i = 0; i < iters; ++i)
              reduce_samples[{static_cast<int>(k), s}].push_back(
                  reduce_time(typeops[k], buf, other, s - s % typeops[k].elem));
        for (int s : reduce_sizes)
          for (long long i = 0; i < iters; ++i)
            samples[{"copy", s}].push_back(copy_time(buf, other, s));
      }
    }
  }
  if (p.rank == 0) {
    for (const auto& [key, v] : samples) {
      std::string extra;
      if (key.first == "prttn" || key.first == "shm_prttn") extra = ", \"n\": " + std::to_string(n);
      if (key.first == "late") extra = ", \"late_us\": " + std::to_string(late * 1e6);
      print(key.first, key.second, extra, v);
    }
    for (const auto& [key, v] : reduce_samples) {
      const auto& k = typeops[static_cast<size_t>(std::get<0>(key))];
      const int s = std::get<1>(key);
      print("reduce", s - s % k.elem,
            ", \"datatype\": \"" + k.type_name + "\", \"op\": \"" + k.op_name + "\"", v);
    }
    std::fflush(stdout);
  }
  shm.reset();
  if (p.comm != MPI_COMM_NULL) MPI_Comm_free(&p.comm);
  MPI_Finalize();
  return 0;
}
