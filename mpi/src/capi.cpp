// The C API of collkit.h: resolves the algorithm name, finds or builds this rank's plan in the
// communicator's cache, maps the MPI buffers onto the IR's (`in` = sendbuf, `out` = recvbuf) and
// runs it. Every failure becomes an MPI error code; nothing here aborts.
//
// What a call's buffers are comes from the collective's CollectiveSpec (collective.hpp): how many
// blocks `in` and `out` hold on this rank, whose output is specified, whether it is a reduction
// (planned over the datatype's elements) or a copy (planned over the packed bytes of the type
// signature). Only the MPI signature (which arguments are which side, the PMPI_ call) is said per
// collective, in the one table of calls (call_table.hpp) that generates the ck_* functions.
//
// MPI_IN_PLACE: where the spec has an in-place rule (allreduce, reduce's root, ...), `in` aliases
// the part of `out` it names, and a copy of a region onto itself is skipped; the verifier proves
// each generator correct under that aliasing. Where it has none (alltoall: all of `in` is read
// while `out` is written) the input is first copied to a reused temporary.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>

#include "call_table.hpp"
#include "collkit.h"
#include "collkit/collective.hpp"
#include "collkit/error.hpp"
#include "collkit/registry.hpp"
#include "executor.hpp"
#include "layout.hpp"
#include "nbc.hpp"
#include "placement.hpp"
#include "plan.hpp"

namespace collkit::mpi {
namespace {

thread_local std::string g_message;

// One MPI error class for collkit, with one code per kind of error; the code's string is set to
// the message of the latest error, so MPI_Error_string tells the user what went wrong.
struct ErrorCodes {
  bool ok = false;
  int by_kind[4] = {MPI_ERR_ARG, MPI_ERR_ARG, MPI_ERR_OTHER, MPI_ERR_UNSUPPORTED_OPERATION};
  int declined = MPI_ERR_UNSUPPORTED_OPERATION;  // see ck_declined
};

ErrorCodes& error_codes() {
  static ErrorCodes codes = [] {
    ErrorCodes c;
    int cls = 0;
    if (MPI_Add_error_class(&cls) != MPI_SUCCESS) return c;
    for (int& code : c.by_kind)
      if (MPI_Add_error_code(cls, &code) != MPI_SUCCESS) return ErrorCodes{};
    if (MPI_Add_error_code(cls, &c.declined) != MPI_SUCCESS) return ErrorCodes{};
    c.ok = true;
    return c;
  }();
  return codes;
}

int report(ErrorKind kind, const std::string& message) {
  g_message = "collkit: " + message;
  ErrorCodes& c = error_codes();
  const int code = c.by_kind[static_cast<int>(kind)];
  if (c.ok) {
    std::string s = g_message.substr(0, MPI_MAX_ERROR_STRING - 1);
    MPI_Add_error_string(code, s.c_str());
  }
  return code;
}

// collkit will not run this call, decided alike on every rank before any communication.
int decline(const std::string& message) {
  g_message = "collkit: " + message;
  ErrorCodes& c = error_codes();
  if (c.ok) {
    std::string s = g_message.substr(0, MPI_MAX_ERROR_STRING - 1);
    MPI_Add_error_string(c.declined, s.c_str());
  }
  return c.declined;
}

int report_mpi(int rc, const char* what) {
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) len = 0;
  g_message = std::string("collkit: ") + what + ": " + std::string(s, static_cast<size_t>(len));
  return rc;
}

// A plan is fixed by the algorithm, the IR's count and element size, and the root (P is the
// communicator's). All four are equal on every rank by the MPI standard's rules, so every rank
// builds the same schedule.
// An irregular call's plan is also fixed by its count vector (equal on every rank once known):
// `vectors` is its hash (0 for a regular call), and a found plan's header is compared with the
// vector itself, so two vectors of one hash never share a plan.
struct PlanKey {
  const Algorithm* algo = nullptr;
  int64_t count = 0, elem_size = 0, root = 0;
  uint64_t vectors = 0;
  bool operator==(const PlanKey&) const = default;
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    size_t h = std::hash<const void*>()(k.algo);
    for (int64_t v : {k.count, k.elem_size, k.root}) h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h ^ static_cast<size_t>(k.vectors);
  }
};

uint64_t hash_counts(const std::vector<int64_t>& v) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the entries
  for (int64_t x : v) h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ull;
  return h == 0 ? 1 : h;
}

// The most plans of irregular calls kept per communicator (a program whose counts change every
// call would otherwise grow the cache without end): past it the irregular plans are dropped.
constexpr size_t kIrregularPlans = 64;

// This rank and the communicator's size: what preparing a call's buffers reads of it.
struct CommShape {
  int rank = 0, size = 1;
};

// Non-blocking calls in flight on one communicator at once, each in its own range of tags (the
// calls are matched in call order, as MPI requires); more may be started, but a call and the one
// kNbSlots later must not both still have messages in flight.
constexpr int kNbSlots = 64;

// The communicator of the non-blocking runs (a second private duplicate) and its call counter,
// shared by the communicator's state and its persistent calls (which may outlive it).
struct NbComm {
  MPI_Comm comm = MPI_COMM_NULL;
  int tag_span = 1;
  std::atomic<uint64_t> calls{0};
  // The plans of the non-blocking calls whose counts are exchanged first (start_exchanged), by
  // algorithm, root and vector: built where the exchange completes, in any thread's progress.
  std::mutex plans_lock;
  std::map<std::tuple<const Algorithm*, int64_t, std::vector<int64_t>>, std::shared_ptr<Plan>>
      plans;
  NbComm() = default;
  NbComm(const NbComm&) = delete;
  NbComm& operator=(const NbComm&) = delete;
  ~NbComm() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
  // The next call's own tags.
  void take_tags(NbRun& r) {
    r.tag_span = tag_span;
    r.tag_base = static_cast<int>(calls.fetch_add(1) % kNbSlots) * tag_span;
  }
};

// A recent blocking call on a communicator that can be run again as it was prepared: the same
// arguments (buffers, counts, datatypes, op, root, algorithm) give the same plan and the same
// buffers, so a loop's next call goes straight to the plan (callgrind: the checks and the
// preparation were ~600 instructions of an 8-byte call's ~1,300; docs/mpi.md). Kept only where
// preparing copied nothing and the handles cannot change meaning between calls: predefined
// datatypes and ops (a freed derived datatype's handle may come back as another type).
// The arguments a repeat must match (the irregular calls' arrays apart): the cheapest first.
struct CallKey {
  const Algorithm* algo = nullptr;
  Collective collective = Collective::allreduce;
  const void* send_buf = nullptr;
  void* recv_buf = nullptr;
  MPI_Count send_count = 0, recv_count = 0;
  MPI_Datatype send_type = MPI_DATATYPE_NULL, recv_type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  int root = 0;

  bool operator==(const CallKey&) const = default;
};

struct RecentCall {
  bool valid = false;
  // `out` is work space (off a reduce's root), which another call's preparation may move: valid
  // only until a call on the communicator is prepared again.
  bool stand_in = false;
  CallKey key;
  Plan* plan = nullptr;
  RunArgs args;
  // The user's buffers `args.in` and `args.out` lie in, at fixed offsets (a datatype's true lower
  // bound, an in-place block): the same call on other buffers (IMB's -off_cache, a program whose
  // buffers move) runs the plan with both moved by as much, without preparing again.
  const void* in_base = nullptr;
  const void* out_base = nullptr;
  bool one_buffer = false;  // in place: one user buffer holds both (Roles)
  bool movable = false;     // `in` and `out` each null, work space or in a base
};

// Programs alternate several calls (LAMMPS: a thermo step's and a minimizer's iteration's
// allreduces of 4, 8 and 16 bytes from different call sites): the last 16 are kept, the oldest
// replaced (with 4, a LAMMPS minimization's calls missed and were prepared again: its 16-byte
// allreduces took 0.75 us a call, 0.59 with 16; benchmarks/results/lammps-min.md). The search
// starts at the last entry found, so a loop's repeat is the first looked at.
constexpr size_t kRecentCalls = 16;

// The last blocking irregular copy (allgatherv, alltoallv, gatherv, scatterv) whose plan ran on
// the user's buffers as they lie: a call with the same arguments, the same significant arrays
// (compared entry by entry) and, where the counts are exchanged, the same exchanged views runs
// that plan on those buffers at once, without building the vector, its header and layouts or
// looking the plan up (callgrind: most of a small call's instructions; docs/mpi.md). Predefined
// datatypes only, as RecentCall.
struct RecentIrregular {
  bool valid = false;
  CallKey key;  // read only while valid
  // The send side's [0] and the receive side's [1] arrays where significant (else empty and
  // not read), and the exchanged views (alltoallv).
  bool read[2] = {};
  std::vector<MPI_Count> counts[2];
  std::vector<MPI_Aint> displs[2];
  bool has_displs[2] = {};
  std::vector<int64_t> exchanged;
  std::shared_ptr<Plan> plan;
  RunArgs args;
};

// What collkit keeps per user communicator: the private duplicate and the plans.
struct CommState : CommShape {
  MPI_Comm dup = MPI_COMM_NULL;
  int tag_ub = 32767;
  std::unordered_map<PlanKey, std::shared_ptr<Plan>, PlanKeyHash> plans;
  std::unordered_map<PlanKey, std::string, PlanKeyHash> refused;  // the registry's full answer
  size_t irregular_plans = 0;  // of `plans`, those of irregular calls
  PlanKey last_key;            // the plan of the previous call: the common case of a loop
  Plan* last = nullptr;
  bool last_commutative = true;     // the op of the previous call (its limits were checked with it)
  bool last_exact = false;          // ... and whether it was exact on its type
  Workspace work;                   // the blocking calls' (each non-blocking run has its own)
  RecentCall recent[kRecentCalls];  // recent calls a repeat of which may skip to its plan
  size_t recent_next = 0;           // the entry to replace next
  size_t recent_hit = 0;            // the entry the last repeat was found in
  RecentIrregular irregular;        // the last irregular copy that may be run again as it was
  // The counts exchange of the blocking alltoallv calls (gather_counts): its buffers, reused,
  // and collkit's allgather plan over them, built at the first such call (or, where it refuses
  // the communicator's size, MPI_Allgather).
  std::vector<int64_t> counts_mine, counts_all;
  std::unique_ptr<Plan> counts_plan;
  bool counts_by_mpi = false;
  // Non-blocking runs (nbc.hpp): a second private duplicate, made by the first such call, freed
  // when the communicator and the last run on it are gone; each call's tags are its own.
  std::shared_ptr<NbComm> nb;
  // One collective at a time per communicator, as MPI requires anyway; taken only when the MPI
  // runs with MPI_THREAD_MULTIPLE (an uncontended lock is a quarter of a call's own cost).
  std::mutex lock;
  bool threaded = false;
};

// Bumped whenever a communicator's state is deleted, so the per-thread cache of the last
// communicator (whose handle MPI may reuse) is never stale.
std::atomic<uint64_t> g_comm_generation{0};

int delete_state(MPI_Comm, int, void* value, void*) {
  ++g_comm_generation;
  auto* s = static_cast<CommState*>(value);
  if (s->dup != MPI_COMM_NULL) MPI_Comm_free(&s->dup);
  delete s;
  return MPI_SUCCESS;
}

// The attribute key, created once (thread-safe: a function-local static).
struct Keyval {
  int keyval = MPI_KEYVAL_INVALID;
  int rc = MPI_SUCCESS;
};

const Keyval& keyval() {
  static const Keyval k = [] {
    Keyval v;
    v.rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &v.keyval, nullptr);
    return v;
  }();
  return k;
}

int comm_state_lookup(MPI_Comm comm, CommState*& out);

// The largest tag, from MPI_COMM_WORLD: the standard puts MPI_TAG_UB there (and on
// MPI_COMM_SELF), not on the communicators a program makes, and Open MPI leaves it off those
// (a split communicator's lookup finds nothing). The value is the same for every communicator.
int tag_upper_bound() {
  static const int ub = [] {
    int* v = nullptr;
    int found = 0;
    if (MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &found) == MPI_SUCCESS && found &&
        *v >= 32767)
      return *v;
    return 32767;  // the least the standard allows
  }();
  return ub;
}

