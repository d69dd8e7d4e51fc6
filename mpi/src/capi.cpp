// The C API of collkit.h: resolves the algorithm name, finds or builds this rank's plan in the
// communicator's cache, maps the MPI buffers onto the IR's (`in` = sendbuf, `out` = recvbuf) and
// runs it. Every failure becomes an MPI error code; nothing here aborts.
//
// MPI_IN_PLACE: for allreduce and reduce, `in` aliases `out`, and a copy of a region onto itself
// is skipped. So a generator is in-place safe when it reads each element of `in` only before (or
// by) the op that first writes the same element of `out`, as allreduce:rd does (copy(out, in)
// first, then only `out` and scratch). Alltoall reads all of `in` while writing `out`, so there
// the input is first copied to a reused temporary.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "collkit.h"
#include "collkit/error.hpp"
#include "collkit/registry.hpp"
#include "executor.hpp"
#include "layout.hpp"
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
struct PlanKey {
  const Algorithm* algo = nullptr;
  int64_t count = 0, elem_size = 0, root = 0;
  bool operator==(const PlanKey&) const = default;
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    size_t h = std::hash<const void*>()(k.algo);
    for (int64_t v : {k.count, k.elem_size, k.root}) h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h;
  }
};

// What collkit keeps per user communicator: the private duplicate and the plans.
struct CommState {
  MPI_Comm dup = MPI_COMM_NULL;
  int rank = 0, size = 1, tag_ub = 32767;
  std::unordered_map<PlanKey, std::unique_ptr<Plan>, PlanKeyHash> plans;
  PlanKey last_key;  // the plan of the previous call: the common case of a loop
  Plan* last = nullptr;
  RunState run;
  Arena packed_in, packed_out;  // the packed bytes of datatypes with gaps
  Arena staged_in, staged_out;  // reductions on MPI_BOTTOM: copies at real addresses
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
  auto s = std::make_unique<CommState>();
  rc = MPI_Comm_dup(comm, &s->dup);
  if (rc != MPI_SUCCESS) return report_mpi(rc, "MPI_Comm_dup");
  MPI_Comm_set_errhandler(s->dup, MPI_ERRORS_RETURN);  // errors come back to us, never abort
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  s->threaded = provided == MPI_THREAD_MULTIPLE;
  MPI_Comm_rank(s->dup, &s->rank);
  MPI_Comm_size(s->dup, &s->size);
  int* ub = nullptr;
  if (MPI_Comm_get_attr(s->dup, MPI_TAG_UB, &ub, &found) == MPI_SUCCESS && found) s->tag_ub = *ub;
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
  thread_local std::string last_name;
  thread_local const Algorithm* last = nullptr;
  if (last != nullptr && std::strcmp(name, last_name.c_str()) == 0) return last;
  if (is_native(coll, name)) return nullptr;
  static std::mutex m;
  static std::map<std::string, std::unique_ptr<Algorithm>, std::less<>> cache;
  std::lock_guard<std::mutex> g(m);
  auto it = cache.find(std::string_view(name));
  if (it == cache.end()) {
    auto a = std::make_unique<Algorithm>(name);  // throws Error(name) with a caret
    it = cache.emplace(name, std::move(a)).first;
  }
  last_name = name;
  last = it->second.get();
  return last;
}

// One call of the C API, with MPI's arguments. Reductions and bcast use the recv side only
// (recvbuf is bcast's buffer); sendcount and sendtype are alltoall's.
struct Call {
  Collective collective;
  const void* sendbuf;
  MPI_Count sendcount;
  MPI_Datatype sendtype;
  void* recvbuf;
  MPI_Count recvcount;
  MPI_Datatype recvtype;
  MPI_Op op;
  int root;
  MPI_Comm comm;
  const char* name;
};

