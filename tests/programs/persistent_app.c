/* An ordinary MPI 4 program (it knows nothing of collkit) using persistent collectives, as an
 * iterative solver does: MPI_Allreduce_init (and MPI_Bcast_init, MPI_Barrier_init) once, then
 * MPI_Start / MPI_Startall and MPI_Wait / MPI_Waitall / MPI_Testany loops with new data every
 * iteration, beside point-to-point messages and an MPI_Iallreduce; a handle freed and made again
 * half way; MPI_Request_free at the end. Each rank writes one line per result with a hash, so a
 * run under libcollkit_pmpi.so can be compared line by line with a run without it. Values are
 * small integers (exact in doubles), so every correct reduction order gives the same bits.
 *   mpiexec -n 3 persistent_app OUT      (rank r writes OUT.r) */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t hash(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ ((const unsigned char*)p)[i]) * 1099511628211ull;
  return h;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char path[4096];
  snprintf(path, sizeof path, "%s.%d", argc > 1 ? argv[1] : "persistent_app", rank);
  FILE* out = fopen(path, "w");
  if (out == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  const int counts[] = {1, 7, 1000, 40000};
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; ++k) {
    const int n = counts[k];
    double* x = malloc(sizeof(double) * (size_t)n);
    double* y = malloc(sizeof(double) * (size_t)n);
    int* b = malloc(sizeof(int) * (size_t)n);
    MPI_Request reqs[3];
    MPI_Allreduce_init(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[0]);
    MPI_Bcast_init(b, n, MPI_INT, size - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[1]);
    MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[2]);
    for (int it = 0; it < 6; ++it) {
      for (int i = 0; i < n; ++i) {
        x[i] = (double)((i * 7 + rank * 3 + it) % 11);
        y[i] = -1;
        b[i] = rank == size - 1 ? i * 13 + it : -1;
      }
      int rc;
      if (it % 2 == 0) {
        rc = MPI_Startall(3, reqs);
      } else {
        rc = MPI_Start(&reqs[0]);
        if (rc == MPI_SUCCESS) rc = MPI_Start(&reqs[1]);
        if (rc == MPI_SUCCESS) rc = MPI_Start(&reqs[2]);
      }
      /* Work beside them: a message ring and a non-blocking allreduce. */
      int sent = rank * 100 + it, got = -1, mine = rank + it, sum = -1;
      MPI_Request more[3];
      MPI_Irecv(&got, 1, MPI_INT, (rank + size - 1) % size, 9, MPI_COMM_WORLD, &more[0]);
      MPI_Isend(&sent, 1, MPI_INT, (rank + 1) % size, 9, MPI_COMM_WORLD, &more[1]);
      MPI_Iallreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &more[2]);
      double s = 0;
      for (int i = 0; i < 20000; ++i) s += (double)(i % 7);
      if (it % 3 == 0) {
        if (rc == MPI_SUCCESS) rc = MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE);
      } else if (it % 3 == 1) {
        for (int i = 0; i < 3 && rc == MPI_SUCCESS; ++i) rc = MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
      } else { /* not MPI_Testall: MPICH 5.0.2's fails on its own active persistent requests */
        int left = 3, flag = 0, index = 0;
        while (rc == MPI_SUCCESS && left > 0) {
          rc = MPI_Testany(3, reqs, &index, &flag, MPI_STATUS_IGNORE);
          if (flag && index == MPI_UNDEFINED) break;
          if (flag) --left;
        }
      }
      MPI_Waitall(3, more, MPI_STATUSES_IGNORE);
      fprintf(out, "rank %d n=%d it=%d rc=%d allreduce %016llx bcast %016llx ring %d sum %d %g\n",
              rank, n, it, rc, (unsigned long long)hash(y, sizeof(double) * (size_t)n),
              (unsigned long long)hash(b, sizeof(int) * (size_t)n), got, sum, s);
      if (it == 2) { /* a handle freed and made again */
        MPI_Request_free(&reqs[0]);
        MPI_Allreduce_init(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                           &reqs[0]);
      }
    }
    for (int i = 0; i < 3; ++i) MPI_Request_free(&reqs[i]);
    fprintf(out, "rank %d n=%d freed %d\n", rank, n,
            reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL &&
                reqs[2] == MPI_REQUEST_NULL);
    free(x);
    free(y);
    free(b);
  }
  fclose(out);
  MPI_Finalize();
  return 0;
}