int comm_state(MPI_Comm comm, CommState*& out) {
  struct Last {
    MPI_Comm comm = MPI_COMM_NULL;
    CommState* state = nullptr;
    uint64_t generation = 0;
  };
  thread_local Last last;
  const uint64_t generation = g_comm_generation.load(std::memory_order_acquire);
  if (comm == last.comm && comm != MPI_COMM_NULL && last.generation == generation) {
    out = last.state;
    return MPI_SUCCESS;
  }
  int rc = comm_state_lookup(comm, out);
  if (rc == MPI_SUCCESS) last = {comm, out, generation};
  return rc;
}

int comm_state_lookup(MPI_Comm comm, CommState*& out) {
  if (comm == MPI_COMM_NULL)
    return report(ErrorKind::invalid_argument, "communicator is MPI_COMM_NULL");
  const Keyval& key = keyval();
  if (key.rc != MPI_SUCCESS) return report_mpi(key.rc, "MPI_Comm_create_keyval");
  const int kv = key.keyval;
  int found = 0;
  int rc = MPI_Comm_get_attr(comm, kv, &out, &found);
  if (rc != MPI_SUCCESS) return report_mpi(rc, "MPI_Comm_get_attr");
  if (found) return MPI_SUCCESS;
  int inter = 0;
  MPI_Comm_test_inter(comm, &inter);
  if (inter) return decline("intercommunicators are not supported");
  read_settings();
  auto s = std::make_unique<CommState>();
  // PMPI_: the interposition library's MPI_Comm_dup would set the duplicate up in turn.
  rc = PMPI_Comm_dup(comm, &s->dup);
  if (rc != MPI_SUCCESS) return report_mpi(rc, "MPI_Comm_dup");
  MPI_Comm_set_errhandler(s->dup, MPI_ERRORS_RETURN);  // errors come back to us, never abort
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  s->threaded = provided == MPI_THREAD_MULTIPLE;
  MPI_Comm_rank(s->dup, &s->rank);
  MPI_Comm_size(s->dup, &s->size);
  s->tag_ub = tag_upper_bound();
  rc = MPI_Comm_set_attr(comm, kv, s.get());
  if (rc != MPI_SUCCESS) {
    MPI_Comm_free(&s->dup);
    return report_mpi(rc, "MPI_Comm_set_attr");
  }
  out = s.release();
  return MPI_SUCCESS;
}

// Parsed algorithm names, shared by all communicators; the last name this thread used is
// remembered, so a loop of calls with one name costs a strcmp.
// "native" (or "allreduce:native", ...): the MPI's own collective, for comparison.
bool is_native(Collective coll, const char* name) {
  if (std::strcmp(name, "native") == 0) return true;
  const std::string_view c = to_string(coll), n = name;
  return n.size() == c.size() + 7 && n.substr(0, c.size()) == c && n.substr(c.size()) == ":native";
}

// nullptr for "native".
const Algorithm* algorithm(Collective coll, const char* name) {
  // The last name looked up on this thread (a loop's calls repeat it): one trivially built
  // thread-local, so reaching it is one address computation with no guard (a std::string there
  // cost a TLS wrapper call per access). Names too long for it are looked up every call.
  struct Last {
    const Algorithm* algo = nullptr;
    char name[56] = {};
  };
  thread_local Last last;
  if (last.algo != nullptr && std::strcmp(name, last.name) == 0) return last.algo;
  if (is_native(coll, name)) return nullptr;
  static std::mutex m;
  static std::map<std::string, std::unique_ptr<Algorithm>, std::less<>> cache;
  std::lock_guard<std::mutex> g(m);
  auto it = cache.find(std::string_view(name));
  if (it == cache.end()) {
    auto a = std::make_unique<Algorithm>(name);  // throws Error(name) with a caret
    it = cache.emplace(name, std::move(a)).first;
  }
  const size_t len = std::strlen(name);
  last.algo = len < sizeof last.name ? it->second.get() : nullptr;
  if (last.algo != nullptr) std::memcpy(last.name, name, len + 1);
  return it->second.get();
}

// One side of an MPI call: a buffer with its count and datatype. Which sides a rank uses, and how
// many blocks each holds there, is the collective's spec (BufferShape): `send` is the IR's `in`,
// `recv` its `out` (bcast's one buffer is `recv`: the root's input lies in `out`).
struct Side {
  void* buf = nullptr;
  MPI_Count count = 0;  // per block
  MPI_Datatype type = MPI_DATATYPE_NULL;
  // An irregular call's side: block b holds counts[b] elements at displs[b] extents (P entries;
  // null displs: packed, MPI_Reduce_scatter's blocks). `count` is then unused.
  const MPI_Count* counts = nullptr;
  const MPI_Aint* displs = nullptr;
  bool arrays = false;  // the side is (buffer, counts, displs, datatype) in the MPI call
};

// The MPI's own collective (PMPI_), called with the arguments the user passed: a reference to
// the generated ck_* function's lambda (call_table.hpp), alive for the call.
class NativeCall {
 public:
  NativeCall() = default;
  template <class F>
  explicit NativeCall(const F& f)
      : f_(&f), call_([](const void* g) { return (*static_cast<const F*>(g))(); }) {}
  int operator()() const { return call_(f_); }

 private:
  const void* f_ = nullptr;
  int (*call_)(const void*) = nullptr;
};

// One call of the C API, with MPI's arguments.
struct Call {
  Collective collective;
  Side send, recv;
  MPI_Op op = MPI_OP_NULL;  // reductions
  int root = 0;             // rooted collectives
  MPI_Comm comm = MPI_COMM_NULL;
  const char* name = nullptr;
  NativeCall native;
};

// How a call is made: blocking, non-blocking (ck_i<coll>) or persistent (ck_<coll>_init).
enum class Mode { blocking, nonblocking, persistent };

// Whether an array side's arrays are read on this rank: its buffer has blocks here and is not
// MPI_IN_PLACE (MPI: an in-place alltoallv's sendcounts and sdispls are ignored).
bool significant(const Side& side, int64_t blocks) {
  return side.arrays && blocks > 0 && side.buf != MPI_IN_PLACE;
}

// PMPI_: when collkit is itself the MPI_* collective (the interposition library), the native call
// must reach the MPI underneath.
int run_native(const Call& c) {
  if (c.recv.count > INT_MAX || c.send.count > INT_MAX)
    return report(ErrorKind::unsupported, "native: count past 2^31 - 1 needs MPI-4 large counts");
#if MPI_VERSION < 4
  // The int arrays of the MPI's own irregular call (MPI 4 takes them as they are: its _c form).
  if (c.send.arrays || c.recv.arrays) {
    int P = 0, rank = 0;
    MPI_Comm_size(c.comm, &P);
    MPI_Comm_rank(c.comm, &rank);
    const CollectiveSpec& spec = spec_of(c.collective);
    const auto fits = [&](const Side& side, int64_t blocks) {
      if (!significant(side, blocks)) return true;
      for (int b = 0; b < P; ++b)
        if ((side.counts != nullptr && side.counts[b] > INT_MAX) ||
            (side.displs != nullptr && (side.displs[b] > INT_MAX || side.displs[b] < INT_MIN)))
          return false;
      return true;
    };
    if (!fits(c.send, buffer_elems(spec.in, P, 1, c.root, rank)) ||
        !fits(c.recv, buffer_elems(spec.out, P, 1, c.root, rank)))
      return report(ErrorKind::unsupported,
                    "native: a count or displacement past 2^31 - 1 needs MPI-4 large counts");
  }
#endif
  return c.native();
}

// What one call runs: the IR's problem (count per block and element size; the root is the call's)
// and the buffers the IR's `in` and `out` stand for, with what to do after the plan has run.
struct Prepared {
  int64_t count = 0, elem_size = 1;
  RunArgs args;
  // Datatypes with gaps: the plan ran on packed bytes, which go back into the user's buffer
  // (which may be MPI_BOTTOM: hence the flag).
  bool unpack_after = false;
  const void* unpack_from = nullptr;
  void* unpack_to = nullptr;
  int64_t unpack_count = 0;
  TypeInfo unpack_type;
  // A reduction on MPI_BOTTOM: the plan ran on a staged copy, copied back to the user's buffer.
  bool copy_back = false;
  void* user_out = nullptr;
  int64_t copy_back_count = 0;
  // Preparing copied or packed the user's data (or left some to unpack after): a repeat of the
  // call must be prepared again (RecentCall).
  bool staged = false;
  // An irregular copy's data was packed or copied to work space (RecentIrregular keeps only a
  // call whose plan ran on the user's buffers as they lie).
  bool packed = false;
  bool stand_in = false;  // `out` is the communicator's work space, not the user's buffer
  // An irregular call whose user blocks are not where the IR's packed ones lie: each block's
  // packed bytes go back to its displacement after the run.
  struct Block {
    const std::byte* from = nullptr;
    void* to = nullptr;
    int64_t count = 0;
    TypeInfo type;
  };
  std::vector<Block> unpack_blocks;
};

// What the spec says about this rank's buffers in this call.
struct Roles {
  int64_t in_blocks = 0, out_blocks = 0;  // blocks of `in` and `out` on this rank
  // MPI_IN_PLACE under the spec's rule: `in` and `out` lie in one user buffer (recvbuf, or the
  // scatter root's sendbuf) at the offsets the spec names; the verifier proves each generator
  // correct under that aliasing.
  bool one_buffer = false;
  // MPI_IN_PLACE where the spec has no rule (alltoall: all of `in` is read while `out` is
  // written): the input, in recvbuf, is first copied to a reused temporary.
  bool copy_input = false;
  bool out_is_user = false;      // `out` is the user's recvbuf (else a reused stand-in)
  bool out_holds_input = false;  // bcast's root: its data starts in `out`
};

Roles roles_of(const CollectiveSpec& spec, const Call& c, int P, int rank) {
  Roles r;
  r.in_blocks = buffer_elems(spec.in, P, 1, c.root, rank);
  r.out_blocks = buffer_elems(spec.out, P, 1, c.root, rank);
  const bool in_place = c.send.buf == MPI_IN_PLACE || c.recv.buf == MPI_IN_PLACE;
  r.one_buffer = in_place && applies_to(spec.in_place, c.root, rank);
  r.copy_input = !r.one_buffer && c.send.buf == MPI_IN_PLACE && r.in_blocks > 0;
  r.out_is_user =
      r.out_blocks > 0 && c.recv.buf != MPI_IN_PLACE && applies_to(spec.post.ranks, c.root, rank);
  r.out_holds_input = spec.root_input_in_out && rank == c.root;
  return r;
}

// The one user buffer of an in-place call: the side that is not MPI_IN_PLACE.
const Side& one_buffer_side(const Call& c) {
  return c.send.buf == MPI_IN_PLACE ? c.recv : c.send;
}

