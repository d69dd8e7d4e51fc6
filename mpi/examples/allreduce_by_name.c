/* A C program calling collkit's algorithms by name through collkit.h.
 *
 *   mpicc allreduce_by_name.c -I<collkit>/mpi/include -L<dir> -lcollkit_mpi -Wl,-rpath,<dir>
 *   mpiexec -n 4 ./a.out allreduce:rd
 *
 * Each rank contributes rank + 1; every rank must end with P (P + 1) / 2. Prints "ok P=.." on
 * rank 0, or the error collkit returned.
 */
#include <stdio.h>

#include "collkit.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const char* name = argc > 1 ? argv[1] : "allreduce:rd";
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long long mine[3] = {rank + 1, 2 * (rank + 1), -(rank + 1)}, sum[3] = {0, 0, 0};
  int rc = ck_allreduce(mine, sum, 3, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, name);
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    if (rank == 0) printf("error: %s\n", msg);
    MPI_Finalize();
    return 1;
  }
  const long long want = (long long)size * (size + 1) / 2;
  int ok = sum[0] == want && sum[1] == 2 * want && sum[2] == -want, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0) printf("%s P=%d sum=%lld\n", all ? "ok" : "WRONG", size, sum[0]);
  MPI_Finalize();
  return all ? 0 : 1;
}
