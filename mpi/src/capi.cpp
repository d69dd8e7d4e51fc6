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

#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "collkit.h"
#include "collkit/error.hpp"
#include "collkit/registry.hpp"
#include "executor.hpp"
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

// What collkit keeps per user communicator: the private duplicate and the plans.
struct CommState {
  MPI_Comm dup = MPI_COMM_NULL;
  int rank = 0, size = 1, tag_ub = 32767;
  std::unordered_map<std::string, std::unique_ptr<Plan>> plans;
  RunState run;
  std::mutex lock;  // one collective at a time per communicator, as MPI requires anyway
};

int delete_state(MPI_Comm, int, void* value, void*) {
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

int comm_state(MPI_Comm comm, CommState*& out) {
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

// Parsed algorithm names, shared by all communicators.
const Algorithm& algorithm(const std::string& name) {
  static std::mutex m;
  static std::map<std::string, std::unique_ptr<Algorithm>> cache;
  std::lock_guard<std::mutex> g(m);
  auto it = cache.find(name);
  if (it != cache.end()) return *it->second;
  auto a = std::make_unique<Algorithm>(name);  // throws Error(name) with a caret
  return *cache.emplace(name, std::move(a)).first->second;
}

struct Call {
  Collective collective;
  const void* sendbuf;
  void* recvbuf;
  MPI_Count count;
  MPI_Datatype type;
  MPI_Op op;
  int root;
  MPI_Comm comm;
  const char* name;
};

// "native" (or "allreduce:native", ...): the MPI's own collective, for comparison.
bool is_native(Collective coll, const char* name) {
  const std::string n = name;
  return n == "native" || n == std::string(to_string(coll)) + ":native";
}

// PMPI_: when collkit is itself the MPI_* collective (the interposition library), the native call
// must reach the MPI underneath.
int run_native(const Call& c) {
  if (c.count > INT_MAX)
    return report(ErrorKind::unsupported, "native: count past 2^31 - 1 needs MPI-4 large counts");
  const int n = static_cast<int>(c.count);
  switch (c.collective) {
    case Collective::allreduce:
      return PMPI_Allreduce(c.sendbuf, c.recvbuf, n, c.type, c.op, c.comm);
    case Collective::reduce:
      return PMPI_Reduce(c.sendbuf, c.recvbuf, n, c.type, c.op, c.root, c.comm);
    case Collective::bcast:
      return PMPI_Bcast(c.recvbuf, n, c.type, c.root, c.comm);
    case Collective::alltoall:
      return PMPI_Alltoall(c.sendbuf, n, c.type, c.recvbuf, n, c.type, c.comm);
    case Collective::barrier:
      return PMPI_Barrier(c.comm);
  }
  return MPI_ERR_INTERN;
}

int run(const Call& c) {
  if (c.name == nullptr) return report(ErrorKind::name, "algorithm name is NULL");
  if (is_native(c.collective, c.name)) return run_native(c);
  CommState* s = nullptr;
  if (int rc = comm_state(c.comm, s); rc != MPI_SUCCESS) return rc;
  std::lock_guard<std::mutex> guard(s->lock);
  try {
    const Algorithm& algo = algorithm(c.name);
    if (algo.collective() != c.collective) {
      const std::string want(to_string(c.collective));
      std::string m = "'";
      m += c.name;
      m += "' is a";
      m += to_string(algo.collective()) == "allreduce" || to_string(algo.collective()) == "alltoall"
               ? "n "
               : " ";
      m += to_string(algo.collective());
      m += " algorithm; ck_" + want + " takes a " + want + ":... name";
      return report(ErrorKind::name, m);
    }
    if (c.count < 0)
      return report(ErrorKind::invalid_argument,
                    "count " + std::to_string(c.count) + " is negative");

    RunArgs a;
    a.comm = s->dup;
    a.tag_ub = s->tag_ub;
    a.op = c.op;
    if (c.collective != Collective::barrier) {
      if (c.type == MPI_DATATYPE_NULL)
        return report(ErrorKind::invalid_argument, "datatype is MPI_DATATYPE_NULL");
      if (int rc = TypeInfo::get(c.type, a.type); rc != MPI_SUCCESS)
        return report_mpi(rc, "datatype");
      if (a.type.extent <= 0 || a.type.extent > (1 << 20))
        return report(ErrorKind::unsupported,
                      "datatype extent " + std::to_string(a.type.extent) +
                          " bytes: collkit needs an extent in [1 B, 1 MiB]");
    } else {
      a.type.type = MPI_BYTE;
      a.type.extent = a.type.true_extent = a.type.size = 1;
      a.type.contiguous = true;
    }
    const bool reduces =
        c.collective == Collective::allreduce || c.collective == Collective::reduce;
    if (reduces) {
      if (c.op == MPI_OP_NULL) return report(ErrorKind::invalid_argument, "op is MPI_OP_NULL");
      int commute = 1;
      if (int rc = MPI_Op_commutative(c.op, &commute); rc != MPI_SUCCESS)
        return report_mpi(rc, "MPI_Op_commutative");
      a.commutative = commute != 0;
      if (!a.commutative && algo.spec().restrictions.commutative_op)
        return decline(algo.canonical() + " needs a commutative op");
    }
    const bool rooted = is_rooted(c.collective);
    if (rooted && (c.root < 0 || c.root >= s->size))
      return report(ErrorKind::invalid_argument, "root " + std::to_string(c.root) +
                                                     " is not a rank of a communicator of size " +
                                                     std::to_string(s->size));

    // The plan depends on the algorithm, P (fixed per communicator), count, element size and root;
    // datatype and op are applied when it runs, so freed and reused handles never go stale.
    const int64_t count = c.collective == Collective::barrier ? 0 : c.count;
    std::string key = algo.canonical() + '|' + std::to_string(count) + '|' +
                      std::to_string(a.type.extent) + '|' + std::to_string(rooted ? c.root : 0);
    auto it = s->plans.find(key);
    if (it == s->plans.end()) {
      Bound bound =
          algo.bind(s->size, count, static_cast<int32_t>(a.type.extent), rooted ? c.root : 0);
      RankProgram prog;
      bound.generate_rank(s->rank, prog);
      it = s->plans.emplace(key, std::make_unique<Plan>(make_plan(bound.header(), prog))).first;
    }
    Plan& plan = *it->second;

    const bool in_place = c.sendbuf == MPI_IN_PLACE;
    switch (c.collective) {
      case Collective::allreduce:
        a.out = c.recvbuf;
        a.in = in_place ? c.recvbuf : const_cast<void*>(c.sendbuf);
        break;
      case Collective::reduce:
        if (s->rank == c.root) {
          a.out = c.recvbuf;
          a.in = in_place ? c.recvbuf : const_cast<void*>(c.sendbuf);
        } else {
          // recvbuf means nothing off the root; the schedule may still use `out` as work space.
          a.in = const_cast<void*>(c.sendbuf);
          a.out = s->run.stand_in.get(
                      static_cast<size_t>(count * a.type.extent + a.type.true_extent) + 64) -
                  a.type.true_lb;
        }
        break;
      case Collective::bcast:
        a.out = c.recvbuf;
        break;
      case Collective::alltoall:
        a.out = c.recvbuf;
        if (in_place) {
          const int64_t elems = count * s->size;
          const size_t bytes =
              elems == 0 ? 0
                         : static_cast<size_t>((elems - 1) * a.type.extent + a.type.true_extent);
          std::byte* copy = s->run.stand_in.get(bytes + 64) - a.type.true_lb;
          std::memcpy(copy + a.type.true_lb, static_cast<std::byte*>(c.recvbuf) + a.type.true_lb,
                      bytes);
          a.in = copy;
        } else {
          a.in = const_cast<void*>(c.sendbuf);
        }
        break;
      case Collective::barrier:
        break;
    }
    int rc = run_plan(plan, a, s->run);
    if (rc != MPI_SUCCESS) return report_mpi(rc, ("running " + algo.canonical()).c_str());
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
  return run({Collective::allreduce, sendbuf, recvbuf, count, datatype, op, 0, comm, algorithm});
}

int ck_reduce(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
              int root, MPI_Comm comm, const char* algorithm) {
  return run({Collective::reduce, sendbuf, recvbuf, count, datatype, op, root, comm, algorithm});
}

int ck_bcast(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
             const char* algorithm) {
  return run(
      {Collective::bcast, nullptr, buffer, count, datatype, MPI_OP_NULL, root, comm, algorithm});
}

int ck_alltoall(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm) {
  if (sendbuf != MPI_IN_PLACE && (sendcount != recvcount || sendtype != recvtype))
    return collkit::mpi::decline("alltoall with different send and receive types");  // for now
  return run({Collective::alltoall, sendbuf, recvbuf, recvcount, recvtype, MPI_OP_NULL, 0, comm,
              algorithm});
}

int ck_barrier(MPI_Comm comm, const char* algorithm) {
  return run({Collective::barrier, nullptr, nullptr, 0, MPI_BYTE, MPI_OP_NULL, 0, comm, algorithm});
}

int ck_declined(int rc) {
  const auto& c = collkit::mpi::error_codes();
  return rc != MPI_SUCCESS && c.ok && rc == c.declined ? 1 : 0;
}

const char* ck_error_message(void) {
  return collkit::mpi::g_message.c_str();
}

}  // extern "C"
