/* The irregular collectives routed by P alone (gatherv, scatterv, alltoallv) on MPI_COMM_WORLD,
 * each call at a count vector whose total only the vector shows: rank r's block of a gatherv
 * (root 0) is r + 1 ints, of a scatterv (root P - 1) 2 (r + 1) ints, and an alltoallv's rank r
 * sends r + q + 1 ints to rank q. MPI_Gatherv, MPI_Igatherv (the root in place), MPI_Scatterv
 * and MPI_Alltoallv, `rounds` times each (default 3); every result is checked against what it
 * must be, and rank 0 prints "ok" (exit status 1 on a wrong result).
 *   mpiexec -n P irregular_stats [rounds] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int bad = 0;

static void expect(int got, int want) {
  if (got != want) bad = 1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, P = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  const int rounds = argc > 1 ? atoi(argv[1]) : 3;
  int* counts = malloc(sizeof(int) * (size_t)P);
  int* displs = malloc(sizeof(int) * (size_t)P);
  int* rcounts = malloc(sizeof(int) * (size_t)P);
  int* rdispls = malloc(sizeof(int) * (size_t)P);
  const size_t room = (size_t)(4 * P * P + 4);
  int* in = malloc(sizeof(int) * room);
  int* out = malloc(sizeof(int) * room);
  for (int round = 0; round < rounds; ++round) {
    /* gatherv, root 0, then the non-blocking form with the root in place */
    for (int in_place = 0; in_place < 2; ++in_place) {
      int at = 0;
      for (int r = 0; r < P; ++r) {
        counts[r] = r + 1;
        displs[r] = at;
        at += r + 1;
      }
      for (int i = 0; i <= rank; ++i) in[i] = rank * 1000 + i + round;
      for (size_t i = 0; i < room; ++i) out[i] = -1;
      if (rank == 0 && in_place) out[0] = in[0];
      const void* send = rank == 0 && in_place ? MPI_IN_PLACE : (const void*)in;
      if (in_place) {
        MPI_Request req;
        MPI_Igatherv(send, rank + 1, MPI_INT, out, counts, displs, MPI_INT, 0, MPI_COMM_WORLD,
                     &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
      } else {
        MPI_Gatherv(send, rank + 1, MPI_INT, out, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
      }
      if (rank == 0)
        for (int r = 0; r < P; ++r)
          for (int i = 0; i <= r; ++i) expect(out[displs[r] + i], r * 1000 + i + round);
    }
    /* scatterv, root P - 1 */
    int at = 0;
    for (int r = 0; r < P; ++r) {
      counts[r] = 2 * (r + 1);
      displs[r] = at;
      at += 2 * (r + 1);
    }
    for (int i = 0; i < at; ++i) in[i] = i + round;
    MPI_Scatterv(in, counts, displs, MPI_INT, out, 2 * (rank + 1), MPI_INT, P - 1, MPI_COMM_WORLD);
    for (int i = 0; i < 2 * (rank + 1); ++i) expect(out[i], displs[rank] + i + round);
    /* alltoallv: rank r sends r + q + 1 ints to rank q */
    int sat = 0, rat = 0;
    for (int q = 0; q < P; ++q) {
      counts[q] = rank + q + 1;
      displs[q] = sat;
      sat += rank + q + 1;
      rcounts[q] = q + rank + 1;
      rdispls[q] = rat;
      rat += q + rank + 1;
    }
    for (int i = 0; i < sat; ++i) in[i] = rank * 1000 + i + round;
    MPI_Alltoallv(in, counts, displs, MPI_INT, out, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD);
    for (int q = 0; q < P; ++q) {
      int from = 0; /* where rank q's block for this rank starts in q's send buffer */
      for (int k = 0; k < rank; ++k) from += q + k + 1;
      for (int i = 0; i < rcounts[q]; ++i) expect(out[rdispls[q] + i], q * 1000 + from + i + round);
    }
  }
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) printf(any ? "WRONG\n" : "ok\n");
  free(counts);
  free(displs);
  free(rcounts);
  free(rdispls);
  free(in);
  free(out);
  MPI_Finalize();
  return any;
}
