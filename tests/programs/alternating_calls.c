/* Calls that differ from the one before, under the interposition library, untimed (its quick
 * paths): broadcasts from every root in turn, each of 8 bytes (a size the test's table leaves to
 * the MPI) or 64 bytes (a size it routes to collkit), drawn from the same sequence on every rank,
 * so that few calls repeat the one before and the remembered decisions (fewer than the calls that
 * differ) must answer each call with its own.
 *
 * World rank 0 prints "ran R declined D wrong W expected E": the calls collkit's algorithms ran
 * and declined (collkit_pmpi_counts, found in the preloaded library), how many broadcasts left a
 * wrong value on any rank, and how many were of the routed size.
 *
 *   mpicc -o alternating_calls alternating_calls.c -ldl
 *   LD_PRELOAD=libcollkit_pmpi.so COLLKIT_TUNING=t.json mpiexec -n 4 ./alternating_calls */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>

enum { CALLS = 400 };

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  typedef void (*Counts)(long long*, long long*);
  Counts counts = (Counts)dlsym(RTLD_DEFAULT, "collkit_pmpi_counts");
  int rank = 0, size = 0, wrong = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  unsigned draw = 12345;
  long long expected = 0;
  for (int k = 0; k < CALLS; ++k) {
    draw = draw * 1103515245u + 12345u;
    const int n = (draw >> 16) % 3 == 0 ? 8 : 1; /* a third of the calls routed */
    const int root = k % size;
    expected += n == 8;
    double v[8];
    for (int i = 0; i < n; ++i) v[i] = rank == root ? k * 10.0 + i : -1.0;
    MPI_Bcast(v, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
    for (int i = 0; i < n; ++i) wrong += v[i] != k * 10.0 + i;
  }
  int all = 0;
  MPI_Reduce(&wrong, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  long long ran = -1, declined = -1;
  if (counts != NULL) counts(&ran, &declined);
  if (rank == 0)
    printf("ran %lld declined %lld wrong %d expected %lld\n", ran, declined, all, expected);
  MPI_Finalize();
  return 0;
}