// PMPI_: when collkit is itself the MPI_* collective (the interposition library), the native call
// must reach the MPI underneath.
int run_native(const Call& c) {
  if (c.recvcount > INT_MAX || c.sendcount > INT_MAX)
    return report(ErrorKind::unsupported, "native: count past 2^31 - 1 needs MPI-4 large counts");
  const int n = static_cast<int>(c.recvcount), sn = static_cast<int>(c.sendcount);
  switch (c.collective) {
    case Collective::allreduce:
      return PMPI_Allreduce(c.sendbuf, c.recvbuf, n, c.recvtype, c.op, c.comm);
    case Collective::reduce:
      return PMPI_Reduce(c.sendbuf, c.recvbuf, n, c.recvtype, c.op, c.root, c.comm);
    case Collective::bcast:
      return PMPI_Bcast(c.recvbuf, n, c.recvtype, c.root, c.comm);
    case Collective::alltoall:
      return PMPI_Alltoall(c.sendbuf, sn, c.sendtype, c.recvbuf, n, c.recvtype, c.comm);
    case Collective::barrier:
      return PMPI_Barrier(c.comm);
  }
  return MPI_ERR_INTERN;
}

// What one call runs: the IR's problem (count and element size; the root is the call's) and the
// buffers the IR's `in` and `out` stand for, with what to do after the plan has run.
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
};

// A reduction: the standard makes count, datatype and op equal on all ranks, so the IR's
// elements are the datatype's elements, used where they lie (any layout, MPI_BOTTOM included);
// the element size the generator sees (for segment sizes) is the signature's size, not the extent.
int prepare_reduction(const Call& c, CommState& s, Prepared& p) {
  RunArgs& a = p.args;
  if (c.recvtype == MPI_DATATYPE_NULL)
    return report(ErrorKind::invalid_argument, "datatype is MPI_DATATYPE_NULL");
  if (int rc = TypeInfo::get(c.recvtype, a.type); rc != MPI_SUCCESS)
    return report_mpi(rc, "datatype");
  if (a.type.size > INT32_MAX)
    return decline("datatype of " + std::to_string(a.type.size) + " bytes: past 2 GiB");
  if (c.op == MPI_OP_NULL) return report(ErrorKind::invalid_argument, "op is MPI_OP_NULL");
  int commute = 1;  // the predefined ops all commute
  if (!is_predefined(c.op))
    if (int rc = MPI_Op_commutative(c.op, &commute); rc != MPI_SUCCESS)
      return report_mpi(rc, "MPI_Op_commutative");
  a.op = c.op;
  a.commutative = commute != 0;
  // An empty datatype has nothing to reduce: the IR's count is 0 (the same on every rank).
  p.count = a.type.size == 0 ? 0 : c.recvcount;
  p.elem_size = std::max<MPI_Count>(a.type.size, 1);
  const bool in_place = c.sendbuf == MPI_IN_PLACE;
  if (c.collective == Collective::allreduce || s.rank == c.root) {
    a.out = c.recvbuf;
    a.in = in_place ? c.recvbuf : const_cast<void*>(c.sendbuf);
  } else {
    a.in = const_cast<void*>(c.sendbuf);  // `out`: a stand-in, carved once the plan is known
  }
  // MPI_BOTTOM (absolute addresses): MPICH's MPI_Reduce_local refuses a null buffer, so the plan
  // runs on copies in the same layout at real addresses, and the result is copied back.
  const bool out_is_user = c.collective == Collective::allreduce || s.rank == c.root;
  if (p.count > 0 && (a.in == nullptr || (out_is_user && a.out == nullptr))) {
    const size_t span = span_bytes(a.type, p.count) + 64;
    const bool aliased = a.in == a.out;
    if (a.in == nullptr) {
      std::byte* copy = element0_in_block(s.staged_in.get(span), a.type, p.count);
      if (int rc = copy_elements(a.in, copy, p.count, a.type, s.run.pack); rc != MPI_SUCCESS)
        return report_mpi(rc, "staging MPI_BOTTOM");
      a.in = copy;
    }
    if (out_is_user && c.recvbuf == nullptr) {
      p.copy_back = true;
      p.user_out = c.recvbuf;
      if (aliased) {
        a.out = a.in;  // in place: the staged input is the working output
      } else {
        a.out = element0_in_block(s.staged_out.get(span), a.type, p.count);
      }
    }
  }
  return MPI_SUCCESS;
}