// A reduction: the standard makes count, datatype and op equal on all ranks, so the IR's
// elements are the datatype's elements, used where they lie (any layout, MPI_BOTTOM included);
// the element size the generator sees (for segment sizes) is the signature's size, not the extent.
// An irregular reduction (MPI_Reduce_scatter) gives its header `h`: the buffers' sizes and
// in-place offsets are its layout's.
int prepare_elements(const CollectiveSpec& spec, const Call& c, const CommShape& s, Workspace& w,
                     const Roles& r, Prepared& p, const ScheduleHeader* h = nullptr) {
  RunArgs& a = p.args;
  if (c.recv.type == MPI_DATATYPE_NULL)
    return report(ErrorKind::invalid_argument, "datatype is MPI_DATATYPE_NULL");
  if (int rc = TypeInfo::get(c.recv.type, a.type); rc != MPI_SUCCESS)
    return report_mpi(rc, "datatype");
  const TypeInfo& t = a.type;
  if (t.size > INT32_MAX)
    return decline("datatype of " + std::to_string(t.size) + " bytes: past 2 GiB");
  if (c.op == MPI_OP_NULL) return report(ErrorKind::invalid_argument, "op is MPI_OP_NULL");
  int commute = 1;  // the predefined ops all commute
  if (!is_predefined(c.op))
    if (int rc = MPI_Op_commutative(c.op, &commute); rc != MPI_SUCCESS)
      return report_mpi(rc, "MPI_Op_commutative");
  a.op = c.op;
  a.commutative = commute != 0;
  a.exact = is_predefined(c.op) && exact_op(t.basic, c.op);
  a.fast = t.type == t.basic ? fast_reduce_fn(t.type, c.op) : nullptr;
  // An empty datatype has nothing to reduce: the IR's count is 0 (the same on every rank).
  const int64_t n = t.size == 0 ? 0 : h != nullptr ? h->count : c.recv.count;
  p.count = n;
  p.elem_size = std::max<MPI_Count>(t.size, 1);
  const int64_t in_elems = h != nullptr ? BlockLayout(*h, Io::in, s.rank).elems() : n * r.in_blocks;
  const int64_t out_elems =
      h != nullptr ? BlockLayout(*h, Io::out, s.rank).elems() : n * r.out_blocks;
  if (h != nullptr) p.staged = true;  // the counts may change between calls: never a repeat
  auto temp = [&](Arena& arena, int64_t elems) {
    return element0_in_block(arena.get(span_bytes(t, elems) + 64), t, elems);
  };

  if (r.one_buffer) {
    void* user = one_buffer_side(c).buf;
    const int64_t elems =
        h != nullptr ? in_place_elems(*h, s.rank) : in_place_elems(spec, s.size, n, c.root, s.rank);
    const int64_t in_at =
        h != nullptr ? in_place_in_at(*h, s.rank) : in_place_offset(spec, n, s.rank, 0);
    const int64_t out_at =
        h != nullptr ? in_place_out_at(*h, s.rank) : in_place_out_offset(spec, n, s.rank, 0);
    void* base = user;
    if (base == nullptr && elems > 0) {
      // MPI_BOTTOM: the whole buffer staged at real addresses, the output copied back.
      std::byte* staged = temp(w.staged_out, elems);
      if (int rc = copy_elements(user, staged, elems, t, w.run.pack); rc != MPI_SUCCESS)
        return report_mpi(rc, "staging MPI_BOTTOM");
      p.staged = true;
      p.copy_back = true;
      p.user_out = element(user, out_at, t);
      p.copy_back_count = out_elems;
      base = staged;
    }
    a.in = element(base, in_at, t);
    a.out = element(base, out_at, t);
    a.one_buffer = true;
    return MPI_SUCCESS;
  }

  // `out`: the user's buffer, or work space of the datatype's layout (off a reduce's root).
  a.out = r.out_is_user ? c.recv.buf : (out_elems > 0 ? temp(w.run.stand_in, out_elems) : nullptr);
  p.stand_in = !r.out_is_user && out_elems > 0;
  // MPI_BOTTOM (absolute addresses): MPICH's MPI_Reduce_local refuses a null buffer, so the plan
  // runs on a copy in the same layout at real addresses, copied back after.
  if (r.out_is_user && a.out == nullptr && out_elems > 0) {
    std::byte* staged = temp(w.staged_out, out_elems);
    if (r.out_holds_input)
      if (int rc = copy_elements(a.out, staged, out_elems, t, w.run.pack); rc != MPI_SUCCESS)
        return report_mpi(rc, "staging MPI_BOTTOM");
    p.staged = true;
    p.copy_back = true;
    p.user_out = c.recv.buf;
    p.copy_back_count = out_elems;
    a.out = staged;
  }
  // `in`: sendbuf, or in place without the spec's rule a copy of recvbuf's input.
  if (r.in_blocks == 0) {
    a.in = nullptr;
  } else if (r.copy_input) {
    std::byte* copy = temp(w.staged_in, in_elems);
    if (int rc = copy_elements(c.recv.buf, copy, in_elems, t, w.run.pack); rc != MPI_SUCCESS)
      return report_mpi(rc, "copying the MPI_IN_PLACE input");
    a.in = copy;
    p.staged = true;
  } else {
    a.in = c.send.buf;
    if (a.in == nullptr && in_elems > 0) {
      std::byte* copy = temp(w.staged_in, in_elems);
      if (int rc = copy_elements(a.in, copy, in_elems, t, w.run.pack); rc != MPI_SUCCESS)
        return report_mpi(rc, "staging MPI_BOTTOM");
      a.in = copy;
      p.staged = true;
    }
  }
  return MPI_SUCCESS;
}

// Copies: only the type signatures must match across ranks, so the IR runs on the packed bytes
// of the signature (the same count on every rank, however each rank describes its datatype),
// reading and writing the user's buffers in place where their bytes are dense.
int prepare_bytes(const CollectiveSpec& spec, const Call& c, const CommShape& s, Workspace& w,
                  const Roles& r, Prepared& p) {
  RunArgs& a = p.args;
  a.type = TypeInfo::bytes();
  auto side_info = [](const Side& side, TypeInfo& info) {
    if (side.type == MPI_DATATYPE_NULL)
      return report(ErrorKind::invalid_argument, "datatype is MPI_DATATYPE_NULL");
    if (side.count < 0)
      return report(ErrorKind::invalid_argument,
                    "count " + std::to_string(side.count) + " is negative");
    if (int rc = TypeInfo::get(side.type, info); rc != MPI_SUCCESS)
      return report_mpi(rc, "datatype");
    return MPI_SUCCESS;
  };
  // `out` (or the one in-place buffer) in packed bytes, unpacked into the user's buffer after.
  auto packed_out = [&](const Side& side, const TypeInfo& info, int64_t elems, int64_t bytes,
                        bool holds_input, bool changes) -> std::byte* {
    std::byte* tmp = w.packed_out.get(static_cast<size_t>(bytes) + 1);
    p.staged = true;
    if (holds_input)
      if (int rc = pack(side.buf, elems, info, tmp); rc != MPI_SUCCESS) return nullptr;
    if (changes) {
      p.unpack_after = true;
      p.unpack_from = tmp;
      p.unpack_to = side.buf;
      p.unpack_count = elems;
      p.unpack_type = info;
    }
    return tmp;
  };

  if (r.one_buffer) {
    // In place under the spec's rule: one user buffer holds `in` and `out`.
    const Side& u = one_buffer_side(c);
    TypeInfo ut;
    if (int rc = side_info(u, ut); rc != MPI_SUCCESS) return rc;
    const int64_t block = u.count * ut.size;
    p.count = block;
    const int64_t blocks = in_place_elems(spec, s.size, 1, c.root, s.rank);
    const int64_t elems = u.count * blocks;  // of the user's datatype
    std::byte* base = nullptr;
    if (ut.dense_run(elems)) {
      base = offset(u.buf, ut.true_lb);
    } else if ((base = packed_out(u, ut, elems, block * blocks, true, true)) == nullptr) {
      return report(ErrorKind::unsupported, "MPI_Pack failed");
    }
    a.in = base + in_place_offset(spec, block, s.rank, 0);
    a.out = base + in_place_out_offset(spec, block, s.rank, 0);
    return MPI_SUCCESS;
  }

  // The sides this rank reads: the send side unless in place, the receive side where the rank
  // has an output (or its input lies there).
  const bool use_send = r.in_blocks > 0 && !r.copy_input;
  const bool use_recv = r.out_is_user || r.copy_input || r.out_holds_input;
  TypeInfo st, rt;
  if (use_send)
    if (int rc = side_info(c.send, st); rc != MPI_SUCCESS) return rc;
  if (use_recv)
    if (int rc = side_info(c.recv, rt); rc != MPI_SUCCESS) return rc;
  // Bytes of one block: the same on every rank, from whichever side this rank uses.
  const int64_t send_block = use_send ? c.send.count * st.size : -1;
  const int64_t recv_block = use_recv ? c.recv.count * rt.size : -1;
  if (send_block >= 0 && recv_block >= 0 && send_block != recv_block)
    return report(ErrorKind::invalid_argument,
                  "sendcount x sendtype is " + std::to_string(send_block) +
                      " bytes but recvcount x recvtype is " + std::to_string(recv_block) +
                      ": the type signatures must match");
  const int64_t block = std::max<int64_t>({send_block, recv_block, 0});
  p.count = block;
  const int64_t total_out = block * r.out_blocks, total_in = block * r.in_blocks;

  // `out`: the user's buffer where it is dense, else packed bytes unpacked after the run (the
  // bcast root's data packed first; its buffer does not change).
  const int64_t recv_elems = c.recv.count * r.out_blocks;  // of recvtype in the user's buffer
  if (!r.out_is_user) {
    a.out = total_out > 0 ? w.run.stand_in.get(static_cast<size_t>(total_out) + 1) : nullptr;
    p.stand_in = total_out > 0;
  } else if (rt.dense_run(recv_elems)) {
    a.out = offset(c.recv.buf, rt.true_lb);
  } else {
    a.out = packed_out(c.recv, rt, recv_elems, total_out, r.out_holds_input, !r.out_holds_input);
    if (a.out == nullptr) return report(ErrorKind::unsupported, "MPI_Pack failed");
  }

  // `in`: sendbuf, or in place without the spec's rule (alltoall) a copy of recvbuf.
  if (r.in_blocks == 0) {
    a.in = nullptr;
  } else if (r.copy_input) {
    std::byte* copy = w.packed_in.get(static_cast<size_t>(total_in) + 1);
    const int64_t elems = c.recv.count * r.in_blocks;
    if (rt.dense_run(elems)) {
      std::memcpy(copy, offset(c.recv.buf, rt.true_lb), static_cast<size_t>(total_in));
    } else if (int rc = pack(c.recv.buf, elems, rt, copy); rc != MPI_SUCCESS) {
      return report_mpi(rc, "MPI_Pack");
    }
    a.in = copy;
    p.staged = true;
  } else {
    const int64_t send_elems = c.send.count * r.in_blocks;
    if (st.dense_run(send_elems)) {
      a.in = offset(c.send.buf, st.true_lb);
    } else {
      std::byte* tmp = w.packed_in.get(static_cast<size_t>(total_in) + 1);
      if (int rc = pack(c.send.buf, send_elems, st, tmp); rc != MPI_SUCCESS)
        return report_mpi(rc, "MPI_Pack");
      a.in = tmp;
      p.staged = true;
    }
  }
  return MPI_SUCCESS;
}

// ---- The irregular calls (MPI's v forms, MPI_Reduce_scatter) ----
//
// Their count vector is the schedule header's, equal on every rank: in elements of the datatype
// for MPI_Reduce_scatter (a reduction), in bytes of the type signature for the copies, so each
// rank may describe its blocks with its own datatype. The header never carries the user's
// displacements: they are each rank's own (MPI does not make them equal), and a rank's program
// must not depend on what only that rank knows. The IR's blocks lie packed; where a rank's
// blocks lie that way in its buffer (a dense type, displacements that pack) the plan runs on the
// buffer itself, else on packed bytes gathered from and scattered back to each displacement.

// An irregular call's vectors, as the header takes them.
struct Irregular {
  CountVectors v;
  int64_t count = 0;  // the largest entry
  int64_t elem_size = 1;
  uint64_t hash = 0;
};

// Entries past 2^48 bytes are refused as the header's check refuses them.
constexpr int64_t kMaxEntry = int64_t{1} << 48;

// count x size, or -1 where the count is negative or the product too large.
int64_t entry(MPI_Count count, MPI_Count size) {
  if (count < 0 || (size > 0 && count > kMaxEntry / size)) return -1;
  return static_cast<int64_t>(count * size);
}

int side_size(const Side& side, MPI_Count& size) {
  if (side.type == MPI_DATATYPE_NULL)
    return report(ErrorKind::invalid_argument, "datatype is MPI_DATATYPE_NULL");
  if (int rc = MPI_Type_size_x(side.type, &size); rc != MPI_SUCCESS)
    return report_mpi(rc, "MPI_Type_size_x");
  if (size == MPI_UNDEFINED || size < 0)
    return report(ErrorKind::invalid_argument, "datatype size is undefined");
  return MPI_SUCCESS;
}

// The side whose buffer holds the P blocks of a rooted irregular call (at the root), and the
// other one.
const Side& vector_side(const CollectiveSpec& spec, const Call& c) {
  return spec.in.at_root == Blocks::P && spec.out.at_root != Blocks::P ? c.send : c.recv;
}
const Side& block_side(const CollectiveSpec& spec, const Call& c) {
  return &vector_side(spec, c) == &c.send ? c.recv : c.send;
}

int negative_count() {
  return report(ErrorKind::invalid_argument, "a count is negative (or past 2^48 bytes)");
}

