/* An ordinary MPI program that knows nothing of collkit, timed as the OSU micro-benchmarks time
 * collectives: MPI_Allreduce, MPI_Reduce, MPI_Bcast (doubles / bytes, root 0) at 8 B .. 64 KiB
 * and MPI_Barrier, each in a loop of back-to-back calls after a warm-up. Rank 0 prints, per
 * (collective, size), a hash of every rank's result (small integers, so any correct reduction
 * order gives the same bits) and the mean time per call, the largest over the ranks. The hashes
 * and times travel by point-to-point messages, never by a collective the library could route.
 *   mpicc osu_loop.c -o osu_loop && mpiexec -n 2 ./osu_loop [ITERS]
 *   collkit run -np 2 --tuning collkit-tuning.json --verbose -- ./osu_loop */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static uint64_t hash(const void* p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; ++i) h = (h ^ ((const unsigned char*)p)[i]) * 1099511628211ull;
  return h;
}

/* Rank 0 prints the hash of all ranks' results (in rank order) and the slowest rank's mean. */
static void report(const char* coll, size_t bytes, const void* res, size_t n, double us) {
  uint64_t h = hash(res, n, 1469598103934665603ull);
  if (rank != 0) {
    MPI_Send(&h, 1, MPI_UINT64_T, 0, 1, MPI_COMM_WORLD);
    MPI_Send(&us, 1, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD);
    return;
  }
  uint64_t all = hash(&h, sizeof h, 1469598103934665603ull);
  for (int r = 1; r < size; ++r) {
    uint64_t hr;
    double ur;
    MPI_Recv(&hr, 1, MPI_UINT64_T, r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(&ur, 1, MPI_DOUBLE, r, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    all = hash(&hr, sizeof hr, all);
    if (ur > us) us = ur;
  }
  printf("%-9s %8zu B  result %016llx  %10.3f us per call\n", coll, bytes,
         (unsigned long long)all, us);
  fflush(stdout);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long iters = argc > 1 ? atol(argv[1]) : 2000;
  if (iters < 1) {
    if (rank == 0) fprintf(stderr, "osu_loop: ITERS must be >= 1\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int max_n = 8192; /* doubles: 64 KiB */
  double* in = malloc(sizeof(double) * max_n);
  double* out = malloc(sizeof(double) * max_n);
  for (int i = 0; i < max_n; ++i) in[i] = (double)((i * 7 + rank * 3) % 11);
  const char* names[] = {"allreduce", "reduce", "bcast"};
  for (int c = 0; c < 3; ++c) {
    for (int n = 1; n <= max_n; n *= 8) {
      const size_t bytes = sizeof(double) * (size_t)n;
      /* large messages: fewer calls, as OSU does past 8 KiB */
      const long it = bytes > 8192 ? (iters + 3) / 4 : iters;
      memset(out, 0, bytes);
      double t0 = 0;
      for (long k = -it / 10 - 1; k < it; ++k) {
        if (k == 0) {
          MPI_Barrier(MPI_COMM_WORLD);
          t0 = MPI_Wtime();
        }
        if (c == 0) MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (c == 1) MPI_Reduce(in, out, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (c == 2) {
          if (rank == 0) memcpy(out, in, bytes);
          MPI_Bcast(out, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        }
      }
      const double us = (MPI_Wtime() - t0) / (double)it * 1e6;
      /* reduce: only the root has a result */
      report(names[c], bytes, out, c == 1 && rank != 0 ? 0 : bytes, us);
    }
  }
  double t0 = 0;
  for (long k = -iters / 10 - 1; k < iters; ++k) {
    if (k == 0) t0 = MPI_Wtime();
    MPI_Barrier(MPI_COMM_WORLD);
  }
  report("barrier", 0, in, 0, (MPI_Wtime() - t0) / (double)iters * 1e6);
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
