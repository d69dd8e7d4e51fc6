// libcollkit_pmpi: the MPI profiling-interface library that makes unmodified programs use a
// tuning table. LD_PRELOAD it (or link it before the MPI) and set COLLKIT_TUNING=table.json:
// MPI_Allreduce, MPI_Reduce, MPI_Bcast, MPI_Alltoall, MPI_Barrier, MPI_Allgather,
// MPI_Reduce_scatter_block, MPI_Gather and MPI_Scatter (and the MPI-4 `_c` forms), their
// non-blocking MPI_I<coll> and their persistent MPI_<Coll>_init (MPI 4; Open MPI 4.1's
// MPIX_<Coll>_init) go to the table's algorithm for (communicator size, bytes, and its shape:
// nodes and ranks per node, where a rule gives one); everything else goes to PMPI_. The wrappers
// are generated from the one table of calls (call_table.hpp). What a collective reads (root, op,
// which side's count is significant on a rank) comes from its CollectiveSpec.
//
// Every rank must take the same decision, so it reads only what MPI makes equal on all ranks of
// the communicator: its size and kind (intra / inter), count x type-signature size, the op and
// its commutativity, the root; never a rank's datatype layout or buffers. What the executor
// itself refuses before any communication comes back as ck_declined (alike on all ranks), and
// then goes to PMPI_ as well. Whether the table's algorithm can take a call is the registry's one
// answer (Algorithm::refusal), asked here from what every rank sees alike, again by the C API,
// and by the table's reader for the rule's P range. A table that does not load (the one reader
// of collkit/tuning.hpp, as `collkit run` checks it) is reported once and every call goes to the
// MPI. An error that remains goes through the communicator's error handler, as the MPI's own
// call's would: MPI_ERRORS_ARE_FATAL aborts, MPI_ERRORS_RETURN returns the code.
//
// A communicator's first collkit call sets it up (a private duplicate, the ranks' nodes, the
// shared-memory segment: ~0.4 ms at P = 2 on the 2-core VM). A program that calls a collective a
// few times never earns that back, so a measured rule's calls go to the MPI until the MPI's time
// for them (the table's native_median_us a call) reaches COLLKIT_SETUP_US (default 400, the
// setup's cost measured there), and then at the next call that is not a repeat of the one before
// (a loop's first call, not one in the middle of it), or at 16 times that in a run of repeats:
// rent, then buy (Karlin, Manasse, Rudolph and Sleator 1988). Every rank counts the same calls
// from the same table, so all take collkit's route at the same call. COLLKIT_SETUP_US=0, and a
// rule without measurements (written by hand), take collkit's route at once.
//
// COLLKIT_VERBOSE=1 logs each decision once per (collective, P, size class, route) on the
// communicator's rank 0, and prints at MPI_Finalize how many calls went where and their time;
// COLLKIT_STATS=calls.jsonl writes every rank's as collkit result rows (world rank 0 writes). A
// row's bytes are a call's size as its rule is keyed (an irregular call's: the whole vector's
// bytes); gatherv, scatterv and alltoallv, whose total no rank has, add one PMPI_Iallreduce of each
// rank's share on the call's communicator while timing (pending_totals).
#include <mpi.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "call_table.hpp"
#include "collkit.h"
#include "collkit/collective.hpp"
#include "collkit/error.hpp"
#include "collkit/registry.hpp"
#include "collkit/tuning.hpp"
#include "collkit_pmpi.h"
#include "env.hpp"
#include "fast_reduce.hpp"
#include "layout.hpp"
#include "nbc.hpp"
#include "placement.hpp"

namespace {

using collkit::Collective;
using collkit::CollectiveSpec;
using collkit::kNumCollectives;

const char* name_of(int c) {
  return collkit::to_string(static_cast<Collective>(c)).data();  // static NUL-terminated text
}

struct Entry {
  collkit::tuning::Rule rule;
  std::optional<collkit::Algorithm> algo;  // empty: native
  // The log's why: "table", or for a rule with a shape "table, rule 2 for 2 nodes x 1 ppn".
  std::string label;
};

// "[lo, hi]" as the log says it: "2" where lo == hi.
std::string range_text(int64_t lo, int64_t hi) {
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi);
}

std::string rule_label(size_t i, const collkit::tuning::Rule& r) {
  if (!r.shaped()) return "table";
  std::string label = "table, rule " + std::to_string(i) + " for";
  if (r.nodes_lo > 0) label += " " + range_text(r.nodes_lo, r.nodes_hi) + " nodes";
  if (r.nodes_lo > 0 && r.ppn_lo > 0) label += " x";
  if (r.ppn_lo > 0) label += " " + range_text(r.ppn_lo, r.ppn_hi) + " ppn";
  return label;
}

struct Counter {
  long long calls = 0;
  double total = 0, min = 1e300, max = 0;  // seconds
};

struct State {
  std::vector<Entry> rules[kNumCollectives];  // by the core's enum order
  bool covered[kNumCollectives] = {};         // any rule (other than native) for the collective
  bool shaped[kNumCollectives] = {};          // any rule with a shape for the collective
  bool verbose = false;
  bool timing = false;  // verbose or COLLKIT_STATS: time and count every call
  std::string stats_path, table_path;
  std::mutex lock;  // guards the log and the counters (only touched when timing)
  std::set<std::tuple<int, int, int, std::string>> logged;
  std::map<std::tuple<int, std::string, int, int64_t>, Counter> counters;
  // The timed calls whose total bytes are being summed (pending_totals), in call order.
  struct PendingTotal {
    MPI_Request request = MPI_REQUEST_NULL;
    int64_t share[2] = {0, 0}, total[2] = {0, 0};  // bytes, and whether a rank's were unknown
    Collective c{};
    int P = 0;
    bool log_rank = false;  // rank 0 of the call's communicator: the log's line is said here
    std::string route, why;
    double seconds = 0;
  };
  std::list<PendingTotal> pending;
  // What the calls with a rule did: ran collkit's algorithm, or were declined (to the MPI).
  std::atomic<long long> ran{0}, declined{0};
  double setup_us = 400;    // COLLKIT_SETUP_US: what a communicator's setup is taken to cost
  bool early_setup = true;  // COLLKIT_EARLY_SETUP: set up a covered communicator as it is made
};

// Moves on each table loaded (collkit_pmpi_use_table) and each watched communicator freed: the
// decisions remembered per thread (decide, kept) are then forgotten. A global, not the
// State's: the call's first tests read it without reaching the State.
std::atomic<uint64_t> g_generation{1};

// Per collective: its calls go straight to the MPI's (no rule other than native for it, nothing
// timed). Set as a table is taken (load, use_table); read without a lock as a call's first test,
// before any MPI query: a declined call then costs a load, a test and a jump. False until the
// table is read, so that the first call reads it.
std::atomic<bool> g_straight[kNumCollectives];

void set_straight(const State& s) {
  for (int c = 0; c < kNumCollectives; ++c)
    g_straight[c].store(!s.covered[c] && !s.timing, std::memory_order_release);
}

// A communicator handle's value as a word, complemented (MPICH's handles are ints, Open MPI's
// pointers): no handle gives kNoComm, the zero that g_native_comm starts with.
template <class H>
uintptr_t handle_word(H h) {
  if constexpr (std::is_pointer_v<H>)
    return ~reinterpret_cast<uintptr_t>(h);
  else
    return ~static_cast<uintptr_t>(static_cast<std::make_unsigned_t<H>>(h));
}
constexpr uintptr_t kNoComm = 0;

// Per collective: the communicator whose every call of it goes to the MPI (no rule other than
// native for its size: comm_seen), the last one found (handle_word); kNoComm: none. Read without
// a lock as a call's first test, beside g_straight. Cleared as a table is taken and as a watched
// communicator is freed (before MPI can hand its handle to another one), and never set while
// calls are timed.
std::atomic<uintptr_t> g_native_comm[kNumCollectives];

void clear_native_comms() {
  for (auto& n : g_native_comm) n.store(kNoComm, std::memory_order_seq_cst);
}

// Whether a call of `c` on `comm` goes straight to the MPI: no rule for the collective or for the
// communicator's size, and no collkit run in flight to move (progress_nonblocking).
inline bool straight(Collective c, MPI_Comm comm) {
  const int ci = static_cast<int>(c);
  return (g_straight[ci].load(std::memory_order_relaxed) ||
          g_native_comm[ci].load(std::memory_order_relaxed) == handle_word(comm)) &&
         !collkit::mpi::nonblocking_active();
}