// What this rank sends into the counts exchange of a call where no rank has the whole vector
// (2P entries, count x type size each, -1 for a negative one): alltoallv its row (what it sends
// each rank) and its column, a rooted call its own block at its own rank's entry (the rest 0)
// and, at the root, the root's vector at [P, 2P).
int local_counts(const Call& c, const CommShape& s, std::vector<int64_t>& mine) {
  const CollectiveSpec& spec = spec_of(c.collective);
  const int64_t P = s.size, me = s.rank;
  mine.assign(static_cast<size_t>(2 * P), 0);
  // Entries [at, at + n) of `mine` from a side: its counts (n = P) or its count (n = 1).
  const auto fill = [&](const Side& side, int64_t at, int64_t n, int64_t from = 0) -> int {
    MPI_Count size = 0;
    if (int rc = side_size(side, size); rc != MPI_SUCCESS) return rc;
    if (side.arrays && side.counts == nullptr)
      return report(ErrorKind::invalid_argument, "a count array is NULL");
    for (int64_t b = 0; b < n; ++b)
      mine[static_cast<size_t>(at + b)] =
          entry(side.arrays ? side.counts[from + b] : side.count, size);
    return MPI_SUCCESS;
  };
  if (spec.counts == Counts::per_pair) {
    // In place the send side is the receive side (MPI: sendcounts, sdispls and sendtype are
    // ignored).
    if (int rc = fill(c.send.buf == MPI_IN_PLACE ? c.recv : c.send, 0, P); rc != MPI_SUCCESS)
      return rc;
    return fill(c.recv, P, P);
  }
  // The root in place has its block only in the vector.
  const Side& vec = vector_side(spec, c);
  const Side& one = block_side(spec, c);
  const bool root = me == c.root;
  if (root)
    if (int rc = fill(vec, P, P); rc != MPI_SUCCESS) return rc;
  return root && one.buf == MPI_IN_PLACE ? fill(vec, me, 1, me) : fill(one, me, 1);
}

// The exchange of local_counts' entries: alltoallv gathers every rank's (P x 2P entries), a rooted
// call sums them (2P: each rank's own block, the root's vector). Every rank then holds the same
// `all`, and from it the same answer.
bool exchange_gathers(const CollectiveSpec& spec) {
  return spec.counts == Counts::per_pair;
}

// The call's count vector from the exchanged views `all`, and whether they agree (every rank
// sees the same `all`, so it answers alike on every rank). A negative count is an error there.
int combine_counts(const CollectiveSpec& spec, int64_t P, const std::vector<int64_t>& all,
                   Irregular& ir, bool& agree) {
  std::vector<int64_t>& cv = ir.v.counts;
  const bool pairs = exchange_gathers(spec);
  cv.assign(static_cast<size_t>(pairs ? P * P : P), 0);
  for (int64_t x : all)
    if (x < 0) return negative_count();
  agree = true;
  if (pairs) {
    for (int64_t r = 0; r < P; ++r)
      for (int64_t q = 0; q < P; ++q) {
        const int64_t sent = all[static_cast<size_t>(r * 2 * P + q)];
        agree = agree && sent == all[static_cast<size_t>(q * 2 * P + P + r)];
        cv[static_cast<size_t>(r * P + q)] = sent;
      }
  } else {
    for (int64_t b = 0; b < P; ++b) {
      const int64_t root_view = all[static_cast<size_t>(P + b)];
      agree = agree && all[static_cast<size_t>(b)] == root_view;
      cv[static_cast<size_t>(b)] = root_view;
    }
  }
  ir.count = cv.empty() ? 0 : *std::max_element(cv.begin(), cv.end());
  ir.hash = hash_counts(cv);
  return MPI_SUCCESS;
}

std::string disagreement(const CollectiveSpec& spec) {
  return std::string(spec.name) +
         ": the ranks' counts x type sizes disagree (the type signatures must match)";
}

// The counts exchange of a blocking alltoallv (each rank's row and column, 2P entries): collkit's
// own allgather (allgather:bruck, any P) on the private communicator, through the shared-memory
// slots where the ranks share a node, as any blocking call of collkit's. MPI_Allgather there
// cost as many instructions as the MPI's whole MPI_Alltoallv at P = 2 (callgrind, docs/mpi.md).
// Every rank takes the same branch: whether the plan can be built depends on P alone.
int gather_counts(CommState& s, const std::vector<int64_t>& mine, std::vector<int64_t>& all) {
  const int n = static_cast<int>(mine.size());
  if (!s.counts_plan && !s.counts_by_mpi) {
    static const Algorithm algo("allgather:bruck");
    const int64_t bytes = int64_t{n} * static_cast<int64_t>(sizeof(int64_t));
    const CallShape shape{s.size, bytes, 1, 0, true, Placement{}, nullptr};
    if (algo.refusal(shape, CallCheck::full).empty()) {
      Bound bound = algo.bind(s.size, bytes, 1, 0, Placement{}, CountVectors{});
      RankProgram prog;
      bound.generate_rank(s.rank, prog);
      s.counts_plan = std::make_unique<Plan>(make_plan(bound.header(), prog));
    } else {
      s.counts_by_mpi = true;
    }
  }
  if (s.counts_by_mpi)  // PMPI_: under the interposition library, collkit's own exchange is no
                        // call of the program's (not routed, not counted)
    return PMPI_Allgather(mine.data(), n, MPI_INT64_T, all.data(), n, MPI_INT64_T, s.dup);
  RunArgs a;
  a.comm = s.dup;
  a.tag_ub = s.tag_ub;
  a.type = TypeInfo::bytes();
  a.in = const_cast<int64_t*>(mine.data());
  a.out = all.data();
  return run_plan(*s.counts_plan, a, s.work.run);
}

// The call's count vector. Where no rank has it all, one exchange on collkit's private
// communicator gives every rank the same vector (every rank takes part, so a decline after it is
// still alike on every rank): a rooted call sums what each rank sends or receives with the
// root's vector, alltoallv gathers every rank's row and column. The ranks' views are compared
// there, and a disagreement declines on every rank (the MPI's own call then says what is wrong).
// A blocking call exchanges here, a persistent call at init (MPI 4 makes *_init collective), once
// for every start; a non-blocking call starts the exchange and builds its plan once it has
// completed (start_exchanged).
int irregular_counts(const Call& c, CommState& s, Irregular& ir, bool exchanged = false) {
  const CollectiveSpec& spec = spec_of(c.collective);
  const int64_t P = s.size, me = s.rank;
  if (whole_vector(spec)) {
    std::vector<int64_t>& cv = ir.v.counts;
    cv.assign(static_cast<size_t>(P), 0);
    const Side& vec = vector_side(spec, c);
    const Side& one = block_side(spec, c);
    if (vec.counts == nullptr) return report(ErrorKind::invalid_argument, "recvcounts is NULL");
    MPI_Count size = 0;
    if (int rc = side_size(vec, size); rc != MPI_SUCCESS) return rc;
    const bool reduction = spec.reduction();  // counts in elements
    for (int64_t b = 0; b < P; ++b) {
      const int64_t e = entry(vec.counts[b], reduction ? 1 : size);
      if (e < 0) return negative_count();
      cv[static_cast<size_t>(b)] = reduction && size == 0 ? 0 : e;
    }
    if (reduction) ir.elem_size = std::max<MPI_Count>(size, 1);
    if (!reduction && one.buf != MPI_IN_PLACE) {
      MPI_Count os = 0;
      if (int rc = side_size(one, os); rc != MPI_SUCCESS) return rc;
      const int64_t mine = entry(one.count, os);
      if (mine != cv[static_cast<size_t>(me)])
        return report(ErrorKind::invalid_argument, "this rank's block is " + std::to_string(mine) +
                                                       " bytes but counts[" + std::to_string(me) +
                                                       "] x its datatype is " +
                                                       std::to_string(cv[static_cast<size_t>(me)]) +
                                                       " bytes: the type signatures must match");
    }
    ir.count = cv.empty() ? 0 : *std::max_element(cv.begin(), cv.end());
    ir.hash = hash_counts(cv);
    return MPI_SUCCESS;
  }
  std::vector<int64_t>& mine = s.counts_mine;
  std::vector<int64_t>& all = s.counts_all;
  int rc = MPI_SUCCESS;
  if (!exchanged) {  // else the caller has (exchange_first)
    if (rc = local_counts(c, s, mine); rc != MPI_SUCCESS) return rc;
    if (exchange_gathers(spec)) {
      all.resize(static_cast<size_t>(2 * P * P));
      rc = gather_counts(s, mine, all);
    } else {
      all.resize(mine.size());
      rc = PMPI_Allreduce(mine.data(), all.data(), static_cast<int>(2 * P), MPI_INT64_T, MPI_SUM,
                          s.dup);
    }
    if (rc != MPI_SUCCESS) return report_mpi(rc, "exchanging the counts");
  }
  bool agree = true;
  if (rc = combine_counts(spec, P, all, ir, agree); rc != MPI_SUCCESS) return rc;
  return agree ? MPI_SUCCESS : decline(disagreement(spec));
}

// A blocking alltoallv's counts exchanged before its repeat is looked for (RecentIrregular): the
// exchanged views are part of what a repeat must match, and the exchange is made once.
int exchange_first(const Call& c, CommState& s) {
  if (int rc = local_counts(c, s, s.counts_mine); rc != MPI_SUCCESS) return rc;
  s.counts_all.resize(s.counts_mine.size() * static_cast<size_t>(s.size));
  if (int rc = gather_counts(s, s.counts_mine, s.counts_all); rc != MPI_SUCCESS)
    return report_mpi(rc, "exchanging the counts");
  return MPI_SUCCESS;
}

// Whether a blocking alltoallv runs framed (RunArgs::framed), without its counts exchange: its
// algorithm's rank r reads only row r and column r of the count matrix (no
// Restrictions::all_counts: tests/core/test_irregular_locality.py proves it of every such
// algorithm) and every rank of the communicator shares the node's shared-memory transport, where
// each message carries its length for its receiver to check (P = 1: no message, and the own
// block's send and receive counts are compared as the views' are). Every rank answers alike: the
// algorithm is the same on every rank (the interposer keys alltoallv's rules by P alone) and so
// is the transport (set up collectively here, by the first call that asks). An exchange is one
// more round trip than the MPI's own alltoallv makes, most of a small call (docs/mpi.md).
bool runs_framed(const Algorithm& algo, CommState& s) {
  if (algo.spec().restrictions.all_counts) return false;
  if (s.size == 1) return true;  // no peer: the own block's two counts are compared here
  const ShmTransport* shm = transport(s.dup, s.work.run);
  return shm != nullptr && shm->node_size() == s.size;
}

// A framed alltoallv's views, made here instead of exchanged: this rank's row and column where
// the exchange puts them, and each peer's entries for this rank as this rank's own say them (the
// rest 0: no entry of another pair is read). Whether the two sides agree is each receiver's check
// (run_framed).
void own_views(CommState& s) {
  const int64_t P = s.size, r = s.rank;
  std::vector<int64_t>& all = s.counts_all;
  const std::vector<int64_t>& mine = s.counts_mine;
  all.assign(static_cast<size_t>(2 * P * P), 0);
  std::copy(mine.begin(), mine.end(), all.begin() + 2 * P * r);
  for (int64_t x = 0; x < P; ++x) {
    if (x == r) continue;
    all[static_cast<size_t>(x * 2 * P + r)] = mine[static_cast<size_t>(P + x)];
    all[static_cast<size_t>(x * 2 * P + P + r)] = mine[static_cast<size_t>(x)];
  }
}

// A run that failed: a framed run's mismatch says what each side said, else the MPI's error.
int run_failed(RunState& st, int rc, const Algorithm& algo) {
  if (!st.mismatch.empty()) {
    std::string why = algo.canonical() + ": " + st.mismatch;
    st.mismatch.clear();
    return report(rc == MPI_ERR_TRUNCATE ? ErrorKind::invalid_argument : ErrorKind::unsupported,
                  why);
  }
  return report_mpi(rc, ("running " + algo.canonical()).c_str());
}

// The call's header, for the layouts of this rank's buffers (no algorithm needed).
ScheduleHeader irregular_header(const Call& c, const CommShape& s, const Irregular& ir) {
  ScheduleHeader h;
  h.collective = c.collective;
  h.P = s.size;
  h.count = ir.count;
  h.elem_size = static_cast<int32_t>(ir.elem_size);
  h.root = spec_of(c.collective).rooted ? c.root : 0;
  h.counts = ir.v.counts;
  return h;
}

