// The placement of a communicator's ranks on nodes, for the node-aware algorithms
// (allreduce:hier, alltoall:bruck_local): found once per communicator with
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) and cached on it, then matched against the
// placements the generators know (rpn ranks per node, contiguous or round-robin).
//
// Testing aid: on one machine every rank shares one node. COLLKIT_TEST_RPN=N (and
// COLLKIT_TEST_ORDER=contiguous|round_robin, default contiguous) makes collkit take the ranks to
// be N to a node as if MPI_Comm_split_type had found them so; the rest (the exchange of node ids,
// the matching, the declining) runs as it would on a cluster. Never set it in production.
#pragma once
#include <mpi.h>

#include <string>

#include "collkit/placement.hpp"
#include "collkit/registry.hpp"

namespace collkit::mpi {

// For an algorithm that needs the placement: sets `out` to the communicator's placement and
// returns "" when the algorithm can run there with an op of this commutativity; else returns why
// not (the caller declines, so the MPI's own collective runs). Other algorithms: "" at once.
// Collective over `comm` the first time it is called on it.
std::string node_placement(const Algorithm& algo, MPI_Comm comm, bool commutative, Placement& out);

// This rank's node, named by the smallest rank of `comm` on it (COLLKIT_TEST_RPN's fake node
// too); -1 with why not. Collective over `comm` (MPI_Comm_split_type), but not with
// COLLKIT_TEST_RPN. The shared-memory transport (shm.cpp) takes its fake nodes from here, and
// otherwise groups the ranks by operating system (host, boot id, network namespace) with one
// allgather: ranks MPI puts on one node share it, in every setup collkit knows.
int node_id(MPI_Comm comm, std::string& why);

// The communicator's shape: `nodes` (0 where the nodes could not be found) and `ppn`, the ranks
// on each node (0 where the nodes hold different numbers). From the nodes the placement finds
// (COLLKIT_TEST_RPN's too), cached on the communicator: collective over `comm` the first time
// it or node_placement is called on it, and alike on every rank.
void comm_shape(MPI_Comm comm, int& nodes, int& ppn);

}  // namespace collkit::mpi