// What the library keeps of a communicator it has seen a rule for (an attribute's value, freed
// with the communicator): its calls deferred to the MPI until their time pays for the setup.
struct CommUse {
  bool set_up = false;  // collkit takes the calls its rules give it
  double spent_us = 0;  // the table's MPI time of the calls deferred so far
  long long deferred = 0;
  int last_c = -1;  // the last call counted: a repeat does not end a run
  int64_t last_bytes = -1;
};

int world_rank() {
  int init = 0, fin = 0, rank = 0;
  PMPI_Initialized(&init);
  PMPI_Finalized(&fin);
  if (init && !fin) PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// The table at `path`, or why not: the one reader and its checks (collkit/tuning.hpp).
std::string read_rules(const char* path, std::vector<Entry>& entries) {
  try {
    collkit::tuning::Table t = collkit::tuning::read_table(path);
    for (collkit::tuning::Rule& r : t.rules) {
      Entry e;
      if (!r.native) e.algo.emplace(r.canonical);
      e.rule = std::move(r);
      entries.push_back(std::move(e));
    }
  } catch (const std::exception& e) {
    entries.clear();
    return e.what();
  }
  return "";
}

void use(State& s, const char* path) {
  // The generation first: a call that is setting g_native_comm from the old rules meanwhile sees
  // it move and takes its word back (native_comm).
  g_generation.fetch_add(1, std::memory_order_seq_cst);
  for (auto& f : g_straight) f.store(false, std::memory_order_release);
  clear_native_comms();
  for (auto& r : s.rules) r.clear();
  for (bool& c : s.covered) c = false;
  for (bool& c : s.shaped) c = false;
  s.table_path = path;
  std::vector<Entry> entries;
  if (std::string error = read_rules(path, entries); !error.empty()) {
    if (world_rank() == 0)
      std::fprintf(stderr, "collkit: tuning table %s not used (%s): every call goes to the MPI\n",
                   path, error.c_str());
    return;
  }
  const bool log = s.verbose && world_rank() == 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    Entry& e = entries[i];
    if (log && !e.rule.note.empty())
      std::fprintf(stderr, "collkit: rule %zu (%s): %s\n", i, e.rule.canonical.c_str(),
                   e.rule.note.c_str());
    const int c = static_cast<int>(e.rule.collective);
    if (!e.rule.native) s.covered[c] = true;
    if (e.rule.shaped()) s.shaped[c] = true;
    e.label = rule_label(i, e.rule);
    s.rules[c].push_back(std::move(e));
  }
  if (log) std::fprintf(stderr, "collkit: tuning table %s: %zu rules\n", path, entries.size());
}

void load(State& s) {
  s.verbose = collkit::mpi::env_int("COLLKIT_VERBOSE", 0, 0, 9, "a level") > 0;
  const char* st = std::getenv("COLLKIT_STATS");
  if (st != nullptr) s.stats_path = st;
  s.timing = s.verbose || !s.stats_path.empty();
  s.setup_us =
      collkit::mpi::env_number("COLLKIT_SETUP_US", s.setup_us, 0, 1e9, "a number of microseconds");
  s.early_setup = collkit::mpi::env_flag("COLLKIT_EARLY_SETUP", true);
  const char* path = std::getenv("COLLKIT_TUNING");
  if (path == nullptr || *path == '\0') {
    if (s.verbose && world_rank() == 0)
      std::fprintf(stderr, "collkit: COLLKIT_TUNING is not set: every call goes to the MPI\n");
    return;
  }
  use(s, path);
}

State& state() {
  static State* s = [] {
    auto* st = new State;  // never freed: MPI_Finalize and atexit order must not matter
    load(*st);
    set_straight(*st);
    return st;
  }();
  return *s;
}

struct Decision {
  const Entry* entry = nullptr;  // null: the MPI's own call
  const char* why = "";
  int P = 0;
  int64_t bytes = 0;
  int64_t elem_size = 0;    // the datatype's size
  int nodes = -1, ppn = 0;  // the communicator's shape (comm_shape); -1: not asked for
  std::string refused;      // a rule covers the call, but its algorithm cannot take it: why
  bool reusable = false;    // the same call's decision may be remembered (see decide)
  // Read from the whole vector's total (allgatherv, reduce_scatter: `bytes`, of the receive side's
  // arrays or the send side's): remembered, it holds while the total is the same (holds).
  bool by_total = false, total_of_recv = false;
  CommUse* use = nullptr;  // the communicator's, where a rule covers the call
};

// One side of a call (count and datatype): the bytes of a block are count x type size.
struct Side {
  MPI_Count count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  bool in_place = false;  // MPI_IN_PLACE was passed as this side's buffer
  // An irregular call's side: its counts and displacements (int, or MPI_Count and MPI_Aint).
  bool arrays = false, wide = false;
  const void* counts = nullptr;
  const void* displs = nullptr;
  MPI_Count count_at(int b) const {
    return wide ? static_cast<const MPI_Count*>(counts)[b] : static_cast<const int*>(counts)[b];
  }
};

// The MPI's predefined reduction ops, all commutative: no MPI call to ask (MPI_Op_commutative
// was ~40 ns of every routed call on the 2-core VM).
bool predefined(MPI_Op op) {
  static const MPI_Op ops[] = {MPI_MAX, MPI_MIN, MPI_SUM,  MPI_PROD, MPI_LAND,   MPI_BAND,
                               MPI_LOR, MPI_BOR, MPI_LXOR, MPI_BXOR, MPI_MAXLOC, MPI_MINLOC};
  for (MPI_Op o : ops)
    if (op == o) return true;
  return false;
}

