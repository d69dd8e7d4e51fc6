/* Communicators freed and made again under the interposition library, untimed (no COLLKIT_VERBOSE,
 * no COLLKIT_STATS: the library's quick paths): MPI may hand a freed communicator's handle to the
 * next one made, of another size, and every call must take its own communicator's rule.
 *
 * Run at P = 4: each round splits the world in halves (2 ranks each) and calls MPI_Allreduce 3
 * times on the half, frees it, duplicates the world (4 ranks, often under the freed handle) and
 * calls it 3 times there, frees that, and calls it once on MPI_COMM_WORLD. World rank 0 prints
 * "ran R declined D reused N wrong W": the calls collkit's algorithms ran and declined
 * (collkit_pmpi_counts, found in the preloaded library), how often a handle came back, and how
 * many sums were wrong on any rank.
 *
 *   mpicc -o comm_cache_counts comm_cache_counts.c -ldl
 *   LD_PRELOAD=libcollkit_pmpi.so COLLKIT_TUNING=t.json mpiexec -n 4 ./comm_cache_counts */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

enum { ROUNDS = 20, CALLS = 3 };

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
  int rank = 0, size = 0, reused = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int round = 0; round < ROUNDS; ++round) {
    MPI_Comm half, world;
    MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, rank, &half);
    MPI_Comm freed = half;
    for (int k = 0; k < CALLS; ++k) sum(half);
    MPI_Comm_free(&half);
    MPI_Comm_dup(MPI_COMM_WORLD, &world);
    reused += memcmp(&world, &freed, sizeof world) == 0;
    for (int k = 0; k < CALLS; ++k) sum(world);
    MPI_Comm_free(&world);
    sum(MPI_COMM_WORLD);
  }
  int all = 0;
  MPI_Reduce(&wrong, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  long long ran = -1, declined = -1;
  if (counts != NULL) counts(&ran, &declined);
  if (rank == 0) printf("ran %lld declined %lld reused %d wrong %d\n", ran, declined, reused, all);
  MPI_Finalize();
  return 0;
}
