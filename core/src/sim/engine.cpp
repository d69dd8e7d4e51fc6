// The discrete-event engine. See engine.hpp for the semantics and model.hpp for the costs.
#include "collkit/sim/engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <string>
#include <unordered_map>

#include "collkit/error.hpp"
#include "collkit/sim/critical_path.hpp"
#include "event_queue.hpp"

namespace collkit::sim {
namespace {

using detail::Event;
using detail::EventQueue;

constexpr uint32_t kMsgBit = 0x80000000u;  // in a recv's pending count: its message is missing
constexpr uint64_t kNone = UINT64_MAX;
constexpr uint32_t kMaxRankOps = 1u << 29;
constexpr uint32_t kSeqMask = kMaxRankOps - 1;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

enum EventType : uint32_t { kStart = 0, kDone = 1, kArrive = 2, kDeliver = 3 };

// An op as the engine needs it, with its trial state beside it so that handling an op touches
// one cache line: 32 bytes.
struct SimOp {
  double amount;      // send / recv: bytes; local ops: ns
  int32_t peer;       // send / recv
  uint32_t kind_seq;  // kind << 29 | sequence number of a send among this rank's sends to `peer`
  uint32_t pending;   // deps not yet complete, | kMsgBit for a recv whose message is missing
  uint32_t match;     // send: op index of its receive at `peer`; recv: of its send (see link)
  // Its successors (ops of its rank) in op order, inline as most ops have at most two:
  // kNoSucc for none; {kOverflow, i}: the list is overflow_[i + 1 .. i + overflow_[i]].
  uint32_t succ[2];
  OpKind kind() const { return static_cast<OpKind>(kind_seq >> 29); }
  uint32_t seq() const { return kind_seq & kSeqMask; }
};
static_assert(sizeof(SimOp) == 32);
constexpr uint32_t kHole = 7u << 29;  // kind of a slot no op fills (see Engine::g)
constexpr uint32_t kNoSucc = UINT32_MAX;
constexpr uint32_t kOverflow = UINT32_MAX - 1;  // op indices stay below 2^29

// Ranks are stored in blocks of kBlock: op i of the ranks of a block sit side by side. The ranks
// of a collective mostly do the same step at the same time, so the engine walks memory in order
// where a rank-by-rank layout would touch one line per rank, kilobytes apart.
constexpr int kBlockShift = 6;
constexpr uint32_t kBlock = 1u << kBlockShift;

struct RecvKey {  // a rank's receives sorted by (peer, op): the k-th from q is at lower_bound + k
  int32_t peer;
  uint32_t op;
  bool operator<(const RecvKey& o) const { return peer != o.peer ? peer < o.peer : op < o.op; }
};

struct Rendezvous {  // a large message delivered, its send waiting for the receive to complete
  uint32_t rank, op;
  double cpu_end;
};

double elapsed(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
// CPU time of this process: on a shared machine it says what the engine cost, wall time not.
double cpu_now() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

class Engine {
 public:
  Engine(const ScheduleHeader& h, const SimOptions& opt)
      : h_(h), opt_(opt), m_(normalized(opt.model)), P_(h.P) {
    if (h.P < 1 || h.P > kMaxP) fail(ErrorKind::invalid_argument, "P must be in [1, 2^31]");
    if (h.elem_size < 1) fail(ErrorKind::invalid_argument, "element size must be >= 1 byte");
    if (opt.trials < 1 || opt.trials > 1000000)
      fail(ErrorKind::invalid_argument, "trials must be in [1, 10^6]");
    validate(opt.noise, "noise");
    validate(opt.skew, "skew");
    validate(opt.topology, h.P);
    has_topology_ = opt.topology.kind != TopoKind::none || opt.topology.intra > 0;
    has_noise_ = opt.noise.kind != DistKind::none;
    rank_op_begin_.reserve(static_cast<size_t>(P_) + 1);
    block_begin_.reserve(static_cast<size_t>(P_ >> kBlockShift) + 2);
    block_begin_.push_back(0);
    rank_recv_begin_.reserve(static_cast<size_t>(P_) + 1);
    rank_op_begin_.push_back(0);
    rank_recv_begin_.push_back(0);
  }

  void reserve(size_t ops, size_t deps, size_t recvs) {
    ops_.reserve(ops);
    if (opt_.trials > 1) ndeps_.reserve(ops);
    (void)deps;
    recv_index_.reserve(recvs);
  }

  // Reads one rank's program (ranks in order) into the compact form.
  void load_rank(const RankView& v) {
    const int64_t r = loaded();
    if (v.rank != r) fail(ErrorKind::invalid_argument, "ranks must be loaded in order");
    if (v.size() >= kMaxRankOps)
      fail(ErrorKind::unsupported, "rank " + std::to_string(r) + " has more than 2^29 ops");
    const uint32_t n = static_cast<uint32_t>(v.size());
    auto where = [&](uint32_t i) {
      return "rank " + std::to_string(r) + " op " + std::to_string(i) + " (" +
             std::string(to_string(v.ops[i].kind)) + ")";
    };
    // Successor lists, each in increasing op order so that ties resolve in program order.
    tmp_count_.assign(n + 1, 0);
    tmp_succ_end_.resize(n);
    for (uint32_t i = 0; i < n; ++i)
      for (OpId d : v.deps_of(i)) {
        if (d >= n || d == i)
          fail(ErrorKind::invalid_argument, where(i) + " depends on op " + std::to_string(d) +
                                                ", which is not another op of its rank");
        ++tmp_count_[d + 1];
      }
    for (uint32_t i = 0; i < n; ++i) tmp_count_[i + 1] += tmp_count_[i];
    for (uint32_t i = 0; i < n; ++i) tmp_succ_end_[i] = tmp_count_[i];  // begins
    tmp_succ_.resize(tmp_count_[n]);
    for (uint32_t i = 0; i < n; ++i)
      for (OpId d : v.deps_of(i)) tmp_succ_[tmp_count_[d]++] = i;

    // Ops, send sequence numbers and the receive index.
    tmp_sends_.clear();
    const size_t rbase = recv_index_.size();
    const double esize = static_cast<double>(h_.elem_size);
    for (uint32_t i = 0; i < n; ++i) {
      const Op& op = v.ops[i];
      if (op.len < 0) fail(ErrorKind::invalid_argument, where(i) + " has a negative length");
      const double len = static_cast<double>(op.len);
      SimOp s{0, op.peer, static_cast<uint32_t>(op.kind) << 29, 0, 0, {kNoSucc, kNoSucc}};
      uint32_t pending = static_cast<uint32_t>(v.deps_of(i).size());
      switch (op.kind) {
        case OpKind::send:
        case OpKind::recv:
          if (op.peer < 0 || op.peer >= P_ || op.peer == r)
            fail(ErrorKind::invalid_argument,
                 where(i) + " has peer " + std::to_string(op.peer) +
                     ", not another rank of P = " + std::to_string(P_));
          s.amount = len * esize;
          if (op.kind == OpKind::send) {
            tmp_sends_.push_back({op.peer, i});
          } else {
            recv_index_.push_back({op.peer, i});
            pending |= kMsgBit;
          }
          break;
        case OpKind::reduce:
          s.amount = m_.reduce_base + m_.gamma * len * esize;
          break;
        case OpKind::copy:
          s.amount = m_.copy_beta * len * esize;
          break;
        case OpKind::compute:
        case OpKind::sleep:
          s.amount = len;
          break;
        default:
          fail(ErrorKind::invalid_argument,
               "rank " + std::to_string(r) + " op " + std::to_string(i) + " has an unknown kind");
      }
      s.pending = pending;
      const uint32_t sb = tmp_succ_end_[i], ns = tmp_count_[i] - sb;
      if (ns <= 2) {
        for (uint32_t t = 0; t < ns; ++t) s.succ[t] = tmp_succ_[sb + t];
      } else {
        if (overflow_.size() + ns + 1 >= kOverflow)
          fail(ErrorKind::unsupported, "too many ops with more than two successors");
        s.succ[0] = kOverflow;
        s.succ[1] = static_cast<uint32_t>(overflow_.size());
        overflow_.push_back(ns);
        overflow_.insert(overflow_.end(), tmp_succ_.begin() + sb, tmp_succ_.begin() + sb + ns);
      }
      staged_.push_back(s);
    }
    std::sort(tmp_sends_.begin(), tmp_sends_.end());
    const size_t obase = staged_.size() - n;
    for (size_t k = 0; k < tmp_sends_.size(); ++k) {
      uint32_t seq = 0;
      if (k > 0 && tmp_sends_[k - 1].peer == tmp_sends_[k].peer)
        seq = (staged_[obase + tmp_sends_[k - 1].op].kind_seq & kSeqMask) + 1;
      staged_[obase + tmp_sends_[k].op].kind_seq |= seq;
    }
    std::sort(recv_index_.begin() + static_cast<std::ptrdiff_t>(rbase), recv_index_.end());
    rank_op_begin_.push_back(rank_op_begin_.back() + n);
    rank_recv_begin_.push_back(recv_index_.size());
    staged_begin_.push_back(staged_.size());
    if (staged_begin_.size() == kBlock + 1 || loaded() == P_) flush_block();
  }

  // Writes the staged ranks of a block, op i of each side by side (holes where a rank has fewer).
  void flush_block() {
    const size_t nr = staged_begin_.size() - 1;
    size_t width = 0;
    for (size_t q = 0; q < nr; ++q)
      width = std::max(width, staged_begin_[q + 1] - staged_begin_[q]);
    const size_t base = ops_.size();
    ops_.resize(base + width * kBlock, SimOp{0, -1, kHole, 0, 0, {kNoSucc, kNoSucc}});
    for (size_t q = 0; q < nr; ++q)
      for (size_t i = 0; i < staged_begin_[q + 1] - staged_begin_[q]; ++i)
        ops_[base + (i << kBlockShift) + q] = staged_[staged_begin_[q] + i];
    block_begin_.push_back(ops_.size());
    staged_.clear();
    staged_begin_.assign(1, 0);
  }

  int64_t loaded() const { return static_cast<int64_t>(rank_op_begin_.size()) - 1; }
  size_t ops_of(uint32_t r) const { return rank_op_begin_[r + 1] - rank_op_begin_[r]; }

  // Pairs every send with its receive once, so that a message goes straight to its receive.
  void link() {
    if (loaded() != P_) fail(ErrorKind::invalid_argument, "not every rank was loaded");
    for (uint32_t q = 0; q < P_; ++q)
      for (uint32_t i = 0; i < ops_of(q); ++i) {
        SimOp& sop = ops_[g(q, i)];
        if (sop.kind() != OpKind::send) continue;
        const uint32_t r = static_cast<uint32_t>(sop.peer);
        const uint32_t j = find_recv(r, q, sop.seq());
        SimOp& rop = ops_[g(r, j)];
        if (rop.amount < sop.amount)
          fail(ErrorKind::invalid_argument,
               "rank " + std::to_string(r) + " op " + std::to_string(j) + " receives " +
                   std::to_string(static_cast<int64_t>(rop.amount)) + " bytes but rank " +
                   std::to_string(q) + " op " + std::to_string(i) + " sends " +
                   std::to_string(static_cast<int64_t>(sop.amount)));
        sop.match = j;
        rop.match = i;
      }
    if (opt_.trials > 1)  // a trial counts down SimOp::pending: later trials start again here
      for (size_t k = 0; k < ops_.size(); ++k) ndeps_.push_back(ops_[k].pending);
    std::vector<RecvKey>().swap(recv_index_);  // no longer needed
    std::vector<uint64_t>().swap(rank_recv_begin_);
  }

  SimResult run() {
    link();
    SimResult res;
    res.P = P_;
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_now();
    for (int64_t trial = 0; trial < opt_.trials; ++trial) {
      const bool record = opt_.record && trial == 0;
      run_trial(static_cast<uint64_t>(trial), record);
      double makespan = 0;
      for (double f : finish_) makespan = std::max(makespan, f);
      res.makespans.push_back(makespan);
      res.events += static_cast<int64_t>(total_ops()) + messages_;
      if (trial == 0) {
        res.finish.assign(finish_.begin(), finish_.end());
        res.messages = messages_;
        res.bytes = static_cast<int64_t>(bytes_);
        res.ops = static_cast<int64_t>(total_ops());
      }
      if (record) {
        res.rank_op_begin.assign(rank_op_begin_.begin(), rank_op_begin_.end());
        // Back from the block layout to ops numbered rank by rank.
        std::vector<uint64_t> index(ops_.size(), kNone);
        for (uint32_t r = 0; r < P_; ++r)
          for (uint32_t i = 0; i < ops_of(r); ++i) index[g(r, i)] = rank_op_begin_[r] + i;
        auto by_rank = [&](const std::vector<double>& v) {
          std::vector<double> out(total_ops());
          for (size_t k = 0; k < v.size(); ++k)
            if (index[k] != kNone) out[index[k]] = v[k];
          return out;
        };
        res.critical_path = critical_path(op_end_, cause_);
        for (auto& k : res.critical_path) k = index[k];
        res.op_start = by_rank(op_start_);
        res.op_end = by_rank(op_end_);
        res.msg_send = std::move(msg_send_);
        res.msg_recv = std::move(msg_recv_);
        for (auto& k : res.msg_send) k = index[k];
        for (auto& k : res.msg_recv) k = k == kNone ? kNone : index[k];
        res.msg_depart = std::move(msg_depart_);
        res.msg_arrive = std::move(msg_arrive_);
      }
    }
    res.run_seconds = elapsed(t0);
    res.run_cpu_seconds = cpu_now() - c0;
    res.memory_bytes = memory_bytes();
    return res;
  }

 private:
  // --- one trial ---------------------------------------------------------------------------
  void run_trial(uint64_t trial, bool record) {
    record_ = record;
    rng_ = Rng(opt_.seed * 0x9e3779b97f4a7c15ULL + trial * 0xd1b54a32d192ed03ULL + 1);
    if (trial > 0)
      for (size_t k = 0; k < ops_.size(); ++k) ops_[k].pending = ndeps_[k];
    const size_t P = static_cast<size_t>(P_);
    cpu_free_.assign(P, 0.0);
    port_free_.assign(P, 0.0);
    recv_free_.assign(P, 0.0);
    finish_.assign(P, 0.0);
    started_.assign(P, 0);
    queue_.clear();
    rendezvous_.clear();
    messages_ = 0;
    bytes_ = 0;
    done_ = 0;
    now_ = 0;
    if (record_) {
      op_start_.assign(ops_.size(), kNaN);
      op_end_.assign(ops_.size(), kNaN);
      cause_.assign(ops_.size(), kNone);
      msg_of_send_.assign(ops_.size(), kNone);
      cpu_owner_.assign(P, kNone);
      port_owner_.assign(P, kNone);
      msg_send_.clear();
      msg_recv_.clear();
      msg_depart_.clear();
      msg_arrive_.clear();
    }
    for (uint32_t r = 0; r < P_; ++r) {
      double t = opt_.skew.kind == DistKind::none ? 0.0 : sample(opt_.skew, rng_) + 0.0;
      finish_[r] = t;
      if (t == 0.0)
        start_rank(r);
      else
        queue_.push({t, r, kStart});
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
          arrive(e.rank, op);
          break;
        case kDeliver:
          deliver(e.rank, op);
          break;
      }
      drain();
    }
    if (done_ != total_ops()) stalled();
  }

  // Where op i of rank r lives (see kBlock).
  size_t g(uint32_t r, uint32_t i) const {
    return block_begin_[r >> kBlockShift] + (static_cast<size_t>(i) << kBlockShift) +
           (r & (kBlock - 1));
  }
  size_t total_ops() const { return rank_op_begin_.back(); }

  // Events due at the same time are handled rank after rank, each touching ops far apart in
  // memory: start loading the ops of the events a few places ahead, and (for messages) the
  // receive they go to, so that the memory latency overlaps the work of the events in between.
  void prefetch_ahead() const {
    if (const Event* f = queue_.peek(8)) {
      __builtin_prefetch(&ops_[g(f->rank, f->op_type >> 2)]);
      __builtin_prefetch(&finish_[f->rank]);
    }
    if (const Event* f = queue_.peek(4); f != nullptr && (f->op_type & 3) >= kArrive) {
      const SimOp& sop = ops_[g(f->rank, f->op_type >> 2)];
      __builtin_prefetch(&ops_[g(static_cast<uint32_t>(sop.peer), sop.match)]);
    }
  }

  double noise() { return has_noise_ ? sample(opt_.noise, rng_) : 0.0; }
  void at(double t, uint32_t r, uint32_t i, EventType type) {
    if (t <= now_)
      now_stack_.push_back({r, i});  // only completions are ever due now
    else
      queue_.push({t, r, i << 2 | type});
  }
  void drain() {
    while (!now_stack_.empty()) {
      auto [r, i] = now_stack_.back();
      now_stack_.pop_back();
      complete(r, i);
    }
  }

  void start_rank(uint32_t r) {
    started_[r] = 1;
    const uint32_t n = static_cast<uint32_t>(ops_of(r));
    for (uint32_t i = 0; i < n; ++i) {
      const size_t k = g(r, i);
      if (ops_[k].pending == 0) {
        if (record_ && ops_[k].kind() == OpKind::recv) op_start_[k] = now_;
        ready(r, i, kNone);
      } else if (ops_[k].pending == kMsgBit && record_)
        op_start_[k] = now_;  // a recv without deps is posted at once
    }
  }

  // Op (r, i) completes now: release its successors.
  void complete(uint32_t r, uint32_t i) {
    const size_t k = g(r, i);
    ++done_;
    finish_[r] = std::max(finish_[r], now_);
    if (record_) op_end_[k] = now_;
    if (!rendezvous_.empty() && ops_[k].kind() == OpKind::recv) {
      auto it = rendezvous_.find(k);
      if (it != rendezvous_.end()) {  // the large message's send completes with its receive
        const Rendezvous rv = it->second;
        rendezvous_.erase(it);
        at(std::max(now_, rv.cpu_end), rv.rank, rv.op, kDone);
      }
    }
    const uint32_t s0 = ops_[k].succ[0], s1 = ops_[k].succ[1];
    if (s0 == kOverflow) {
      for (uint32_t t = 1; t <= overflow_[s1]; ++t) release(r, overflow_[s1 + t], k);
    } else if (s0 != kNoSucc) {
      release(r, s0, k);
      if (s1 != kNoSucc) release(r, s1, k);
    }
  }

  // Op j of rank r has one dep fewer to wait for: op k (global) completed.
  void release(uint32_t r, uint32_t j, size_t k) {
    const size_t kj = g(r, j);
    const uint32_t p = --ops_[kj].pending;
    if (p == 0) {
      if (record_ && ops_[kj].kind() == OpKind::recv) op_start_[kj] = now_;
      ready(r, j, k);
    } else if (p == kMsgBit && record_) {
      op_start_[kj] = now_;  // recv posted, its message not yet delivered
    }
  }

  // Op (r, i) has everything it needs; `trigger` is the op whose completion made it so.
  void ready(uint32_t r, uint32_t i, uint64_t trigger) {
    const size_t k = g(r, i);
    const SimOp& op = ops_[k];
    switch (op.kind()) {
      case OpKind::send:
        start_send(r, i, trigger);
        return;
      case OpKind::recv: {
        if (record_) cause_[k] = trigger;
        at(now_ + noise(), r, i, kDone);
        return;
      }
      default: {
        const double s = std::max(now_, cpu_free_[r]);
        const double e = s + op.amount + noise();
        if (record_) {
          op_start_[k] = s;
          cause_[k] = s > now_ ? cpu_owner_[r] : trigger;
          cpu_owner_[r] = k;
        }
        cpu_free_[r] = e;
        at(e, r, i, kDone);
      }
    }
  }

  void start_send(uint32_t r, uint32_t i, uint64_t trigger) {
    const size_t k = g(r, i);
    const SimOp& op = ops_[k];
    const uint32_t dst = static_cast<uint32_t>(op.peer);
    const double n = op.amount;
    const double extra = has_topology_ ? opt_.topology.extra_latency(r, dst) : 0.0;
    const double d = noise();
    ++messages_;
    bytes_ += n;
    double s = 0, arrival = 0;
    uint64_t owner = kNone;
    switch (m_.kind) {
      case ModelKind::postal:
        s = std::max(now_, port_free_[r]);
        arrival = s + m_.alpha + extra + n * m_.beta + d;
        port_free_[r] = arrival;  // one message in flight: the port is busy until it arrives
        owner = port_owner_.empty() ? kNone : port_owner_[r];
        break;  // the send completes on arrival (see arrive)
      case ModelKind::pipelined_postal: {
        s = std::max(now_, port_free_[r]);
        const double pushed = s + m_.alpha_r + n * m_.beta + d;
        port_free_[r] = pushed;
        arrival = pushed + m_.alpha_p + extra;
        owner = port_owner_.empty() ? kNone : port_owner_[r];
        at(pushed, r, i, kDone);
        break;
      }
      default: {  // LogGOPS family
        const double b1 = std::max(n - 1.0, 0.0);
        const bool cpu_bound = cpu_free_[r] >= port_free_[r];
        s = std::max({now_, cpu_free_[r], port_free_[r]});
        const double cpu_end = s + m_.o + b1 * m_.O + d;
        cpu_free_[r] = cpu_end;
        port_free_[r] = s + m_.g + b1 * m_.G;
        arrival = s + m_.o + m_.L + extra;  // the first byte; G is charged at the receiver
        if (!cpu_owner_.empty()) owner = cpu_bound ? cpu_owner_[r] : port_owner_[r];
        if (n <= m_.S)
          at(cpu_end, r, i, kDone);  // eager
        else
          pending_cpu_end_[k] = cpu_end;  // rendezvous: completes with the receive (see deliver)
        if (record_) cpu_owner_[r] = k;
      }
    }
    if (record_) {
      op_start_[k] = s;
      cause_[k] = s > now_ ? owner : trigger;
      port_owner_[r] = k;
      msg_of_send_[k] = msg_send_.size();
      msg_send_.push_back(k);
      msg_recv_.push_back(kNone);
      msg_depart_.push_back(s);
      msg_arrive_.push_back(kNaN);
    }
    queue_.push({arrival, r, i << 2 | kArrive});
  }

  // The message of send (q, k) reaches its destination.
  void arrive(uint32_t q, uint32_t k) {
    const SimOp& sop = ops_[g(q, k)];
    if (m_.kind == ModelKind::postal) now_stack_.push_back({q, k});
    if (!m_.is_logp_family()) return deliver(q, k);
    const uint32_t r = static_cast<uint32_t>(sop.peer);
    const double b1 = std::max(sop.amount - 1.0, 0.0);
    const double s = std::max({now_, cpu_free_[r], recv_free_[r]});
    const double end = s + m_.o + std::max(b1 * m_.O, b1 * m_.G);
    cpu_free_[r] = end;
    recv_free_[r] = s + m_.g + b1 * m_.G;
    if (end <= now_)
      deliver(q, k);
    else
      queue_.push({end, q, k << 2 | kDeliver});
  }

  // The message of send (q, k) is delivered to its receive.
  void deliver(uint32_t q, uint32_t k) {
    const size_t ks = g(q, k);
    const SimOp& sop = ops_[ks];
    const uint32_t r = static_cast<uint32_t>(sop.peer);
    const uint32_t j = sop.match;
    const size_t kj = g(r, j);
    if (m_.is_logp_family() && sop.amount > m_.S) {
      auto it = pending_cpu_end_.find(ks);
      rendezvous_[kj] = Rendezvous{q, k, it->second};
      pending_cpu_end_.erase(it);
    }
    if (record_) {
      const uint64_t m = msg_of_send_[ks];
      msg_recv_[m] = kj;
      msg_arrive_[m] = now_;
    }
    const uint32_t p = (ops_[kj].pending &= ~kMsgBit);
    // A rank that has not started yet (arrival skew) finds the message when it starts.
    if (p == 0 && started_[r]) ready(r, j, ks);
  }

  uint32_t find_recv(uint32_t r, uint32_t q, uint32_t seq) {
    const auto b = recv_index_.begin() + static_cast<std::ptrdiff_t>(rank_recv_begin_[r]);
    const auto e = recv_index_.begin() + static_cast<std::ptrdiff_t>(rank_recv_begin_[r + 1]);
    const auto lb = std::lower_bound(b, e, RecvKey{static_cast<int32_t>(q), 0});
    if (e - lb <= static_cast<std::ptrdiff_t>(seq) || lb[seq].peer != static_cast<int32_t>(q))
      fail(ErrorKind::invalid_argument,
           "unmatched send: rank " + std::to_string(r) + " has no receive for message #" +
               std::to_string(seq + 1) + " from rank " + std::to_string(q));
    return lb[seq].op;
  }

  [[noreturn]] void stalled() {
    size_t stuck = total_ops() - done_;
    for (uint32_t r = 0; r < P_; ++r)
      for (uint32_t i = 0; i < ops_of(r); ++i) {
        const size_t k = g(r, i);
        if (ops_[k].pending == 0) continue;
        std::string why = ops_[k].pending == kMsgBit
                              ? "its message from rank " + std::to_string(ops_[k].peer) +
                                    " never came (unmatched receive)"
                              : "it waits on ops that never complete (a cycle, or an op "
                                "stuck behind an unmatched receive)";
        fail(ErrorKind::invalid_argument,
             "simulation stalled: " + std::to_string(stuck) + " ops never completed; first: rank " +
                 std::to_string(r) + " op " + std::to_string(i) + " (" +
                 std::string(to_string(ops_[k].kind())) + "): " + why);
      }
    fail(ErrorKind::invalid_argument, "simulation stalled");
  }

  size_t memory_bytes() const {
    auto cap = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
    return cap(ops_) + cap(ndeps_) + cap(overflow_) + cap(recv_index_) + cap(rank_op_begin_) +
           cap(rank_recv_begin_) + cap(cpu_free_) + cap(port_free_) + cap(recv_free_) +
           cap(finish_) + queue_.memory_bytes();
  }

  const ScheduleHeader& h_;
  const SimOptions& opt_;
  const ModelParams m_;
  const int64_t P_;
  bool has_topology_ = false, has_noise_ = false, record_ = false;

  // Programs, compact and read-only after loading.
  // Plain vectors: huge pages (BigVector) made the event loop 10% faster at 10^6 ranks but cost
  // more in the kernel while loading than they saved (benchmarks/results/bench_simulate.md).
  std::vector<SimOp> ops_;
  std::vector<uint32_t> ndeps_;     // SimOp::pending at the start of a trial
  std::vector<uint32_t> overflow_;  // successor lists of ops with more than two
  std::vector<RecvKey> recv_index_;
  std::vector<uint64_t> rank_op_begin_;  // ops numbered rank by rank: where each rank's begin
  std::vector<uint64_t> block_begin_;    // where each block of kBlock ranks begins in ops_
  std::vector<uint64_t> rank_recv_begin_;
  std::vector<SimOp> staged_;  // the ranks of the block being loaded, rank by rank
  std::vector<size_t> staged_begin_{0};
  std::vector<uint32_t> tmp_count_, tmp_succ_end_, tmp_succ_;
  std::vector<RecvKey> tmp_sends_;

  // State of a trial.
  std::vector<double> cpu_free_, port_free_, recv_free_, finish_;
  std::vector<uint8_t> started_;
  EventQueue queue_;
  std::vector<std::pair<uint32_t, uint32_t>> now_stack_;
  std::unordered_map<uint64_t, Rendezvous> rendezvous_;   // by the receive's global op index
  std::unordered_map<uint64_t, double> pending_cpu_end_;  // rendezvous sends in flight
  Rng rng_{0};
  double now_ = 0, bytes_ = 0;
  int64_t messages_ = 0;
  size_t done_ = 0;

  // Recording (trial 0 with SimOptions::record).
  std::vector<double> op_start_, op_end_;
  std::vector<uint64_t> cause_, msg_of_send_, cpu_owner_, port_owner_;
  std::vector<uint64_t> msg_send_, msg_recv_;
  std::vector<double> msg_depart_, msg_arrive_;
};

}  // namespace

SimResult simulate(const Schedule& schedule, const SimOptions& options) {
  if (!schedule.complete())
    fail(ErrorKind::invalid_argument, "the schedule does not hold all P ranks");
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = cpu_now();
  Engine e(schedule.header, options);
  e.reserve(schedule.total_ops(), schedule.total_deps(), schedule.total_ops());
  for (int64_t r = 0; r < schedule.header.P; ++r) e.load_rank(schedule.rank(r));
  const double load = elapsed(t0), load_cpu = cpu_now() - c0;
  SimResult res = e.run();
  res.load_seconds = load;
  res.load_cpu_seconds = load_cpu;
  return res;
}

SimResult simulate(const Bound& bound, const SimOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = cpu_now();
  const ScheduleHeader& h = bound.header();
  Engine e(h, options);
  RankProgram p;
  // Size the arrays once from a few sample ranks, so that they do not double while loading.
  size_t ops = 0, deps = 0, recvs = 0;
  for (int64_t r : {int64_t{0}, h.P / 2, h.P - 1}) {
    bound.generate_rank(r, p);
    size_t nr = 0;
    for (const Op& op : p.ops) nr += op.kind == OpKind::recv;
    ops = std::max(ops, p.ops.size());
    deps = std::max(deps, p.deps.size());
    recvs = std::max(recvs, nr);
  }
  const size_t P = static_cast<size_t>(h.P);
  e.reserve(ops * P, deps * P, recvs * P);
  for (int64_t r = 0; r < h.P; ++r) {
    bound.generate_rank(r, p);
    e.load_rank(p.view());
  }
  const double load = elapsed(t0), load_cpu = cpu_now() - c0;
  SimResult res = e.run();
  res.load_seconds = load;
  res.load_cpu_seconds = load_cpu;
  return res;
}

}  // namespace collkit::sim