// Bcast and alltoall: only the type signatures must match across ranks, so the IR runs on the
// packed bytes of the signature (the same count on every rank, however each rank describes its
// datatype), reading and writing the user's buffers in place where their bytes are dense.
int prepare_bytes(const Call& c, CommState& s, Prepared& p) {
  RunArgs& a = p.args;
  a.type = TypeInfo::bytes();
  if (c.recvtype == MPI_DATATYPE_NULL ||
      (c.collective == Collective::alltoall && c.sendbuf != MPI_IN_PLACE &&
       c.sendtype == MPI_DATATYPE_NULL))
    return report(ErrorKind::invalid_argument, "datatype is MPI_DATATYPE_NULL");
  TypeInfo rt;
  if (int rc = TypeInfo::get(c.recvtype, rt); rc != MPI_SUCCESS) return report_mpi(rc, "datatype");
  const int64_t block = c.recvcount * rt.size;  // bytes of the buffer (bcast) or of one block
  p.count = block;
  const int64_t blocks = c.collective == Collective::alltoall ? s.size : 1;
  const int64_t elems = c.recvcount * blocks;  // of recvtype in the user's buffer
  const int64_t total = block * blocks;

  // `out`: the user's buffer where it is dense, else packed bytes unpacked after the run.
  if (rt.dense_run(elems)) {
    a.out = offset(c.recvbuf, rt.true_lb);
  } else {
    std::byte* tmp = s.packed_out.get(static_cast<size_t>(total) + 1);
    a.out = tmp;
    const bool receives = c.collective == Collective::alltoall || s.rank != c.root;
    if (receives) {
      p.unpack_after = true;
      p.unpack_from = tmp;
      p.unpack_to = c.recvbuf;
      p.unpack_count = elems;
      p.unpack_type = rt;
    } else if (int rc = pack(c.recvbuf, elems, rt, tmp); rc != MPI_SUCCESS) {
      return report_mpi(rc, "MPI_Pack");  // the bcast root's data, packed
    }
  }
  if (c.collective != Collective::alltoall) return MPI_SUCCESS;

  // Alltoall's `in`: sendbuf, or with MPI_IN_PLACE a copy of recvbuf (every block of `in` is
  // read while `out` is written).
  if (c.sendbuf == MPI_IN_PLACE) {
    std::byte* copy = s.packed_in.get(static_cast<size_t>(total) + 1);
    if (rt.dense_run(elems)) {
      std::memcpy(copy, a.out, static_cast<size_t>(total));
    } else if (int rc = pack(c.recvbuf, elems, rt, copy); rc != MPI_SUCCESS) {
      return report_mpi(rc, "MPI_Pack");
    }
    a.in = copy;
    return MPI_SUCCESS;
  }
  TypeInfo st;
  if (int rc = TypeInfo::get(c.sendtype, st); rc != MPI_SUCCESS) return report_mpi(rc, "datatype");
  if (c.sendcount < 0) return report(ErrorKind::invalid_argument, "sendcount is negative");
  if (c.sendcount * st.size != block)
    return report(ErrorKind::invalid_argument,
                  "sendcount x sendtype is " + std::to_string(c.sendcount * st.size) +
                      " bytes but recvcount x recvtype is " + std::to_string(block) +
                      ": the type signatures must match");
  const int64_t send_elems = c.sendcount * s.size;
  if (st.dense_run(send_elems)) {
    a.in = offset(c.sendbuf, st.true_lb);
  } else {
    std::byte* tmp = s.packed_in.get(static_cast<size_t>(total) + 1);
    if (int rc = pack(c.sendbuf, send_elems, st, tmp); rc != MPI_SUCCESS)
      return report_mpi(rc, "MPI_Pack");
    a.in = tmp;
  }
  return MPI_SUCCESS;
}

std::string wrong_collective(const Call& c, const Algorithm& algo) {
  const std::string want(to_string(c.collective)), got(to_string(algo.collective()));
  const bool vowel = got == "allreduce" || got == "alltoall";
  return "'" + std::string(c.name) + "' is a" + (vowel ? "n " : " ") + got + " algorithm; ck_" +
         want + " takes a " + want + ":... name";
}