// Which rule covers the call, from what is equal on every rank of `comm` only: its size, the
// bytes of a block (from a side significant on this rank, the spec says which), the op, the root.
Decision decide_now(const State& s, Collective c, MPI_Comm comm, const Side& send, const Side& recv,
                    MPI_Op op, int root) {
  const CollectiveSpec& spec = collkit::spec_of(c);
  const int ci = static_cast<int>(c);
  Decision d;
  if (comm == MPI_COMM_NULL) return d;
  int inter = 0, rank = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;  // the side's type the bytes come from
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return d;
  if (PMPI_Comm_size(comm, &d.P) != MPI_SUCCESS) return d;
  if (inter) {
    d.why = "intercommunicator";
    return d;
  }
  // The communicator's shape, where a rule of a shape might cover the call: found from what
  // every rank has alike (the table, the collective, P), so every rank finds it in the same call
  // (collective over `comm` the first time, then cached on it).
  for (const Entry& e : s.rules[ci])
    if (s.shaped[ci] && e.rule.shaped() && d.P >= e.rule.p_lo && d.P <= e.rule.p_hi) {
      int nodes = 0, ppn = 0;
      collkit::mpi::comm_shape(comm, nodes, ppn);
      d.nodes = nodes;
      d.ppn = ppn;
      break;
    }
  if (spec.rooted && (root < 0 || root >= d.P)) {
    d.why = "root out of range";  // the MPI reports it
    return d;
  }
  if (spec.post.kind != collkit::Postcondition::Kind::synchronized) {
    // The receive side where this rank has an output the postcondition speaks of (the root of a
    // gather, every rank of an allgather), else the send side (a gather's other ranks).
    // Only a rooted collective's sides depend on the rank (an MPI call saved on the others).
    if (spec.rooted && PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS) return d;
    const bool recv_counts = collkit::buffer_elems(spec.out, d.P, 1, root, rank) > 0 &&
                             !recv.in_place && collkit::applies_to(spec.post.ranks, root, rank);
    const Side& side = recv_counts ? recv : send;
    MPI_Count size = 0;
    if (side.type == MPI_DATATYPE_NULL || side.count < 0 ||
        PMPI_Type_size_x(side.type, &size) != MPI_SUCCESS || size == MPI_UNDEFINED || size < 0) {
      d.why = "datatype";
      return d;
    }
    if (spec.counts != collkit::Counts::none) {
      // An irregular call: the sum of the count vector where every rank has it (MPICH selects
      // by that total), else nothing every rank sees alike (a gatherv's ranks know their own
      // block, an alltoallv's their row and column): -1, which only a rule for every size covers.
      // The arrays may change between calls: a decision read from the whole vector's total is
      // remembered with it (by_total); -1 reads none of them.
      d.bytes = -1;
      if (collkit::mpi::whole_vector(spec) && side.arrays && side.counts != nullptr) {
        MPI_Count total = 0;
        for (int b = 0; b < d.P; ++b) {
          const MPI_Count n = side.count_at(b);
          if (n < 0 || (size != 0 && n > (INT64_MAX / 2 - total) / size)) return d;
          total += n * size;
        }
        d.bytes = static_cast<int64_t>(total);
        d.by_total = true;
        d.total_of_recv = &side == &recv;
      }
    } else {
      if (size != 0 && side.count > INT64_MAX / size) return d;
      d.bytes = static_cast<int64_t>(side.count * size);
    }
    d.elem_size = static_cast<int64_t>(size);
    type = side.type;
  }
  // Of the rules that cover the call, the first of the communicator's shape, else the first
  // without a shape.
  const Entry* hit = nullptr;
  const Entry* any_shape = nullptr;
  for (const Entry& e : s.rules[ci])
    if (d.P >= e.rule.p_lo && d.P <= e.rule.p_hi &&
        (d.bytes < 0 ? e.rule.bytes_lo == 0 && e.rule.bytes_hi >= collkit::tuning::kMaxRuleBytes
                     : d.bytes >= e.rule.bytes_lo && d.bytes <= e.rule.bytes_hi)) {
      if (!e.rule.shaped()) {
        if (any_shape == nullptr) any_shape = &e;
        if (d.nodes < 0) break;  // no rule of a shape covers the call: the first wins
        continue;
      }
      if (e.rule.covers_shape(d.nodes, d.ppn)) {
        hit = &e;
        break;
      }
    }
  if (hit == nullptr) hit = any_shape;
  // Everything read so far stays what it is while the communicator lives, if the type is one
  // of the MPI's own (a derived type may be freed and its handle given to another).
  d.reusable =
      (type == MPI_DATATYPE_NULL || collkit::mpi::named_type(type)) &&
      (spec.counts == collkit::Counts::none || !collkit::mpi::whole_vector(spec) || d.by_total);
  if (hit == nullptr) {
    d.why = "not in the table";
    return d;
  }
  if (hit->rule.native) {
    d.why = "table: native";
    return d;
  }
  // Whether the algorithm can take the call: the registry's answer from what every rank sees
  // alike, its limits only (constant time); the C API asks the rest (the generator's own checks,
  // the ranks' nodes) and declines alike, and the table's reader has checked the rule's P.
  collkit::CallShape shape{d.P, d.bytes, 1, spec.rooted ? root : 0, true, {}};
  if (spec.reduction()) {
    int commute = 1;
    if (op == MPI_OP_NULL ||
        (!predefined(op) && PMPI_Op_commutative(op, &commute) != MPI_SUCCESS)) {
      d.why = "op";
      d.reusable = false;
      return d;
    }
    if (!predefined(op)) d.reusable = false;  // a user's op may be freed, its handle reused
    // Node-aware algorithms: whether the op must commute depends on the ranks' nodes, which
    // the C API finds and asks with (it declines alike on every rank).
    shape.commutative = commute != 0 || hit->algo->spec().restrictions.needs_placement;
    // Whether the op is exact under any grouping on the type: a named type is its own element;
    // a derived type's element (MPI's one basic type in it) is the C API's to find, which then
    // declines alike on every rank.
    shape.exact =
        !collkit::mpi::named_type(type) || (predefined(op) && collkit::mpi::exact_op(type, op));
    // A reduction runs on the datatype's elements (equal on every rank, as the count and op).
    if (d.elem_size > 0) {
      shape.count = d.bytes / d.elem_size;
      shape.elem_size = d.elem_size;
    } else {
      shape.count = 0;
    }
  }
  // An irregular call's limits need its vector: the C API checks them (and declines alike).
  if (std::string why = spec.counts != collkit::Counts::none
                            ? std::string()
                            : hit->algo->refusal(shape, collkit::CallCheck::limits);
      !why.empty()) {
    d.why = !shape.commutative                                        ? "non-commutative op"
            : !shape.exact && hit->algo->spec().restrictions.exact_op ? "inexact op"
                                                                      : "declined";
    d.refused = std::move(why);
    return d;
  }
  d.entry = hit;
  return d;
}

// A communicator that collkit remembers decisions for carries this attribute (its CommUse): when
// MPI deletes it (the communicator is freed, by any path, Fortran's included), every remembered
// decision is forgotten, since MPI may give the freed handle to a communicator of another size.
int forget_decisions(MPI_Comm, int, void* value, void*) {
  g_generation.fetch_add(1, std::memory_order_seq_cst);
  clear_native_comms();
  delete static_cast<CommUse*>(value);
  return MPI_SUCCESS;
}

// The communicator's CommUse, made at its first sight; nullptr when MPI refuses the attribute.
CommUse* watched(MPI_Comm comm) {
  static const int keyval = [] {
    int k = MPI_KEYVAL_INVALID;
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, forget_decisions, &k, nullptr) !=
        MPI_SUCCESS)
      k = MPI_KEYVAL_INVALID;
    return k;
  }();
  if (keyval == MPI_KEYVAL_INVALID) return nullptr;
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, keyval, &value, &found) != MPI_SUCCESS) return nullptr;
  if (found) return static_cast<CommUse*>(value);
  auto* use = new CommUse;
  if (PMPI_Comm_set_attr(comm, keyval, use) == MPI_SUCCESS) return use;
  delete use;
  return nullptr;
}

// What a call's decision is read from (of a side: its count, type and MPI_IN_PLACE; an irregular
// call's decision is remembered where it reads no array, alltoallv's, gatherv's, scatterv's, or
// with the vector's total it was read from, allgatherv's and reduce_scatter's: Decision::by_total).
struct CallKey {
  MPI_Comm comm;
  MPI_Op op;
  int root;
  bool send_in_place, recv_in_place;
  MPI_Count send_count, recv_count;
  MPI_Datatype send_type, recv_type;
  [[gnu::always_inline]] bool operator==(const CallKey&) const = default;
};

CallKey key_of(MPI_Comm comm, MPI_Op op, int root, const Side& send, const Side& recv) {
  return {comm,       op,         root,      send.in_place, recv.in_place,
          send.count, recv.count, send.type, recv.type};
}

// The calls this thread has seen decided, by key alone, with where they went: the MPI (no
// entry) or a rule whose communicator's setup is paid for. A call whose key is here goes there
// from its wrapper (MPI_X), before the frame of a routed call is built, the State is reached or
// a remembered decision is read: a call left to the MPI costs ~70 instructions over the MPI's
// own, the routed wrapper's path ~125 (callgrind, benchmarks/results/pmpi_overhead.md: 5-25 % of
// a 0.15-0.2 us bcast or reduce on Open MPI in IMB); a routed call skips that path too. route()
// keeps a key where its decision is remembered too (reusable, on a watched communicator), reads no
// count vector (by_total), declines nothing (counted) and nothing is timed; so it holds while the
// generation does (a table loaded clears the rules an entry points into, and moves it).
// Direct-mapped by a hash of the key: a rotating root's or two interleaved loops' calls each find
// their slot at once (a loop over ways mispredicts at each turn). Zero at first, no constructor: no
// guard on the path.
struct Kept {
  static constexpr int kSlots = 8;
  struct Slot {
    CallKey key;
    const Entry* entry;  // null: the MPI's own call
    bool used;
  };
  uint64_t generation;  // 0: nothing kept (the generations start at 1)
  Slot slot[kNumCollectives][kSlots];
};
thread_local Kept t_kept;

// The key's slot: what differs between a program's calls of one collective (the counts, the
// root, the receive side's type) summed, the handle's alignment bits dropped (handle_word's
// complement keeps them distinct).
[[gnu::always_inline]] inline int slot_of(const CallKey& k) {
  const uint64_t h = static_cast<uint64_t>(k.send_count) + static_cast<uint64_t>(k.recv_count) +
                     static_cast<uint64_t>(static_cast<uint32_t>(k.root)) +
                     (handle_word(k.recv_type) >> 4);
  return static_cast<int>(h & (Kept::kSlots - 1));
}

// This call's slot where its key is kept (and nothing of collkit's is in flight to move), else
// null.
[[gnu::always_inline]] inline const Kept::Slot* kept(Collective c, MPI_Comm comm, MPI_Op op,
                                                     int root, const Side& send, const Side& recv) {
  const Kept* k = &t_kept;
  if (k->generation != g_generation.load(std::memory_order_acquire) ||
      collkit::mpi::nonblocking_active())
    return nullptr;
  const CallKey key = key_of(comm, op, root, send, recv);
  const Kept::Slot& slot = k->slot[static_cast<int>(c)][slot_of(key)];
  return slot.used && slot.key == key ? &slot : nullptr;
}

