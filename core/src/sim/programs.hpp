// The engine's program store: each rank's program, read once (generated when the simulation
// reaches the rank, or fed by a reader) into a compact form shared among the ranks that run the
// same program up to a relabelling of peers. The peers of an op are kept relative to the rank,
// as an XOR distance and as a distance mod P: most collectives' ranks run the same program up to
// one of these (recursive doubling and halving, binomial trees in XOR; rings, Bruck,
// dissemination mod P), so one copy serves every rank that runs it. Read-only once added.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collkit/schedule.hpp"
#include "collkit/sim/model.hpp"

namespace collkit::sim::detail {

constexpr uint32_t kUnset = UINT32_MAX;
constexpr uint64_t kNone = UINT64_MAX;
constexpr uint32_t kMaxRankOps = 1u << 29;
constexpr uint32_t kSeqMask = kMaxRankOps - 1;
constexpr uint32_t kAddMode = 0x80000000u;  // in a rank's program id: peers are (peer - rank) mod P
constexpr uint32_t kMsgBit = 0x80000000u;   // in a recv's pending count: its message is missing
constexpr uint32_t kMaxNarrowDeps = 0x3fffu;
constexpr int32_t kAnyDelta = -1;  // the relative peer of a wildcard receive
constexpr uint32_t kNoSucc = UINT32_MAX;
constexpr uint32_t kOverflow = UINT32_MAX - 1;

// An op of a program as the engine needs it: 32 bytes.
struct TOp {
  double amount;      // send / recv: bytes; local ops: ns (costs.hpp's op_amount)
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

struct RecvKey {  // a program's receives sorted by (relative peer, op)
  int32_t delta;
  uint32_t op;
  bool operator<(const RecvKey& o) const { return delta != o.delta ? delta < o.delta : op < o.op; }
};

// One distinct program: where its ops, successor overflow and receive indexes lie.
struct Program {
  uint64_t op_begin, overflow_begin, recv_begin, dep_begin, deps_begin;
  uint64_t unit_begin;  // its ops' cpu | nic << 4 in units_, or kNone when all are 0
  uint32_t n, n_deps, n_recv;
  bool wide;         // some op has more deps than a 16-bit counter holds
  bool dynamic;      // it has a wildcard receive: its messages match as they come (LogGOPSim)
  uint32_t next[2];  // the next program with the same hash (XOR, add mode)
};

// What a rank's program is compared on, op by op (with its deps).
struct OpKey {
  double amount;  // as in TOp; -1 for a negative length
  int32_t xdelta, adelta;
  uint32_t kind;  // OpKind | (cpu | nic << 4) << 8
  uint32_t op_kind() const { return kind & 0xff; }
  uint8_t unit() const { return static_cast<uint8_t>(kind >> 8); }
};

// Where the store gets rank r's program: a Schedule's view, or the generator's output.
using Source = std::function<RankView(int64_t)>;
// The generator's key of rank r's program up to relabelling mod P (AlgorithmSpec::program_class):
// ranks with the same key >= 0 run the same program, so only the first of them is generated.
using Classes = std::function<int64_t(int64_t)>;

class ProgramStore {
 public:
  ProgramStore(int64_t P, int64_t elem_size, const LocalCosts& m, Source source,
               Classes classes = {})
      : P_(P),
        esize_(static_cast<double>(elem_size)),
        m_(m),
        source_(std::move(source)),
        classes_(std::move(classes)) {
    tmpl_.assign(static_cast<size_t>(P), kUnset);
  }

  bool known(uint32_t r) const { return tmpl_[r] != kUnset; }
  // Reads rank r's program from the source (generating it) and interns it; a rank whose class
  // (see Classes) was seen takes that class's program, in add mode, without being generated.
  void intern(uint32_t r);
  // Interns rank r's program from a view (ranks fed in order by a reader): finds, or adds, its
  // distinct program. The program the previous rank matched is tried first (neighbours mostly
  // run the same one), then those with the same hash; only a program never seen is checked and
  // built in full.
  void intern_view(uint32_t r, const RankView& v);

