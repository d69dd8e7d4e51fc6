/* MPI_Allreduce of 2 ints `n8` times, then of 4 ints `n16` times, on MPI_COMM_WORLD; each rank
 * writes every result to PREFIX.<rank>. tests/mpi/test_pmpi_deferral.py runs it under the
 * interposition library to see at which call a communicator's calls move to collkit.
 *   setup_deferral PREFIX n8 n16 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc != 4) {
    if (rank == 0) fprintf(stderr, "usage: setup_deferral PREFIX n8 n16\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char path[4096];
  snprintf(path, sizeof path, "%s.%d", argv[1], rank);
  FILE* f = fopen(path, "w");
  if (f == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  const int counts[2] = {2, 4}, calls[2] = {atoi(argv[2]), atoi(argv[3])};
  for (int s = 0; s < 2; ++s)
    for (int k = 0; k < calls[s]; ++k) {
      int in[4], out[4] = {0};
      for (int i = 0; i < 4; ++i) in[i] = (rank + 1) * (k + 3 * i + s);
      MPI_Allreduce(in, out, counts[s], MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      for (int i = 0; i < counts[s]; ++i) fprintf(f, "%d ", out[i]);
      fprintf(f, "\n");
    }
  fclose(f);
  MPI_Finalize();
  return 0;
}