int run(const Call& c) {
  if (c.name == nullptr) return report(ErrorKind::name, "algorithm name is NULL");
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
  try {
    const Algorithm& algo = *found;
    if (algo.collective() != c.collective)
      return report(ErrorKind::name, wrong_collective(c, algo));
    if (c.recvcount < 0)
      return report(ErrorKind::invalid_argument,
                    "count " + std::to_string(c.recvcount) + " is negative");
    const bool rooted = is_rooted(c.collective);
    if (rooted && (c.root < 0 || c.root >= s->size))
      return report(ErrorKind::invalid_argument, "root " + std::to_string(c.root) +
                                                     " is not a rank of a communicator of size " +
                                                     std::to_string(s->size));

    Prepared p;
    int rc = MPI_SUCCESS;
    switch (c.collective) {
      case Collective::allreduce:
      case Collective::reduce:
        rc = prepare_reduction(c, *s, p);
        if (rc == MPI_SUCCESS && !p.args.commutative && algo.spec().restrictions.commutative_op)
          rc = decline(algo.canonical() + " needs a commutative op");
        break;
      case Collective::bcast:
      case Collective::alltoall:
        rc = prepare_bytes(c, *s, p);
        break;
      case Collective::barrier:
        p.args.type = TypeInfo::bytes();
        break;
    }
    if (rc != MPI_SUCCESS) return rc;
    Placement placement;  // node-aware algorithms only: the communicator's (placement.hpp)
    if (std::string why = node_placement(algo, s->dup, p.args.commutative, placement); !why.empty())
      return decline(why);
    RunArgs& a = p.args;
    a.comm = s->dup;
    a.tag_ub = s->tag_ub;

    const PlanKey key{&algo, p.count, p.elem_size, rooted ? c.root : 0};
    Plan* plan = s->last;
    if (plan == nullptr || !(key == s->last_key)) {
      auto it = s->plans.find(key);
      if (it == s->plans.end()) {
        if (p.elem_size > INT32_MAX)
          return decline("element of " + std::to_string(p.elem_size) + " bytes: past 2 GiB");
        Bound bound =
            algo.bind(s->size, key.count, static_cast<int32_t>(key.elem_size), key.root, placement);
        RankProgram prog;
        bound.generate_rank(s->rank, prog);
        it = s->plans.emplace(key, std::make_unique<Plan>(make_plan(bound.header(), prog))).first;
      }
      plan = it->second.get();
      s->last = plan;
      s->last_key = key;
    }
    if (c.collective == Collective::reduce && s->rank != c.root) {
      // Off the root, `out` is work space of the datatype's layout.
      a.out = element0_in_block(s->run.stand_in.get(span_bytes(a.type, key.count) + 64), a.type,
                                key.count);
    }

    rc = run_plan(*plan, a, s->run);
    if (rc != MPI_SUCCESS) return report_mpi(rc, ("running " + algo.canonical()).c_str());
    if (p.copy_back) {
      rc = copy_elements(a.out, p.user_out, key.count, a.type, s->run.pack);
      if (rc != MPI_SUCCESS) return report_mpi(rc, "copying back to MPI_BOTTOM");
    }
    if (p.unpack_after) {
      rc = unpack(static_cast<const std::byte*>(p.unpack_from), p.unpack_to, p.unpack_count,
                  p.unpack_type);
      if (rc != MPI_SUCCESS) return report_mpi(rc, "MPI_Unpack");
    }
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
using collkit::mpi::run;

extern "C" {

int ck_allreduce(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, MPI_Comm comm, const char* algorithm) {
  return run({Collective::allreduce, sendbuf, count, datatype, recvbuf, count, datatype, op, 0,
              comm, algorithm});
}

int ck_reduce(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
              int root, MPI_Comm comm, const char* algorithm) {
  return run({Collective::reduce, sendbuf, count, datatype, recvbuf, count, datatype, op, root,
              comm, algorithm});
}

int ck_bcast(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
             const char* algorithm) {
  return run({Collective::bcast, nullptr, 0, MPI_DATATYPE_NULL, buffer, count, datatype,
              MPI_OP_NULL, root, comm, algorithm});
}

int ck_alltoall(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm) {
  return run({Collective::alltoall, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
              MPI_OP_NULL, 0, comm, algorithm});
}

int ck_barrier(MPI_Comm comm, const char* algorithm) {
  return run({Collective::barrier, nullptr, 0, MPI_DATATYPE_NULL, nullptr, 0, MPI_BYTE, MPI_OP_NULL,
              0, comm, algorithm});
}

int ck_declined(int rc) {
  const auto& c = collkit::mpi::error_codes();
  return rc != MPI_SUCCESS && c.ok && rc == c.declined ? 1 : 0;
}

const char* ck_error_message(void) {
  return collkit::mpi::g_message.c_str();
}

}  // extern "C"
