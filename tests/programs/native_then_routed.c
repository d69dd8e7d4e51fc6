/* A handle the interposition library has sent to the MPI by its key alone, handed to a
 * communicator the table routes: run at P = 4 under a table that routes a 4-byte MPI_Allreduce at
 * P = 2 and leaves it to the MPI at P = 4 (its rule starts at 8 bytes). Each round duplicates the
 * world (4 ranks) and sums one int there, frees it, splits the world in halves (2 ranks each,
 * often under the freed handle) and sums one int on the half, frees it. World rank 0 prints
 * "ran R same S wrong W": the calls collkit's algorithms ran (collkit_pmpi_counts, found in the
 * preloaded library), the rounds whose half came back under the freed handle, and the sums wrong
 * on any rank.
 *
 *   mpicc -O1 -o native_then_routed native_then_routed.c -ldl
 *   LD_PRELOAD=libcollkit_pmpi.so COLLKIT_TUNING=t.json mpiexec -n 4 ./native_then_routed */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

enum { ROUNDS = 20 };

static int wrong = 0;

/* One allreduce of (rank + 1) on `comm`: the sum is P (P + 1) / 2. */
static void sum(MPI_Comm comm) {
  int rank = 0, size = 0, in = 0, out = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  in = rank + 1;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, comm);
  wrong += out != size * (size + 1) / 2;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  typedef void (*Counts)(long long*, long long*);
  Counts counts = (Counts)dlsym(RTLD_DEFAULT, "collkit_pmpi_counts");
  int rank = 0, size = 0, same = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int round = 0; round < ROUNDS; ++round) {
    MPI_Comm world, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &world);
    sum(world);
    MPI_Comm freed = world;
    MPI_Comm_free(&world);
    MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, rank, &half);
    same += memcmp(&half, &freed, sizeof half) == 0;
    sum(half);
    MPI_Comm_free(&half);
  }
  int all = 0;
  MPI_Reduce(&wrong, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  long long ran = -1, declined = -1;
  if (counts != NULL) counts(&ran, &declined);
  if (rank == 0) printf("ran %lld same %d wrong %d\n", ran, same, all);
  MPI_Finalize();
  return 0;
}
