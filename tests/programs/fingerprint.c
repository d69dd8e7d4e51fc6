/* Which algorithm did the MPI run? Reductions of doubles are rounded in the order the algorithm
 * adds, so the bits of an allreduce / reduce of values with spread-out exponents identify the
 * reduction order: a fingerprint to compare with the same call under a forced algorithm. Prints
 * one line on rank 0: the collective, the byte count and an FNV-1a hash of the result.
 *   mpiexec -n 4 fingerprint allreduce 4096        (elements per rank; reduce: root 0) */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* coll = argc > 1 ? argv[1] : "allreduce";
  const long n = argc > 2 ? atol(argv[2]) : 4096;
  double* in = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  double* out = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(rank + 1);
  for (long i = 0; i < n; ++i) { /* xorshift: mantissa and exponent vary widely */
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    in[i] = ((double)(x >> 11) / 9007199254740992.0 - 0.5) * (double)(1ull << (x % 40));
    out[i] = 0;
  }
  if (strcmp(coll, "reduce") == 0)
    MPI_Reduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  else
    MPI_Allreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  uint64_t h = 1469598103934665603ull;
  const unsigned char* p = (const unsigned char*)out;
  for (size_t i = 0; i < sizeof(double) * (size_t)n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  if (rank == 0) printf("%s %ld %016llx\n", coll, n * 8, (unsigned long long)h);
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
