// The discrete-event engine. See engine.hpp for the semantics and model.hpp for the costs.
#include "collkit/sim/engine.hpp"

#include <algorithm>
#include <bit>
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
#include "collkit/sim/critical_path.hpp"
#include "event_queue.hpp"

namespace collkit::sim {
namespace {

using detail::Event;
using detail::EventQueue;

constexpr uint32_t kMsgBit = 0x80000000u;  // in a recv's pending count: its message is missing
constexpr uint16_t kMsgBit16 = 0x8000u;    // the same in a narrow (16-bit) counter
// LogGOPS: in a recv's pending count, it is not posted yet (a message processed meanwhile is
// unexpected).
constexpr uint32_t kUnposted = 0x40000000u;
constexpr uint16_t kUnposted16 = 0x4000u;
constexpr uint32_t kDepMask = 0x3fffffffu;
constexpr uint32_t kMaxNarrowDeps = 0x3fffu;
constexpr uint64_t kNone = UINT64_MAX;
constexpr uint32_t kMaxRankOps = 1u << 29;
constexpr uint32_t kSeqMask = kMaxRankOps - 1;
constexpr uint32_t kAddMode = 0x80000000u;  // in RankState::tmpl: peers are (peer - rank) mod P
constexpr uint32_t kUnset = UINT32_MAX;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// kDone: postal models, an op completes. kOp: LogGOPS, an op is tried (LogGOPSim's queue holds
// ops, each run once its CPU / gap is free, else pushed again at that time).
enum EventType : uint32_t { kStart = 0, kDone = 1, kArrive = 2, kOp = 3 };

// An op of a program as the engine needs it: 32 bytes. The peer is kept relative to the rank,
// both as an XOR distance and as a distance mod P: most collectives' ranks run the same program
// up to one of these relabellings (recursive doubling and halving, binomial trees in XOR; rings,
// Bruck, dissemination mod P), so one copy serves every rank that runs it.
struct TOp {
  double amount;      // send / recv: bytes; local ops: ns
  int32_t xdelta;     // send / recv: peer ^ rank
  int32_t adelta;     // send / recv: (peer - rank) mod P
  uint32_t kind_seq;  // kind << 29 | sequence number of a send among this rank's sends to `peer`
  uint32_t pending;   // deps, | kMsgBit for a recv
  // Its successors (ops of its rank) in op order, inline as most ops have at most two:
  // kNoSucc for none; {kOverflow, i}: the list is overflow[i + 1 .. i + overflow[i]] of the
  // program.
  uint32_t succ[2];
  OpKind kind() const { return static_cast<OpKind>(kind_seq >> 29); }
  uint32_t seq() const { return kind_seq & kSeqMask; }
};
static_assert(sizeof(TOp) == 32);
constexpr uint32_t kNoSucc = UINT32_MAX;
constexpr uint32_t kOverflow = UINT32_MAX - 1;

struct RecvKey {  // a program's receives sorted by (relative peer, op)
  int32_t delta;
  uint32_t op;
  bool operator<(const RecvKey& o) const { return delta != o.delta ? delta < o.delta : op < o.op; }
};

// One distinct program: where its ops, successor overflow and receive indexes lie.
struct Program {
  uint64_t op_begin, overflow_begin, recv_begin, dep_begin, deps_begin;
  uint64_t unit_begin;  // its ops' cpu | nic << 4 in t_unit_, or kNone when all are 0
  uint32_t n, n_deps, n_recv;
  bool wide;         // some op has more deps than a 16-bit counter holds
  bool dynamic;      // it has a wildcard receive: its messages match as they come (LogGOPSim)
  uint32_t next[2];  // the next program with the same hash (XOR, add mode)
};
constexpr int32_t kAnyDelta = -1;  // the relative peer of a wildcard receive

// What a rank's program is compared on, op by op (with its deps).
struct OpKey {
  double amount;  // as in TOp; -1 for a negative length
  int32_t xdelta, adelta;
  uint32_t kind;  // OpKind | (cpu | nic << 4) << 8
  uint32_t op_kind() const { return kind & 0xff; }
  uint8_t unit() const { return static_cast<uint8_t>(kind >> 8); }
};

// Timelines of a host's CPUs and NICs beyond the first (GOAL's cpu N / nic N): CPU c >= 1 at
// [c - 1], the send gap of NIC n >= 1 at [15 + n - 1], its receive gap at [22 + n - 1].
struct Units {
  double t[kMaxCpu + 2 * kMaxNic] = {};
};

// A rank with wildcard receives matches its messages as LogGOPSim does: a message takes the
// first posted receive that fits, else waits in the unexpected queue; a receive being posted
// takes the first unexpected message that fits, else joins the posted queue.
struct Matching {
  std::vector<uint32_t> posted;                           // receive ops, in posting order
  std::vector<std::pair<uint32_t, uint32_t>> unexpected;  // sends (rank, op), in arrival order
};

// Per rank, during a trial: 48 bytes that an event of the rank touches together.
struct RankState {
  double cpu_free, port_free, recv_free, finish;
  uint8_t* pend;  // its pending counters (uint16_t, or uint32_t for a wide program); null: none
  uint32_t done;  // ops completed
  uint8_t started;
};

// Where ranks' pending counters live: chunks that never move (a growing array would copy, and
// for a moment hold, everything twice), so a block is a plain pointer.
class CounterPool {
 public:
  static constexpr size_t kChunk = size_t{16} << 20;
  uint8_t* allocate(size_t bytes) {
    bytes = (bytes + 7) & ~size_t{7};
    if (bytes > kChunk) {  // a program larger than a chunk gets its own
      big_.emplace_back(new uint8_t[bytes]);
      return big_.back().get();
    }
    if (chunks_.empty() || used_ + bytes > kChunk) {
      if (++current_ >= chunks_.size()) chunks_.emplace_back(new uint8_t[kChunk]);
      used_ = 0;
    }
    uint8_t* p = chunks_[current_].get() + used_;
    used_ += bytes;
    return p;
  }
  void reset() {  // keeps the chunks for the next trial
    current_ = SIZE_MAX;
    used_ = kChunk;
    big_.clear();
  }
  size_t memory_bytes() const { return chunks_.size() * kChunk; }

 private:
  std::vector<std::unique_ptr<uint8_t[]>> chunks_, big_;
  size_t current_ = SIZE_MAX, used_ = kChunk;
};

// LogGOPS: an op whose deps are all complete, entering the queue once the event is handled.
struct Freed {
  uint32_t rank, op;
  double after;  // when the op that freed it completed
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

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

uint64_t key(uint32_t r, uint32_t i) {
  return uint64_t{r} << 32 | i;
}

// Where the engine gets rank r's program: a Schedule's view, or the generator's output.
using Source = std::function<RankView(int64_t)>;

class Engine {
 public:
  Engine(const ScheduleHeader& h, const SimOptions& opt, Source source)
      : h_(h), opt_(opt), m_(normalized(opt.model)), P_(h.P), source_(std::move(source)) {
    if (h.P < 1 || h.P > kMaxP) fail(ErrorKind::invalid_argument, "P must be in [1, 2^31]");
    if (h.elem_size < 1) fail(ErrorKind::invalid_argument, "element size must be >= 1 byte");
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
    lg_ = m_.is_logp_family();
    tmpl_.assign(static_cast<size_t>(P_), kUnset);
    rank_.resize(static_cast<size_t>(P_));
  }