// Keeps the key of a call route() sends to `entry` (null: the MPI) from decision `d`, made
// under `generation`, where the next call of the key may go there from its wrapper.
void keep(const State& s, Collective c, const CallKey& key, const Decision& d, const Entry* entry,
          uint64_t generation) {
  if (!d.reusable || d.use == nullptr || d.by_total || !d.refused.empty() || s.timing) return;
  Kept& k = t_kept;
  if (k.generation != generation) {
    for (auto& slots : k.slot)
      for (Kept::Slot& slot : slots) slot.used = false;
    k.generation = generation;
  }
  k.slot[static_cast<int>(c)][slot_of(key)] = {key, entry, true};
}

// decide_now, remembered: the last few calls of each collective on this thread (a loop repeats
// them), so that a repeated call asks the MPI nothing (deciding asks it three to five questions,
// ~40 ns each on MPICH: most of what routing added to an 8-byte call). Forgotten when a table is
// loaded or a watched communicator freed (the generation moves).
struct Remembered {
  static constexpr int kWays = 4;
  uint64_t generation = 0;
  int last[kNumCollectives] = {};  // the way that answered last: a loop asks it again
  bool used[kNumCollectives][kWays] = {};
  CallKey key[kNumCollectives][kWays] = {};
  Decision decision[kNumCollectives][kWays];
};

// This thread's Remembered, reached through a plain pointer: a thread_local with a destructor
// costs a guard test at every use, and the call's path is short. The owner frees it as the thread
// ends. The default TLS model: the library is opened with dlopen too (the table reader's tests
// through ctypes), where glibc refuses an initial-exec variable that finds no room in the static
// TLS block.
thread_local Remembered* t_remembered = nullptr;

[[gnu::noinline]] Remembered& make_remembered() {
  struct Owner {
    ~Owner() {
      delete t_remembered;
      t_remembered = nullptr;
    }
  };
  t_remembered = new Remembered;
  thread_local Owner owner;
  static_cast<void>(owner);
  return *t_remembered;
}

inline Remembered& remembered() {
  Remembered* m = t_remembered;
  return m != nullptr ? *m : make_remembered();
}

// Whether a remembered decision holds for this call: one read from the whole vector's total holds
// while the total is the same (P entries summed, as decide_now sums them).
[[gnu::always_inline]] inline bool holds(const Decision& d, const Side& send, const Side& recv) {
  if (!d.by_total) [[likely]]
    return true;
  const Side& side = d.total_of_recv ? recv : send;
  if (!side.arrays || side.counts == nullptr) return false;
  const int64_t size = d.elem_size;
  int64_t total = 0;
  for (int b = 0; b < d.P; ++b) {
    const MPI_Count n = side.count_at(b);
    if (n < 0 || (size != 0 && n > (INT64_MAX / 2 - total) / size)) return false;
    total += static_cast<int64_t>(n) * size;
  }
  return total == d.bytes;
}

// decide, where no remembered way answers (remembered_decision has looked): decide_now, and
// remembered where it may be.
[[gnu::noinline]] const Decision& decide_again(State& s, Collective c, MPI_Comm comm,
                                               const Side& send, const Side& recv, MPI_Op op,
                                               int root) {
  Remembered& m = remembered();
  const uint64_t generation = g_generation.load(std::memory_order_acquire);
  const int ci = static_cast<int>(c);
  const CallKey key = key_of(comm, op, root, send, recv);
  if (m.generation != generation) {  // forget all
    for (auto& ways : m.used)
      for (bool& u : ways) u = false;
    m.generation = generation;
  }
  thread_local Decision once;  // a decision not remembered
  once = decide_now(s, c, comm, send, recv, op, root);
  if (once.reusable || once.entry != nullptr) once.use = watched(comm);
  // Watching may fail (then nothing is remembered); a table loaded meanwhile wins.
  if (once.reusable && once.use != nullptr &&
      g_generation.load(std::memory_order_acquire) == generation) {
    const int w = (m.last[ci] + 1) % Remembered::kWays;  // the way answered longest ago, in a loop
    m.last[ci] = w;
    m.used[ci][w] = true;
    m.key[ci][w] = key;
    m.decision[ci][w] = std::move(once);
    return m.decision[ci][w];
  }
  return once;
}

// The decision of a loop's next call: the way that answered the last, else another way that
// answers (a rotating root or two alternating calls: the way is then moved to); else null. No
// MPI query, no rule walked: a call that kept() does not hold (one declined, one read from a
// count vector's total, one whose slot another key took) costs this and a jump.
[[gnu::always_inline]] inline const Decision* remembered_decision(Collective c, MPI_Comm comm,
                                                                  const Side& send,
                                                                  const Side& recv, MPI_Op op,
                                                                  int root) {
  Remembered& m = remembered();
  if (m.generation != g_generation.load(std::memory_order_acquire)) [[unlikely]]
    return nullptr;
  const int ci = static_cast<int>(c);
  const int l = m.last[ci];
  const CallKey key = key_of(comm, op, root, send, recv);
  if (m.used[ci][l] && m.key[ci][l] == key && holds(m.decision[ci][l], send, recv)) [[likely]]
    return &m.decision[ci][l];
  for (int w = 0; w < Remembered::kWays; ++w)
    if (w != l && m.used[ci][w] && m.key[ci][w] == key && holds(m.decision[ci][w], send, recv)) {
      m.last[ci] = w;
      return &m.decision[ci][w];
    }
  return nullptr;
}

// The decision of a call: remembered, else decide_now (and remembered where it may be).
inline const Decision& decide(State& s, Collective c, MPI_Comm comm, const Side& send,
                              const Side& recv, MPI_Op op, int root) {
  if (const Decision* d = remembered_decision(c, comm, send, recv, op, root)) [[likely]]
    return *d;
  return decide_again(s, c, comm, send, recv, op, root);
}

// What this thread knows of a communicator it has called collectives on: per collective, whether
// no rule other than native covers its size (then every call of that collective on it goes to the
// MPI, whatever its count, type, op or root: decide_now would find no rule or a native one), so
// that such a call asks the MPI nothing, reads no type size and walks no rule. Alike on every
// rank: the table and the size are. Kept by the handle's value, in a few entries, valid for one
// generation: a communicator's handle that MPI frees and hands to another one (another size)
// moves the generation first (its attribute's delete callback, forget_decisions).
struct CommSeen {
  MPI_Comm comm;
  uint32_t native_all;  // bit c: every call of collective c goes to the MPI
  bool valid;
};
static_assert(kNumCollectives <= 32, "one bit a collective");

// This thread's entries, valid for one generation (0: none; the state's starts at 1). Zero at
// first: no constructor, no guard on the call's path.
struct CommsSeen {
  static constexpr int kEntries = 4;
  uint64_t generation;
  int next;
  CommSeen entry[kEntries];
};

// The entry of `comm` for this thread, filled at its first call (or after a generation moved);
// nullptr where MPI answers no question about it (MPI_COMM_NULL, a freed handle): decide_now
// then says what the MPI's own call says.
const CommSeen* comm_seen(const State& s, MPI_Comm comm) {
  thread_local CommsSeen seen;
  const uint64_t generation = g_generation.load(std::memory_order_acquire);
  if (seen.generation == generation) {
    for (const CommSeen& e : seen.entry)
      if (e.comm == comm && e.valid) return &e;
  } else {
    for (CommSeen& e : seen.entry) e.valid = false;
    seen.generation = generation;
  }
  int inter = 0, P = 0;
  if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS ||
      PMPI_Comm_size(comm, &P) != MPI_SUCCESS)
    return nullptr;
  uint32_t native_all = 0;
  for (int c = 0; c < kNumCollectives; ++c) {
    bool some = false;
    for (const Entry& e : s.rules[c])
      some = some || (!e.rule.native && e.rule.p_lo <= P && P <= e.rule.p_hi);
    if (inter || !some) native_all |= uint32_t{1} << c;
  }
  // Its attribute says when it is freed; without one nothing is kept. A table taken meanwhile
  // wins.
  if (watched(comm) == nullptr || g_generation.load(std::memory_order_acquire) != generation)
    return nullptr;
  CommSeen& e = seen.entry[seen.next];
  seen.next = (seen.next + 1) % CommsSeen::kEntries;
  e = {comm, native_all, true};
  return &e;
}

int size_class(int64_t bytes) {
  int k = 0;
  while (bytes > 1) {
    bytes >>= 1;
    ++k;
  }
  return k;
}

