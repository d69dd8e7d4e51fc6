/* A legal program that hangs if a collective's wait never enters the MPI
 * (tests/mpi/test_shm_mpi.py): rank 0 starts a large MPI_Isend to rank 1 and then calls
 * MPI_Allreduce and MPI_Bcast before it waits for the send; rank 1 receives the message first and
 * only then joins the collectives. The receive must complete without rank 0 calling MPI_Wait (MPI's
 * progress rule), so rank 0's collectives must progress the send: MPICH without CMA and Open MPI
 * without single copy move the message's data only from inside an MPI call on the sender. Other
 * ranks only join the collectives.
 *
 *   pending_send BYTES ROUNDS
 * Prints "pending_send ok" on rank 0, or what was wrong and exits 1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = argc > 1 ? atoi(argv[1]) : 1 << 22, rounds = argc > 2 ? atoi(argv[2]) : 5;
  unsigned char* buf = malloc((size_t)n);
  int bad = 0;
  for (int round = 0; round < rounds; ++round) {
    double x = rank + 1 + round, sum = 0;
    int root_value = rank == 0 ? 1000 + round : -1;
    if (rank == 0) {
      for (int i = 0; i < n; ++i) buf[i] = (unsigned char)(i * 7 + round);
      MPI_Request req;
      MPI_Isend(buf, n, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &req);
      MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      MPI_Bcast(&root_value, 1, MPI_INT, 0, MPI_COMM_WORLD);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
      if (rank == 1) {
        MPI_Recv(buf, n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < n; ++i)
          if (buf[i] != (unsigned char)(i * 7 + round)) bad = 1;
      }
      MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      MPI_Bcast(&root_value, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    const double want = size * (size + 1) / 2.0 + (double)size * round;
    if (sum != want || root_value != 1000 + round) bad = 1;
  }
  int any = 0;
  MPI_Reduce(&bad, &any, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) printf(any ? "pending_send wrong\n" : "pending_send ok\n");
  free(buf);
  MPI_Finalize();
  return any;
}