  const Program& prog(uint32_t r) const { return progs_[tmpl_[r] & ~kAddMode]; }
  const TOp& op(const Program& p, uint32_t i) const { return ops_[p.op_begin + i]; }
  const TOp* ops(const Program& p) const { return ops_.data() + p.op_begin; }
  // cpu | nic << 4 of op i.
  uint8_t unit_of(const Program& p, uint32_t i) const {
    return p.unit_begin == kNone ? 0 : units_[p.unit_begin + i];
  }
  // The successor list {kOverflow, at}: its length, then its ops.
  const uint32_t* overflow(const Program& p, uint32_t at) const {
    return &overflow_[p.overflow_begin + at];
  }
  // The peer of rank r's send or recv o.
  uint32_t peer_of(uint32_t r, const TOp& o) const {
    if (tmpl_[r] & kAddMode) {
      const int64_t q = static_cast<int64_t>(r) + o.adelta;
      return static_cast<uint32_t>(q >= P_ ? q - P_ : q);
    }
    return r ^ static_cast<uint32_t>(o.xdelta);
  }
  // The receive of rank r (program p) that takes message #seq (from 0) from rank q; kUnset if it
  // has none. Inline: the engine asks once per message.
  uint32_t find_recv(uint32_t r, const Program& p, uint32_t q, uint32_t seq) const {
    const bool add = tmpl_[r] & kAddMode;
    const int32_t delta =
        add ? static_cast<int32_t>(q >= r ? q - r : q + P_ - r) : static_cast<int32_t>(q ^ r);
    const auto b = recv_[add].begin() + static_cast<std::ptrdiff_t>(p.recv_begin);
    const auto e = b + p.n_recv;
    const auto lb = std::lower_bound(b, e, RecvKey{delta, 0});
    if (e - lb <= static_cast<std::ptrdiff_t>(seq) || lb[seq].delta != delta) return kUnset;
    return lb[seq].op;
  }
  void prefetch(uint32_t r) const { __builtin_prefetch(&tmpl_[r]); }

  size_t total_ops() const { return total_ops_; }  // of the ranks interned
  size_t read() const { return read_; }            // ranks generated or read (not shared)
  size_t count() const { return progs_.size(); }   // distinct programs
  size_t memory_bytes() const;

 private:
  void key_of(const RankView& v, uint32_t r);
  uint64_t hash(const RankView& v, uint32_t mode) const;
  bool same(const Program& p, const RankView& v, uint32_t mode) const;
  uint32_t add_program(const RankView& v, uint32_t r);
  static std::string where(const RankView& v, uint32_t i);

  const int64_t P_;
  const double esize_;
  const LocalCosts m_;
  Source source_;
  Classes classes_;
  std::unordered_map<int64_t, uint32_t> class_tmpl_;  // class -> its program | kAddMode
  std::vector<TOp> ops_;
  std::vector<uint8_t> units_;  // cpu | nic << 4 of the ops of programs that set them
  std::vector<uint32_t> overflow_;
  std::vector<RecvKey> recv_[2];  // XOR, add mode
  std::vector<Program> progs_;
  std::unordered_map<uint64_t, uint32_t> index_;  // hash -> the last program added with it
  std::vector<uint32_t> tmpl_;                    // per rank: its program | kAddMode, or kUnset
  std::vector<uint32_t> dep_begin_;  // each program's deps, as read: what it is compared on
  std::vector<OpId> deps_;
  size_t total_ops_ = 0;
  size_t read_ = 0;
  uint32_t last_ = kUnset;  // the program the last rank read matched
  // The rank being read.
  std::vector<OpKey> key_;
  Successors succ_;
  std::vector<std::pair<int64_t, uint32_t>> sends_;
};

}  // namespace collkit::sim::detail
