/* An ordinary MPI program that knows nothing of collkit: MPI_Allreduce of doubles at sizes 8 B ..
 * 32 KiB, 1000 timed calls each after 200 untimed ones (OSU's counts for small messages: a
 * library's one-time setup, MPICH's or collkit's, is not a call's time). Rank 0 prints, per
 * size, a hash of the result (small integers, so any correct reduction order gives the same
 * bits) and the mean time per call. `collkit tour` runs it with and without libcollkit_pmpi.so:
 *   mpicc plain_allreduce.c -o plain_allreduce && mpiexec -n 2 ./plain_allreduce
 *   collkit run -np 2 --tuning collkit-tuning.json --verbose -- ./plain_allreduce */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int n = 1; n <= 8192; n *= 4) {
    double* in = malloc(sizeof(double) * (size_t)n);
    double* out = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; ++i) in[i] = (double)((i * 7 + rank * 3) % 11);
    for (int k = 0; k < 200; ++k) MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int k = 0; k < 1000; ++k) MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    const double us = (MPI_Wtime() - t0) / 1000 * 1e6;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof(double) * (size_t)n; ++i)
      h = (h ^ ((const unsigned char*)out)[i]) * 1099511628211ull;
    if (rank == 0)
      printf("%8zu B  result %016llx  %10.2f us per call\n", sizeof(double) * (size_t)n,
             (unsigned long long)h, us);
    free(in);
    free(out);
  }
  MPI_Finalize();
  return 0;
}