// `why` is asked only for the log's first line of a kind: the calls of a loop build no strings.
// `log_rank`: 1 where this rank says the log's line, 0 where it does not, -1: where it is rank 0
// of `comm`.
template <class Why>
void note(State& s, Collective c, MPI_Comm comm, const Decision& d, std::string_view route,
          Why&& why, double seconds, int log_rank = -1) {
  // The previous call's counter, per thread: a loop repeats its key, and the map's nodes stay
  // where they are (its lookup, the key's string and the log's set cost more than the call).
  struct Last {
    int c = -1, P = 0;
    int64_t bytes = 0;
    std::string route;
    Counter* counter = nullptr;
  };
  thread_local Last last;
  std::lock_guard<std::mutex> g(s.lock);
  if (last.counter != nullptr && last.c == static_cast<int>(c) && last.P == d.P &&
      last.bytes == d.bytes && last.route == route) {
    Counter& n = *last.counter;
    ++n.calls;
    n.total += seconds;
    n.min = std::min(n.min, seconds);
    n.max = std::max(n.max, seconds);
    return;
  }
  if (s.verbose) {
    const auto key =
        std::make_tuple(static_cast<int>(c), d.P, size_class(d.bytes), std::string(route));
    if (s.logged.insert(key).second) {
      int rank = log_rank < 0 ? 0 : 1 - log_rank;
      if (log_rank < 0 && comm != MPI_COMM_NULL) PMPI_Comm_rank(comm, &rank);
      if (rank == 0) {
        const std::string because = why();
        const int k = size_class(d.bytes);
        std::fprintf(stderr, "collkit: %s P=%d %lld B (class %lld..%lld B) -> %s%s%s%s\n",
                     name_of(static_cast<int>(c)), d.P, static_cast<long long>(d.bytes),
                     d.bytes == 0 ? 0LL : 1LL << k, d.bytes == 0 ? 0LL : (2LL << k) - 1,
                     std::get<3>(key).c_str(), because.empty() ? "" : " (", because.c_str(),
                     because.empty() ? "" : ")");
      }
    }
  }
  Counter& n = s.counters[std::make_tuple(static_cast<int>(c), std::string(route), d.P, d.bytes)];
  last = {static_cast<int>(c), d.P, d.bytes, std::string(route), &n};
  ++n.calls;
  n.total += seconds;
  n.min = std::min(n.min, seconds);
  n.max = std::max(n.max, seconds);
}

// A timed gatherv, scatterv or alltoallv: its row's bytes are the call's total, the whole
// vector's (as bench's rows and the other irregular calls' say), which no rank has: a gatherv's
// ranks know their own block, an alltoallv's their row. Each rank adds its share: the block a
// gatherv's rank sends or a scatterv's receives (the root in place: its own entry of the
// vector), the row an alltoallv's rank sends (in place: the receive side's). Every rank makes
// the same timed calls (COLLKIT_STATS and COLLKIT_VERBOSE are set alike on every rank, as
// COLLKIT_TUNING), so every rank starts the same sums on the communicator, in call order; a
// non-blocking PMPI_Iallreduce, as the call itself may be non-blocking and must not wait on its
// peers. The row is counted once the sum completes (pending_totals).
bool summed_total(Collective c) {
  const CollectiveSpec& spec = collkit::spec_of(c);
  return spec.counts != collkit::Counts::none && !collkit::mpi::whole_vector(spec);
}

// This rank's share of the call's total bytes; false where a count or datatype is invalid (the
// MPI's call says what is wrong).
bool share_of(const CollectiveSpec& spec, MPI_Comm comm, int P, const Side& send, const Side& recv,
              int root, int64_t& bytes) {
  bytes = 0;
  const auto add = [&](const Side& side, int from, int n) {
    MPI_Count size = 0;
    if (side.type == MPI_DATATYPE_NULL || PMPI_Type_size_x(side.type, &size) != MPI_SUCCESS ||
        size == MPI_UNDEFINED || size < 0 || (side.arrays && side.counts == nullptr))
      return false;
    for (int b = from; b < from + n; ++b) {
      const MPI_Count k = side.arrays ? side.count_at(b) : side.count;
      if (k < 0 || (size > 0 && k > (INT64_MAX / 4 - bytes) / size)) return false;
      bytes += static_cast<int64_t>(k * size);
    }
    return true;
  };
  if (spec.counts == collkit::Counts::per_pair) return add(send.in_place ? recv : send, 0, P);
  // The side of this rank's one block (gatherv: send; scatterv: receive), the root's vector.
  const bool vector_sent = spec.in.at_root == collkit::Blocks::P;
  const Side& block = vector_sent ? recv : send;
  const Side& vector = vector_sent ? send : recv;
  int rank = 0;
  if (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS) return false;
  if (block.in_place) return rank == root && add(vector, root, 1);
  return add(block, 0, 1);
}

// Starts the sum of a timed call's total (summed_total), its row counted by pending_totals.
void sum_total(State& s, Collective c, MPI_Comm comm, const Decision& d, const Side& send,
               const Side& recv, int root, std::string route, std::string why, double seconds) {
  State::PendingTotal t;
  t.c = c;
  t.P = d.P;
  t.route = std::move(route);
  t.why = std::move(why);
  t.seconds = seconds;
  int rank = 0;
  t.log_rank = PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS && rank == 0;
  int64_t bytes = 0;
  const bool known = share_of(collkit::spec_of(c), comm, d.P, send, recv, root, bytes);
  t.share[0] = known ? bytes : 0;
  t.share[1] = known ? 0 : 1;
  std::lock_guard<std::mutex> g(s.lock);
  State::PendingTotal& p = s.pending.emplace_back(std::move(t));
  if (PMPI_Iallreduce(p.share, p.total, 2, MPI_INT64_T, MPI_SUM, comm, &p.request) != MPI_SUCCESS) {
    p.request = MPI_REQUEST_NULL;
    p.total[1] = 1;
  }
}

// Counts the rows of the summed totals that have completed (all of them, waiting, with `wait`:
// at MPI_Finalize, where every rank has started the same sums), in call order. A total a rank
// could not tell is counted as 0 bytes.
void pending_totals(State& s, bool wait) {
  std::list<State::PendingTotal> done;
  {
    std::lock_guard<std::mutex> g(s.lock);
    while (!s.pending.empty()) {
      State::PendingTotal& p = s.pending.front();
      int flag = 1;
      if (p.request != MPI_REQUEST_NULL &&
          (wait ? PMPI_Wait(&p.request, MPI_STATUS_IGNORE)
                : PMPI_Test(&p.request, &flag, MPI_STATUS_IGNORE)) != MPI_SUCCESS) {
        p.total[1] = 1;
        flag = 1;
      }
      if (!flag) break;
      done.splice(done.end(), s.pending, s.pending.begin());
    }
  }
  for (const State::PendingTotal& p : done) {
    Decision d;
    d.P = p.P;
    d.bytes = p.total[1] != 0 ? 0 : p.total[0];
    note(s, p.c, MPI_COMM_NULL, d, p.route, [&] { return p.why; }, p.seconds, p.log_rank ? 1 : 0);
  }
}

// Whether the communicator is set up for collkit's calls, or this call goes to the MPI while the
// setup is not yet paid for (the header says the rule). Counts the call; alike on every rank.
bool paid(const State& s, Collective c, MPI_Comm comm, const Decision& d) {
  CommUse* u = d.use;
  if (u == nullptr || u->set_up) return true;
  const double rent = d.entry->rule.native_median_us;  // NaN: a rule without measurements
  if (!(s.setup_us > 0) || !(rent > 0)) return u->set_up = true;
  const bool repeat = static_cast<int>(c) == u->last_c && d.bytes == u->last_bytes;
  u->last_c = static_cast<int>(c);
  u->last_bytes = d.bytes;
  if (u->spent_us >= 16 * s.setup_us || (!repeat && u->spent_us >= s.setup_us)) {
    u->set_up = true;
    int rank = 0;
    if (s.verbose && PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS && rank == 0)
      std::fprintf(stderr,
                   "collkit: P=%d communicator: collkit's algorithms from this call on (%lld "
                   "calls went to the MPI first, %.0f us of MPI time by the table >= the setup's "
                   "%.0f us, COLLKIT_SETUP_US)\n",
                   d.P, u->deferred, u->spent_us, s.setup_us);
    return true;
  }
  u->spent_us += rent;
  ++u->deferred;
  return false;
}