// Where block b of an array side starts, in elements of its datatype (packed: after b - 1).
int64_t user_displ(const Side& u, int64_t b, int64_t packed_at) {
  return u.displs != nullptr ? u.displs[b] : packed_at;
}

// Whether the side's blocks lie in its buffer as the IR's packed bytes `L` do (from true_lb).
bool lies_packed(const Side& u, const TypeInfo& t, const BlockLayout& L) {
  if (!t.dense || t.extent != t.size) return false;
  int64_t at = 0;
  for (int64_t b = 0; b < L.blocks(); ++b) {
    if (L.len(b) > 0 && user_displ(u, b, at) * t.extent != L.offset(b)) return false;
    at += u.counts[b];
  }
  return true;
}

// n elements of t at `user` -> their packed bytes.
int to_packed(const void* user, int64_t n, const TypeInfo& t, std::byte* packed) {
  if (t.dense_run(n)) {
    std::memcpy(packed, offset(user, t.true_lb), static_cast<size_t>(n * t.size));
    return MPI_SUCCESS;
  }
  return pack(user, n, t, packed);
}

// The IR's buffer for an array side: the user's buffer where it lies packed, else packed bytes
// in `arena`, filled from the blocks (`fill`) and scattered back after the run (`back`; `skip`:
// a block that is not written back, -1 none).
int array_side(const Side& u, const TypeInfo& t, const BlockLayout& L, Arena& arena, bool fill,
               bool back, int64_t skip, Prepared& p, std::byte*& base) {
  if (lies_packed(u, t, L)) {
    base = offset(u.buf, t.true_lb);
    return MPI_SUCCESS;
  }
  base = arena.get(static_cast<size_t>(L.elems()) + 1);
  p.staged = p.packed = true;
  int64_t at = 0;
  for (int64_t b = 0; b < L.blocks(); ++b) {
    const int64_t n = u.counts[b];
    std::byte* user = element(u.buf, user_displ(u, b, at), t);
    at += n;
    if (L.len(b) == 0) continue;
    if (fill)
      if (int rc = to_packed(user, n, t, base + L.offset(b)); rc != MPI_SUCCESS)
        return report_mpi(rc, "MPI_Pack");
    if (back && b != skip) p.unpack_blocks.push_back({base + L.offset(b), user, n, t});
  }
  return MPI_SUCCESS;
}

// The IR's buffer for a one-block side (count elements of its datatype).
int scalar_side(const Side& u, const TypeInfo& t, Arena& arena, bool fill, bool back, Prepared& p,
                std::byte*& base) {
  const int64_t n = u.count;
  if (t.dense_run(n)) {
    base = offset(u.buf, t.true_lb);
    return MPI_SUCCESS;
  }
  base = arena.get(static_cast<size_t>(n * t.size) + 1);
  p.staged = p.packed = true;
  if (fill)
    if (int rc = pack(u.buf, n, t, base); rc != MPI_SUCCESS) return report_mpi(rc, "MPI_Pack");
  if (back) p.unpack_blocks.push_back({base, u.buf, n, t});
  return MPI_SUCCESS;
}

// The copies with count vectors: the IR's `in` and `out` over the packed bytes of the header's
// layout, mapped onto each rank's own buffers, datatypes and displacements.
int prepare_irregular_bytes(const Call& c, const CommShape& s, Workspace& w, const Roles& r,
                            const ScheduleHeader& h, Prepared& p) {
  RunArgs& a = p.args;
  a.type = TypeInfo::bytes();
  p.count = h.count;
  p.elem_size = 1;
  p.staged = true;  // the arrays' contents may change between calls: never a repeat
  const BlockLayout in(h, Io::in, s.rank), out(h, Io::out, s.rank);
  const auto info = [](const Side& side, TypeInfo& t) {
    if (int rc = TypeInfo::get(side.type, t); rc != MPI_SUCCESS) return report_mpi(rc, "datatype");
    return MPI_SUCCESS;
  };
  TypeInfo st, rt;
  std::byte* ib = nullptr;
  std::byte* ob = nullptr;
  if (r.one_buffer) {
    // allgatherv, gatherv's root: the input at the output's own block; scatterv's root: its
    // output is its own block of the input, where it stays.
    if (c.recv.buf == MPI_IN_PLACE) {
      if (int rc = info(c.send, st); rc != MPI_SUCCESS) return rc;
      if (int rc = array_side(c.send, st, in, w.packed_in, true, false, -1, p, ib);
          rc != MPI_SUCCESS)
        return rc;
      a.in = ib;
      a.out = ib + in.offset(s.rank);
    } else {
      if (int rc = info(c.recv, rt); rc != MPI_SUCCESS) return rc;
      const bool staged = !lies_packed(c.recv, rt, out);
      if (int rc = array_side(c.recv, rt, out, w.packed_out, false, true, s.rank, p, ob);
          rc != MPI_SUCCESS)
        return rc;
      if (staged) {  // the own block's data into the packed bytes
        int64_t at = 0;
        for (int64_t b = 0; b < s.rank; ++b) at += c.recv.counts[b];
        const void* user = element(c.recv.buf, user_displ(c.recv, s.rank, at), rt);
        if (int rc = to_packed(user, c.recv.counts[s.rank], rt, ob + out.offset(s.rank));
            rc != MPI_SUCCESS)
          return report_mpi(rc, "MPI_Pack");
      }
      a.out = ob;
      a.in = ob + out.offset(s.rank);
    }
    a.one_buffer = true;
    return MPI_SUCCESS;
  }
  if (r.out_is_user) {
    if (int rc = info(c.recv, rt); rc != MPI_SUCCESS) return rc;
    const int rc = c.recv.arrays ? array_side(c.recv, rt, out, w.packed_out, false, true, -1, p, ob)
                                 : scalar_side(c.recv, rt, w.packed_out, false, true, p, ob);
    if (rc != MPI_SUCCESS) return rc;
  }
  a.out = ob;
  if (r.in_blocks > 0) {
    // In place without the spec's rule (alltoallv): the input is recvbuf's, described by the
    // receive side, copied out before the run writes there.
    const Side& from = r.copy_input ? c.recv : c.send;
    if (int rc = info(from, st); rc != MPI_SUCCESS) return rc;
    Arena& arena = r.copy_input ? w.staged_in : w.packed_in;
    const int rc = from.arrays ? array_side(from, st, in, arena, true, false, -1, p, ib)
                               : scalar_side(from, st, arena, true, false, p, ib);
    if (rc != MPI_SUCCESS) return rc;
    if (r.copy_input && ib == offset(from.buf, st.true_lb)) {  // a copy, not recvbuf itself
      std::byte* copy = w.staged_in.get(static_cast<size_t>(in.elems()) + 1);
      std::memcpy(copy, ib, static_cast<size_t>(in.elems()));
      ib = copy;
      p.packed = true;
    }
  }
  a.in = ib;
  return MPI_SUCCESS;
}

std::string wrong_collective(const Call& c, const Algorithm& algo) {
  const std::string want(to_string(c.collective)), got(to_string(algo.collective()));
  const bool vowel = std::string_view("aeiou").find(got[0]) != std::string_view::npos;
  return "'" + std::string(c.name) + "' is a" + (vowel ? "n " : " ") + got + " algorithm; ck_" +
         want + " takes a " + want + ":... name";
}

// This rank's plan for the call, from the communicator's cache or built now; nullptr when the
// registry's full answer refuses the call (`why` says why, remembered for the next call).
Plan* find_plan(CommState& s, const Algorithm& algo, const PlanKey& key, const CallShape& shape,
                std::string& why) {
  // An irregular call's plan is its vector's (the key has only its hash).
  const bool irregular = shape.vectors != nullptr;
  const auto same = [&](const Plan& plan) {
    return !irregular || plan.header.counts == shape.vectors->counts;
  };
  if (s.last != nullptr && key == s.last_key && same(*s.last)) return s.last;
  auto it = s.plans.find(key);
  if (it != s.plans.end() && !same(*it->second)) {
    if (s.last == it->second.get()) s.last = nullptr;
    s.plans.erase(it);
    --s.irregular_plans;
    it = s.plans.end();
  }
  if (it == s.plans.end()) {
    if (auto r = s.refused.find(key); !irregular && r != s.refused.end()) {
      why = r->second;
      return nullptr;
    }
    why = algo.refusal(shape, CallCheck::full);
    if (!why.empty()) {
      if (!irregular) s.refused.emplace(key, why);  // a hash may stand for another vector
      return nullptr;
    }
    if (irregular && s.irregular_plans >= kIrregularPlans) {
      std::erase_if(s.plans, [](const auto& kv) { return kv.first.vectors != 0; });
      if (s.last_key.vectors != 0) s.last = nullptr;
      s.irregular_plans = 0;
    }
    Bound bound = algo.bind(shape.P, shape.count, static_cast<int32_t>(shape.elem_size), shape.root,
                            shape.placement, irregular ? *shape.vectors : CountVectors{});
    RankProgram prog;
    bound.generate_rank(s.rank, prog);
    it = s.plans.emplace(key, std::make_shared<Plan>(make_plan(bound.header(), prog))).first;
    if (irregular) ++s.irregular_plans;
  }
  s.last = it->second.get();
  s.last_key = key;
  return s.last;
}

// What is left after the plan has run: the packed bytes back into the user's datatype, a staged
// MPI_BOTTOM reduction back to its addresses.
int finish(const Prepared& p, RunState& run) {
  for (const Prepared::Block& b : p.unpack_blocks) {
    int rc = MPI_SUCCESS;
    if (b.type.dense_run(b.count))
      std::memcpy(offset(b.to, b.type.true_lb), b.from, static_cast<size_t>(b.count * b.type.size));
    else
      rc = unpack(b.from, b.to, b.count, b.type);
    if (rc != MPI_SUCCESS) return report_mpi(rc, "MPI_Unpack");
  }
  if (p.copy_back) {
    const int rc = copy_elements(p.args.out, p.user_out, p.copy_back_count, p.args.type, run.pack);
    if (rc != MPI_SUCCESS) return report_mpi(rc, "copying back to MPI_BOTTOM");
  }
  if (p.unpack_after) {
    const int rc = unpack(static_cast<const std::byte*>(p.unpack_from), p.unpack_to, p.unpack_count,
                          p.unpack_type);
    if (rc != MPI_SUCCESS) return report_mpi(rc, "MPI_Unpack");
  }
  return MPI_SUCCESS;
}

// The arguments of `c` that a repeat must match.
CallKey key_of(const Call& c, const Algorithm* algo) {
  return {algo,         c.collective, c.send.buf,  c.recv.buf, c.send.count,
          c.recv.count, c.send.type,  c.recv.type, c.op,       c.root};
}

// Whether `c` repeats `last` (RecentCall).
bool repeats(const RecentCall& last, const Call& c, const Algorithm* algo) {
  return last.valid && last.key == key_of(c, algo);
}

// Whether `c` is `last` on other buffers: every argument equal but the buffers, MPI_IN_PLACE on
// the same sides, and none of them MPI_BOTTOM (which preparing stages).
bool repeats_elsewhere(const RecentCall& last, const Call& c, const Algorithm* algo) {
  if (!last.valid || !last.movable) return false;
  CallKey k = key_of(c, algo);
  const auto same_kind = [](const void* a, const void* b) {
    return (a == MPI_IN_PLACE) == (b == MPI_IN_PLACE) && (a == nullptr) == (b == nullptr);
  };
  if (!same_kind(k.send_buf, last.key.send_buf) || !same_kind(k.recv_buf, last.key.recv_buf))
    return false;
  k.send_buf = last.key.send_buf;
  k.recv_buf = last.key.recv_buf;
  return k == last.key;
}

// `at`, a pointer into the buffer at `from`, moved to the same place in the buffer at `to`.
void* moved(void* at, const void* from, const void* to) {
  if (at == nullptr) return nullptr;
  const auto offset = reinterpret_cast<uintptr_t>(at) - reinterpret_cast<uintptr_t>(from);
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(to) + offset);
}

// The buffers of `c` that `in` and `out` lie in (in place under the spec's rule, one buffer holds
// both: Roles::one_buffer).
std::pair<const void*, const void*> bases_of(const Call& c, bool one_buffer) {
  if (one_buffer) {
    const void* b = one_buffer_side(c).buf;
    return {b, b};
  }
  return {c.send.buf, c.recv.buf};
}

