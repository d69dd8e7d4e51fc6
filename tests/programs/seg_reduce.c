/* A large reduce by name through collkit's C API, with a user op (MPI_Op_create) or MPI_SUM,
 * checked against the MPI's own MPI_Reduce, and what the user function was handed.
 *
 *   seg_reduce ALGORITHM BYTES user|sum [CALLS]
 *
 * Each rank reduces BYTES of doubles (integers, so any order of the sums is exact) CALLS times
 * (default 1) to root 0 with ALGORITHM, then once with MPI_Reduce, and compares. World rank 0
 * prints one line:
 *   ok P=<P> bytes=<BYTES> op=<user|sum> calls=<CALLS> fn_calls=<n> fn_elems=<n> fn_max=<n>
 *      us_per_call=<t>
 * fn_*: over every rank's calls of the user function inside collkit's calls (not MPI_Reduce's):
 * how many, the elements handed in all, the most in one call (all 0 for MPI_SUM). A mismatch
 * prints "mismatch" and exits 1; an error from collkit prints it and exits 2.
 *
 *   mpicc -O2 seg_reduce.c -Impi/include -L<dir> -lcollkit_mpi -Wl,-rpath,<dir> */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collkit.h"

static long long fn_calls = 0, fn_elems = 0, fn_max = 0;

static void add(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  const double* a = in;
  double* b = inout;
  for (int k = 0; k < *len; ++k) b[k] += a[k];
  ++fn_calls;
  fn_elems += *len;
  if (*len > fn_max) fn_max = *len;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 4 || (strcmp(argv[3], "user") != 0 && strcmp(argv[3], "sum") != 0)) {
    if (rank == 0) fprintf(stderr, "usage: seg_reduce ALGORITHM BYTES user|sum [CALLS]\n");
    MPI_Finalize();
    return 2;
  }
  const char* algo = argv[1];
  const long long bytes = atoll(argv[2]);
  const int user = strcmp(argv[3], "user") == 0;
  const int calls = argc > 4 ? atoi(argv[4]) : 1;
  const long long n = bytes / (long long)sizeof(double);
  double* in = malloc((size_t)n * sizeof(double) + 8);
  double* out = malloc((size_t)n * sizeof(double) + 8);
  double* ref = malloc((size_t)n * sizeof(double) + 8);
  if (in == NULL || out == NULL || ref == NULL || n <= 0 || calls < 1) MPI_Abort(MPI_COMM_WORLD, 3);
  for (long long i = 0; i < n; ++i) in[i] = (double)((rank + 1) * (i % 1000 + 1));
  MPI_Op op = MPI_SUM;
  if (user) MPI_Op_create(add, 1, &op);

  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int c = 0; c < calls; ++c) {
    const int rc = ck_reduce(in, out, n, MPI_DOUBLE, op, 0, MPI_COMM_WORLD, algo);
    if (rc != MPI_SUCCESS) {
      if (rank == 0) printf("error: %s\n", ck_error_message());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  const double t = (MPI_Wtime() - t0) / calls;
  long long mine[3] = {fn_calls, fn_elems, fn_max}, all[3] = {0, 0, 0};
  MPI_Reduce(mine, all, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(mine + 2, all + 2, 1, MPI_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(in, ref, (int)n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  int bad = 0;
  if (rank == 0) {
    bad = memcmp(out, ref, (size_t)n * sizeof(double)) != 0;
    if (bad)
      printf("mismatch\n");
    else
      printf(
          "ok P=%d bytes=%lld op=%s calls=%d fn_calls=%lld fn_elems=%lld fn_max=%lld "
          "us_per_call=%.1f\n",
          size, bytes, argv[3], calls, all[0], all[1], all[2], t * 1e6);
  }
  MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (user) MPI_Op_free(&op);
  free(in);
  free(out);
  free(ref);
  MPI_Finalize();
  return bad;
}