// A communicator the program makes (MPI_Comm_dup, _split, _split_type, _create) is set up in the
// call that makes it when a rule covers its size: that call is collective over the new
// communicator's ranks, and no program times it, while the first collective would pay the setup
// (a private duplicate, the ranks' nodes, the shared-memory segment: 0.4 ms on a quiet 2-core VM,
// 3-13 ms at load 12) inside its timed loop: IMB-MPI1 makes a communicator per benchmark, and
// its first size's row would take the setup (MPICH, bcast 8 B: 6.6 us a call against 0.24). The
// setup runs collkit's barrier on it (its first call sets everything up) and marks it paid for,
// alike on every rank: the decision reads only the table and the size. MPI_COMM_WORLD, made by no
// call, keeps the rent-then-buy rule above; COLLKIT_EARLY_SETUP=0 gives every communicator that
// rule.
void set_up_early(MPI_Comm comm, const char* made_by) {
  State& s = state();
  if (comm == MPI_COMM_NULL || !s.early_setup) return;
  int inter = 0, P = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) return;
  if (PMPI_Comm_size(comm, &P) != MPI_SUCCESS || P < 2) return;
  bool covered = false;
  for (const auto& rules : s.rules)
    for (const Entry& e : rules)
      covered = covered || (!e.rule.native && e.rule.p_lo <= P && P <= e.rule.p_hi);
  if (!covered) return;
  CommUse* u = watched(comm);
  if (u == nullptr) return;
  const double t0 = PMPI_Wtime();
  const int rc = ck_barrier(comm, "barrier:dissemination");
  if (rc != MPI_SUCCESS) return;  // declined alike on every rank: the first calls pay instead
  u->set_up = true;
  int rank = 0;
  if (s.verbose && PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS && rank == 0)
    std::fprintf(stderr,
                 "collkit: P=%d communicator set up as %s made it (%.0f us): collkit's "
                 "algorithms from its first call\n",
                 P, made_by, (PMPI_Wtime() - t0) * 1e6);
}

// Whether every call of `c` on `comm` goes to the MPI (comm_seen); then said in g_native_comm, so
// that the next call goes there from straight(). A free of the communicator that came between
// (the generation moved) takes it back.
bool native_comm(const State& s, Collective c, MPI_Comm comm) {
  const uint64_t generation = g_generation.load(std::memory_order_seq_cst);
  const CommSeen* seen = comm_seen(s, comm);
  if (seen == nullptr || (seen->native_all >> static_cast<int>(c) & 1) == 0) return false;
  g_native_comm[static_cast<int>(c)].store(handle_word(comm), std::memory_order_seq_cst);
  if (g_generation.load(std::memory_order_seq_cst) != generation) clear_native_comms();
  return true;
}

// Runs an untimed call by `entry`'s algorithm: declined, by the MPI's own call (`native`).
template <typename Collkit, typename Native>
int run_rule(State& s, const Entry* entry, MPI_Comm comm, Collkit&& collkit, Native&& native) {
  int rc = collkit(entry->rule.canonical.c_str());
  if (rc != MPI_SUCCESS && ck_declined(rc)) {
    ++s.declined;
    return native();
  }
  s.ran.fetch_add(1, std::memory_order_relaxed);
  if (rc != MPI_SUCCESS) PMPI_Comm_call_errhandler(comm, rc);
  return rc;
}

// Runs one call that straight() did not send to the MPI and whose key was not kept: the table's
// algorithm, or the MPI's own call (`native`).
template <typename Collkit, typename Native>
int route(Collective c, MPI_Comm comm, const Side& send, const Side& recv, MPI_Op op, int root,
          Collkit&& collkit, Native&& native) {
  collkit::mpi::progress_nonblocking();  // every routed call moves collkit's runs in flight
  State& s = state();
  const uint64_t generation = g_generation.load(std::memory_order_acquire);
  const Decision* hit = nullptr;
  if (!s.timing) {
    if (!s.covered[static_cast<int>(c)]) return native();  // the call that read the table
    // A loop's call is answered by its decision; else, where no rule covers the communicator's
    // size, the MPI's before the count, type or op is asked.
    hit = remembered_decision(c, comm, send, recv, op, root);
    if (hit == nullptr && native_comm(s, c, comm)) return native();
  }
  const Decision& decided = hit != nullptr ? *hit
                            : s.timing     ? decide(s, c, comm, send, recv, op, root)
                                           : decide_again(s, c, comm, send, recv, op, root);
  if (!decided.refused.empty()) ++s.declined;
  if (decided.entry == nullptr && !s.timing) {
    keep(s, c, key_of(comm, op, root, send, recv), decided, nullptr, generation);
    return native();
  }
  // A call whose communicator's setup is not yet paid for goes to the MPI at once: a rented call
  // costs the MPI's call and this decision, nothing more (no copy, no clock).
  const bool deferred = decided.entry != nullptr && decided.use != nullptr &&
                        !decided.use->set_up && !paid(s, c, comm, decided);
  if (deferred && !s.timing) return native();
  if (!s.timing) {
    // The routed call of a loop: only the rule is kept across the call (a user's op may call MPI
    // and decide again, moving `decided`; the table's entries stay where they are), no copy of
    // the decision and its text (~100 instructions of a 16-byte bcast's ~850 on the root).
    const Entry* entry = decided.entry;
    keep(s, c, key_of(comm, op, root, send, recv), decided, entry, generation);
    return run_rule(s, entry, comm, collkit, native);
  }
  // A copy (no text to copy unless timing): a user's op may call MPI and decide again.
  const Decision d = decided;
  pending_totals(s, false);
  const double t0 = s.timing ? PMPI_Wtime() : 0.0;
  int rc = MPI_SUCCESS;
  // Where the call went and why, said only when timing (a loop's every call pays for strings).
  const char* where = "native";
  std::string declined;
  if (deferred) {
    rc = native();
  } else if (d.entry != nullptr) {
    rc = collkit(d.entry->rule.canonical.c_str());
    if (ck_declined(rc)) {
      ++s.declined;
      if (s.timing) {
        const std::string_view message = ck_error_message();
        declined = "declined: " +
                   std::string(message.starts_with("collkit: ") ? message.substr(9) : message);
      }
      rc = native();
    } else {
      s.ran.fetch_add(1, std::memory_order_relaxed);
      where = d.entry->rule.canonical.c_str();
      // An error that remains is the MPI's kind of error: the communicator's handler decides
      // (MPI_ERRORS_ARE_FATAL aborts with collkit's message; MPI_ERRORS_RETURN returns it).
      if (rc != MPI_SUCCESS) PMPI_Comm_call_errhandler(comm, rc);
    }
  } else {
    rc = native();
  }
  if (s.timing) {
    const double seconds = PMPI_Wtime() - t0;
    const auto why = [&] {
      std::string why = deferred             ? "deferred: the communicator's setup not yet paid for"
                        : !declined.empty()  ? declined
                        : d.entry != nullptr ? d.entry->label
                                             : d.why;
      if (!d.refused.empty() && std::strcmp(d.why, "declined") == 0) why += ": " + d.refused;
      return why;
    };
    // Decided from what every rank has alike (the collective, the communicator's kind).
    int inter = 1;
    if (summed_total(c) && comm != MPI_COMM_NULL &&
        PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && !inter)
      sum_total(s, c, comm, d, send, recv, root, where, why(), seconds);
    else
      note(s, c, comm, d, where, why, seconds);
  }
  return rc;
}

// printf into a string, whatever the length.
[[gnu::format(printf, 1, 2)]] std::string formatted(const char* fmt, ...) {
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  const int need = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string out(static_cast<size_t>(std::max(need, 0)) + 1, '\0');
  std::vsnprintf(out.data(), out.size(), fmt, again);
  va_end(again);
  out.pop_back();
  return out;
}

// This rank's calls as collkit result rows, one per (collective, route, P, bytes): JSON lines.
std::string stats_rows(const State& s, int rank) {
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  PMPI_Get_library_version(lib, &len);
  std::string mpi(lib, static_cast<size_t>(len));
  mpi = mpi.substr(0, mpi.find('\n'));
  const auto clean = [](const std::string& text) {
    std::string out;
    for (char ch : text)
      if (ch != '"' && ch != '\\' && static_cast<unsigned char>(ch) >= 0x20) out += ch;
    return out;
  };
  const std::string lib_name = clean(mpi), table = clean(s.table_path);
  std::string rows;
  for (const auto& [k, n] : s.counters)
    rows += formatted(
        "{\"collective\": \"%s\", \"algorithm\": \"%s\", \"P\": %d, \"bytes\": %lld, "
        "\"mpi\": \"%s\", \"settings\": \"interposed by libcollkit_pmpi, "
        "COLLKIT_TUNING=%s, world rank %d\", \"iterations\": %lld, \"min\": %.4f, "
        "\"mean\": %.4f, \"max\": %.4f}\n",
        name_of(std::get<0>(k)), clean(std::get<1>(k)).c_str(), std::get<2>(k),
        static_cast<long long>(std::get<3>(k)), lib_name.c_str(), table.c_str(), rank, n.calls,
        n.min * 1e6, n.total / static_cast<double>(n.calls) * 1e6, n.max * 1e6);
  return rows;
}

