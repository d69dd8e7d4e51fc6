// How a rank waits for a peer. The MPIs poll without yielding while they wait (Open MPI's and
// MPICH's shared-memory progress), and a rank that yields loses its core to any runnable process,
// a niced one included, for up to a scheduler tick: under background load such waits cost
// five times the MPI's (LAMMPS with two niced CPU hogs; docs/mpi.md). So collkit polls as
// the MPI does while the job's ranks on this node fit its cores, and spins COLLKIT_SPIN_US (20)
// and then yields between polls only when they do not (an oversubscribed run must not starve
// the rank it waits for), or when no launcher said how many ranks share the node. Setting
// COLLKIT_SPIN_US always spins that long, then yields.
#pragma once
#include <chrono>

namespace collkit::mpi {

struct WaitPolicy {
  std::chrono::nanoseconds spin{0};  // poll this long before yielding (max(): never yield)
  int local_ranks = 0;               // the job's ranks on this node (0: no launcher said)
  int cores = 0;                     // the cores this node gives the job
  const char* why = "";              // for COLLKIT_VERBOSE
};

// Read once per process, from the environment and the machine (no communication).
const WaitPolicy& wait_policy();

}  // namespace collkit::mpi
