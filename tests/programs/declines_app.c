/* An ordinary MPI program for the interposition library's declines and errors (it knows
 * nothing of collkit). Each mode checks its results itself and prints "ok" (rank 0) or what is
 * wrong; exit status 0 only when everything is right.
 *   mpiexec -n P declines_app staged     MPI_Allreduce and MPI_Allgather of ints (a table of
 *                                        staged rm rules whose stages need not divide P)
 *   mpiexec -n P declines_app bigtype    MPI_Allreduce of one contiguous(262145, MPI_INT) element
 *                                        with a user op (an element past the registry's 1 MiB)
 *   mpiexec -n P declines_app return     MPI_Alltoall whose type signatures do not match, under
 *                                        MPI_ERRORS_RETURN: must return an error code
 *   mpiexec -n P declines_app fatal      the same under MPI_ERRORS_ARE_FATAL: must abort */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, bad;

static void expect(int ok, const char* what) {
  if (!ok && bad++ < 5) fprintf(stderr, "rank %d: WRONG %s\n", rank, what);
}

static void int_sum(void* in, void* inout, int* len, MPI_Datatype* t) {
  int n = 0;
  MPI_Type_size(*t, &n);
  n = n / (int)sizeof(int) * *len;
  for (int i = 0; i < n; ++i) ((int*)inout)[i] += ((const int*)in)[i];
}

static void staged(void) {
  enum { N = 10 };
  int in[N], outv[N], all[64];
  for (int i = 0; i < N; ++i) in[i] = rank * 100 + i;
  int rc = MPI_Allreduce(in, outv, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  expect(rc == MPI_SUCCESS, "MPI_Allreduce returned an error");
  for (int i = 0; i < N; ++i) expect(outv[i] == 100 * size * (size - 1) / 2 + size * i, "sum");
  rc = MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
  expect(rc == MPI_SUCCESS, "MPI_Allgather returned an error");
  for (int r = 0; r < size; ++r) expect(all[r] == r, "allgather");
}

static void bigtype(void) {
  const int n = 262145; /* 1 MiB + 4 bytes */
  MPI_Datatype big;
  MPI_Op op;
  MPI_Type_contiguous(n, MPI_INT, &big);
  MPI_Type_commit(&big);
  MPI_Op_create(int_sum, 1, &op);
  int* in = malloc(sizeof(int) * n);
  int* outv = malloc(sizeof(int) * n);
  for (int i = 0; i < n; ++i) in[i] = rank + i % 7, outv[i] = -1;
  int rc = MPI_Allreduce(in, outv, 1, big, op, MPI_COMM_WORLD);
  expect(rc == MPI_SUCCESS, "MPI_Allreduce returned an error");
  for (int i = 0; i < n; ++i) expect(outv[i] == size * (size - 1) / 2 + size * (i % 7), "sum");
  free(in);
  free(outv);
  MPI_Op_free(&op);
  MPI_Type_free(&big);
}

/* sendcount x sendtype (2 ints per rank) differs from recvcount x recvtype (1 int per rank):
 * an erroneous call, seen alike on every rank before any communication. */
static int mismatch(void) {
  int in[128], outv[64];
  memset(in, 0, sizeof in);
  return MPI_Alltoall(in, 2, MPI_INT, outv, 1, MPI_INT, MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* mode = argc > 1 ? argv[1] : "";
  if (size > 64) {
    bad = 1;
  } else if (strcmp(mode, "staged") == 0) {
    staged();
  } else if (strcmp(mode, "bigtype") == 0) {
    bigtype();
  } else if (strcmp(mode, "return") == 0) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int rc = mismatch();
    expect(rc != MPI_SUCCESS, "MPI_Alltoall with mismatched type signatures returned success");
    if (rc != MPI_SUCCESS && rank == 0) {
      char s[MPI_MAX_ERROR_STRING];
      int len = 0;
      MPI_Error_string(rc, s, &len);
      printf("returned: %.*s\n", len, s);
    }
  } else if (strcmp(mode, "fatal") == 0) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    mismatch();
    printf("rank %d: survived an error under MPI_ERRORS_ARE_FATAL\n", rank);
    fflush(stdout);
  } else {
    bad = 1;
  }
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && !any) printf("ok\n");
  MPI_Finalize();
  return any ? 1 : 0;
}