void finish(State& s) {
  if (!s.timing) return;
  pending_totals(s, true);
  std::lock_guard<std::mutex> g(s.lock);
  const int me = world_rank();
  int world = 0;
  PMPI_Comm_size(MPI_COMM_WORLD, &world);
  if (s.verbose && me == 0) {
    std::fprintf(stderr, "collkit: calls on world rank 0 (of %d), by route:\n", world);
    std::fprintf(stderr, "collkit: %-10s %-28s %5s %10s %8s %12s\n", "collective", "route", "P",
                 "bytes", "calls", "mean (us)");
    for (const auto& [k, n] : s.counters)
      std::fprintf(stderr, "collkit: %-10s %-28s %5d %10lld %8lld %12.3f\n",
                   name_of(std::get<0>(k)), std::get<1>(k).c_str(), std::get<2>(k),
                   static_cast<long long>(std::get<3>(k)), n.calls,
                   n.total / static_cast<double>(n.calls) * 1e6);
  }
  if (s.stats_path.empty()) return;
  // Every rank's rows, gathered to world rank 0, which alone writes the file (one writer: no
  // lines of two ranks interleaved). A rank's time in a call is its own: the ranks that wait for
  // a slower one show it, and the mean over ranks is what a program's ranks spend together.
  std::string mine = stats_rows(s, me);
  // The gathered rows' int counts: each rank's share of 2 GiB at most, cut after a whole row
  // (said; a table's routes make a few hundred rows of ~300 bytes).
  const size_t share = static_cast<size_t>(INT_MAX / std::max(world, 1));
  if (mine.size() > share) {
    mine.resize(mine.rfind('\n', share - 1) + 1);
    std::fprintf(stderr, "collkit: COLLKIT_STATS: world rank %d's rows cut to %zu bytes\n", me,
                 mine.size());
  }
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(me == 0 ? static_cast<size_t>(world) : 0), displs(lens.size(), 0);
  std::string all;
  int rc = PMPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rc == MPI_SUCCESS) {
    for (size_t r = 1; r < lens.size(); ++r) displs[r] = displs[r - 1] + lens[r - 1];
    all.resize(lens.empty() ? 0 : static_cast<size_t>(displs.back() + lens.back()));
    rc = PMPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR,
                      0, MPI_COMM_WORLD);
  }
  if (rc != MPI_SUCCESS) {
    std::fprintf(stderr, "collkit: COLLKIT_STATS: could not collect the ranks' rows\n");
    return;
  }
  if (me != 0) return;
  std::FILE* f = std::fopen(s.stats_path.c_str(), "a");
  if (f == nullptr) {
    std::fprintf(stderr, "collkit: cannot write COLLKIT_STATS=%s: %s\n", s.stats_path.c_str(),
                 std::strerror(errno));
    return;
  }
  std::fwrite(all.data(), 1, all.size(), f);
  // A full disk (or /dev/full) shows only when the buffered rows are written out: said, not lost
  // silently.
  const bool failed = std::ferror(f) != 0;
  if (std::fclose(f) != 0 || failed)
    std::fprintf(stderr, "collkit: cannot write COLLKIT_STATS=%s: %s\n", s.stats_path.c_str(),
                 std::strerror(errno));
}

// One side of a call from the table's (buffer, count, datatype), or none.
Side side(const void* buf, MPI_Count count, MPI_Datatype type) {
  return {count, type, buf == MPI_IN_PLACE};
}
Side side() {
  return {};
}
template <class C, class D>
Side side(const void* buf, const C* counts, const D* displs, MPI_Datatype type) {
  return {0, type, buf == MPI_IN_PLACE, true, !std::is_same_v<C, int>, counts, displs};
}
template <class C>
Side side(const void* buf, const C* counts, std::nullptr_t, MPI_Datatype type) {
  return {0, type, buf == MPI_IN_PLACE, true, !std::is_same_v<C, int>, counts, nullptr};
}

// An int array of an irregular call passed on to collkit's C API, which takes MPI 4's MPI_Count
// counts and MPI_Aint displacements: converted to whichever it is passed as (P entries), where
// the array is significant on this rank (NULL elsewhere: MPI lets those be anything). Up to
// kSmall entries in the object itself: a small communicator's call allocates nothing.
class WideArray {
 public:
  WideArray(const int* from, int n) : from_(from), n_(from == nullptr ? 0 : n) {}
  template <class T>
  operator const T*() const {  // NOLINT: converts as the parameter needs
    if (from_ == nullptr) return nullptr;
    if constexpr (std::is_same_v<T, MPI_Count>) {
      return widen(counts_small_, counts_);
    } else {
      static_assert(std::is_same_v<T, MPI_Aint>, "counts and displacements only");
      return widen(displs_small_, displs_);
    }
  }

 private:
  static constexpr int kSmall = 16;
  template <class T>
  const T* widen(T (&small)[kSmall], std::vector<T>& big) const {
    T* to = small;
    if (n_ > kSmall) {
      big.resize(static_cast<size_t>(n_));
      to = big.data();
    }
    for (int i = 0; i < n_; ++i) to[i] = from_[i];
    return to;
  }
  const int* from_;
  int n_;
  mutable MPI_Count counts_small_[kSmall];
  mutable MPI_Aint displs_small_[kSmall];
  mutable std::vector<MPI_Count> counts_;
  mutable std::vector<MPI_Aint> displs_;
};

// Calls `f` (collkit's C API) with a routed call's arguments, int arrays widened.
template <class F, class... A>
int widened(Collective c, MPI_Comm comm, int root, const Side& send, const Side& recv, const F& f,
            A... a) {
  if constexpr (!(std::is_same_v<A, const int*> || ...)) {
    static_cast<void>(c), static_cast<void>(comm), static_cast<void>(root);
    static_cast<void>(send), static_cast<void>(recv);
    return f(a...);
  } else {
    int P = 0, rank = 0;
    PMPI_Comm_size(comm, &P);
    PMPI_Comm_rank(comm, &rank);
    const CollectiveSpec& spec = collkit::spec_of(c);
    const auto significant = [&](const Side& side, const collkit::BufferShape& shape) {
      return side.arrays && !side.in_place && collkit::buffer_elems(shape, P, 1, root, rank) > 0;
    };
    const bool s = significant(send, spec.in), r = significant(recv, spec.out);
    const auto wide = [&](auto x) {
      if constexpr (std::is_same_v<decltype(x), const int*>) {
        const bool ok = (s && (x == send.counts || x == send.displs)) ||
                        (r && (x == recv.counts || x == recv.displs));
        return WideArray(ok ? x : nullptr, P);
      } else {
        return x;
      }
    };
    return f(wide(a)...);
  }
}