// `last` moved to the buffers of `c` (repeats_elsewhere): its arguments, and its key and bases
// now `c`'s, so that the next call on these buffers is a plain repeat.
void move_to(RecentCall& last, const Call& c, const Algorithm* algo) {
  const auto [in_base, out_base] = bases_of(c, last.one_buffer);
  last.args.in = moved(last.args.in, last.in_base, in_base);
  if (!last.stand_in) last.args.out = moved(last.args.out, last.out_base, out_base);
  last.in_base = in_base;
  last.out_base = out_base;
  last.key = key_of(c, algo);
}

// Remembers a blocking call that ran, if a repeat of it may skip to its plan.
void remember(CommState& s, const Call& c, const Algorithm* algo, const Prepared& p, Plan* plan,
              const Roles& roles) {
  const bool ok = !p.staged && !p.copy_back && !p.unpack_after &&
                  (c.op == MPI_OP_NULL || is_predefined(c.op)) &&
                  (c.send.type == MPI_DATATYPE_NULL || named_type(c.send.type)) &&
                  (c.recv.type == MPI_DATATYPE_NULL || named_type(c.recv.type));
  if (!ok) return;
  RecentCall& last = s.recent[s.recent_next];
  s.recent_next = (s.recent_next + 1) % kRecentCalls;
  last.valid = true;
  last.stand_in = p.stand_in;
  last.key = key_of(c, algo);
  last.plan = plan;
  last.args = p.args;
  last.one_buffer = roles.one_buffer;
  std::tie(last.in_base, last.out_base) = bases_of(c, roles.one_buffer);
  const auto real = [](const void* b) { return b != nullptr && b != MPI_IN_PLACE; };
  last.movable = (p.args.in == nullptr || real(last.in_base)) &&
                 (p.stand_in || p.args.out == nullptr || real(last.out_base));
}

// Whether the blocking irregular copy `c` repeats s.irregular (RecentIrregular); `exchanged`: its
// counts have been exchanged into s.counts_all.
bool repeats_irregular(const CommState& s, const Call& c, const Algorithm* algo, bool exchanged) {
  const RecentIrregular& r = s.irregular;
  if (!r.valid || !(r.key == key_of(c, algo))) return false;
  const size_t P = static_cast<size_t>(s.size);
  const Side* sides[2] = {&c.send, &c.recv};
  for (int k = 0; k < 2; ++k) {
    if (!r.read[k]) continue;
    const Side& side = *sides[k];
    if (side.counts == nullptr || (side.displs != nullptr) != r.has_displs[k] ||
        !std::equal(r.counts[k].begin(), r.counts[k].end(), side.counts) ||
        (r.has_displs[k] && !std::equal(r.displs[k].begin(), r.displs[k].begin() + P, side.displs)))
      return false;
  }
  return !exchanged || r.exchanged == s.counts_all;
}

// Remembers a blocking irregular copy that ran on the user's buffers as they lie.
void remember_irregular(CommState& s, const Call& c, const Algorithm* algo, const Roles& roles,
                        const Prepared& p, bool exchanged) {
  RecentIrregular& r = s.irregular;
  r.valid = false;
  if (p.packed || p.copy_back || p.unpack_after || !p.unpack_blocks.empty() ||
      (c.send.type != MPI_DATATYPE_NULL && !named_type(c.send.type)) ||
      (c.recv.type != MPI_DATATYPE_NULL && !named_type(c.recv.type)))
    return;
  const size_t P = static_cast<size_t>(s.size);
  const Side* sides[2] = {&c.send, &c.recv};
  const int64_t blocks[2] = {roles.in_blocks, roles.out_blocks};
  for (int k = 0; k < 2; ++k) {
    const Side& side = *sides[k];
    r.read[k] = significant(side, blocks[k]) && side.counts != nullptr;
    r.has_displs[k] = r.read[k] && side.displs != nullptr;
    if (r.read[k]) r.counts[k].assign(side.counts, side.counts + P);
    if (r.has_displs[k]) r.displs[k].assign(side.displs, side.displs + P);
  }
  if (exchanged) r.exchanged = s.counts_all;
  r.key = key_of(c, algo);
  r.args = p.args;
  r.valid = r.plan != nullptr;
}

// The non-blocking runs' communicator, made by the first non-blocking call on `comm` (a blocking
// MPI_Comm_dup, on every rank alike), freed once `comm`, every run and every persistent call on
// it are gone.
int nb_comm(CommState& s, std::shared_ptr<NbComm>& out) {
  if (!s.nb) {
    auto nb = std::make_shared<NbComm>();
    if (int rc = PMPI_Comm_dup(s.dup, &nb->comm); rc != MPI_SUCCESS)
      return report_mpi(rc, "MPI_Comm_dup");
    MPI_Comm_set_errhandler(nb->comm, MPI_ERRORS_RETURN);
    nb->tag_span = static_cast<int>((int64_t{s.tag_ub} + 1) / kNbSlots);
    s.nb = std::move(nb);
  }
  out = s.nb;
  return MPI_SUCCESS;
}

// Prepares this rank's buffers for one run of the call (each start of a persistent call again:
// its input is read then, packed where the datatype has gaps).
int prepare(const CollectiveSpec& spec, const Call& c, const CommShape& s, Workspace& work,
            const Roles& roles, Prepared& p, const ScheduleHeader* h = nullptr) {
  if (h != nullptr)
    return spec.reduction() ? prepare_elements(spec, c, s, work, roles, p, h)
                            : prepare_irregular_bytes(c, s, work, roles, *h, p);
  if (spec.post.kind == Postcondition::Kind::synchronized) {
    p.args.type = TypeInfo::bytes();  // no data
    return MPI_SUCCESS;
  }
  if (spec.reduction()) {
    if (c.recv.count < 0)
      return report(ErrorKind::invalid_argument,
                    "count " + std::to_string(c.recv.count) + " is negative");
    return prepare_elements(spec, c, s, work, roles, p);
  }
  return prepare_bytes(spec, c, s, work, roles, p);
}

// A persistent call of collkit's (ck_<coll>_init): what init bound, for every start.
struct PersistentCall {
  Call call;  // the user's arguments (no name, no native call)
  const CollectiveSpec* spec = nullptr;
  CommShape shape;
  Roles roles;
  std::shared_ptr<Plan> plan;
  std::shared_ptr<NbComm> nb;
  int tag_ub = 0;
  std::string canonical;
  // An irregular call's header, and its arrays copied at init (MPI lets the caller's arrays
  // change once the call has returned... only after the request is freed, but a copy is cheap).
  std::optional<ScheduleHeader> header;
  std::vector<MPI_Count> counts[2];
  std::vector<MPI_Aint> displs[2];
};

// One start: the buffers prepared again (their data now), the plan built at init run without
// blocking on the persistent call's own reused run.
int start_persistent(const PersistentCall& pc, Persistent& per, MPI_Request* inner) {
  progress_nonblocking();
  NbRun& r = *per.run;
  Prepared p;
  const ScheduleHeader* h = pc.header ? &*pc.header : nullptr;
  if (int rc = prepare(*pc.spec, pc.call, pc.shape, r.work, pc.roles, p, h); rc != MPI_SUCCESS)
    return rc;
  p.args.comm = pc.nb->comm;
  p.args.tag_ub = pc.tag_ub;
  r.args = p.args;
  pc.nb->take_tags(r);
  r.after = [&r, p] { return finish(p, r.work.run); };
  if (int rc = start_nonblocking(r, inner); rc != MPI_SUCCESS)
    return report_mpi(rc, ("starting " + pc.canonical).c_str());
  return MPI_SUCCESS;
}

// A non-blocking gatherv, scatterv or alltoallv: no rank has the whole count vector, and a
// blocking exchange in the start could deadlock (a rank may start the call and then wait on a
// message another rank sends only before its own start). So the exchange is the run's first step:
// a non-blocking PMPI_Iallreduce or PMPI_Iallgather of local_counts on the communicator of the
// non-blocking runs, started here (in call order on every rank, as the call's tags are taken),
// moved by the run's progress like any message. Once it completes, exchanged_plan builds the
// plan from the vector and the run goes on as any non-blocking run.
//
// Every decline is decided here, before the exchange, from what is equal on every rank without
// it (the algorithm's limits at count 0: P, the root, the placement). What only the vector
// decides (counts that disagree, a negative count, the algorithm's limits on these counts) comes
// after it, when the MPI's own call can no longer take the call: the request completes with an
// error, the same on every rank (they all see the same exchanged views).
struct Exchange {
  Call call;  // the user's arguments, with copies of the arrays read (no name, no native call)
  std::vector<MPI_Count> counts[2];
  std::vector<MPI_Aint> displs[2];
  std::vector<int64_t> mine, all;  // the exchange's buffers
  const Algorithm* algo = nullptr;
  const CollectiveSpec* spec = nullptr;
  CommShape shape;
  Roles roles;
  Placement placement;
  std::shared_ptr<NbComm> nb;
  int tag_ub = 0;
};

// The exchange has completed: the vector, the plan (cached on the communicator of the
// non-blocking runs) and the buffers, set on `r`; an MPI error code, alike on every rank. The
// algorithm's limits on the vector are checked before any buffer is prepared: staging a datatype
// with gaps allocates the call's bytes, so a call past the limits fails alike on every rank
// before any rank allocates.
int exchanged_plan_of(Exchange& x, NbRun& r) {
  const CollectiveSpec& spec = *x.spec;
  const Algorithm& algo = *x.algo;
  Irregular ir;
  bool agree = true;
  if (int rc = combine_counts(spec, x.shape.size, x.all, ir, agree); rc != MPI_SUCCESS) return rc;
  if (!agree) return report(ErrorKind::invalid_argument, disagreement(spec));
  const int64_t root = spec.rooted ? x.call.root : 0;
  NbComm& nb = *x.nb;
  std::shared_ptr<Plan> plan;
  {
    std::lock_guard<std::mutex> g(nb.plans_lock);
    auto key = std::make_tuple(&algo, root, ir.v.counts);
    if (auto it = nb.plans.find(key); it != nb.plans.end()) {
      plan = it->second;
    } else {
      // The IR's problem as prepare_irregular_bytes makes it: the largest entry, in bytes.
      const CallShape shape{x.shape.size, ir.count, ir.elem_size, root, true, x.placement, &ir.v};
      if (std::string why = algo.refusal(shape, CallCheck::full); !why.empty())
        return report(ErrorKind::unsupported,
                      why +
                          " (found once the counts were exchanged: the request fails alike on "
                          "every rank)");
      Bound bound = algo.bind(shape.P, shape.count, static_cast<int32_t>(shape.elem_size), root,
                              x.placement, ir.v);
      RankProgram prog;
      bound.generate_rank(x.shape.rank, prog);
      if (nb.plans.size() >= kIrregularPlans) nb.plans.clear();
      plan = std::make_shared<Plan>(make_plan(bound.header(), prog));
      nb.plans.emplace(std::move(key), plan);
    }
  }
  const ScheduleHeader h = irregular_header(x.call, x.shape, ir);
  Prepared p;
  if (int rc = prepare(spec, x.call, x.shape, r.work, x.roles, p, &h); rc != MPI_SUCCESS) return rc;
  p.args.comm = nb.comm;
  p.args.tag_ub = x.tag_ub;
  r.plan = std::move(plan);
  r.args = p.args;
  r.after = [&r, p] { return finish(p, r.work.run); };
  return MPI_SUCCESS;
}

// exchanged_plan_of with its exceptions as error codes: it runs in the progress of any later
// call, where an exception would end the program.
int exchanged_plan(Exchange& x, NbRun& r) {
  try {
    return exchanged_plan_of(x, r);
  } catch (const Error& e) {
    return report(e.kind(), e.what());
  } catch (const std::bad_alloc&) {
    return report(ErrorKind::unsupported, "out of memory");
  } catch (const std::exception& e) {
    return report(ErrorKind::unsupported, std::string("internal error: ") + e.what());
  }
}

