// The discrete-event engine: the run loop and the rules that say when an op starts. See
// engine.hpp for the semantics and model.hpp for the costs. Beside it, one file per concern:
// event_queue.hpp (the queue), model.hpp and models/ (the models' times, behind one interface),
// costs.hpp (local ops' costs), programs.{hpp,cpp} (the program
// store), ranks.hpp (per-rank state and matching), lots.hpp (LogGOPS: ops waiting for busy
// resources), recorder.hpp (the outputs).
#include "collkit/sim/engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "collkit/error.hpp"
#include "costs.hpp"
#include "event_queue.hpp"
#include "lots.hpp"
#include "models/loggops.hpp"
#include "programs.hpp"
#include "ranks.hpp"
#include "recorder.hpp"

namespace collkit::sim {
namespace {

using namespace detail;

// kDone: postal models, an op completes. kOp: LogGOPS, an op is tried (LogGOPSim's queue holds
// ops, each run once its CPU / gap is free, else pushed again at that time).
enum EventType : uint32_t { kStart = 0, kDone = 1, kArrive = 2, kOp = 3 };

// LogGOPS: an op whose deps are all complete, entering the queue once the event is handled.
struct Freed {
  uint64_t order;  // rank << 2 | class (send 0, recv 1, local 2): the order in which they enter
  uint32_t op;
  uint8_t unit;  // its cpu | nic << 4, read while its program is at hand
  double after;  // when the op that freed it completed
  uint32_t rank() const { return static_cast<uint32_t>(order >> 2); }
};
// LogGOPS: a message processed before its receive was posted.
struct Unexpected {
  uint32_t rank, op;  // its send
  double end;         // when its processing ended
};

double elapsed(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
// CPU time of this process: on a shared machine it says what the engine cost, wall time not.
double cpu_now() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

uint64_t key(uint32_t r, uint32_t i) {
  return uint64_t{r} << 32 | i;
}

class Engine {
 public:
  Engine(const ScheduleHeader& h, const SimOptions& opt, Source source, Classes classes = {})
      : opt_(opt),
        model_(make_model(opt.model)),
        lgm_(dynamic_cast<const LogGOPS*>(model_.get())),
        P_(h.P),
        lg_(model_->rules() == Rules::loggops),
        on_arrival_(!lg_ && model_->done_on_arrival()),
        rdv_above_(lg_ ? model_->rendezvous_above() : std::numeric_limits<double>::infinity()),
        store_(check_header(h), h.elem_size, local_costs(opt.model), std::move(source),
               std::move(classes)),
        ranks_(store_, h.P, lg_) {
    if (opt.trials < 1 || opt.trials > 1000000)
      fail(ErrorKind::invalid_argument, "trials must be in [1, 10^6]");
    validate(opt.noise, "noise");
    validate(opt.skew, "skew");
    topo_ = placed(opt.topology, h);
    validate(topo_, h.P);
    has_topology_ = topo_.kind != TopoKind::none || topo_.intra > 0;
    has_noise_ = opt.noise.kind != DistKind::none && opt.noise.kind != DistKind::trace;
    if (opt.noise.kind == DistKind::trace) trace_.emplace(opt.noise);
    if (opt.skew.kind == DistKind::trace)
      fail(ErrorKind::invalid_argument, "skew: a noise trace is replayed as noise, not as skew");
    congestion_ = topo_.link > 0;
  }

  // Ranks fed in order by a reader.
  void intern_view(uint32_t r, const RankView& v) { store_.intern_view(r, v); }

  SimResult run() {
    SimResult res;
    res.P = P_;
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_now();
    if (opt_.record) {  // recording numbers ops rank by rank: every program is needed first
      rec_.start_numbering();
      for (uint32_t r = 0; r < P_; ++r) {
        if (!store_.known(r)) store_.intern(r);
        rec_.number(store_.prog(r).n);
      }
      gen_seconds_ = elapsed(t0);
      gen_cpu_seconds_ = cpu_now() - c0;
    }
    for (int64_t trial = 0; trial < opt_.trials; ++trial) {
      const bool record = opt_.record && trial == 0;
      run_trial(static_cast<uint64_t>(trial), record);
      double makespan = 0;
      for (const RankState& s : ranks_.all()) makespan = std::max(makespan, s.finish);
      if (!std::isfinite(makespan))
        fail(ErrorKind::invalid_argument,
             "the makespan overflowed to infinity: a model parameter, size or duration is too "
             "large for double-precision nanoseconds");
      res.makespans.push_back(makespan);
      res.events += static_cast<int64_t>(store_.total_ops()) + messages_;
      if (trial == 0) {
        res.finish.resize(ranks_.all().size());
        for (size_t r = 0; r < res.finish.size(); ++r) res.finish[r] = ranks_.all()[r].finish;
        res.messages = messages_;
        // A sum of doubles: one message of 2^63 - 8 B rounds to 2^63, past int64 (the cast
        // wrapped to -2^63); the readers' limit (buffer_fits) keeps each message below it.
        res.bytes = bytes_ < 0x1p63 ? static_cast<int64_t>(bytes_) : INT64_MAX;
        res.ops = static_cast<int64_t>(store_.total_ops());
        res.programs = static_cast<int64_t>(store_.count());
        res.programs_read = static_cast<int64_t>(store_.read());
        res.peak_ranks_held = ranks_.peak_held();
      }
      if (record) rec_.take(res);
    }
    res.run_seconds = elapsed(t0) - gen_seconds_;
    res.run_cpu_seconds = cpu_now() - c0 - gen_cpu_seconds_;
    res.load_seconds = gen_seconds_;
    res.load_cpu_seconds = gen_cpu_seconds_;
    res.memory_bytes =
        store_.memory_bytes() + ranks_.memory_bytes() + rec_.memory_bytes() + queue_.memory_bytes();
    return res;
  }

 private:
  static int64_t check_header(const ScheduleHeader& h) {
    if (h.P < 1 || h.P > kMaxP) fail(ErrorKind::invalid_argument, "P must be in [1, 2^31]");
    if (h.elem_size < 1) fail(ErrorKind::invalid_argument, "element size must be >= 1 byte");
    return h.P;
  }

  const Program& prog(uint32_t r) const { return store_.prog(r); }
  const TOp& op(const Program& p, uint32_t i) const { return store_.op(p, i); }
  uint64_t gidx(uint32_t r, uint32_t i) const { return rec_.gidx(r, i); }

  // Rank r is reached: its program is read if it never was, and its counters are set up.
  void hold(uint32_t r) {
    if (!store_.known(r)) store_.intern(r);
    ranks_.hold(r, prog(r));
  }

  // --- one trial ---------------------------------------------------------------------------
  void run_trial(uint64_t trial, bool record) {
    rec_.begin_trial(record, P_);
    record_ = record;
    rng_ = Rng(opt_.seed * 0x9e3779b97f4a7c15ULL + trial * 0xd1b54a32d192ed03ULL + 1);
    trial_seed_ = opt_.seed * 0xd6e8feb86659fd93ULL + trial * 0x9e3779b97f4a7c15ULL + 7;
    if (trace_) cosched_offset_ = Rng(trial_seed_).uniform01() * trace_->period();
    ranks_.reset();
    queue_.clear();
    unexpected_.clear();
    freed_.clear();
    lots_.clear();
    link_free_.clear();
    messages_ = 0;
    bytes_ = 0;
    done_ = 0;
    now_ = 0;
    // The ranks that start at once are read here (generated, on the first trial): the time of
    // this loop is what SimResult reports as loading.
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_now();
    for (uint32_t r = 0; r < P_; ++r) {
      double t = opt_.skew.kind == DistKind::none ? 0.0 : on_grid(sample(opt_.skew, rng_));
      ranks_[r].finish = t;
      if (t == 0.0)
        start_rank(r);
      else
        queue_.push(t, r, kStart);
    }
    if (trial == 0) {
      gen_seconds_ += elapsed(t0);
      gen_cpu_seconds_ += cpu_now() - c0;
    }
    drain();
    while (!queue_.empty()) {
      const Event e = queue_.pop();
      prefetch_ahead();
      now_ = e.t;
      const uint32_t op = e.op_type >> 2;
      switch (e.op_type & 3) {
        case kStart:
          start_rank(e.rank);
          break;
        case kDone:
          complete(e.rank, op);
          break;
        case kArrive:
          if (lg_)
            lg_arrive(e);
          else
            arrive(e.rank, op);
          break;
        case kOp:
          lg_op(e);
          break;
      }
      if (!freed_.empty()) lg_flush();  // LogGOPS: the ops the event freed enter the queue
      drain();
      if ((++polls_ & 0xffff) == 0 && opt_.interrupted && opt_.interrupted())
        throw SimInterrupted{};
    }
    if (done_ != store_.total_ops()) stalled();
  }

  // Events due at the same time are handled rank after rank: start loading the state of the
  // events a few places ahead so that the memory latency overlaps the work in between.
  uint32_t polls_ = 0;  // events since the run started, for SimOptions::interrupted
  void prefetch_ahead() const {
    if (const Event* f = queue_.peek(8)) {
      ranks_.prefetch_state(f->rank);
      store_.prefetch(f->rank);
    }
    if (const Event* f = queue_.peek(4)) ranks_.prefetch_counters(f->rank);
  }

  // Every time the engine adds is on the picosecond grid (model.hpp's on_grid), and so is every
  // sum it forms: ties do not depend on rounding.
  double noise() { return has_noise_ ? on_grid(sample(opt_.noise, rng_)) : 0.0; }
  // A noise trace's detours met by rank r's CPU busy from `start` for `len` ns. Each rank's
  // offset into the trace comes from the run's seed and the trial, so a run is reproducible.
  double detour(uint32_t r, double start, double len) const {
    if (!trace_) return 0.0;
    double offset = cosched_offset_;
    if (opt_.noise.b == 0) {
      Rng x(trial_seed_ ^ ((uint64_t{r} + 1) * 0xbf58476d1ce4e5b9ULL));
      offset = x.uniform01() * trace_->period();
    }
    return on_grid(trace_->detour(offset, start, len));
  }
  void at(double t, uint32_t r, uint32_t i, EventType type) {
    if (t <= now_)
      now_stack_.push_back({r, i});  // only completions are ever due now
    else
      queue_.push(t, r, i << 2 | type);
  }
  void drain() {
    while (!now_stack_.empty()) {
      auto [r, i] = now_stack_.back();
      now_stack_.pop_back();
      complete(r, i);
    }
  }

  void start_rank(uint32_t r) {
    if (ranks_[r].pend == nullptr) hold(r);
    ranks_[r].started = 1;
    const Program& p = prog(r);
    if (lg_) {  // LogGOPSim: the ops without deps enter the queue
      for (uint32_t i = 0; i < p.n; ++i)
        if (ranks_.deps_done(r, p, i)) lg_free(r, p, i, now_, kNone);
      return lg_flush();
    }
    for (uint32_t i = 0; i < p.n; ++i) {
      const uint32_t pd = ranks_.pending(r, p, i);
      if (pd == 0) {
        if (record_ && op(p, i).kind() == OpKind::recv) rec_.op_start[gidx(r, i)] = now_;
        ready(r, i, kNone);
      } else if (pd == kMsgBit) {  // a recv without deps is posted at once
        if (record_) rec_.op_start[gidx(r, i)] = now_;
        if (p.dynamic) post(r, i);
      }
    }
  }

  // Calls f(j) for each successor j of op o of program p, in op order.
  template <class F>
  void for_succ(const Program& p, const TOp& o, F&& f) const {
    const uint32_t s0 = o.succ[0], s1 = o.succ[1];
    if (s0 == kOverflow) {
      const uint32_t* ov = store_.overflow(p, s1);
      for (uint32_t t = 1; t <= ov[0]; ++t) f(ov[t]);
    } else if (s0 != kNoSucc) {
      f(s0);
      if (s1 != kNoSucc) f(s1);
    }
  }

  // --- postal models -----------------------------------------------------------------------
  // Op (r, i) completes now: release its successors.
  void complete(uint32_t r, uint32_t i) {
    const Program& p = prog(r);
    const TOp& o = op(p, i);
    RankState& s = ranks_[r];
    ++done_;
    s.finish = std::max(s.finish, now_);
    const uint64_t k = record_ ? gidx(r, i) : kNone;
    if (record_) rec_.op_end[k] = now_;
    for_succ(p, o, [&](uint32_t j) { release(r, p, j, k); });
    if (++s.done == p.n) ranks_.release(r, p);
  }

  // Op j of rank r has one dep fewer to wait for: op k (global, when recording) completed.
  void release(uint32_t r, const Program& p, uint32_t j, uint64_t k) {
    const uint32_t pd = ranks_.decrement(r, p, j);
    if (pd == 0) {
      if (record_ && op(p, j).kind() == OpKind::recv) rec_.op_start[gidx(r, j)] = now_;
      ready(r, j, k);
    } else if (pd == kMsgBit) {  // recv posted, its message not yet delivered
      if (record_) rec_.op_start[gidx(r, j)] = now_;
      if (p.dynamic) post(r, j);
    }
  }

  // Op (r, i) has everything it needs; `trigger` is the op whose completion made it so.
  void ready(uint32_t r, uint32_t i, uint64_t trigger) {
    const Program& p = prog(r);
    const TOp& o = op(p, i);
    const uint8_t unit = store_.unit_of(p, i);
    switch (o.kind()) {
      case OpKind::send:
        start_send(r, i, o, unit, trigger);
        return;
      case OpKind::recv: {
        if (record_) rec_.cause[gidx(r, i)] = trigger;
        at(on_grid(now_ + noise()), r, i, kDone);
        return;
      }
      default: {
        double& cpu = ranks_.cpu_free(r, unit & 15);
        const double s = std::max(now_, cpu);
        const double e = on_grid(s + o.amount + noise() + detour(r, s, o.amount));
        if (record_) {
          const uint64_t k = gidx(r, i);
          rec_.op_start[k] = s;
          rec_.cause[k] = s > now_ ? rec_.cpu_owner[r] : trigger;
          rec_.cpu_owner[r] = k;
        }
        cpu = e;
        at(e, r, i, kDone);
      }
    }
  }

  // The send takes its port as soon as it is ready (booked ahead if busy).
  void start_send(uint32_t r, uint32_t i, const TOp& o, uint8_t unit, uint64_t trigger) {
    double& port_free = ranks_.send_free(r, unit >> 4);
    const uint32_t dst = store_.peer_of(r, o);
    const double n = o.amount;
    const double extra = has_topology_ ? on_grid(topo_.extra_latency(r, dst)) : 0.0;
    const double d = noise();
    ++messages_;
    bytes_ += n;
    const double s = std::max(now_, port_free);
    const auto at_port = [&](double len) { return detour(r, s, len); };
    const Detour dt{&at_port, [](const void* f, double len) {
                      return (*static_cast<const decltype(at_port)*>(f))(len);
                    }};
    const PortSend c = model_->port_send(s, n, extra, d, dt);
    double arrival = c.arrival;
    port_free = c.port_free;
    if (!on_arrival_) at(c.pushed, r, i, kDone);  // else done on arrival
    if (congestion_) {  // the message enters the network when the send starts
      arrival = on_grid(arrival + link_wait(r, dst, s, n));
      if (on_arrival_) port_free = arrival;  // busy until it arrives
    }
    if (record_) {
      const uint64_t k = gidx(r, i);
      rec_.op_start[k] = s;
      rec_.cause[k] = s > now_ ? rec_.port_owner[r] : trigger;
      rec_.port_owner[r] = k;
      rec_.message(k, s);
    }
    queue_.push(arrival, r, i << 2 | kArrive);
  }

  // The message of send (q, k) reaches its destination; in the postal model the send completes
  // then too.
  void arrive(uint32_t q, uint32_t k) {
    if (on_arrival_) now_stack_.push_back({q, k});
    deliver(q, k);
  }

  // The message of send (q, k) is delivered to its receive.
  void deliver(uint32_t q, uint32_t k) {
    const TOp so = op(prog(q), k);  // a copy: reading rank r's program below may move the store
    const uint32_t r = store_.peer_of(q, so);
    reach(r, q, so);
    const Program& rp = prog(r);
    if (rp.dynamic) {  // the first posted receive that fits, else the unexpected queue
      const uint32_t j = ranks_.take_posted(r, rp, q, k);
      if (j != kUnset) return match(q, k, so, r, j);
      if (record_) rec_.arrived(gidx(q, k), now_);
      return;
    }
    match(q, k, so, r, find_recv(r, rp, q, so.seq()));
  }

  // Receive (r, j) of a wildcard rank is posted: it takes the first unexpected message that fits.
  void post(uint32_t r, uint32_t j) {
    const auto [q, k] = ranks_.take_unexpected(r, prog(r), j);
    if (q == kUnset) return;
    const TOp so = op(prog(q), k);
    match(q, k, so, r, j);
  }

  // The message of send (q, k) is delivered to receive (r, j).
  void match(uint32_t q, uint32_t k, const TOp& so, uint32_t r, uint32_t j) {
    const Program& rp = prog(r);
    check_match(q, k, so, r, rp, j);
    if (record_) rec_.arrived_if_unset(gidx(q, k), now_);
    const uint32_t p = ranks_.clear_msg(r, rp, j);
    // A rank that has not started yet (arrival skew) finds the message when it starts.
    if (p == 0 && ranks_[r].started) ready(r, j, record_ ? gidx(q, k) : kNone);
  }

  // --- LogP / LogGP / LogGOPS: LogGOPSim's rules ----------------------------------------------
  // (Hoefler, Schneider, Lumsdaine, HPDC 2010.) Every op waits in the one queue, ordered by time
  // and then by insertion number: an op enters it when its deps are complete, at the time its
  // rank could run it (a send: its CPU and send gap free; a receive or local op: its CPU free),
  // and when taken out it runs if its CPU (and gap) is still free, else it waits (lots.hpp) until
  // they are. A message is one more entry, taken out at its receiver once the first byte is
  // there, processed once the receiver's CPU and receive gap are free (else it waits likewise),
  // whether or not its receive is posted yet. Ops made ready by one event enter together: ranks
  // in order, in a rank sends, then receives, then local ops.

  static int lg_class(OpKind k) { return k == OpKind::send ? 0 : k == OpKind::recv ? 1 : 2; }
  bool rendezvous(double n) const { return n > rdv_above_; }
  // A message's times, starting now: the built-in model's without a virtual call per message.
  SendTimes send_times(double n) const {
    if (lgm_) return lgm_->send(now_, n);  // on the grid already
    const SendTimes c = model_->send(now_, n);
    return {on_grid(c.cpu_end), on_grid(c.gap_end), on_grid(c.first_byte), on_grid(c.overhead)};
  }
  RecvTimes recv_times(double n) const {
    if (lgm_) return lgm_->recv(now_, n);
    const RecvTimes c = model_->recv(now_, n);
    return {on_grid(c.cpu_end), on_grid(c.gap_end), on_grid(c.overhead)};
  }
  // Op (r, j) of program p has its deps complete: op `trigger` (global, recording) completed at
  // `after`.
  void lg_free(uint32_t r, const Program& p, uint32_t j, double after, uint64_t trigger) {
    freed_.push_back(
        {uint64_t{r} << 2 | lg_class(op(p, j).kind()), j, store_.unit_of(p, j), after});
    if (record_) {
      const uint64_t k = gidx(r, j);
      rec_.cause[k] = trigger;
      rec_.op_start[k] = after;  // when it was ready: replaced when it starts (or is posted)
    }
  }
  // The ops freed by the event just handled enter the queue.
  static bool by_order(const Freed& a, const Freed& b) { return a.order < b.order; }
  void lg_flush() {
    if (freed_.size() > 1 && !std::is_sorted(freed_.begin(), freed_.end(), by_order)) sort_freed();
    for (const Freed& f : freed_) {
      const uint32_t r = f.rank();
      double t = std::max(now_, std::max(f.after, ranks_.cpu_free(r, f.unit & 15)));
      if ((f.order & 3) == 0) t = std::max(t, ranks_.send_free(r, f.unit >> 4));  // a send
      queue_.push(t, r, f.op << 2 | kOp);
    }
    freed_.clear();
  }
  // Stable: a handful of ops, most often of one rank and in order, sorted by insertion. Out of
  // line: most events free one op, or several already in order.
  [[gnu::noinline]] void sort_freed() {
    if (freed_.size() > 32) return std::stable_sort(freed_.begin(), freed_.end(), by_order);
    for (size_t a = 1; a < freed_.size(); ++a) {
      const Freed x = freed_[a];
      size_t b = a;
      for (; b > 0 && freed_[b - 1].order > x.order; --b) freed_[b] = freed_[b - 1];
      freed_[b] = x;
    }
  }

  // Op (r, i) completes at t (>= now): its successors are freed.
  void lg_complete(uint32_t r, uint32_t i, double t) {
    const Program& p = prog(r);
    const TOp& o = op(p, i);
    RankState& s = ranks_[r];
    ++done_;
    s.finish = std::max(s.finish, t);
    const uint64_t k = record_ ? gidx(r, i) : kNone;
    if (record_) rec_.op_end[k] = t;
    for_succ(p, o, [&](uint32_t j) {
      if (ranks_.release_dep(r, p, j)) lg_free(r, p, j, t, k);
    });
    if (++s.done == p.n) ranks_.release(r, p);
  }

  // When the resources of lot lk are free.
  double lot_free(uint64_t lk) {
    const uint32_t r = Lots::rank_of(lk);
    const uint8_t unit = Lots::unit_of(lk);
    const double cpu = ranks_.cpu_free(r, unit & 15);
    switch (Lots::kind_of(lk)) {
      case Lots::kLocal:
        return cpu;
      case Lots::kSend:
        return std::max(cpu, ranks_.send_free(r, unit >> 4));
      default:
        return std::max(cpu, ranks_.recv_free(r, unit >> 4));
    }
  }
  // Event e has run: if it was a runner, the next of its lot enters the queue.
  void next_runner(const Event& e, uint64_t lk) {
    if (const Event* n = lots_.next(e, lk))
      queue_.push_again(
          {std::max(now_, lot_free(lk)), n->rank, n->op_type | Lots::kRunnerBit, n->seq});
  }

  // An op is taken out of the queue.
  void lg_op(const Event& e) {
    const uint32_t r = e.rank, i = (e.op_type & ~Lots::kRunnerBit) >> 2;
    const Program& p = prog(r);
    const TOp& o = op(p, i);
    if (o.kind() == OpKind::recv) {  // posted at once: no CPU or gap to wait for
      return lg_post(r, p, i);
    }
    const uint8_t unit = store_.unit_of(p, i);
    double& cpu = ranks_.cpu_free(r, unit & 15);
    switch (o.kind()) {
      case OpKind::send: {
        const uint64_t lk = Lots::key(r, Lots::kSend, unit);
        if (!lots_.current(e, lk)) return;
        double& gap = ranks_.send_free(r, unit >> 4);
        const double free = std::max(cpu, gap);
        if (free > now_) {
          if (record_) rec_.cause[gidx(r, i)] = cpu >= gap ? rec_.cpu_owner[r] : rec_.port_owner[r];
          return lots_.wait(e, lk, free, queue_);
        }
        lg_send(r, i, o, cpu, gap);
        next_runner(e, lk);
        break;
      }
      default: {
        const uint64_t lk = Lots::key(r, Lots::kLocal, unit);
        if (!lots_.current(e, lk)) return;
        if (cpu > now_) {
          if (record_) rec_.cause[gidx(r, i)] = rec_.cpu_owner[r];
          return lots_.wait(e, lk, cpu, queue_);
        }
        const double end = on_grid(now_ + o.amount + noise() + detour(r, now_, o.amount));
        cpu = end;
        if (record_) {
          const uint64_t k = gidx(r, i);
          rec_.op_start[k] = now_;
          rec_.cpu_owner[r] = k;
        }
        lg_complete(r, i, end);
        next_runner(e, lk);
      }
    }
  }

  // Send (r, i) starts now: its CPU and send gap are free.
  void lg_send(uint32_t r, uint32_t i, const TOp& o, double& cpu, double& gap) {
    const uint32_t dst = store_.peer_of(r, o);
    const double n = o.amount;
    ++messages_;
    bytes_ += n;
    const SendTimes c = send_times(n);
    // A trace's detours over the overhead o, as LogGOPSim counts them.
    const double cpu_end = on_grid(c.cpu_end + noise() + detour(r, now_, c.overhead));
    cpu = cpu_end;
    gap = c.gap_end;
    ranks_[r].finish = std::max(ranks_[r].finish, cpu_end);
    double arrival = c.first_byte;
    if (has_topology_) arrival = on_grid(arrival + on_grid(topo_.extra_latency(r, dst)));
    if (congestion_)  // it enters the network after o
      arrival = on_grid(arrival + link_wait(r, dst, on_grid(now_ + c.overhead), n));
    if (record_) {
      const uint64_t k = gidx(r, i);
      rec_.op_start[k] = now_;
      rec_.cpu_owner[r] = rec_.port_owner[r] = k;
      rec_.message(k, now_);
    }
    queue_.push(arrival, r, i << 2 | kArrive);
    if (!rendezvous(n)) lg_complete(r, i, cpu_end);  // eager; rendezvous: when it matches
  }

  // The message of send (q, k) is taken out of the queue at its receiver.
  void lg_arrive(const Event& e) {
    const uint32_t q = e.rank, k = (e.op_type & ~Lots::kRunnerBit) >> 2;
    const Program& sp = prog(q);
    const TOp so = op(sp, k);  // a copy: reading the receiver's program may move the store
    // The receiver spends its overhead on the CPU and NIC numbered as the send's (LogGOPSim's
    // rule: the receive may not be posted yet).
    const uint8_t unit = store_.unit_of(sp, k);
    const uint32_t r = store_.peer_of(q, so);
    double& cpu = ranks_.cpu_free(r, unit & 15);
    double& gap = ranks_.recv_free(r, unit >> 4);
    const uint64_t lk = Lots::key(r, Lots::kMsg, unit);
    if (!lots_.current(e, lk)) return;
    const double free = std::max(cpu, gap);
    if (free > now_) return lots_.wait(e, lk, free, queue_);
    const RecvTimes c = recv_times(so.amount);
    const double end = on_grid(c.cpu_end + noise() + detour(r, now_, c.overhead));
    cpu = end;
    gap = c.gap_end;
    ranks_[r].finish = std::max(ranks_[r].finish, end);
    next_runner(e, lk);
    lg_deliver(q, k, so, r, end);
  }

  // The message of send (q, k) has been processed at rank r (until `end`): it matches its
  // receive if that is posted, else waits for it.
  void lg_deliver(uint32_t q, uint32_t k, const TOp& so, uint32_t r, double end) {
    reach(r, q, so);
    const Program& rp = prog(r);
    if (record_) rec_.arrived(gidx(q, k), end);
    if (rp.dynamic) {  // the first posted receive that fits, else the unexpected queue
      const uint32_t j = ranks_.take_posted(r, rp, q, k);
      if (j != kUnset) {
        check_match(q, k, so, r, rp, j);
        ranks_.clear_msg(r, rp, j);
        return lg_matched(q, k, so, r, j, end, true);
      }
      unexpected_[key(q, k)] = Unexpected{q, k, end};
      return;
    }
    const uint32_t j = find_recv(r, rp, q, so.seq());
    check_match(q, k, so, r, rp, j);
    const uint32_t pd = ranks_.clear_msg(r, rp, j);
    if (pd == 0) return lg_matched(q, k, so, r, j, end, true);
    // Not posted yet: matched when it is.
    if (record_ || rendezvous(so.amount) || rp.unit_begin != kNone)
      unexpected_[key(r, j)] = Unexpected{q, k, end};
  }

  // Receive (r, j) of program rp is posted.
  void lg_post(uint32_t r, const Program& rp, uint32_t j) {
    if (record_) rec_.op_start[gidx(r, j)] = now_;
    const uint32_t pd = ranks_.clear_unposted(r, rp, j);
    if (rp.dynamic) {  // the first unexpected message that fits, else the posted queue
      const auto [q, k] = ranks_.take_unexpected(r, rp, j);
      if (q == kUnset) return;
      auto u = unexpected_.find(key(q, k));
      const double end = u->second.end;
      unexpected_.erase(u);
      const TOp so = op(prog(q), k);
      check_match(q, k, so, r, rp, j);
      ranks_.clear_msg(r, rp, j);
      return lg_matched(q, k, so, r, j, std::max(now_, end), false);
    }
    if (pd != 0) return;  // its message is still to come
    auto u = unexpected_.find(key(r, j));
    if (u == unexpected_.end()) return lg_complete(r, j, now_);
    const Unexpected x = u->second;
    unexpected_.erase(u);
    const TOp so = op(prog(x.rank), x.op);
    lg_matched(x.rank, x.op, so, r, j, std::max(now_, x.end), false);
  }

  // The message of send (q, k) and receive (r, j) have met now: the receive completes at
  // `end`; a rendezvous send completes now, its CPU and gap held until now at least.
  void lg_matched(uint32_t q, uint32_t k, const TOp& so, uint32_t r, uint32_t j, double end,
                  bool by_message) {
    if (rendezvous(so.amount)) {
      const uint8_t unit = store_.unit_of(prog(q), k);
      double& cpu = ranks_.cpu_free(q, unit & 15);
      double& gap = ranks_.send_free(q, unit >> 4);
      cpu = std::max(cpu, now_);
      gap = std::max(gap, now_);
      lg_complete(q, k, now_);
    }
    // Its cause: the message, unless the receive was posted after the message was processed.
    if (record_ && (by_message || end > now_)) rec_.cause[gidx(r, j)] = gidx(q, k);
    lg_complete(r, j, end);
  }

  // --- both rule sets ------------------------------------------------------------------------
  // A message from q (send so) reaches rank r: a rank not yet holding state is reached before it
  // starts (arrival skew); a finished rank has no receive left.
  void reach(uint32_t r, uint32_t q, const TOp& so) {
    if (ranks_[r].pend != nullptr) return;
    if (ranks_[r].started) unmatched(r, q, so.seq());
    hold(r);
  }

  uint32_t find_recv(uint32_t r, const Program& p, uint32_t q, uint32_t seq) {
    const uint32_t j = store_.find_recv(r, p, q, seq);
    if (j == kUnset) unmatched(r, q, seq);
    return j;
  }

  // The message of send (q, k) is taken by receive (r, j) of program rp: it must fit, and the
  // receive must still be waiting for a message.
  void check_match(uint32_t q, uint32_t k, const TOp& so, uint32_t r, const Program& rp,
                   uint32_t j) {
    const TOp& ro = op(rp, j);
    if (ro.amount < so.amount) too_small(q, k, so, r, j, ro);
    if (!ranks_.msg_missing(r, rp, j)) unmatched(r, q, so.seq());
    if (record_) rec_.received(gidx(q, k), gidx(r, j));
  }
  [[noreturn, gnu::cold]] static void too_small(uint32_t q, uint32_t k, const TOp& so, uint32_t r,
                                                uint32_t j, const TOp& ro) {
    fail(ErrorKind::invalid_argument,
         "rank " + std::to_string(r) + " op " + std::to_string(j) + " receives " +
             std::to_string(static_cast<int64_t>(ro.amount)) + " bytes but rank " +
             std::to_string(q) + " op " + std::to_string(k) + " sends " +
             std::to_string(static_cast<int64_t>(so.amount)));
  }

  // Congestion: how much later a message of n bytes that enters the network at t arrives because
  // links of its route are busy; each link is then busy n * link ns from when the message
  // entered it. (In postal models the send port's time includes the wait.)
  double link_wait(uint32_t src, uint32_t dst, double t, double n) {
    topo_.route(src, dst, route_);
    double at = t;
    const double busy = on_grid(n * topo_.link);
    for (uint64_t l : route_) {
      double& free = link_free_[l];
      at = std::max(at, free);
      free = on_grid(at + busy);
    }
    return on_grid(at - t);
  }

  [[noreturn, gnu::cold]] void unmatched(uint32_t r, uint32_t q, uint32_t seq) {
    fail(ErrorKind::invalid_argument,
         "unmatched send: rank " + std::to_string(r) + " has no receive for message #" +
             std::to_string(seq + 1) + " from rank " + std::to_string(q));
  }

  [[noreturn]] void stalled() {
    size_t stuck = store_.total_ops() - done_;
    for (uint32_t r = 0; r < P_; ++r) {
      if (ranks_[r].pend == nullptr) continue;
      const Program& p = prog(r);
      for (uint32_t i = 0; i < p.n; ++i) {
        const uint32_t pd = ranks_.pending(r, p, i);
        if ((pd & ~kUnposted) == 0) continue;
        const uint32_t pm = pd & ~kUnposted;
        std::string why = pm == kMsgBit && op(p, i).xdelta == kAnyDelta
                              ? "no message came for this wildcard receive (unmatched receive)"
                          : pm == kMsgBit
                              ? "its message from rank " +
                                    std::to_string(store_.peer_of(r, op(p, i))) +
                                    " never came (unmatched receive)"
                              : "it waits on ops that never complete (a cycle, or an op "
                                "stuck behind an unmatched receive)";
        fail(ErrorKind::invalid_argument,
             "simulation stalled: " + std::to_string(stuck) + " ops never completed; first: rank " +
                 std::to_string(r) + " op " + std::to_string(i) + " (" +
                 std::string(to_string(op(p, i).kind())) + "): " + why);
      }
    }
    fail(ErrorKind::invalid_argument, "simulation stalled");
  }

  const SimOptions& opt_;
  const std::unique_ptr<const CostModel> model_;
  const LogGOPS* const lgm_;  // model_ if it is the built-in LogGOPS (called directly), else null
  const int64_t P_;
  const bool lg_;           // a model of the LogGOPS rules: LogGOPSim's (lg_* above)
  const bool on_arrival_;   // port rules: a send completes, and frees its port, on arrival
  const double rdv_above_;  // LogGOPS: messages of more bytes are rendezvous (read once)
  ProgramStore store_;
  Ranks ranks_;
  Recorder rec_;
  Topology topo_;  // opt_.topology with the schedule's placement
  bool has_topology_ = false, has_noise_ = false, record_ = false, congestion_ = false;
  std::unordered_map<uint64_t, double> link_free_;  // congestion: when each link is free
  std::vector<uint64_t> route_;
  double gen_seconds_ = 0, gen_cpu_seconds_ = 0;

  // State of a trial.
  EventQueue queue_;
  std::vector<std::pair<uint32_t, uint32_t>> now_stack_;
  // LogGOPS: messages processed before their receive was posted, kept only where needed (a
  // rendezvous, several CPUs, a wildcard rank, a timeline): by the receive's key(rank, op), or
  // for a wildcard rank by the send's.
  std::unordered_map<uint64_t, Unexpected> unexpected_;
  std::vector<Freed> freed_;
  Lots lots_;
  Rng rng_{0};
  std::optional<NoiseTrace> trace_;  // --noise file(trace): LogGOPSim's trace replayed in time
  uint64_t trial_seed_ = 0;
  double cosched_offset_ = 0;
  double now_ = 0, bytes_ = 0;
  int64_t messages_ = 0;
  size_t done_ = 0;
};

}  // namespace

SimResult simulate(const Schedule& schedule, const SimOptions& options) {
  if (!schedule.complete())
    fail(ErrorKind::invalid_argument, "the schedule does not hold all P ranks");
  Engine e(schedule.header, options, [&](int64_t r) { return schedule.rank(r); });
  return e.run();
}

SimResult simulate_stream(const ScheduleReader& read, const SimOptions& options) {
  ScheduleHeader h;
  std::unique_ptr<Engine> e;
  const auto t0 = std::chrono::steady_clock::now();
  read(
      [&](const ScheduleHeader& header) {
        h = header;
        e = std::make_unique<Engine>(h, options, [](int64_t r) -> RankView {
          fail(ErrorKind::invalid_argument, "rank " + std::to_string(r) + " was never read");
        });
      },
      [&](const RankView& v) {
        if (!e) fail(ErrorKind::invalid_argument, "a rank came before the header");
        e->intern_view(static_cast<uint32_t>(v.rank), v);
      });
  if (!e) fail(ErrorKind::invalid_argument, "no schedule was read");
  const double read_seconds = elapsed(t0);
  SimResult r = e->run();
  r.load_seconds += read_seconds;
  return r;
}

SimResult simulate(const Bound& bound, const SimOptions& options) {
  RankProgram p;
  Classes classes;
  if (bound.has_program_class()) classes = [&](int64_t r) { return bound.program_class(r); };
  Engine e(
      bound.header(), options,
      [&](int64_t r) {
        bound.generate_rank(r, p);
        return p.view();
      },
      std::move(classes));
  return e.run();
}

}  // namespace collkit::sim