  SimResult run() {
    SimResult res;
    res.P = P_;
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_now();
    if (opt_.record) {  // recording numbers ops rank by rank: every program is needed first
      rank_op_begin_.assign(1, 0);
      for (uint32_t r = 0; r < P_; ++r) {
        if (tmpl_[r] == kUnset) intern(r);
        rank_op_begin_.push_back(rank_op_begin_.back() + prog(r).n);
      }
      gen_seconds_ = elapsed(t0);
      gen_cpu_seconds_ = cpu_now() - c0;
    }
    for (int64_t trial = 0; trial < opt_.trials; ++trial) {
      const bool record = opt_.record && trial == 0;
      run_trial(static_cast<uint64_t>(trial), record);
      double makespan = 0;
      for (const RankState& s : rank_) makespan = std::max(makespan, s.finish);
      if (!std::isfinite(makespan))
        fail(ErrorKind::invalid_argument,
             "the makespan overflowed to infinity: a model parameter, size or duration is too "
             "large for double-precision nanoseconds");
      res.makespans.push_back(makespan);
      res.events += static_cast<int64_t>(total_ops_) + messages_;
      if (trial == 0) {
        res.finish.resize(rank_.size());
        for (size_t r = 0; r < rank_.size(); ++r) res.finish[r] = rank_[r].finish;
        res.messages = messages_;
        // A sum of doubles: one message of 2^63 - 8 B rounds to 2^63, past int64 (the cast
        // wrapped to -2^63); the readers' limit (buffer_fits) keeps each message below it.
        res.bytes = bytes_ < 0x1p63 ? static_cast<int64_t>(bytes_) : INT64_MAX;
        res.ops = static_cast<int64_t>(total_ops_);
        res.programs = static_cast<int64_t>(progs_.size());
        res.peak_ranks_held = peak_held_;
      }
      if (record) {
        res.rank_op_begin.assign(rank_op_begin_.begin(), rank_op_begin_.end());
        res.critical_path = critical_path(op_end_, cause_);
        res.op_start = std::move(op_start_);
        res.op_end = std::move(op_end_);
        res.msg_send = std::move(msg_send_);
        res.msg_recv = std::move(msg_recv_);
        res.msg_depart = std::move(msg_depart_);
        res.msg_arrive = std::move(msg_arrive_);
      }
    }
    res.run_seconds = elapsed(t0) - gen_seconds_;
    res.run_cpu_seconds = cpu_now() - c0 - gen_cpu_seconds_;
    res.load_seconds = gen_seconds_;
    res.load_cpu_seconds = gen_cpu_seconds_;
    res.memory_bytes = memory_bytes();
    return res;
  }

 private:
  // --- programs ------------------------------------------------------------------------------
  const Program& prog(uint32_t r) const { return progs_[tmpl_[r] & ~kAddMode]; }
  const TOp& op(const Program& p, uint32_t i) const { return t_ops_[p.op_begin + i]; }
  uint8_t unit_of(const Program& p, uint32_t i) const {
    return p.unit_begin == kNone ? 0 : t_unit_[p.unit_begin + i];
  }
  // The free times of rank r's CPU c, and of NIC n's send and receive gaps.
  double& cpu_free(uint32_t r, uint32_t c) {
    return c == 0 ? rank_[r].cpu_free : units_[r].t[c - 1];
  }
  double& send_free(uint32_t r, uint32_t n) {
    return n == 0 ? rank_[r].port_free : units_[r].t[kMaxCpu + n - 1];
  }
  double& recv_free(uint32_t r, uint32_t n) {
    return n == 0 ? rank_[r].recv_free : units_[r].t[kMaxCpu + kMaxNic + n - 1];
  }
  uint64_t gidx(uint32_t r, uint32_t i) const { return rank_op_begin_[r] + i; }

  // Reads rank r's program (generating it) and finds, or adds, its distinct program. The
  // program the previous rank matched is tried first (neighbours mostly run the same one), then
  // those with the same hash; only a program never seen is checked and built in full.
  void intern(uint32_t r) { intern_view(r, source_(r)); }

 public:
  // Interns rank r's program from a view (ranks fed in order by a reader).
  void intern_view(uint32_t r, const RankView& v) {
    if (r >= static_cast<uint64_t>(P_) || tmpl_[r] != kUnset)
      fail(ErrorKind::invalid_argument, "rank " + std::to_string(r) + " read twice or past P");
    if (v.rank != r) fail(ErrorKind::invalid_argument, "ranks must be read in order");
    if (v.size() >= kMaxRankOps)
      fail(ErrorKind::unsupported, "rank " + std::to_string(r) + " has more than 2^29 ops");
    const uint32_t n = static_cast<uint32_t>(v.size());
    key_of(v, r);
    uint32_t found = kUnset;
    if (last_ != kUnset) {
      const uint32_t t = last_ & ~kAddMode;
      if (same(progs_[t], v, 0))
        found = t;
      else if (same(progs_[t], v, 1))
        found = t | kAddMode;
    }
    for (uint32_t mode = 0; mode < 2 && found == kUnset; ++mode) {
      auto it = index_.find(hash(v, mode));
      for (uint32_t t = it == index_.end() ? kUnset : it->second; t != kUnset;
           t = progs_[t].next[mode])
        if (same(progs_[t], v, mode)) {
          found = t | (mode ? kAddMode : 0);
          break;
        }
    }
    if (found == kUnset) found = add_program(v, r);
    tmpl_[r] = last_ = found;
    total_ops_ += n;
  }

 private:
  // The key of each op of rank r that a program is compared on (cost, kind, deps, peer both
  // ways); peers are checked here, everything else of a new program in add_program.
  void key_of(const RankView& v, uint32_t r) {
    const uint32_t n = static_cast<uint32_t>(v.size());
    const double esize = static_cast<double>(h_.elem_size);
    key_.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      const Op& o = v.ops[i];
      OpKey& k = key_[i];
      const double len = static_cast<double>(o.len);
      k.kind = static_cast<uint32_t>(o.kind);
      k.xdelta = k.adelta = 0;
      switch (o.kind) {
        case OpKind::send:
        case OpKind::recv:
          k.amount = len * esize;
          if (o.kind == OpKind::recv && o.peer == kAnySource) {
            k.xdelta = k.adelta = kAnyDelta;
            break;
          }
          // A message to itself is a message like any other (MPI allows it; the verifier too).
          if (o.peer < 0 || o.peer >= P_)
            fail(ErrorKind::invalid_argument, where(v, i) + " has peer " + std::to_string(o.peer) +
                                                  ", not a rank of P = " + std::to_string(P_));
          k.xdelta = static_cast<int32_t>(static_cast<uint32_t>(o.peer) ^ r);
          k.adelta = static_cast<int32_t>(o.peer >= static_cast<int64_t>(r)
                                              ? o.peer - r
                                              : o.peer + P_ - static_cast<int64_t>(r));
          break;
        case OpKind::reduce:
          k.amount = m_.reduce_base + m_.gamma * len * esize;
          break;
        case OpKind::copy:
          k.amount = m_.copy_beta * len * esize;
          break;
        default:
          k.amount = len;
      }
      if (o.len < 0) k.amount = -1;  // refused in add_program
      k.kind |= static_cast<uint32_t>(o.cpu | o.nic << 4) << 8;
    }
  }

