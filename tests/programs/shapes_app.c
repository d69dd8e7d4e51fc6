/* An ordinary MPI program for communicators of different shapes at one size: MPI_Allreduce of 8
 * doubles on MPI_COMM_WORLD, on the pairs {0,1}, {2,3}, ... (split by rank / 2) and on the
 * pairs {0,2}, {1,3} (split by rank % 2, with 4 ranks). With 4 ranks filled in turn on 2 nodes,
 * the first pairs lie on one node each (1 node x 2 ranks) and the second across both (2 nodes x
 * 1 rank). Each result is checked against the sum it must be; a wrong one ends the run with 1.
 *   mpiexec -n 4 shapes_app */
#include <mpi.h>
#include <stdio.h>

static int check(MPI_Comm comm, const char* name) {
  int r, p;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &p);
  double in[8], out[8];
  for (int i = 0; i < 8; ++i) in[i] = (double)(r + i);
  int bad = 0;
  for (int rep = 0; rep < 3; ++rep) {
    if (MPI_Allreduce(in, out, 8, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS) bad = 1;
    for (int i = 0; i < 8; ++i)
      if (out[i] != (double)(p * (p - 1) / 2 + p * i)) bad = 1;
  }
  if (bad) fprintf(stderr, "shapes_app: wrong allreduce on %s\n", name);
  return bad;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size, bad = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  bad |= check(MPI_COMM_WORLD, "world");
  MPI_Comm pair, across;
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
  bad |= check(pair, "rank / 2");
  MPI_Comm_free(&pair);
  if (size == 4) {
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &across);
    bad |= check(across, "rank % 2");
    MPI_Comm_free(&across);
  }
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && !any) printf("shapes_app: all results right\n");
  MPI_Finalize();
  return any;
}
