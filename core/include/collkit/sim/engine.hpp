// The simulator: a discrete-event engine over the per-rank DAGs of a Schedule (its parts, one file
// per concern, are listed in docs/design.md).
//
// Semantics (the same in every model, see model.hpp for the costs):
// - An op becomes ready when all its deps (ops of its own rank) have completed; a rank's ops with
//   no deps are ready when the rank starts (time 0, or its arrival skew).
// - Messages between an ordered pair of ranks match in program order: the k-th send of q to r
//   (by op index) is received by the k-th recv of r from q.
// - Postal models: a recv is posted when its deps complete and completes once its message has
//   arrived; a send completes when its message has arrived (postal) or when the send port has
//   pushed it out (pipelined postal: alpha_r + n beta after it started); local ops run one at a
//   time per rank, in the order they became ready.
// - LogP / LogGP / LogGOPS: LogGOPSim's rules (Hoefler, Schneider, Lumsdaine, 2010). Ops and
//   messages wait in one queue ordered by time, then by insertion number; an op enters it when
//   its deps are complete, at the time its CPU (and for a send its send gap) is free, and runs
//   when taken out if they still are, else waits until they are (in a lot per rank and set of
//   resources, first come by insertion number first served). A message is taken out at its
//   receiver o + L after its send started and processed (o + max((n-1)O, (n-1)G) of CPU) once
//   the receiver's CPU and receive gap are free, posted receive or not; a receive is posted when
//   taken out and completes once posted and its message processed. An eager send completes when
//   its overhead is spent, a rendezvous send (n > S) when its message meets its posted receive.
// - Noise: every op draws one delay that lengthens its busy time (a send's port or CPU time,
//   which delays its arrival too; a recv's completion; a local op's run); or a LogGOPSim noise
//   trace is replayed in time (NoiseTrace), each rank from its own seeded offset.
// - Several CPUs and NICs per host (Op::cpu, Op::nic, GOAL's cpu N / nic N): each has its own
//   timeline; a message is processed on the receiver's CPU and NIC numbered as its send's.
// - A rank with wildcard receives (kAnySource) matches as LogGOPSim does: an arriving message
//   takes the first posted receive that fits, else waits in the unexpected queue.
//
// Scale: a rank's program is generated when the simulation reaches the rank (when it starts, or
// when a message reaches it before it starts) and read into a compact form that is shared: the
// peers of an op are kept relative to the rank (as an XOR distance and as a distance mod P), so
// ranks that run the same program up to that relabelling (every rank of recursive doubling,
// halving, rings, Bruck; a few kinds of rank in a binomial tree) share one copy. What a rank
// holds of its own while it runs is one 16-bit pending counter per op, released when the rank
// finishes. A Bound is simulated without ever holding its Schedule. Events are 24 bytes in a
// radix heap keyed by the bits of their (non-negative, monotone) double time, due at one time in
// insertion order; in the postal models completions at the current time skip the heap. Per-op
// times are only kept when asked for.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "collkit/registry.hpp"
#include "collkit/schedule.hpp"
#include "collkit/sim/model.hpp"
#include "collkit/sim/noise.hpp"
#include "collkit/sim/topology.hpp"

namespace collkit::sim {

struct SimOptions {
  ModelParams model;
  Distribution noise;  // per-op delay
  Distribution skew;   // per-rank start time
  Topology topology;
  int64_t trials = 1;
  uint64_t seed = 0;
  bool record = false;  // keep per-op start / end, messages and the critical path (trial 0)
  // Polled every 2^16 events: true stops the run with SimInterrupted (Ctrl-C from Python).
  std::function<bool()> interrupted;
};

// Thrown by simulate() when SimOptions::interrupted said stop.
struct SimInterrupted {};

struct SimResult {
  int64_t P = 0;
  std::vector<double> finish;                // per rank, trial 0: when its last op completed (ns)
  std::vector<double> makespans;             // per trial (ns)
  int64_t messages = 0;                      // per trial
  int64_t bytes = 0;                         // per trial
  int64_t ops = 0;                           // per trial
  int64_t events = 0;                        // ops + messages, all trials
  double load_seconds = 0, run_seconds = 0;  // wall clock
  double load_cpu_seconds = 0, run_cpu_seconds = 0;  // CPU time of the process
  size_t memory_bytes = 0;                           // the engine's arrays
  int64_t programs = 0;         // distinct programs among the ranks (up to relabelling of peers)
  int64_t programs_read = 0;    // ranks whose program was generated or read; the others shared
                                // the program of a rank of their generator's program_class
  int64_t peak_ranks_held = 0;  // most ranks holding state at once (reached, not yet finished)

  // With SimOptions::record (trial 0). Ops are numbered globally, rank by rank, in op order.
  std::vector<uint64_t> rank_op_begin;       // P + 1
  std::vector<double> op_start, op_end;      // recv: start = posted
  std::vector<uint64_t> critical_path;       // global op indices, first to last
  std::vector<uint64_t> msg_send, msg_recv;  // global op indices of each message
  std::vector<double> msg_depart, msg_arrive;
};

SimResult simulate(const Schedule& schedule, const SimOptions& options);
// Pulls each rank's program from the generator: the Schedule is never held.
SimResult simulate(const Bound& bound, const SimOptions& options);
// Reads a schedule as it is parsed (e.g. collkit::read_text over a file): `read` calls its first
// argument with the header, then its second with each rank's program in order. Each program is
// interned as it comes (shared among ranks that run the same one) and never held whole.
using ScheduleReader = std::function<void(const std::function<void(const ScheduleHeader&)>&,
                                          const std::function<void(const RankView&)>&)>;
SimResult simulate_stream(const ScheduleReader& read, const SimOptions& options);

}  // namespace collkit::sim