  static std::string where(const RankView& v, uint32_t i) {
    return "rank " + std::to_string(v.rank) + " op " + std::to_string(i) + " (" +
           std::string(to_string(v.ops[i].kind)) + ")";
  }

  uint64_t hash(const RankView& v, uint32_t mode) const {
    uint64_t h = mode ? 0x7654321 : 0x1234567;
    for (const OpKey& k : key_)
      h = mix(mix(h, std::bit_cast<uint64_t>(k.amount) ^ k.kind),
              static_cast<uint32_t>(mode ? k.adelta : k.xdelta));
    for (uint32_t x : v.dep_begin) h = mix(h, x);
    for (OpId d : v.deps) h = mix(h, d);
    return h;
  }

  bool same(const Program& p, const RankView& v, uint32_t mode) const {
    const uint32_t n = static_cast<uint32_t>(v.size());
    if (p.n != n || p.n_deps != v.deps.size()) return false;
    const TOp* a = t_ops_.data() + p.op_begin;  // data(): a program may have no ops
    for (uint32_t i = 0; i < n; ++i) {
      const TOp& x = a[i];
      const OpKey& y = key_[i];
      if (x.amount != y.amount || (x.kind_seq >> 29) != y.op_kind() ||
          (mode ? x.adelta != y.adelta : x.xdelta != y.xdelta) || unit_of(p, i) != y.unit())
        return false;
    }
    return std::equal(v.dep_begin.begin(), v.dep_begin.end(),
                      t_dep_begin_.begin() + static_cast<std::ptrdiff_t>(p.dep_begin)) &&
           std::equal(v.deps.begin(), v.deps.end(),
                      t_deps_.begin() + static_cast<std::ptrdiff_t>(p.deps_begin));
  }

  // Checks a program never seen and adds it: successor lists, send sequence numbers, receive
  // indexes.
  uint32_t add_program(const RankView& v, uint32_t r) {
    if (progs_.size() >= kAddMode - 1) fail(ErrorKind::unsupported, "too many distinct programs");
    const uint32_t n = static_cast<uint32_t>(v.size());
    for (uint32_t i = 0; i < n; ++i) {
      if (v.ops[i].len < 0)
        fail(ErrorKind::invalid_argument, where(v, i) + " has a negative length");
      if (static_cast<uint8_t>(v.ops[i].kind) > static_cast<uint8_t>(OpKind::sleep))
        fail(ErrorKind::invalid_argument,
             "rank " + std::to_string(r) + " op " + std::to_string(i) + " has an unknown kind");
      for (OpId d : v.deps_of(i)) {
        if (d >= n || d == i)
          fail(ErrorKind::invalid_argument, where(v, i) + " depends on op " + std::to_string(d) +
                                                ", which is not another op of its rank");
      }
    }
    // Successor lists (the core's helper), each in increasing op order so that ties resolve in
    // program order.
    succ_.clear();
    succ_.append_rank(v);

    Program p{};
    p.op_begin = t_ops_.size();
    p.overflow_begin = t_overflow_.size();
    p.recv_begin = t_recv_[0].size();
    p.dep_begin = t_dep_begin_.size();
    p.deps_begin = t_deps_.size();
    p.n = n;
    p.n_deps = static_cast<uint32_t>(v.deps.size());
    p.next[0] = p.next[1] = kUnset;
    p.unit_begin = kNone;
    for (uint32_t i = 0; i < n; ++i) {
      if (key_[i].unit() != 0 && p.unit_begin == kNone) {
        p.unit_begin = t_unit_.size();
        for (const OpKey& k : key_) t_unit_.push_back(k.unit());
      }
      if (key_[i].xdelta == kAnyDelta) p.dynamic = true;
    }
    tmp_sends_.clear();
    for (uint32_t i = 0; i < n; ++i) {
      const OpKey& k = key_[i];
      TOp s{k.amount, k.xdelta, k.adelta, k.op_kind() << 29, 0, {kNoSucc, kNoSucc}};
      const uint32_t ndeps = static_cast<uint32_t>(v.deps_of(i).size());
      p.wide |= ndeps > kMaxNarrowDeps;
      s.pending = ndeps | (v.ops[i].kind == OpKind::recv ? kMsgBit : 0);
      if (v.ops[i].kind == OpKind::send) tmp_sends_.push_back({v.ops[i].peer, i});
      const std::span<const uint32_t> next = succ_.of(i);
      const uint32_t ns = static_cast<uint32_t>(next.size());
      if (ns <= 2) {
        for (uint32_t t = 0; t < ns; ++t) s.succ[t] = next[t];
      } else {
        const size_t rel = t_overflow_.size() - p.overflow_begin;
        if (rel + ns + 1 >= kOverflow)
          fail(ErrorKind::unsupported, "too many ops with more than two successors");
        s.succ[0] = kOverflow;
        s.succ[1] = static_cast<uint32_t>(rel);
        t_overflow_.push_back(ns);
        t_overflow_.insert(t_overflow_.end(), next.begin(), next.end());
      }
      t_ops_.push_back(s);
    }
    std::sort(tmp_sends_.begin(), tmp_sends_.end());
    TOp* ops = t_ops_.data() + p.op_begin;
    for (size_t k = 0; k < tmp_sends_.size(); ++k) {
      uint32_t seq = 0;
      if (k > 0 && tmp_sends_[k - 1].first == tmp_sends_[k].first)
        seq = (ops[tmp_sends_[k - 1].second].kind_seq & kSeqMask) + 1;
      ops[tmp_sends_[k].second].kind_seq |= seq;
    }
    for (uint32_t mode = 0; mode < 2; ++mode) {
      const size_t b = t_recv_[mode].size();
      for (uint32_t i = 0; i < n; ++i)
        if (ops[i].kind() == OpKind::recv)
          t_recv_[mode].push_back({mode ? ops[i].adelta : ops[i].xdelta, i});
      std::sort(t_recv_[mode].begin() + static_cast<std::ptrdiff_t>(b), t_recv_[mode].end());
      p.n_recv = static_cast<uint32_t>(t_recv_[mode].size() - b);
    }
    t_dep_begin_.insert(t_dep_begin_.end(), v.dep_begin.begin(), v.dep_begin.end());
    t_deps_.insert(t_deps_.end(), v.deps.begin(), v.deps.end());
    const uint32_t id = static_cast<uint32_t>(progs_.size());
    for (uint32_t mode = 0; mode < 2; ++mode) {
      auto [it, fresh] = index_.try_emplace(hash(v, mode), id);
      if (!fresh) {
        p.next[mode] = it->second;
        it->second = id;
      }
    }
    progs_.push_back(p);
    return id;
  }