int start_exchanged(const Call& c, CommState& s, const Algorithm& algo, const CollectiveSpec& spec,
                    const Roles& roles, MPI_Request* request) {
  auto x = std::make_shared<Exchange>();
  if (std::string why = node_placement(algo, s.dup, true, x->placement); !why.empty())
    return decline(why);
  const int64_t root = spec.rooted ? c.root : 0;
  if (std::string why =
          algo.refusal({s.size, 0, 1, root, true, x->placement, nullptr}, CallCheck::limits);
      !why.empty())
    return decline(why);
  x->call = c;
  x->call.name = nullptr;
  x->call.native = NativeCall();
  // The arrays read once the exchange completes are copies (MPI keeps the caller's until the
  // request completes; a copy costs O(P) and needs no such promise).
  const auto own = [&](Side& side, int64_t blocks, int k) {
    if (!significant(side, blocks)) {
      side.counts = nullptr;
      side.displs = nullptr;
      return;
    }
    const size_t P = static_cast<size_t>(s.size);
    if (side.counts != nullptr) x->counts[k].assign(side.counts, side.counts + P);
    if (side.displs != nullptr) x->displs[k].assign(side.displs, side.displs + P);
    side.counts = side.counts != nullptr ? x->counts[k].data() : nullptr;
    side.displs = side.displs != nullptr ? x->displs[k].data() : nullptr;
  };
  own(x->call.send, roles.in_blocks, 0);
  own(x->call.recv, roles.out_blocks, 1);
  if (int rc = local_counts(x->call, s, x->mine); rc != MPI_SUCCESS) return rc;
  x->algo = &algo;
  x->spec = &spec;
  x->shape = s;
  x->roles = roles;
  x->tag_ub = s.tag_ub;
  if (int rc = nb_comm(s, x->nb); rc != MPI_SUCCESS) return rc;
  auto run = std::make_unique<NbRun>();
  x->nb->take_tags(*run);
  const int n = static_cast<int>(x->mine.size());
  int rc = MPI_SUCCESS;
  if (exchange_gathers(spec)) {
    x->all.resize(x->mine.size() * static_cast<size_t>(s.size));
    rc = PMPI_Iallgather(x->mine.data(), n, MPI_INT64_T, x->all.data(), n, MPI_INT64_T, x->nb->comm,
                         &run->exchange);
  } else {
    x->all.resize(x->mine.size());
    rc = PMPI_Iallreduce(x->mine.data(), x->all.data(), n, MPI_INT64_T, MPI_SUM, x->nb->comm,
                         &run->exchange);
  }
  if (rc != MPI_SUCCESS) return report_mpi(rc, "starting the counts exchange");
  run->exchanged = [x](NbRun& r) { return exchanged_plan(*x, r); };
  if (rc = start_nonblocking(std::move(run), request); rc != MPI_SUCCESS)
    return report_mpi(rc, ("starting " + algo.canonical()).c_str());
  return MPI_SUCCESS;
}

// One call of the C API: blocking; non-blocking (the run goes on after the return, progressed as
// nbc.hpp says, and completes *request); or persistent (*request is the handle, each MPI_Start on
// it a run of the plan built now). Every decline is decided here, before any communication.
[[gnu::always_inline]] inline int run_locked(const Call& c, Mode mode, MPI_Request* request,
                                             CommState* s, const Algorithm* found,
                                             RecentCall* repeat, bool& framed_open);

// A framed alltoallv (runs_framed) that this rank gave up before its run: its peers run the call
// (or give it up too) and wait for this rank's messages, so it sends each a refusal and takes
// theirs (refuse_framed). A decline stands only where every rank declined (each got a refusal
// from every peer): the MPI's own call then takes it on every rank. Else this rank fails, as its
// peers do, which a refusal tells.
int refused_framed(CommState& s, int rc) {
  const std::string why = g_message;
  bool all = false;
  if (int mrc = refuse_framed(s.dup, s.work.run, all); mrc != MPI_SUCCESS)
    return report_mpi(mrc, "refusing a framed call");
  g_message = why;
  if (ck_declined(rc) && !all)
    return report(ErrorKind::unsupported,
                  why.substr(why.rfind("collkit: ") == 0 ? 9 : 0) +
                      " (on this rank alone: its peers ran the call, which fails there too)");
  return rc;
}

int run(const Call& c, Mode mode, MPI_Request* request) {
  progress_nonblocking();  // every call moves the non-blocking runs in flight
  if (c.name == nullptr) return report(ErrorKind::name, "algorithm name is NULL");
  if (request != nullptr) *request = MPI_REQUEST_NULL;
  const Algorithm* found = nullptr;
  try {
    found = algorithm(c.collective, c.name);
  } catch (const Error& e) {
    return report(e.kind(), e.what());
  } catch (const std::exception& e) {
    return report(ErrorKind::unsupported, std::string("internal error: ") + e.what());
  }
  if (found == nullptr) return run_native(c);
  CommState* s = nullptr;
  if (int rc = comm_state(c.comm, s); rc != MPI_SUCCESS) return rc;
  std::unique_lock<std::mutex> guard(s->lock, std::defer_lock);
  if (s->threaded) guard.lock();
  RecentCall* repeat = nullptr;
  if (mode == Mode::blocking) {
    // A repeat (at most one matches: only a miss is kept), else the first kept call that is this
    // one on other buffers, moved to them (its roles are the same: they read the counts, the
    // root and MPI_IN_PLACE, which are).
    size_t elsewhere = kRecentCalls;
    for (size_t k = 0, i = s->recent_hit; k < kRecentCalls; ++k, i = (i + 1) % kRecentCalls) {
      if (repeats(s->recent[i], c, found)) {
        repeat = &s->recent[i];
        s->recent_hit = i;
        break;
      }
      if (elsewhere == kRecentCalls && repeats_elsewhere(s->recent[i], c, found)) elsewhere = i;
    }
    if (repeat == nullptr && elsewhere < kRecentCalls) {
      repeat = &s->recent[elsewhere];
      s->recent_hit = elsewhere;
      move_to(*repeat, c, found);
    }
  }
  bool framed_open = false;  // a framed alltoallv decided, its run not yet made
  const int rc = run_locked(c, mode, request, s, found, repeat, framed_open);
  if (rc != MPI_SUCCESS && framed_open) return refused_framed(*s, rc);
  return rc;
}

[[gnu::always_inline]] inline int run_locked(const Call& c, Mode mode, MPI_Request* request,
                                             CommState* s, const Algorithm* found,
                                             RecentCall* repeat, bool& framed_open) {
  try {
    if (repeat != nullptr) {
      if (int rc = run_plan(*repeat->plan, repeat->args, s->work.run); rc != MPI_SUCCESS) {
        repeat->valid = false;
        return report_mpi(rc, ("running " + found->canonical()).c_str());
      }
      return MPI_SUCCESS;
    }
    const Algorithm& algo = *found;
    if (algo.collective() != c.collective)
      return report(ErrorKind::name, wrong_collective(c, algo));
    const CollectiveSpec& spec = spec_of(c.collective);
    // A blocking irregular copy whose every rank has the vector (allgatherv) or exchanges it
    // whole (alltoallv: first, here): a repeat of the last one runs its plan at once
    // (RecentIrregular). A gatherv's or scatterv's ranks have only their own block.
    const bool blocking_copy =
        mode == Mode::blocking && spec.counts != Counts::none && !spec.reduction();
    const bool exchanged = blocking_copy && spec.counts == Counts::per_pair;
    const bool repeatable = blocking_copy && (exchanged || whole_vector(spec));
    const bool framed = exchanged && runs_framed(algo, *s);
    framed_open = framed;  // until its run, a failure here must still reach every peer
    // A framed call's views are its own arrays': a repeat of the last call (the arrays compared
    // entry by entry, predefined types) has them already, and makes no views (~350 of a P = 2
    // call's instructions).
    bool again_framed = framed && repeats_irregular(*s, c, found, false);
    if (framed && !again_framed) {
      if (int rc = local_counts(c, *s, s->counts_mine); rc != MPI_SUCCESS) return rc;
      own_views(*s);
    } else if (exchanged && !framed) {
      if (int rc = exchange_first(c, *s); rc != MPI_SUCCESS) return rc;
    }
    if (again_framed || (repeatable && !framed && repeats_irregular(*s, c, found, exchanged))) {
      RecentIrregular& r = s->irregular;
      framed_open = false;
      if (int rc = run_plan(*r.plan, r.args, s->work.run); rc != MPI_SUCCESS) {
        r.valid = false;
        return run_failed(s->work.run, rc, *found);
      }
      return MPI_SUCCESS;
    }
    // This call is prepared now: a recent call's work space may move.
    for (RecentCall& r : s->recent)
      if (r.stand_in) r.valid = false;
    if (spec.rooted && (c.root < 0 || c.root >= s->size))
      return report(ErrorKind::invalid_argument, "root " + std::to_string(c.root) +
                                                     " is not a rank of a communicator of size " +
                                                     std::to_string(s->size));
    const Roles roles = roles_of(spec, c, s->size, s->rank);
    // A non-blocking call whose counts are exchanged: the exchange is the run's first step.
    if (mode == Mode::nonblocking && spec.counts != Counts::none && !whole_vector(spec))
      return start_exchanged(c, *s, algo, spec, roles, request);
    // A non-blocking or persistent run owns its memory; blocking calls reuse the communicator's.
    std::unique_ptr<NbRun> nb = mode != Mode::blocking ? std::make_unique<NbRun>() : nullptr;
    Workspace& work = nb ? nb->work : s->work;

    // An irregular call: its count vector (exchanged where no rank has it all) and the header
    // whose layout its buffers take.
    Irregular ir;
    std::optional<ScheduleHeader> header;
    if (spec.counts != Counts::none) {
      if (int rc = irregular_counts(c, *s, ir, exchanged); rc != MPI_SUCCESS) return rc;
      header = irregular_header(c, *s, ir);
    }
    // An irregular copy's problem is the vector's (prepare_irregular_bytes makes it so): its
    // limits are checked before any buffer is prepared, since staging a datatype with gaps
    // allocates the call's bytes, so a call past them is declined alike on every rank (the MPI's
    // own call can take it) before any rank allocates, not failed where one runs out of memory.
    Placement placement;  // node-aware algorithms only: the communicator's (placement.hpp)
    const bool copy_vector = header && !spec.reduction();
    if (copy_vector) {
      if (std::string why = node_placement(algo, s->dup, true, placement); !why.empty())
        return decline(why);
      const CallShape early{s->size, ir.count,  ir.elem_size, spec.rooted ? c.root : 0,
                            true,    placement, &ir.v};
      if (std::string why = algo.refusal(early, CallCheck::limits); !why.empty())
        return decline(why);
    }
    Prepared p;
    int rc = prepare(spec, c, *s, work, roles, p, header ? &*header : nullptr);
    if (rc != MPI_SUCCESS) return rc;
    if (!copy_vector)
      if (std::string why = node_placement(algo, s->dup, p.args.commutative, placement);
          !why.empty())
        return decline(why);
    // Whether the algorithm can take this call: the registry's one answer, from what is equal on
    // every rank (P, count x element size, root, the op's commutativity and exactness, the
    // placement), so every rank declines alike before any communication. Its limits on every
    // call (constant time), the rest (the generator's own checks) when the plan is built.
    const CallShape shape{s->size,
                          p.count,
                          p.elem_size,
                          spec.rooted ? c.root : 0,
                          p.args.commutative,
                          placement,
                          header ? &ir.v : nullptr,
                          p.args.exact};
    const PlanKey key{&algo, p.count, p.elem_size, shape.root, ir.hash};
    // The previous call's plan with the previous call's kind of op: its limits passed then, on
    // the same communicator (P, placement), and the answer depends on nothing else. Skipping the
    // check saves ~200 instructions of a loop's every call (callgrind, docs/mpi.md).
    const bool again = s->last != nullptr && key == s->last_key &&
                       s->last_commutative == shape.commutative && s->last_exact == shape.exact;
    if (!again && !copy_vector)
      if (std::string why = algo.refusal(shape, CallCheck::limits); !why.empty())
        return decline(why);
    RunArgs& a = p.args;
    a.comm = s->dup;
    a.tag_ub = s->tag_ub;
    a.framed = framed;
    std::string why;
    Plan* plan = find_plan(*s, algo, key, shape, why);
    if (plan == nullptr) return decline(why);
    s->last_commutative = shape.commutative;
    s->last_exact = shape.exact;
    if (!nb) {
      framed_open = false;
      rc = run_plan(*plan, a, s->work.run);
      if (rc != MPI_SUCCESS) return run_failed(s->work.run, rc, algo);
      if (rc = finish(p, s->work.run); rc != MPI_SUCCESS) return rc;
      if (repeatable) {
        s->irregular.plan = s->plans.at(key);
        remember_irregular(*s, c, found, roles, p, exchanged);
      } else {
        remember(*s, c, found, p, plan, roles);
      }
      return MPI_SUCCESS;
    }
    std::shared_ptr<NbComm> comm;
    if (rc = nb_comm(*s, comm); rc != MPI_SUCCESS) return rc;
    nb->plan = s->plans.at(key);
    if (mode == Mode::persistent) {
      // Nothing runs now: the handle holds the plan and the arguments for every start.
      auto pc = std::make_shared<PersistentCall>();
      pc->call = c;
      pc->call.name = nullptr;
      pc->call.native = NativeCall();
      pc->spec = &spec;
      pc->shape = *s;
      pc->roles = roles;
      pc->plan = nb->plan;
      pc->nb = std::move(comm);
      pc->tag_ub = s->tag_ub;
      pc->canonical = algo.canonical();
      pc->header = header;
      // The arrays read at each start are copies (the caller's may be gone by then).
      const auto own = [&](Side& side, int64_t blocks, int k) {
        if (!significant(side, blocks)) {
          side.counts = nullptr;
          side.displs = nullptr;
          return;
        }
        const size_t P = static_cast<size_t>(s->size);
        if (side.counts != nullptr) pc->counts[k].assign(side.counts, side.counts + P);
        if (side.displs != nullptr) pc->displs[k].assign(side.displs, side.displs + P);
        side.counts = side.counts != nullptr ? pc->counts[k].data() : nullptr;
        side.displs = side.displs != nullptr ? pc->displs[k].data() : nullptr;
      };
      if (header) {
        own(pc->call.send, roles.in_blocks, 0);
        own(pc->call.recv, roles.out_blocks, 1);
      }
      auto per = std::make_shared<Persistent>();
      nb->owned = true;
      per->run = std::move(nb);
      per->start = [pc](Persistent& self, MPI_Request* inner) {
        return start_persistent(*pc, self, inner);
      };
      if (rc = make_persistent(std::move(per), c.comm, request); rc != MPI_SUCCESS)
        return report_mpi(rc, "making the persistent request");
      return MPI_SUCCESS;
    }
    a.comm = comm->comm;
    nb->args = a;
    comm->take_tags(*nb);
    NbRun& r = *nb;
    r.after = [&r, p] { return finish(p, r.work.run); };
    rc = start_nonblocking(std::move(nb), request);
    if (rc != MPI_SUCCESS) return report_mpi(rc, ("starting " + algo.canonical()).c_str());
    return MPI_SUCCESS;
  } catch (const Error& e) {
    return report(e.kind(), e.what());
  } catch (const std::bad_alloc&) {
    return report(ErrorKind::unsupported, "out of memory");
  } catch (const std::exception& e) {
    return report(ErrorKind::unsupported, std::string("internal error: ") + e.what());
  }
}

}  // namespace
}  // namespace collkit::mpi