// Each routed call once, from its line of the table (call_table.hpp), for both count types:
// MPI_X (int) and MPI 4's MPI_X_c (MPI_Count) differ only in the type of their counts and in the
// PMPI_ function that is the MPI's own call. The scatter root may pass MPI_IN_PLACE as recvbuf:
// then its send side says the block's size (decide reads the receive side's in_place).
#define CK_ROUTED(name, Name, counted, params, args, send, recv, op_, root_, in_place)       \
  template <class Count, auto Native>                                                        \
  [[gnu::noinline]] int name##_routed(const Entry* kept_entry, CK_UNPAREN params) {          \
    const auto collkit = [&](const char* algorithm) {                                        \
      return widened(                                                                        \
          Collective::name, comm, root_, side send, side recv,                               \
          [&](auto... a) { return ck_##name(a..., algorithm); }, CK_UNPAREN args);           \
    };                                                                                       \
    const auto native = [&] { return Native(CK_UNPAREN args); };                             \
    if (kept_entry != nullptr) return run_rule(state(), kept_entry, comm, collkit, native);  \
    return route(Collective::name, comm, side send, side recv, op_, root_, collkit, native); \
  }                                                                                          \
  template <class Count, auto Native>                                                        \
  int name(CK_UNPAREN params) {                                                              \
    if (straight(Collective::name, comm)) return Native(CK_UNPAREN args);                    \
    const Kept::Slot* k = kept(Collective::name, comm, op_, root_, side send, side recv);    \
    if (k != nullptr && k->entry == nullptr) return Native(CK_UNPAREN args);                 \
    return name##_routed<Count, Native>(k != nullptr ? k->entry : nullptr, CK_UNPAREN args); \
  }
CK_COLLECTIVES(CK_ROUTED, Count)
#undef CK_ROUTED

// The non-blocking forms, MPI_I<coll> (and MPI 4's MPI_I<coll>_c), from the same lines, routed by
// the same table and decline rules: collkit's ck_i<coll> (its request is a generalized request,
// progressed as nbc.hpp says), or the MPI's own PMPI_I<coll>.
#define CK_ROUTED_I(name, Name, counted, params, args, send, recv, op_, root_, in_place)       \
  template <class Count, auto Native>                                                          \
  [[gnu::noinline]] int i##name##_routed(const Entry* kept_entry, CK_UNPAREN params,           \
                                         MPI_Request* request) {                               \
    const auto collkit = [&](const char* algorithm) {                                          \
      return widened(                                                                          \
          Collective::name, comm, root_, side send, side recv,                                 \
          [&](auto... a) { return ck_i##name(a..., request, algorithm); }, CK_UNPAREN args);   \
    };                                                                                         \
    const auto native = [&] { return Native(CK_UNPAREN args, request); };                      \
    if (kept_entry != nullptr) return run_rule(state(), kept_entry, comm, collkit, native);    \
    return route(Collective::name, comm, side send, side recv, op_, root_, collkit, native);   \
  }                                                                                            \
  template <class Count, auto Native>                                                          \
  int i##name(CK_UNPAREN params, MPI_Request* request) {                                       \
    if (straight(Collective::name, comm)) return Native(CK_UNPAREN args, request);             \
    const Kept::Slot* k = kept(Collective::name, comm, op_, root_, side send, side recv);      \
    if (k != nullptr && k->entry == nullptr) return Native(CK_UNPAREN args, request);          \
    return i##name##_routed<Count, Native>(k != nullptr ? k->entry : nullptr, CK_UNPAREN args, \
                                           request);                                           \
  }
CK_COLLECTIVES(CK_ROUTED_I, Count)
#undef CK_ROUTED_I

// The persistent forms, MPI 4's MPI_<Coll>_init (and MPI_<Coll>_init_c), from the same lines and
// the same table and decline rules, decided at init: collkit's ck_<coll>_init (its handle is
// started by MPI_Start, nbc.hpp), or the MPI's own PMPI_<Coll>_init. An MPI before 4 has none,
// but Open MPI 4 has them as MPIX_<Coll>_init (call_table.hpp's CK_MPIX_INIT).
#if MPI_VERSION >= 4 || CK_MPIX_INIT
#define CK_ROUTED_INIT(name, Name, counted, params, args, send, recv, op_, root_, in_place) \
  template <class Count, auto Native>                                                       \
  [[gnu::noinline]] int name##_init_routed(CK_UNPAREN params, MPI_Info info,                \
                                           MPI_Request* request) {                          \
    return route(                                                                           \
        Collective::name, comm, side send, side recv, op_, root_,                           \
        [&](const char* algorithm) {                                                        \
          return widened(                                                                   \
              Collective::name, comm, root_, side send, side recv,                          \
              [&](auto... a) { return ck_##name##_init(a..., info, request, algorithm); },  \
              CK_UNPAREN args);                                                             \
        },                                                                                  \
        [&] { return Native(CK_UNPAREN args, info, request); });                            \
  }                                                                                         \
  template <class Count, auto Native>                                                       \
  int name##_init(CK_UNPAREN params, MPI_Info info, MPI_Request* request) {                 \
    if (straight(Collective::name, comm)) return Native(CK_UNPAREN args, info, request);    \
    return name##_init_routed<Count, Native>(CK_UNPAREN args, info, request);               \
  }
CK_COLLECTIVES(CK_ROUTED_INIT, Count)
#undef CK_ROUTED_INIT
#endif

}  // namespace

extern "C" {

#define CK_MPI_X(name, Name, counted, params, args, ...) \
  int MPI_##Name(CK_UNPAREN params) {                    \
    return name<int, PMPI_##Name>(CK_UNPAREN args);      \
  }
CK_COLLECTIVES(CK_MPI_X, int)
#undef CK_MPI_X

#define CK_MPI_IX(name, Name, counted, params, args, ...)        \
  int MPI_I##name(CK_UNPAREN params, MPI_Request* request) {     \
    return i##name<int, PMPI_I##name>(CK_UNPAREN args, request); \
  }
CK_COLLECTIVES(CK_MPI_IX, int)
#undef CK_MPI_IX

#if MPI_VERSION >= 4
#define CK_MPI_IX_C(name, Name, counted, params, args, ...)                    \
  CK_IF_COUNTED(                                                               \
      counted, int MPI_I##name##_c(CK_UNPAREN params, MPI_Request* request) {  \
        return i##name<MPI_Count, PMPI_I##name##_c>(CK_UNPAREN args, request); \
      })
CK_COLLECTIVES(CK_MPI_IX_C, MPI_Count)
#undef CK_MPI_IX_C

#define CK_MPI_X_C(name, Name, counted, params, args, ...)        \
  CK_IF_COUNTED(                                                  \
      counted, int MPI_##Name##_c(CK_UNPAREN params) {            \
        return name<MPI_Count, PMPI_##Name##_c>(CK_UNPAREN args); \
      })
CK_COLLECTIVES(CK_MPI_X_C, MPI_Count)
#undef CK_MPI_X_C

#define CK_MPI_INIT(name, Name, counted, params, args, ...)                       \
  int MPI_##Name##_init(CK_UNPAREN params, MPI_Info info, MPI_Request* request) { \
    return name##_init<int, PMPI_##Name##_init>(CK_UNPAREN args, info, request);  \
  }
CK_COLLECTIVES(CK_MPI_INIT, int)
#undef CK_MPI_INIT

#define CK_MPI_INIT_C(name, Name, counted, params, args, ...)                                    \
  CK_IF_COUNTED(                                                                                 \
      counted, int MPI_##Name##_init_c(CK_UNPAREN params, MPI_Info info, MPI_Request* request) { \
        return name##_init<MPI_Count, PMPI_##Name##_init_c>(CK_UNPAREN args, info, request);     \
      })
CK_COLLECTIVES(CK_MPI_INIT_C, MPI_Count)
#undef CK_MPI_INIT_C
#endif

#if CK_MPIX_INIT
#define CK_MPIX_INIT_X(name, Name, counted, params, args, ...)                     \
  int MPIX_##Name##_init(CK_UNPAREN params, MPI_Info info, MPI_Request* request) { \
    return name##_init<int, PMPIX_##Name##_init>(CK_UNPAREN args, info, request);  \
  }
CK_COLLECTIVES(CK_MPIX_INIT_X, int)
#undef CK_MPIX_INIT_X
#endif

int collkit_pmpi_check_table(const char* path, char* message, int length) {
  std::vector<Entry> entries;
  const std::string error = path == nullptr ? "no path" : read_rules(path, entries);
  if (message != nullptr && length > 0)
    std::snprintf(message, static_cast<size_t>(length), "%s", error.c_str());
  return error.empty() ? static_cast<int>(entries.size()) : -1;
}

int collkit_pmpi_use_table(const char* path) {
  State& s = state();
  std::lock_guard<std::mutex> g(s.lock);
  use(s, path);
  set_straight(s);
  int n = 0;
  for (const auto& r : s.rules) n += static_cast<int>(r.size());
  return n;
}

void collkit_pmpi_counts(long long* ran, long long* declined) {
  const State& s = state();
  *ran = s.ran.load();
  *declined = s.declined.load();
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  const int rc = PMPI_Comm_dup(comm, newcomm);
  if (rc == MPI_SUCCESS) set_up_early(*newcomm, "MPI_Comm_dup");
  return rc;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  const int rc = PMPI_Comm_split(comm, color, key, newcomm);
  if (rc == MPI_SUCCESS) set_up_early(*newcomm, "MPI_Comm_split");
  return rc;
}

int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm* newcomm) {
  const int rc = PMPI_Comm_split_type(comm, type, key, info, newcomm);
  if (rc == MPI_SUCCESS) set_up_early(*newcomm, "MPI_Comm_split_type");
  return rc;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  const int rc = PMPI_Comm_create(comm, group, newcomm);
  if (rc == MPI_SUCCESS) set_up_early(*newcomm, "MPI_Comm_create");
  return rc;
}

int MPI_Finalize(void) {
  finish(state());
  return PMPI_Finalize();
}

}  // extern "C"