  // --- the ranks' state ---------------------------------------------------------------------
  // Rank r is reached: its program is read if it never was, and its counters are set up.
  void hold(uint32_t r) {
    if (tmpl_[r] == kUnset) intern(r);
    const Program& p = prog(r);
    RankState& s = rank_[r];
    auto& free = free_[p.wide][p.n];
    if (!free.empty()) {
      s.pend = free.back();
      free.pop_back();
    } else {
      s.pend = pool_.allocate(size_t{p.n} * (p.wide ? 4 : 2));
    }
    const TOp* o = t_ops_.data() + p.op_begin;
    if (p.wide) {
      uint32_t* c = reinterpret_cast<uint32_t*>(s.pend);
      for (uint32_t i = 0; i < p.n; ++i)
        c[i] = o[i].pending | (lg_ && (o[i].pending & kMsgBit) ? kUnposted : 0);
    } else {
      uint16_t* c = reinterpret_cast<uint16_t*>(s.pend);
      const uint16_t unposted = lg_ ? kUnposted16 : 0;
      for (uint32_t i = 0; i < p.n; ++i)
        c[i] = static_cast<uint16_t>((o[i].pending & kMaxNarrowDeps) |
                                     (o[i].pending & kMsgBit ? kMsgBit16 | unposted : 0));
    }
    peak_held_ = std::max(peak_held_, ++held_);
  }
  // Rank r has finished: its counters go back to the pool.
  void release_rank(uint32_t r) {
    const Program& p = prog(r);
    if (p.dynamic) {
      auto it = matching_.find(r);
      if (it != matching_.end()) {
        if (!it->second.unexpected.empty()) {
          const auto [q, k] = it->second.unexpected.front();
          fail(ErrorKind::invalid_argument,
               "unmatched send: rank " + std::to_string(r) + " finished with the message of rank " +
                   std::to_string(q) + " op " + std::to_string(k) + " taken by no receive");
        }
        matching_.erase(it);
      }
    }
    free_[p.wide][p.n].push_back(rank_[r].pend);
    rank_[r].pend = nullptr;
    --held_;
  }
  static uint32_t widen(uint16_t v) {
    return (v & kMaxNarrowDeps) | (v & kMsgBit16 ? kMsgBit : 0) | (v & kUnposted16 ? kUnposted : 0);
  }
  uint32_t pending(uint32_t r, const Program& p, uint32_t i) const {
    if (p.wide) return reinterpret_cast<const uint32_t*>(rank_[r].pend)[i];
    return widen(reinterpret_cast<const uint16_t*>(rank_[r].pend)[i]);
  }
  uint32_t decrement(uint32_t r, const Program& p, uint32_t i) {
    if (p.wide) return --reinterpret_cast<uint32_t*>(rank_[r].pend)[i];
    return widen(--reinterpret_cast<uint16_t*>(rank_[r].pend)[i]);
  }
  uint32_t clear_msg(uint32_t r, const Program& p, uint32_t i) {
    if (p.wide) return reinterpret_cast<uint32_t*>(rank_[r].pend)[i] &= ~kMsgBit;
    return widen(reinterpret_cast<uint16_t*>(rank_[r].pend)[i] &=
                 static_cast<uint16_t>(~kMsgBit16));
  }
  uint32_t clear_unposted(uint32_t r, const Program& p, uint32_t i) {
    if (p.wide) return reinterpret_cast<uint32_t*>(rank_[r].pend)[i] &= ~kUnposted;
    return widen(reinterpret_cast<uint16_t*>(rank_[r].pend)[i] &=
                 static_cast<uint16_t>(~kUnposted16));
  }

  // --- one trial ---------------------------------------------------------------------------
  void run_trial(uint64_t trial, bool record) {
    record_ = record;
    rng_ = Rng(opt_.seed * 0x9e3779b97f4a7c15ULL + trial * 0xd1b54a32d192ed03ULL + 1);
    trial_seed_ = opt_.seed * 0xd6e8feb86659fd93ULL + trial * 0x9e3779b97f4a7c15ULL + 7;
    if (trace_) cosched_offset_ = Rng(trial_seed_).uniform01() * trace_->period();
    for (RankState& s : rank_) s = RankState{0, 0, 0, 0, nullptr, 0, 0};
    pool_.reset();
    free_[0].clear();
    free_[1].clear();
    held_ = 0;
    queue_.clear();
    unexpected_.clear();
    freed_.clear();
    lots_.clear();
    units_.clear();
    matching_.clear();
    link_free_.clear();
    messages_ = 0;
    bytes_ = 0;
    done_ = 0;
    now_ = 0;
    if (record_) {
      const size_t n = rank_op_begin_.back();
      op_start_.assign(n, kNaN);
      op_end_.assign(n, kNaN);
      cause_.assign(n, kNone);
      msg_of_send_.assign(n, kNone);
      cpu_owner_.assign(static_cast<size_t>(P_), kNone);
      port_owner_.assign(static_cast<size_t>(P_), kNone);
      msg_send_.clear();
      msg_recv_.clear();
      msg_depart_.clear();
      msg_arrive_.clear();
    }
    // The ranks that start at once are read here (generated, on the first trial): the time of
    // this loop is what SimResult reports as loading.
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_now();
    for (uint32_t r = 0; r < P_; ++r) {
      double t = opt_.skew.kind == DistKind::none ? 0.0 : sample(opt_.skew, rng_) + 0.0;
      rank_[r].finish = t;
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
      drain();
      if ((++polls_ & 0xffff) == 0 && opt_.interrupted && opt_.interrupted())
        throw SimInterrupted{};
    }
    if (done_ != total_ops_) stalled();
  }

  // Events due at the same time are handled rank after rank: start loading the state of the
  // events a few places ahead so that the memory latency overlaps the work in between.
  uint32_t polls_ = 0;  // events since the run started, for SimOptions::interrupted
  void prefetch_ahead() const {
    if (const Event* f = queue_.peek(8)) {
      __builtin_prefetch(&rank_[f->rank]);
      __builtin_prefetch(&tmpl_[f->rank]);
    }
    if (const Event* f = queue_.peek(4)) {
      const RankState& s = rank_[f->rank];
      if (s.pend != nullptr) __builtin_prefetch(s.pend);
    }
  }

  double noise() { return has_noise_ ? sample(opt_.noise, rng_) : 0.0; }
  // A noise trace's detours met by rank r's CPU busy from `start` for `len` ns. Each rank's
  // offset into the trace comes from the run's seed and the trial, so a run is reproducible.
  double detour(uint32_t r, double start, double len) const {
    if (!trace_) return 0.0;
    double offset = cosched_offset_;
    if (opt_.noise.b == 0) {
      Rng x(trial_seed_ ^ ((uint64_t{r} + 1) * 0xbf58476d1ce4e5b9ULL));
      offset = x.uniform01() * trace_->period();
    }
    return trace_->detour(offset, start, len);
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
    if (rank_[r].pend == nullptr) hold(r);
    rank_[r].started = 1;
    const Program& p = prog(r);
    if (lg_) {  // LogGOPSim: the ops without deps enter the queue
      for (uint32_t i = 0; i < p.n; ++i)
        if ((pending(r, p, i) & kDepMask) == 0) lg_free(r, i, now_, kNone);
      return lg_flush();
    }
    for (uint32_t i = 0; i < p.n; ++i) {
      const uint32_t pd = pending(r, p, i);
      if (pd == 0) {
        if (record_ && op(p, i).kind() == OpKind::recv) op_start_[gidx(r, i)] = now_;
        ready(r, i, kNone);
      } else if (pd == kMsgBit) {  // a recv without deps is posted at once
        if (record_) op_start_[gidx(r, i)] = now_;
        if (p.dynamic) post(r, i);
      }
    }
  }