using collkit::Collective;
using collkit::mpi::Call;
using collkit::mpi::NativeCall;
using collkit::mpi::run;
using collkit::mpi::Side;

namespace {
// Before MPI 4 (no PMPI_<Name>_init): "native" as a persistent handle of collkit's whose every
// start is the MPI's own non-blocking call `start`.
[[maybe_unused]] int native_persistent(std::function<int(MPI_Request*)> start,
                                       MPI_Request* request) {
  auto per = std::make_shared<collkit::mpi::Persistent>();
  per->start = [start = std::move(start)](collkit::mpi::Persistent&, MPI_Request* inner) {
    collkit::mpi::progress_nonblocking();
    return start(inner);
  };
  return collkit::mpi::make_persistent(std::move(per), MPI_COMM_NULL, request);
}

// One side of a call from the table's (buffer, count, datatype), or none.
Side side(const void* buf, MPI_Count count, MPI_Datatype type) {
  return {const_cast<void*>(buf), count, type};
}
Side side() {
  return {};
}
// An irregular call's side: (buffer, counts, displs, datatype); MPI_Reduce_scatter's have no
// displacements (nullptr).
Side side(const void* buf, const MPI_Count* counts, const MPI_Aint* displs, MPI_Datatype type) {
  return {const_cast<void*>(buf), 0, type, counts, displs, true};
}
Side side(const void* buf, const MPI_Count* counts, std::nullptr_t, MPI_Datatype type) {
  return {const_cast<void*>(buf), 0, type, counts, nullptr, true};
}

// An argument of the MPI's own call passed on from a ck_* call's: an irregular call's arrays
// (MPI_Count, MPI_Aint) narrowed to the int arrays of the MPI's int form, each significant array
// once (run_native has refused entries past INT_MAX), the others NULL; anything else as it is.
template <class T>
constexpr bool kArrayArg =
    std::is_pointer_v<T> && std::is_integral_v<std::remove_cv_t<std::remove_pointer_t<T>>>;

class Narrowed {
 public:
  explicit Narrowed(const Call& c) {
    int P = 0, rank = 0;
    MPI_Comm_size(c.comm, &P);
    MPI_Comm_rank(c.comm, &rank);
    const collkit::CollectiveSpec& spec = collkit::spec_of(c.collective);
    const int64_t in = collkit::buffer_elems(spec.in, P, 1, c.root, rank);
    const int64_t out = collkit::buffer_elems(spec.out, P, 1, c.root, rank);
    const auto add = [&](const void* p, const auto* v) {
      if (p == nullptr || n_ == 4) return;
      from_[n_] = p;
      to_[n_].assign(v, v + P);
      ++n_;
    };
    for (const auto& [side, blocks] : {std::pair{&c.send, in}, std::pair{&c.recv, out}})
      if (significant(*side, blocks)) {
        add(side->counts, side->counts);
        add(side->displs, side->displs);
      }
  }
  template <class T>
  auto operator()(T x) const {
    if constexpr (kArrayArg<T>) {
      for (int i = 0; i < n_; ++i)
        if (from_[i] == static_cast<const void*>(x)) return static_cast<const int*>(to_[i].data());
      return static_cast<const int*>(nullptr);
    } else {
      return x;
    }
  }

 private:
  const void* from_[4] = {};
  std::vector<int> to_[4];
  int n_ = 0;
};

// The MPI's own call `f` with a ck_* call's arguments: an irregular call's through the MPI 4
// large-count form `f_c` where there is one (the arrays as they are: a non-blocking or
// persistent call reads them after the return), else narrowed to `f`'s int arrays.
template <class F, class G, class... A>
int native_call(const Call& c, const F& f, [[maybe_unused]] const G& f_c, A... a) {
  constexpr bool arrays = (kArrayArg<A> || ...);
  if constexpr (arrays && !std::is_same_v<G, std::nullptr_t>) {
    return f_c(a...);
  } else if constexpr (arrays) {
    // Before MPI 4: the int arrays live until this returns (Open MPI's non-blocking v calls
    // read them while starting).
    const Narrowed narrow(c);
    return f(narrow(a)...);
  } else {
    static_cast<void>(c);
    return f(a...);
  }
}
}  // namespace

// The MPI 4 large-count form of a line's MPI call, or nullptr where it has none.
#define CK_UNLESS_COUNTED_1(...)
#define CK_UNLESS_COUNTED_0(...) __VA_ARGS__
#if MPI_VERSION >= 4
#define CK_NATIVE_C(counted, ...)                                \
  CK_IF_COUNTED(counted, [&](auto... a) { return __VA_ARGS__; }) \
  CK_UNLESS_COUNTED_##counted(nullptr)
#else
#define CK_NATIVE_C(counted, ...) nullptr
#endif

// Each ck_* from its line of the table (call_table.hpp): which arguments are the send and
// receive sides, the op, the root, and the MPI's own call (PMPI_) for "native". Everything else
// follows from the spec. The native call passes the counts on as int: run_native refuses larger.
extern "C" {

#define CK_DEFINE(name, Name, counted, params, args, send, recv, op_, root_, in_place)  \
  int ck_##name(CK_UNPAREN params, const char* algorithm) {                             \
    Call call{Collective::name, side send, side recv, op_, root_, comm, algorithm, {}}; \
    const auto native = [&] {                                                           \
      return native_call(                                                               \
          call, [&](auto... a) { return PMPI_##Name(a...); },                           \
          CK_NATIVE_C(counted, PMPI_##Name##_c(a...)), CK_UNPAREN args);                \
    };                                                                                  \
    call.native = NativeCall(native);                                                   \
    return run(call, collkit::mpi::Mode::blocking, nullptr);                            \
  }
CK_COLLECTIVES(CK_DEFINE, MPI_Count)
#undef CK_DEFINE

// The non-blocking ck_i* from the same lines: the run goes on after the return (nbc.hpp), and
// "native" is the MPI's own non-blocking call, PMPI_I<Name>.
#define CK_DEFINE_I(name, Name, counted, params, args, send, recv, op_, root_, in_place) \
  int ck_i##name(CK_UNPAREN params, MPI_Request* request, const char* algorithm) {       \
    Call call{Collective::name, side send, side recv, op_, root_, comm, algorithm, {}};  \
    const auto native = [&] {                                                            \
      return native_call(                                                                \
          call, [&](auto... a) { return PMPI_I##name(a..., request); },                  \
          CK_NATIVE_C(counted, PMPI_I##name##_c(a..., request)), CK_UNPAREN args);       \
    };                                                                                   \
    call.native = NativeCall(native);                                                    \
    return run(call, collkit::mpi::Mode::nonblocking, request);                          \
  }
CK_COLLECTIVES(CK_DEFINE_I, MPI_Count)
#undef CK_DEFINE_I

// The persistent ck_<name>_init from the same lines: the plan is built (and every decline
// decided) now, each MPI_Start runs it (nbc.hpp's Persistent). "native" is the MPI's own
// PMPI_<Name>_init (MPI 4; Open MPI 4's PMPIX_<Name>_init), or before MPI 4 a persistent handle
// of collkit's whose every start is the MPI's own non-blocking call. The info argument is accepted
// and not read.
#if MPI_VERSION >= 4
#define CK_NATIVE_INIT(counted, name, Name, args)                               \
  native_call(                                                                  \
      call, [&](auto... a) { return PMPI_##Name##_init(a..., info, request); }, \
      CK_NATIVE_C(counted, PMPI_##Name##_init_c(a..., info, request)), CK_UNPAREN args)
#elif CK_MPIX_INIT
#define CK_NATIVE_INIT(counted, name, Name, args)                                         \
  native_call(                                                                            \
      call, [&](auto... a) { return PMPIX_##Name##_init(a..., info, request); }, nullptr, \
      CK_UNPAREN args)
#else
#define CK_NATIVE_INIT(counted, name, Name, args)                                                 \
  (static_cast<void>(info), native_persistent(                                                    \
                                [=](MPI_Request* inner) {                                         \
                                  return native_call(                                             \
                                      call, [&](auto... a) { return PMPI_I##name(a..., inner); }, \
                                      nullptr, CK_UNPAREN args);                                  \
                                },                                                                \
                                request))
#endif
#define CK_DEFINE_INIT(name, Name, counted, params, args, send, recv, op_, root_, in_place) \
  int ck_##name##_init(CK_UNPAREN params, MPI_Info info, MPI_Request* request,              \
                       const char* algorithm) {                                             \
    Call call{Collective::name, side send, side recv, op_, root_, comm, algorithm, {}};     \
    const auto native = [&] { return CK_NATIVE_INIT(counted, name, Name, args); };          \
    call.native = NativeCall(native);                                                       \
    return run(call, collkit::mpi::Mode::persistent, request);                              \
  }
CK_COLLECTIVES(CK_DEFINE_INIT, MPI_Count)
#undef CK_DEFINE_INIT
#undef CK_NATIVE_INIT
#undef CK_NATIVE_C

int ck_declined(int rc) {
  const auto& c = collkit::mpi::error_codes();
  return rc != MPI_SUCCESS && c.ok && rc == c.declined ? 1 : 0;
}

const char* ck_error_message(void) {
  return collkit::mpi::g_message.c_str();
}

const char* ck_transport(MPI_Comm comm) {
  const auto& key = collkit::mpi::keyval();
  collkit::mpi::CommState* s = nullptr;
  int found = 0;
  if (comm == MPI_COMM_NULL || key.rc != MPI_SUCCESS ||
      MPI_Comm_get_attr(comm, key.keyval, &s, &found) != MPI_SUCCESS || !found)
    return "";
  return s->work.run.transport.c_str();
}

}  // extern "C"
