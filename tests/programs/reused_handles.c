/* Communicators and ops freed and made again, so that MPI may hand out a freed handle again, with
 * another size or commutativity behind it: libcollkit_pmpi.so remembers its decisions per call,
 * and must never apply a decision made for the freed object to the new one.
 *
 * Run at P = 4: each round splits the world in halves (2 ranks each), calls MPI_Allreduce on the
 * half, frees it, duplicates the world (4 ranks, often under the freed handle), calls
 * MPI_Allreduce on it and frees it; then a commutative user op and a non-commutative one, made in
 * turn (often under one handle), reduce on the world. Each rank writes its results to PREFIX.<rank>;
 * world rank 0 prints how often a handle came back ("reused comm N op M") on stdout.
 *
 *   mpicc -O1 -o reused_handles reused_handles.c && mpiexec -n 4 ./reused_handles out */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

enum { ROUNDS = 40, N = 8 };

/* A 2x2 integer matrix product: not commutative. */
static void matmul(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  int* a = in;
  int* b = inout;
  for (int k = 0; k < *len; ++k, a += 4, b += 4) {
    int c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                a[2] * b[1] + a[3] * b[3]};
    memcpy(b, c, sizeof c);
  }
}

static int same(const void* a, const void* b, size_t n) { return memcmp(a, b, n) == 0; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char path[4096];
  snprintf(path, sizeof path, "%s.%d", argc > 1 ? argv[1] : "reused", rank);
  FILE* out = fopen(path, "w");
  if (out == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  int reused_comm = 0, reused_op = 0;
  for (int round = 0; round < ROUNDS; ++round) {
    int in[N], res[N];
    for (int i = 0; i < N; ++i) in[i] = (rank + 1) * (i + round + 1);
    MPI_Comm half, world;
    MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, rank, &half);
    MPI_Comm freed = half;
    MPI_Allreduce(in, res, N, MPI_INT, MPI_SUM, half);
    for (int i = 0; i < N; ++i) fprintf(out, "%d ", res[i]);
    fprintf(out, "\n");
    MPI_Comm_free(&half);
    MPI_Comm_dup(MPI_COMM_WORLD, &world);
    reused_comm += same(&world, &freed, sizeof world);
    MPI_Allreduce(in, res, N, MPI_INT, MPI_SUM, world);
    for (int i = 0; i < N; ++i) fprintf(out, "%d ", res[i]);
    fprintf(out, "\n");
    MPI_Comm_free(&world);

    /* One 2x2 matrix a rank, reduced with a commutative op and then a non-commutative one. */
    int m[4] = {1, rank + round, 0, 1}, r[4]; /* unipotent: these commute after all */
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_INT, &mat);
    MPI_Type_commit(&mat);
    MPI_Op op;
    MPI_Op_create(matmul, 1, &op);
    MPI_Op first = op;
    MPI_Allreduce(m, r, 1, mat, op, MPI_COMM_WORLD);
    MPI_Op_free(&op);
    MPI_Op_create(matmul, 0, &op);
    reused_op += same(&op, &first, sizeof op);
    MPI_Allreduce(m, r, 1, mat, op, MPI_COMM_WORLD);
    fprintf(out, "%d %d %d %d\n", r[0], r[1], r[2], r[3]);
    MPI_Op_free(&op);
    MPI_Type_free(&mat);
  }
  fclose(out);
  if (rank == 0) printf("reused comm %d op %d\n", reused_comm, reused_op);
  MPI_Finalize();
  return 0;
}
