/* Where the ranks are, and where collkit found them: each rank's host name (gethostname, so the
 * UTS namespace of an emulated node), gathered to rank 0 and printed as "host RANK NAME", then an
 * allreduce by name through collkit.h (default allreduce:hier, which reads the placement with
 * MPI_Comm_split_type; COLLKIT_VERBOSE=1 makes collkit print what it found). Prints "ok P=.." or
 * "WRONG" on rank 0.
 *   mpiexec -n 4 where [ALGORITHM] */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "collkit.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const char* name = argc > 1 ? argv[1] : "allreduce:hier";
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char host[64];
  memset(host, 0, sizeof host);
  gethostname(host, sizeof host - 1);
  char all[64 * 256];
  if (size > 256) MPI_Abort(MPI_COMM_WORLD, 2);
  MPI_Gather(host, 64, MPI_CHAR, all, 64, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank == 0)
    for (int r = 0; r < size; ++r) printf("host %d %s\n", r, all + 64 * r);
  fflush(stdout);
  double mine[5], sum[5];
  for (int i = 0; i < 5; ++i) mine[i] = rank * 5 + i;
  int rc = ck_allreduce(mine, sum, 5, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, name);
  int ok = rc == MPI_SUCCESS, every = 0;
  for (int i = 0; ok && i < 5; ++i) ok = sum[i] == 5.0 * size * (size - 1) / 2 + (double)i * size;
  MPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0) printf("%s P=%d %s\n", every ? "ok" : "WRONG", size, name);
  MPI_Finalize();
  return every ? 0 : 1;
}
