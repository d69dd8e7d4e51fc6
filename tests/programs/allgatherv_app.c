/* MPI_Allgatherv of MPI_CHAR at the count vectors given, one call each: allgatherv_app OUT
 * "3,0" "16,9" ... (P entries each). Rank r sends counts[r] bytes (r * 31 + i) % 251; each rank
 * writes what it received, one line per call, to OUT.<rank>. Packed displacements. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, P = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  if (argc < 3) {
    if (rank == 0) fprintf(stderr, "usage: allgatherv_app OUT COUNTS...\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char path[4096];
  snprintf(path, sizeof path, "%s.%d", argv[1], rank);
  FILE* out = fopen(path, "w");
  if (out == NULL) MPI_Abort(MPI_COMM_WORLD, 3);
  int* counts = calloc((size_t)P, sizeof(int));
  int* displs = calloc((size_t)P, sizeof(int));
  for (int a = 2; a < argc; ++a) {
    char* text = strdup(argv[a]);
    int n = 0, total = 0;
    for (char* tok = strtok(text, ","); tok != NULL && n < P; tok = strtok(NULL, ","))
      counts[n++] = atoi(tok);
    free(text);
    if (n != P) MPI_Abort(MPI_COMM_WORLD, 4);
    for (int b = 0; b < P; ++b) {
      displs[b] = total;
      total += counts[b];
    }
    unsigned char* send = malloc((size_t)counts[rank] + 1);
    unsigned char* recv = malloc((size_t)total + 1);
    for (int i = 0; i < counts[rank]; ++i) send[i] = (unsigned char)((rank * 31 + i) % 251);
    memset(recv, 0xEE, (size_t)total + 1);
    MPI_Allgatherv(send, counts[rank], MPI_CHAR, recv, counts, displs, MPI_CHAR, MPI_COMM_WORLD);
    for (int i = 0; i < total; ++i) fprintf(out, "%d ", recv[i]);
    fprintf(out, "\n");
    free(send);
    free(recv);
  }
  fclose(out);
  free(counts);
  free(displs);
  MPI_Finalize();
  return 0;
}
