/* Communicators freed and made again under the interposition library, untimed (no COLLKIT_VERBOSE,
 * no COLLKIT_STATS: the library's quick paths): MPI may hand a freed communicator's handle to the
 * next one made, of another size, and every call must take its own communicator's rule.
 *
 * Run at P = 4: each round splits the world in halves (2 ranks each) and calls MPI_Allreduce 3
 * times on the half, frees it, duplicates the world (4 ranks, often under the freed handle) and
 * calls it 3 times there, frees that, and calls it once on MPI_COMM_WORLD; with the argument
 * `dup-first` the duplicate comes first in each round and the half (often under its freed handle)
 * after it. World rank 0 prints "ran R declined D reused N wrong W": the calls collkit's
 * algorithms ran and declined (collkit_pmpi_counts, found in the preloaded library), how often
 * the second communicator of a round came under the first one's freed handle, and how many sums
 * were wrong on any rank.
 *
 *   mpicc -o comm_cache_counts comm_cache_counts.c -ldl
 *   LD_PRELOAD=libcollkit_pmpi.so COLLKIT_TUNING=t.json \
 *       mpiexec -n 4 ./comm_cache_counts [dup-first] */
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
  const int dup_first = argc > 1 && strcmp(argv[1], "dup-first") == 0;
  for (int round = 0; round < ROUNDS; ++round) {
    MPI_Comm freed = MPI_COMM_NULL;
    for (int second = 0; second < 2; ++second) {
      MPI_Comm comm;
      if ((second == 0) == dup_first)
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
      else
        MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, rank, &comm);
      if (second) reused += memcmp(&comm, &freed, sizeof comm) == 0;
      freed = comm;
      for (int k = 0; k < CALLS; ++k) sum(comm);
      MPI_Comm_free(&comm);
    }
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
