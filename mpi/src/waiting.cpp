// How a rank waits for a peer (waiting.hpp): poll as the MPIs do while the job's ranks on this
// node fit its cores, yield only when they do not.
#include "waiting.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "env.hpp"

namespace collkit::mpi {
namespace {

// The job's ranks on this node, from what the launchers set for every rank (no communication:
// the policy is needed inside a call, on any communicator); 0 when no launcher said.
int local_ranks() {
  // Open MPI's mpirun, MPICH's Hydra (and Intel MPI's), PMI-1 launchers, Cray's PALS.
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE", "PALS_LOCAL_SIZE"}) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (end != v && *end == '\0' && n > 0 && n < 1'000'000) return static_cast<int>(n);
  }
  // Slurm's srun: "2(x3),1" is 2 tasks on each of 3 nodes and 1 on the fourth: the most on a node.
  if (const char* v = std::getenv("SLURM_STEP_TASKS_PER_NODE"); v != nullptr) {
    long most = 0;
    for (const char* p = v; *p != '\0';) {
      char* end = nullptr;
      const long n = std::strtol(p, &end, 10);
      if (end == p) return 0;
      most = std::max(most, n);
      p = end;
      if (*p == '(') p = std::strchr(p, ')') != nullptr ? std::strchr(p, ')') + 1 : p + 1;
      if (*p == ',') ++p;
    }
    if (most > 0 && most < 1'000'000) return static_cast<int>(most);
  }
  return 0;
}

// The cores this node gives the job: the online CPUs, fewer under a cgroup quota (cpu.max, as a
// container's CPU limit is set), fewer again when this process is confined to a set of several
// CPUs (taskset, a cpuset: the job's ranks share it). A mask of one CPU is not counted: it is how
// an MPI binds each rank to a core of its own (Open MPI at P <= 2 does), not a shared limit.
int cores() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (std::FILE* f = std::fopen("/sys/fs/cgroup/cpu.max", "r"); f != nullptr) {
    char quota[32] = {0};
    long period = 0;
    if (std::fscanf(f, "%31s %ld", quota, &period) == 2 && std::strcmp(quota, "max") != 0 &&
        period > 0) {
      const long q = std::strtol(quota, nullptr, 10);
      if (q > 0) n = std::min(n, std::max(1L, (q + period - 1) / period));
    }
    std::fclose(f);
  }
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) {
    const int m = CPU_COUNT(&mask);
    if (m > 1) n = std::min<long>(n, m);
  }
  return static_cast<int>(n);
}

WaitPolicy decide() {
  WaitPolicy p;
  p.local_ranks = local_ranks();
  p.cores = cores();
  const char* spin = std::getenv("COLLKIT_SPIN_US");
  const int64_t us = env_int("COLLKIT_SPIN_US", 20, 0, 10'000'000, "a number of microseconds");
  if (spin != nullptr && *spin != '\0') {
    p.spin = std::chrono::microseconds(us);
    p.why = "COLLKIT_SPIN_US is set: spin that long, then yield";
  } else if (p.local_ranks == 0) {
    p.spin = std::chrono::microseconds(us);
    p.why = "the ranks on this node are unknown (no launcher said): yield, as if oversubscribed";
  } else if (p.local_ranks <= p.cores) {
    p.spin = std::chrono::nanoseconds::max();
    p.why = "the job's ranks on this node fit its cores: poll, as the MPI does";
  } else {
    p.spin = std::chrono::microseconds(us);
    p.why = "more ranks on this node than cores: yield after the spin";
  }
  return p;
}

}  // namespace

const WaitPolicy& wait_policy() {
  static const WaitPolicy policy = decide();
  return policy;
}

}  // namespace collkit::mpi
