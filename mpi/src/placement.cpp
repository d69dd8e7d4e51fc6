#include "placement.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collkit/error.hpp"
#include "env.hpp"

namespace collkit::mpi {
namespace {

// What was found on one communicator: a placement the generators know, or why there is none.
struct Found {
  Placement placement;  // not given() when the nodes match neither order
  std::string why_not;
  int size = 0;
  int nodes = 0, ppn = 0;  // the shape (comm_shape): 0 nodes where not found, 0 ppn where uneven
  // Per algorithm: why it cannot run on this placement ("" when it can), from binding it once.
  std::map<const Algorithm*, std::string> verdict;
};

int delete_found(MPI_Comm, int, void* value, void*) {
  delete static_cast<Found*>(value);
  return MPI_SUCCESS;
}

int keyval() {
  // PMPI_: the interposition library links this file and must not see its own calls.
  static const int kv = [] {
    int k = MPI_KEYVAL_INVALID;
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_found, &k, nullptr);
    return k;
  }();
  return kv;
}

// Whether the node ids (one per rank) are exactly the nodes of this placement.
bool matches(const Placement& p, const std::vector<int>& node_id) {
  const int64_t P = static_cast<int64_t>(node_id.size());
  const NodeMap nm(p, P);
  std::map<int, int64_t> to_node;
  std::map<int64_t, int> to_id;
  for (int64_t r = 0; r < P; ++r) {
    const int id = node_id[static_cast<size_t>(r)];
    const int64_t n = nm.node_of(r);
    auto [a, new_a] = to_node.emplace(id, n);
    auto [b, new_b] = to_id.emplace(n, id);
    if (a->second != n || b->second != id) return false;
  }
  return true;
}

// The node id of this rank: the smallest rank of `comm` on its node (or the fake one).
int my_node_id(MPI_Comm comm, int rank, int size, std::string& why) {
  if (const char* fake = std::getenv("COLLKIT_TEST_RPN")) {
    const long rpn = std::strtol(fake, nullptr, 10);
    if (rpn < 1) {
      why = "COLLKIT_TEST_RPN='" + std::string(fake) + "' is not a positive integer";
      return -1;
    }
    const char* o = std::getenv("COLLKIT_TEST_ORDER");
    Placement p{rpn, NodeOrder::contiguous};
    try {
      if (o) p.order = node_order_from_string(o);
    } catch (const Error& e) {
      why = std::string("COLLKIT_TEST_ORDER: ") + e.what();
      return -1;
    }
    const NodeMap nm(p, size);
    return static_cast<int>(nm.rank_of(nm.node_of(rank), 0));
  }
  MPI_Comm node = MPI_COMM_NULL;
  if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) != MPI_SUCCESS) {
    why = "MPI_Comm_split_type failed";
    return -1;
  }
  int id = rank;
  const int rc = PMPI_Allreduce(MPI_IN_PLACE, &id, 1, MPI_INT, MPI_MIN, node);
  PMPI_Comm_free(&node);
  if (rc != MPI_SUCCESS) {
    why = "MPI_Allreduce on the node communicator failed";
    return -1;
  }
  return id;
}

Found find(MPI_Comm comm) {
  Found f;
  int rank = 0, size = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  f.size = size;
  std::string why;
  int id = my_node_id(comm, rank, size, why);
  // Every rank takes part in the exchange, even one whose own lookup failed (id -1), so the
  // answer is the same everywhere and no rank is left waiting.
  std::vector<int> ids(static_cast<size_t>(size));
  if (PMPI_Allgather(&id, 1, MPI_INT, ids.data(), 1, MPI_INT, comm) != MPI_SUCCESS) {
    f.why_not = "MPI_Allgather of the node ids failed";
    return f;
  }
  for (int x : ids)
    if (x < 0) {
      f.why_not = why.empty() ? "finding the nodes failed on another rank" : why;
      return f;
    }
  std::map<int, int64_t> count;
  for (int x : ids) ++count[x];
  int64_t rpn = 0;
  for (const auto& [node, n] : count) rpn = std::max(rpn, n);
  f.nodes = static_cast<int>(count.size());
  f.ppn = static_cast<int>(rpn);
  for (const auto& [node, n] : count)
    if (n != rpn) f.ppn = 0;
  for (NodeOrder o : {NodeOrder::contiguous, NodeOrder::round_robin}) {
    const Placement p{rpn, o};
    if (matches(p, ids)) {
      f.placement = p;
      return f;
    }
  }
  f.why_not = "the ranks lie on " + std::to_string(count.size()) + " nodes of up to " +
              std::to_string(rpn) + " ranks, neither contiguous nor round-robin";
  return f;
}

// COLLKIT_VERBOSE (as the interposition library reads it): rank 0 of the communicator says what
// was found, once per communicator, so that a run across nodes shows the placement it used.
void log_found(MPI_Comm comm, const Found& f) {
  if (env_int("COLLKIT_VERBOSE", 0, 0, 9, "a level") < 1) return;
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  if (rank != 0) return;
  const std::string what = f.placement.given() ? f.placement.describe() : "none: " + f.why_not;
  std::fprintf(stderr, "collkit: placement of %d ranks (MPI_Comm_split_type%s): %s\n", f.size,
               std::getenv("COLLKIT_TEST_RPN") ? ", overridden by COLLKIT_TEST_RPN" : "",
               what.c_str());
}

Found& found(MPI_Comm comm) {
  const int kv = keyval();
  Found* f = nullptr;
  int has = 0;
  if (kv != MPI_KEYVAL_INVALID && PMPI_Comm_get_attr(comm, kv, &f, &has) == MPI_SUCCESS && has)
    return *f;
  auto made = std::make_unique<Found>(find(comm));
  log_found(comm, *made);
  if (kv != MPI_KEYVAL_INVALID && PMPI_Comm_set_attr(comm, kv, made.get()) == MPI_SUCCESS)
    return *made.release();
  thread_local Found last;  // not cached (no keyval): found again next time, alike on all ranks
  last = *made;
  return last;
}

}  // namespace

int node_id(MPI_Comm comm, std::string& why) {
  int rank = 0, size = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  return my_node_id(comm, rank, size, why);
}

void comm_shape(MPI_Comm comm, int& nodes, int& ppn) {
  const Found& f = found(comm);
  nodes = f.nodes;
  ppn = f.ppn;
}

std::string node_placement(const Algorithm& algo, MPI_Comm comm, bool commutative, Placement& out) {
  if (!algo.spec().restrictions.needs_placement) return "";
  Found& f = found(comm);
  if (!f.placement.given()) return algo.canonical() + " needs the ranks' nodes: " + f.why_not;
  out = f.placement;
  // Whether the algorithm can use these nodes (node sizes, its parts on their group sizes) does
  // not depend on the count: bind once with none, alike on every rank.
  auto it = f.verdict.find(&algo);
  if (it == f.verdict.end()) {
    std::string why;
    try {
      (void)algo.bind(f.size, 0, 8, 0, out);
    } catch (const Error& e) {
      why = e.what();
    }
    it = f.verdict.emplace(&algo, why).first;
  }
  if (!it->second.empty()) return it->second + " (" + out.describe() + ")";
  if (!commutative && algo.needs_commutative(out))
    return algo.canonical() + " needs a commutative op on " + out.describe();
  return "";
}

}  // namespace collkit::mpi
