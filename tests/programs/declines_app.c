/* An ordinary MPI program for the interposition library's declines and errors (it knows
 * nothing of collkit). Each mode checks its results itself and prints "ok" (rank 0) or what is
 * wrong; exit status 0 only when everything is right.
 *   mpiexec -n P declines_app staged     MPI_Allreduce and MPI_Allgather of ints (a table of
 *                                        staged rm rules whose stages need not divide P)
 *   mpiexec -n P declines_app bigtype    MPI_Allreduce of one contiguous(262145, MPI_INT) element
 *                                        with a user op (an element past the registry's 1 MiB)
 *   mpiexec -n P declines_app return     MPI_Alltoall whose type signatures do not match, under
 *                                        MPI_ERRORS_RETURN: must return an error code
 *   mpiexec -n P declines_app fatal      the same under MPI_ERRORS_ARE_FATAL: must abort
 *   mpiexec -n P declines_app alltoallv  MPI_Alltoallv calls whose ranks 0 and 1 disagree on what
 *                                        0 sends 1 (MPI_ERRORS_RETURN: rank 1 must get an error,
 *                                        the others none), each followed by a correct call whose
 *                                        result is checked: no message of the bad call is left
 *   mpiexec -n P declines_app refusal    MPI_Alltoallv where rank 0 sends rank 1 one block past
 *                                        2^48 bytes (of a 4 GiB type, no memory behind it): only
 *                                        ranks 0 and 1 see it; every rank must get an error (none
 *                                        waits for the others), and the next call is right */
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

/* One MPI_Alltoallv of ints: rank r sends n(r, q) to q, n(r, q) = (r + 2q) % 5 + 1, except
 * that rank 0 sends `sent` to rank 1 and rank 1 expects `expected` from rank 0. Returns the
 * call's code; with sent == expected, checks every received int. */
enum { BIG = 10000 }; /* 40 KB: past the shared-memory slot, on MPI */
static int alltoallv_once(int sent, int expected) {
  static int in[64 * BIG], outv[64 * BIG];
  int sc[64], sd[64], rcounts[64], rd[64], at = 0;
  for (int q = 0; q < size; ++q) {
    sc[q] = rank == 0 && q == 1 ? sent : (rank + 2 * q) % 5 + 1;
    sd[q] = at;
    for (int i = 0; i < sc[q]; ++i) in[at + i] = 1000 * rank + 10 * q + i;
    at += sc[q];
  }
  at = 0;
  for (int x = 0; x < size; ++x) {
    rcounts[x] = rank == 1 && x == 0 ? expected : (x + 2 * rank) % 5 + 1;
    rd[x] = at;
    at += rcounts[x];
  }
  for (int i = 0; i < at; ++i) outv[i] = -1;
  const int rc = MPI_Alltoallv(in, sc, sd, MPI_INT, outv, rcounts, rd, MPI_INT, MPI_COMM_WORLD);
  if (rc == MPI_SUCCESS && sent == expected)
    for (int x = 0; x < size; ++x)
      for (int i = 0; i < rcounts[x]; ++i)
        expect(outv[rd[x] + i] == 1000 * x + 10 * rank + i, "data");
  return rc;
}

static void alltoallv_mismatches(void) {
  static const int cases[][2] = {{2, 3}, {0, 2}, {2, 0}, {BIG, 3}, {3, BIG}, {BIG, BIG - 1}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    const int rc = alltoallv_once(cases[k][0], cases[k][1]);
    char what[96];
    snprintf(what, sizeof what, "the code of a call where 0 sends 1 %d ints and 1 expects %d",
             cases[k][0], cases[k][1]);
    expect(rank == 1 ? rc != MPI_SUCCESS : rc == MPI_SUCCESS, what);
    if (rank == 1 && rc != MPI_SUCCESS) {
      char s[MPI_MAX_ERROR_STRING];
      int len = 0;
      MPI_Error_string(rc, s, &len);
      printf("rank 1 returned: %.*s\n", len, s);
      fflush(stdout);
    }
    expect(alltoallv_once(4, 4) == MPI_SUCCESS, "the correct call after a bad one");
    expect(alltoallv_once(BIG, BIG) == MPI_SUCCESS, "the correct call of 40 KB after a bad one");
  }
}

static void alltoallv_refusal(void) {
  MPI_Datatype huge; /* 2^30 ints: 4 GiB; 2^16 + 1 of them are past 2^48 bytes */
  MPI_Type_contiguous(1 << 30, MPI_INT, &huge);
  MPI_Type_commit(&huge);
  int in[64], outv[64], sc[64], sd[64], rcounts[64], rd[64];
  for (int q = 0; q < size; ++q) {
    in[q] = rank;
    outv[q] = -1;
    sd[q] = rd[q] = q;
    sc[q] = rank == 0 ? (q == 1 ? (1 << 16) + 1 : 0) : (q == 1 ? 0 : 1);
    rcounts[q] = rank == 1 ? (q == 0 ? (1 << 16) + 1 : 0) : (q == 1 ? 0 : 1);
  }
  const int rc = MPI_Alltoallv(in, sc, sd, rank == 0 ? huge : MPI_INT, outv, rcounts, rd,
                               rank == 1 ? huge : MPI_INT, MPI_COMM_WORLD);
  expect(rc != MPI_SUCCESS, "an alltoallv with a block past 2^48 bytes returned success");
  if (rc != MPI_SUCCESS) {
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, s, &len);
    printf("rank %d returned: %.*s\n", rank, len, s);
    fflush(stdout);
  }
  MPI_Type_free(&huge);
  expect(alltoallv_once(4, 4) == MPI_SUCCESS, "the correct call after a refused one");
  expect(alltoallv_once(BIG, BIG) == MPI_SUCCESS, "the correct call of 40 KB after a refused one");
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
  } else if (strcmp(mode, "alltoallv") == 0) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    alltoallv_mismatches();
  } else if (strcmp(mode, "refusal") == 0) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    alltoallv_refusal();
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