  // Op (r, i) completes now: release its successors.
  void complete(uint32_t r, uint32_t i) {
    const Program& p = prog(r);
    const TOp& o = op(p, i);
    RankState& s = rank_[r];
    ++done_;
    s.finish = std::max(s.finish, now_);
    const uint64_t k = record_ ? gidx(r, i) : kNone;
    if (record_) op_end_[k] = now_;
    const uint32_t s0 = o.succ[0], s1 = o.succ[1];
    if (s0 == kOverflow) {
      const uint32_t* ov = &t_overflow_[p.overflow_begin + s1];
      for (uint32_t t = 1; t <= ov[0]; ++t) release(r, p, ov[t], k);
    } else if (s0 != kNoSucc) {
      release(r, p, s0, k);
      if (s1 != kNoSucc) release(r, p, s1, k);
    }
    if (++s.done == p.n) release_rank(r);
  }

  // Op j of rank r has one dep fewer to wait for: op k (global, when recording) completed.
  void release(uint32_t r, const Program& p, uint32_t j, uint64_t k) {
    const uint32_t pd = decrement(r, p, j);
    if (pd == 0) {
      if (record_ && op(p, j).kind() == OpKind::recv) op_start_[gidx(r, j)] = now_;
      ready(r, j, k);
    } else if (pd == kMsgBit) {  // recv posted, its message not yet delivered
      if (record_) op_start_[gidx(r, j)] = now_;
      if (p.dynamic) post(r, j);
    }
  }

  // Op (r, i) has everything it needs; `trigger` is the op whose completion made it so.
  void ready(uint32_t r, uint32_t i, uint64_t trigger) {
    const Program& p = prog(r);
    const TOp& o = op(p, i);
    const uint8_t unit = unit_of(p, i);
    switch (o.kind()) {
      case OpKind::send:
        start_send(r, i, o, unit, trigger);
        return;
      case OpKind::recv: {
        if (record_) cause_[gidx(r, i)] = trigger;
        at(now_ + noise(), r, i, kDone);
        return;
      }
      default: {
        double& cpu = cpu_free(r, unit & 15);
        const double s = std::max(now_, cpu);
        const double e = s + o.amount + noise() + detour(r, s, o.amount);
        if (record_) {
          const uint64_t k = gidx(r, i);
          op_start_[k] = s;
          cause_[k] = s > now_ ? cpu_owner_[r] : trigger;
          cpu_owner_[r] = k;
        }
        cpu = e;
        at(e, r, i, kDone);
      }
    }
  }

  uint32_t peer_of(uint32_t r, const TOp& o) const {
    if (tmpl_[r] & kAddMode) {
      const int64_t q = static_cast<int64_t>(r) + o.adelta;
      return static_cast<uint32_t>(q >= P_ ? q - P_ : q);
    }
    return r ^ static_cast<uint32_t>(o.xdelta);
  }

  // Postal models: the send takes its port as soon as it is ready (booked ahead if busy).
  void start_send(uint32_t r, uint32_t i, const TOp& o, uint8_t unit, uint64_t trigger) {
    double& port_free = send_free(r, unit >> 4);
    const uint32_t dst = peer_of(r, o);
    const double n = o.amount;
    const double extra = has_topology_ ? topo_.extra_latency(r, dst) : 0.0;
    const double d = noise();
    ++messages_;
    bytes_ += n;
    const double s = std::max(now_, port_free);
    double arrival = 0;
    if (m_.kind == ModelKind::postal) {
      arrival = s + m_.alpha + extra + n * m_.beta + d + detour(r, s, m_.alpha + n * m_.beta);
      port_free = arrival;  // one message in flight: the port is busy until it arrives
      // the send completes on arrival (see arrive)
    } else {  // pipelined postal
      const double pushed =
          s + m_.alpha_r + n * m_.beta + d + detour(r, s, m_.alpha_r + n * m_.beta);
      port_free = pushed;
      arrival = pushed + m_.alpha_p + extra;
      at(pushed, r, i, kDone);
    }
    if (congestion_) {  // the message enters the network when the send starts
      arrival += link_wait(r, dst, s, n);
      if (m_.kind == ModelKind::postal) port_free = arrival;  // busy until it arrives
    }
    if (record_) {
      const uint64_t k = gidx(r, i);
      op_start_[k] = s;
      cause_[k] = s > now_ ? port_owner_[r] : trigger;
      port_owner_[r] = k;
      record_message(k, s);
    }
    queue_.push(arrival, r, i << 2 | kArrive);
  }

  void record_message(uint64_t k, double depart) {
    msg_of_send_[k] = msg_send_.size();
    msg_send_.push_back(k);
    msg_recv_.push_back(kNone);
    msg_depart_.push_back(depart);
    msg_arrive_.push_back(kNaN);
  }

  // --- LogP / LogGP / LogGOPS: LogGOPSim's rules ----------------------------------------------
  // (Hoefler, Schneider, Lumsdaine, HPDC 2010.) Every op waits in the one queue, ordered by time
  // and then by insertion number: an op enters it when its deps are complete, at the time its
  // rank could run it (a send: its CPU and send gap free; a receive or local op: its CPU free),
  // and when taken out it runs if its CPU (and gap) is still free, else it goes back, keeping its
  // number, at the time they will be. A message is one more entry, taken out at its receiver
  // once the first byte is there, processed once the receiver's CPU and receive gap are free
  // (else it goes back likewise), whether or not its receive is posted yet. Ops made ready by one
  // event enter together: ranks in order, in a rank sends, then receives, then local ops.

  // Op (r, j) has its deps complete: op `trigger` (global, recording) completed at `after`.
  void lg_free(uint32_t r, uint32_t j, double after, uint64_t trigger) {
    freed_.push_back({r, j, after});
    if (record_) {
      const uint64_t k = gidx(r, j);
      cause_[k] = trigger;
      op_start_[k] = after;  // when it was ready: replaced when it starts (or is posted)
    }
  }
  static int lg_class(OpKind k) { return k == OpKind::send ? 0 : k == OpKind::recv ? 1 : 2; }
  // The ops freed by the event just handled enter the queue.
  void lg_flush() {
    if (freed_.empty()) return;
    // Stable: a handful of ops, most often of one rank and in order, sorted by insertion.
    auto cls = [&](const Freed& f) {
      return uint64_t{f.rank} << 2 | lg_class(op(prog(f.rank), f.op).kind());
    };
    if (freed_.size() > 32)
      std::stable_sort(freed_.begin(), freed_.end(),
                       [&](const Freed& a, const Freed& b) { return cls(a) < cls(b); });
    for (size_t a = 1; a < freed_.size() && freed_.size() <= 32; ++a) {
      const Freed x = freed_[a];
      const uint64_t kx = cls(x);
      size_t b = a;
      for (; b > 0 && cls(freed_[b - 1]) > kx; --b) freed_[b] = freed_[b - 1];
      freed_[b] = x;
    }
    for (const Freed& f : freed_) {
      const Program& p = prog(f.rank);
      const uint8_t unit = unit_of(p, f.op);
      double t = std::max(now_, std::max(f.after, cpu_free(f.rank, unit & 15)));
      if (op(p, f.op).kind() == OpKind::send) t = std::max(t, send_free(f.rank, unit >> 4));
      queue_.push(t, f.rank, f.op << 2 | kOp);
    }
    freed_.clear();
  }

