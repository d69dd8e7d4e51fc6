/* Open MPI 4.1.4's own MPI_Allgatherv never completes here (Debian's openmpi-bin, coll/tuned's
 * default decision), though the call is correct: at P = 3 every rank sends 12 ints and receives
 * 12 MPI_INTs from each rank at packed displacements, rank 1 describing its 12 ints as 2 elements
 * of contiguous(6, MPI_INT), the others as 12 MPI_INTs (one type signature, two datatypes, as
 * the standard allows). With 6 ints a rank, or every rank sending MPI_INT, it completes, and so
 * does each of coll/tuned's algorithms forced (coll_tuned_allgatherv_algorithm 1-4). MPICH
 * completes it. Prints "done" on rank 0 when the call returns.
 *   mpicc.openmpi -o hang openmpi_allgatherv_hang.c
 *   timeout 20 mpirun.openmpi --allow-run-as-root --oversubscribe -np 3 ./hang */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, P = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  int send[12], recv[12 * 16], counts[16], displs[16];
  for (int i = 0; i < 12; ++i) send[i] = rank * 100 + i;
  for (int r = 0; r < P && r < 16; ++r) {
    counts[r] = 12;
    displs[r] = 12 * r;
  }
  MPI_Datatype six = MPI_DATATYPE_NULL;
  MPI_Type_contiguous(6, MPI_INT, &six);
  MPI_Type_commit(&six);
  if (rank == 1)
    MPI_Allgatherv(send, 2, six, recv, counts, displs, MPI_INT, MPI_COMM_WORLD);
  else
    MPI_Allgatherv(send, 12, MPI_INT, recv, counts, displs, MPI_INT, MPI_COMM_WORLD);
  if (rank == 0) printf("done\n");
  MPI_Type_free(&six);
  MPI_Finalize();
  return 0;
}