  // Op (r, i) completes at t (>= now): its successors are freed.
  void lg_complete(uint32_t r, uint32_t i, double t) {
    const Program& p = prog(r);
    const TOp& o = op(p, i);
    RankState& s = rank_[r];
    ++done_;
    s.finish = std::max(s.finish, t);
    const uint64_t k = record_ ? gidx(r, i) : kNone;
    if (record_) op_end_[k] = t;
    auto release = [&](uint32_t j) {
      if ((decrement(r, p, j) & kDepMask) == 0) lg_free(r, j, t, k);
    };
    const uint32_t s0 = o.succ[0], s1 = o.succ[1];
    if (s0 == kOverflow) {
      const uint32_t* ov = &t_overflow_[p.overflow_begin + s1];
      for (uint32_t x = 1; x <= ov[0]; ++x) release(ov[x]);
    } else if (s0 != kNoSucc) {
      release(s0);
      if (s1 != kNoSucc) release(s1);
    }
    if (++s.done == p.n) release_rank(r);
  }

  // --- waiting for a busy CPU or gap --------------------------------------------------------
  // LogGOPSim pushes an op (or message) that finds its CPU or gap busy back into the queue at the
  // time they are free: k of them waiting for the same resources are each pushed back up to k
  // times. Here they wait in a lot per rank and set of resources (a CPU; a CPU and a send gap; a
  // CPU and a receive gap), ordered by insertion number, and only the first (the runner) is in
  // the queue: once it has run, the next enters the queue at the time the resources are free.
  // The order is LogGOPSim's: the whole lot would be due then, and only its first can run.
  static constexpr uint32_t kRunnerBit = 0x80000000u;  // in Event::op_type: a lot's runner
  enum LotKind : uint32_t { kLotLocal = 0, kLotSend = 1, kLotMsg = 2 };
  struct Lot {
    std::vector<Event> heap;  // by insertion number, the first on top
    uint64_t runner = kNone;  // the insertion number of the one in the queue
  };
  static bool later(const Event& a, const Event& b) { return a.seq > b.seq; }
  static uint64_t lot_key(uint32_t r, LotKind kind, uint8_t unit) {
    return uint64_t{r} << 32 | uint64_t{kind} << 8 | unit;
  }
  // When the resources of a lot are free.
  double lot_free(uint64_t lk) {
    const uint32_t r = static_cast<uint32_t>(lk >> 32);
    const uint32_t kind = (lk >> 8) & 0xff;
    const uint8_t unit = lk & 0xff;
    const double cpu = cpu_free(r, unit & 15);
    if (kind == kLotLocal) return cpu;
    return std::max(cpu, kind == kLotSend ? send_free(r, unit >> 4) : recv_free(r, unit >> 4));
  }
  // Event e finds its resources busy until `free`: it waits in its lot.
  void wait(const Event& e, uint64_t lk, double free) {
    if (e.op_type & kRunnerBit) return queue_.push_again({free, e.rank, e.op_type, e.seq});
    Lot& lot = lots_[lk];
    lot.heap.push_back(e);
    std::push_heap(lot.heap.begin(), lot.heap.end(), later);
    if (lot.runner == kNone || e.seq < lot.runner) {  // the one before it is due no more
      lot.runner = e.seq;
      queue_.push_again({free, e.rank, e.op_type | kRunnerBit, e.seq});
    }
  }
  // False for a runner that is no longer the first of its lot (one before it came since).
  bool current(const Event& e, uint64_t lk) const {
    if (!(e.op_type & kRunnerBit)) return true;
    auto it = lots_.find(lk);
    return it != lots_.end() && it->second.runner == e.seq;
  }
  // Event e has run: if it was a runner, the next of its lot enters the queue.
  void next_runner(const Event& e, uint64_t lk) {
    if (!(e.op_type & kRunnerBit)) return;
    auto it = lots_.find(lk);
    Lot& lot = it->second;
    std::pop_heap(lot.heap.begin(), lot.heap.end(), later);
    lot.heap.pop_back();
    if (lot.heap.empty()) {
      lots_.erase(it);
      return;
    }
    const Event& n = lot.heap.front();
    lot.runner = n.seq;
    queue_.push_again({std::max(now_, lot_free(lk)), n.rank, n.op_type | kRunnerBit, n.seq});
  }

  // An op is taken out of the queue.
  void lg_op(const Event& e) {
    const uint32_t r = e.rank, i = (e.op_type & ~kRunnerBit) >> 2;
    const Program& p = prog(r);
    const TOp& o = op(p, i);
    const uint8_t unit = unit_of(p, i);
    double& cpu = cpu_free(r, unit & 15);
    switch (o.kind()) {
      case OpKind::send: {
        const uint64_t lk = lot_key(r, kLotSend, unit);
        if (!current(e, lk)) return;
        double& gap = send_free(r, unit >> 4);
        const double free = std::max(cpu, gap);
        if (free > now_) {
          if (record_) cause_[gidx(r, i)] = cpu >= gap ? cpu_owner_[r] : port_owner_[r];
          return wait(e, lk, free);
        }
        lg_send(r, i, o, cpu, gap);
        next_runner(e, lk);
        break;
      }
      case OpKind::recv:
        lg_post(r, i);
        break;
      default: {
        const uint64_t lk = lot_key(r, kLotLocal, unit);
        if (!current(e, lk)) return;
        if (cpu > now_) {
          if (record_) cause_[gidx(r, i)] = cpu_owner_[r];
          return wait(e, lk, cpu);
        }
        const double end = now_ + o.amount + noise() + detour(r, now_, o.amount);
        cpu = end;
        if (record_) {
          const uint64_t k = gidx(r, i);
          op_start_[k] = now_;
          cpu_owner_[r] = k;
        }
        lg_complete(r, i, end);
        next_runner(e, lk);
      }
    }
    lg_flush();
  }

  // Send (r, i) starts now: its CPU and send gap are free.
  void lg_send(uint32_t r, uint32_t i, const TOp& o, double& cpu, double& gap) {
    const uint32_t dst = peer_of(r, o);
    const double n = o.amount, b1 = std::max(n - 1.0, 0.0);
    ++messages_;
    bytes_ += n;
    // A trace's detours over the overhead o, as LogGOPSim counts them.
    const double cpu_end = now_ + m_.o + b1 * m_.O + noise() + detour(r, now_, m_.o);
    cpu = cpu_end;
    gap = now_ + m_.g + b1 * m_.G;
    rank_[r].finish = std::max(rank_[r].finish, cpu_end);
    // The first byte; G is charged at the receiver.
    double arrival = now_ + m_.o + m_.L + (has_topology_ ? topo_.extra_latency(r, dst) : 0.0);
    if (congestion_) arrival += link_wait(r, dst, now_ + m_.o, n);  // enters after o
    if (record_) {
      const uint64_t k = gidx(r, i);
      op_start_[k] = now_;
      cpu_owner_[r] = port_owner_[r] = k;
      record_message(k, now_);
    }
    queue_.push(arrival, r, i << 2 | kArrive);
    if (n <= m_.S) lg_complete(r, i, cpu_end);  // eager; rendezvous: done when it matches
  }

  // The message of send (q, k) is taken out of the queue at its receiver.
  void lg_arrive(const Event& e) {
    const uint32_t q = e.rank, k = (e.op_type & ~kRunnerBit) >> 2;
    const Program& sp = prog(q);
    const TOp so = op(sp, k);  // a copy: reading the receiver's program may move t_ops_
    // The receiver spends its overhead on the CPU and NIC numbered as the send's (LogGOPSim's
    // rule: the receive may not be posted yet).
    const uint8_t unit = unit_of(sp, k);
    const uint32_t r = peer_of(q, so);
    double& cpu = cpu_free(r, unit & 15);
    double& gap = recv_free(r, unit >> 4);
    const uint64_t lk = lot_key(r, kLotMsg, unit);
    if (!current(e, lk)) return;
    const double free = std::max(cpu, gap);
    if (free > now_) return wait(e, lk, free);
    const double b1 = std::max(so.amount - 1.0, 0.0);
    const double end =
        now_ + m_.o + std::max(b1 * m_.O, b1 * m_.G) + noise() + detour(r, now_, m_.o);
    cpu = end;
    gap = now_ + m_.g + b1 * m_.G;
    rank_[r].finish = std::max(rank_[r].finish, end);
    next_runner(e, lk);
    lg_deliver(q, k, so, r, end);
    lg_flush();
  }

  // The message of send (q, k) has been processed at rank r (until `end`): it matches its
  // receive if that is posted, else waits for it.
  void lg_deliver(uint32_t q, uint32_t k, const TOp& so, uint32_t r, double end) {
    if (rank_[r].pend == nullptr) {
      if (rank_[r].started)  // a finished rank has no receive left
        unmatched(r, q, so.seq());
      hold(r);  // reached before it starts (arrival skew)
    }
    const Program& rp = prog(r);
    if (record_) msg_arrive_[msg_of_send_[gidx(q, k)]] = end;
    if (rp.dynamic) {  // the first posted receive that fits, else the unexpected queue
      Matching& mq = matching_[r];
      for (auto it = mq.posted.begin(); it != mq.posted.end(); ++it)
        if (op(rp, *it).xdelta == kAnyDelta || peer_of(r, op(rp, *it)) == q) {
          const uint32_t j = *it;
          mq.posted.erase(it);
          lg_check(q, k, so, r, j);
          clear_msg(r, rp, j);
          return lg_matched(q, k, so, r, j, end, true);
        }
      mq.unexpected.push_back({q, k});
      unexpected_[key(q, k)] = Unexpected{q, k, end};
      return;
    }
    const uint32_t j = find_recv(r, rp, q, so.seq());
    lg_check(q, k, so, r, j);
    const uint32_t pd = clear_msg(r, rp, j);
    if (pd == 0) return lg_matched(q, k, so, r, j, end, true);
    // Not posted yet: matched when it is.
    if (record_ || so.amount > m_.S || rp.unit_begin != kNone)
      unexpected_[key(r, j)] = Unexpected{q, k, end};
  }

  void lg_check(uint32_t q, uint32_t k, const TOp& so, uint32_t r, uint32_t j) {
    const Program& rp = prog(r);
    const TOp& ro = op(rp, j);
    if (ro.amount < so.amount)
      fail(ErrorKind::invalid_argument,
           "rank " + std::to_string(r) + " op " + std::to_string(j) + " receives " +
               std::to_string(static_cast<int64_t>(ro.amount)) + " bytes but rank " +
               std::to_string(q) + " op " + std::to_string(k) + " sends " +
               std::to_string(static_cast<int64_t>(so.amount)));
    if ((pending(r, rp, j) & kMsgBit) == 0) unmatched(r, q, so.seq());
    if (record_) msg_recv_[msg_of_send_[gidx(q, k)]] = gidx(r, j);
  }

  // Receive (r, j) is posted.
  void lg_post(uint32_t r, uint32_t j) {
    const Program& rp = prog(r);
    if (record_) op_start_[gidx(r, j)] = now_;
    const uint32_t pd = clear_unposted(r, rp, j);
    if (rp.dynamic) {  // the first unexpected message that fits, else the posted queue
      const TOp& ro = op(rp, j);
      Matching& mq = matching_[r];
      for (auto it = mq.unexpected.begin(); it != mq.unexpected.end(); ++it)
        if (ro.xdelta == kAnyDelta || peer_of(r, ro) == it->first) {
          const auto [q, k] = *it;
          mq.unexpected.erase(it);
          auto u = unexpected_.find(key(q, k));
          const double end = u->second.end;
          unexpected_.erase(u);
          const TOp so = op(prog(q), k);
          lg_check(q, k, so, r, j);
          clear_msg(r, rp, j);
          return lg_matched(q, k, so, r, j, std::max(now_, end), false);
        }
      mq.posted.push_back(j);
      return;
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
    if (so.amount > m_.S) {
      const uint8_t unit = unit_of(prog(q), k);
      double& cpu = cpu_free(q, unit & 15);
      double& gap = send_free(q, unit >> 4);
      cpu = std::max(cpu, now_);
      gap = std::max(gap, now_);
      lg_complete(q, k, now_);
    }
    // Its cause: the message, unless the receive was posted after the message was processed.
    if (record_ && (by_message || end > now_)) cause_[gidx(r, j)] = gidx(q, k);
    lg_complete(r, j, end);
  }

  // Congestion: how much later a message of n bytes that enters the network at t arrives because
  // links of its route are busy; each link is then busy n * link ns from when the message
  // entered it. (In postal models the send port's time includes the wait.)
  double link_wait(uint32_t src, uint32_t dst, double t, double n) {
    topo_.route(src, dst, route_);
    double at = t;
    const double busy = n * topo_.link;
    for (uint64_t l : route_) {
      double& free = link_free_[l];
      at = std::max(at, free);
      free = at + busy;
    }
    return at - t;
  }

  // Postal models: the message of send (q, k) reaches its destination; in the postal model the
  // send completes then too.
  void arrive(uint32_t q, uint32_t k) {
    if (m_.kind == ModelKind::postal) now_stack_.push_back({q, k});
    deliver(q, k);
  }

  // The message of send (q, k) is delivered to its receive.
  void deliver(uint32_t q, uint32_t k) {
    const TOp so = op(prog(q), k);  // a copy: reading rank r's program below may move t_ops_
    const uint32_t r = peer_of(q, so);
    if (rank_[r].pend == nullptr) {
      if (rank_[r].started)  // a finished rank has no receive left
        unmatched(r, q, so.seq());
      hold(r);  // reached before it starts (arrival skew)
    }
    const Program& rp = prog(r);
    if (rp.dynamic) {  // the first posted receive that fits, else the unexpected queue
      Matching& mq = matching_[r];
      for (auto it = mq.posted.begin(); it != mq.posted.end(); ++it)
        if (op(rp, *it).xdelta == kAnyDelta || peer_of(r, op(rp, *it)) == q) {
          const uint32_t j = *it;
          mq.posted.erase(it);
          return match(q, k, so, r, j);
        }
      mq.unexpected.push_back({q, k});
      if (record_) msg_arrive_[msg_of_send_[gidx(q, k)]] = now_;
      return;
    }
    match(q, k, so, r, find_recv(r, rp, q, so.seq()));
  }

  // Receive (r, j) of a wildcard rank is posted: it takes the first unexpected message that fits.
  void post(uint32_t r, uint32_t j) {
    const Program& rp = prog(r);
    const TOp& ro = op(rp, j);
    Matching& mq = matching_[r];
    for (auto it = mq.unexpected.begin(); it != mq.unexpected.end(); ++it)
      if (ro.xdelta == kAnyDelta || peer_of(r, ro) == it->first) {
        const auto [q, k] = *it;
        mq.unexpected.erase(it);
        const TOp so = op(prog(q), k);
        return match(q, k, so, r, j);
      }
    mq.posted.push_back(j);
  }

  // The message of send (q, k) is delivered to receive (r, j).
  void match(uint32_t q, uint32_t k, const TOp& so, uint32_t r, uint32_t j) {
    const Program& rp = prog(r);
    const TOp& ro = op(rp, j);
    if (ro.amount < so.amount)
      fail(ErrorKind::invalid_argument,
           "rank " + std::to_string(r) + " op " + std::to_string(j) + " receives " +
               std::to_string(static_cast<int64_t>(ro.amount)) + " bytes but rank " +
               std::to_string(q) + " op " + std::to_string(k) + " sends " +
               std::to_string(static_cast<int64_t>(so.amount)));
    if ((pending(r, rp, j) & kMsgBit) == 0) unmatched(r, q, so.seq());
    if (record_) {
      const uint64_t m = msg_of_send_[gidx(q, k)];
      msg_recv_[m] = gidx(r, j);
      if (std::isnan(msg_arrive_[m])) msg_arrive_[m] = now_;
    }
    const uint32_t p = clear_msg(r, rp, j);
    // A rank that has not started yet (arrival skew) finds the message when it starts.
    if (p == 0 && rank_[r].started) ready(r, j, record_ ? gidx(q, k) : kNone);
  }

  uint32_t find_recv(uint32_t r, const Program& p, uint32_t q, uint32_t seq) {
    const bool add = tmpl_[r] & kAddMode;
    const int32_t delta =
        add ? static_cast<int32_t>(q >= r ? q - r : q + P_ - r) : static_cast<int32_t>(q ^ r);
    const auto b = t_recv_[add].begin() + static_cast<std::ptrdiff_t>(p.recv_begin);
    const auto e = b + p.n_recv;
    const auto lb = std::lower_bound(b, e, RecvKey{delta, 0});
    if (e - lb <= static_cast<std::ptrdiff_t>(seq) || lb[seq].delta != delta) unmatched(r, q, seq);
    return lb[seq].op;
  }

  [[noreturn]] void unmatched(uint32_t r, uint32_t q, uint32_t seq) {
    fail(ErrorKind::invalid_argument,
         "unmatched send: rank " + std::to_string(r) + " has no receive for message #" +
             std::to_string(seq + 1) + " from rank " + std::to_string(q));
  }

  [[noreturn]] void stalled() {
    size_t stuck = total_ops_ - done_;
    for (uint32_t r = 0; r < P_; ++r) {
      if (rank_[r].pend == nullptr) continue;
      const Program& p = prog(r);
      for (uint32_t i = 0; i < p.n; ++i) {
        const uint32_t pd = pending(r, p, i);
        if ((pd & ~kUnposted) == 0) continue;
        const uint32_t pm = pd & ~kUnposted;
        std::string why = pm == kMsgBit && op(p, i).xdelta == kAnyDelta
                              ? "no message came for this wildcard receive (unmatched receive)"
                          : pm == kMsgBit
                              ? "its message from rank " + std::to_string(peer_of(r, op(p, i))) +
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

  size_t memory_bytes() const {
    auto cap = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
    size_t free_lists = 0;
    for (const auto& f : free_)
      for (const auto& [n, v] : f) free_lists += cap(v);
    return cap(t_ops_) + cap(t_unit_) + cap(t_overflow_) + cap(t_dep_begin_) + cap(t_deps_) +
           cap(t_recv_[0]) + cap(t_recv_[1]) + cap(progs_) + index_.size() * 32 + cap(tmpl_) +
           cap(rank_) + pool_.memory_bytes() + free_lists + cap(rank_op_begin_) +
           queue_.memory_bytes();
  }

  const ScheduleHeader& h_;
  const SimOptions& opt_;
  Topology topo_;  // opt_.topology with the schedule's placement
  const ModelParams m_;
  const int64_t P_;
  Source source_;
  bool has_topology_ = false, has_noise_ = false, record_ = false, congestion_ = false;
  bool lg_ = false;  // a LogGOPS-family model: LogGOPSim's rules (lg_* below)
  std::unordered_map<uint64_t, double> link_free_;  // congestion: when each link is free
  std::vector<uint64_t> route_;

  // Distinct programs, read-only once added.
  std::vector<TOp> t_ops_;
  std::vector<uint8_t> t_unit_;  // cpu | nic << 4 of the ops of programs that set them
  std::vector<uint32_t> t_overflow_;
  std::vector<RecvKey> t_recv_[2];  // XOR, add mode
  std::vector<Program> progs_;
  std::unordered_map<uint64_t, uint32_t> index_;  // hash -> the last program added with it
  std::vector<uint32_t> tmpl_;                    // per rank: its program | kAddMode, or kUnset
  std::vector<uint64_t> rank_op_begin_;           // recording only: ops numbered rank by rank
  size_t total_ops_ = 0;
  double gen_seconds_ = 0, gen_cpu_seconds_ = 0;
  std::vector<uint32_t> t_dep_begin_;  // each program's deps, as read: what it is compared on
  std::vector<OpId> t_deps_;
  uint32_t last_ = kUnset;  // the program the last rank read matched
  // The rank being read.
  std::vector<OpKey> key_;
  Successors succ_;
  std::vector<std::pair<int64_t, uint32_t>> tmp_sends_;

  // State of a trial.
  std::vector<RankState> rank_;
  CounterPool pool_;
  std::unordered_map<uint32_t, std::vector<uint8_t*>> free_[2];  // by op count: released blocks
  int64_t held_ = 0, peak_held_ = 0;
  EventQueue queue_;
  std::vector<std::pair<uint32_t, uint32_t>> now_stack_;
  // LogGOPS: messages processed before their receive was posted, kept only where needed (a
  // rendezvous, several CPUs, a wildcard rank, a timeline): by the receive's key(rank, op), or
  // for a wildcard rank by the send's.
  std::unordered_map<uint64_t, Unexpected> unexpected_;
  std::vector<Freed> freed_;
  std::unordered_map<uint64_t, Lot> lots_;           // ops and messages waiting for busy resources
  std::unordered_map<uint32_t, Units> units_;        // ranks using CPUs / NICs beyond 0
  std::unordered_map<uint32_t, Matching> matching_;  // ranks with wildcard receives
  Rng rng_{0};
  std::optional<NoiseTrace> trace_;  // --noise file(trace): LogGOPSim's trace replayed in time
  uint64_t trial_seed_ = 0;
  double cosched_offset_ = 0;
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
  Engine e(bound.header(), options, [&](int64_t r) {
    bound.generate_rank(r, p);
    return p.view();
  });
  return e.run();
}

}  // namespace collkit::sim
