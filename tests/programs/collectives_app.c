/* An ordinary MPI program (it knows nothing of collkit): every collective the interposition
 * library routes, on MPI_COMM_WORLD, a split communicator and an intercommunicator, with
 * MPI_IN_PLACE, a derived datatype, a non-commutative user op and several sizes. Each rank prints
 * one line per call with a hash of its result, so a run under libcollkit_pmpi.so can be compared
 * line by line with a run without it. Values are small integers (exact in doubles too), so every
 * correct reduction order gives the same bits.
 *   mpiexec -n 4 collectives_app [OUT]      (rank r writes OUT.r; default stdout) */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static FILE* out;

static uint64_t hash(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ ((const unsigned char*)p)[i]) * 1099511628211ull;
  return h;
}

static void report(const char* what, int rc, const void* p, size_t n) {
  fprintf(out, "rank %d %-34s rc=%d %016llx\n", rank, what, rc, (unsigned long long)hash(p, n));
}

/* 2x2 matrix product on ints: associative, not commutative. */
static void matmul(void* in, void* inout, int* len, MPI_Datatype* t) {
  (void)t;
  int* a = in;
  int* b = inout;
  for (int i = 0; i < *len; ++i, a += 4, b += 4) {
    int c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                a[2] * b[1] + a[3] * b[3]};
    memcpy(b, c, sizeof c);
  }
}

static void collectives(MPI_Comm comm, const char* name) {
  int r, p;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &p);
  char what[64];
  const int counts[] = {0, 1, 7, 1000, 40000};
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; ++k) {
    const int n = counts[k];
    double* d = malloc(sizeof(double) * (size_t)(n + 1) * (size_t)p);
    double* e = malloc(sizeof(double) * (size_t)(n + 1) * (size_t)p);
    for (int i = 0; i < n * p; ++i) d[i] = (double)((i * 7 + r * 3) % 11), e[i] = -1;
    int rc = MPI_Allreduce(d, e, n, MPI_DOUBLE, MPI_SUM, comm);
    snprintf(what, sizeof what, "%s allreduce n=%d", name, n);
    report(what, rc, e, sizeof(double) * (size_t)n);
    rc = MPI_Allreduce(MPI_IN_PLACE, d, n, MPI_DOUBLE, MPI_MAX, comm);
    snprintf(what, sizeof what, "%s allreduce in-place max n=%d", name, n);
    report(what, rc, d, sizeof(double) * (size_t)n);
    for (int i = 0; i < n; ++i) d[i] = (double)((i + r) % 5);
    rc = MPI_Reduce(d, e, n, MPI_DOUBLE, MPI_SUM, p - 1, comm);
    snprintf(what, sizeof what, "%s reduce root=last n=%d", name, n);
    report(what, rc, r == p - 1 ? (void*)e : (void*)"",
           r == p - 1 ? sizeof(double) * (size_t)n : 0);
    for (int i = 0; i < n; ++i) d[i] = r == 0 ? (double)i : -1.0;
    rc = MPI_Bcast(d, n, MPI_DOUBLE, 0, comm);
    snprintf(what, sizeof what, "%s bcast n=%d", name, n);
    report(what, rc, d, sizeof(double) * (size_t)n);
    for (int i = 0; i < n * p; ++i) d[i] = (double)(r * 1000 + i), e[i] = -1;
    rc = MPI_Alltoall(d, n, MPI_DOUBLE, e, n, MPI_DOUBLE, comm);
    snprintf(what, sizeof what, "%s alltoall n=%d", name, n);
    report(what, rc, e, sizeof(double) * (size_t)n * (size_t)p);
    for (int i = 0; i < n * p; ++i) d[i] = (double)(r * 100 + i % 97), e[i] = -1;
    rc = MPI_Allgather(d, n, MPI_DOUBLE, e, n, MPI_DOUBLE, comm);
    snprintf(what, sizeof what, "%s allgather n=%d", name, n);
    report(what, rc, e, sizeof(double) * (size_t)n * (size_t)p);
    rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d, n, MPI_DOUBLE, comm);
    snprintf(what, sizeof what, "%s allgather in-place n=%d", name, n);
    report(what, rc, d, sizeof(double) * (size_t)n * (size_t)p);
    for (int i = 0; i < n * p; ++i) d[i] = (double)((i * 5 + r) % 13), e[i] = -1;
    rc = MPI_Reduce_scatter_block(d, e, n, MPI_DOUBLE, MPI_SUM, comm);
    snprintf(what, sizeof what, "%s reduce_scatter_block n=%d", name, n);
    report(what, rc, e, sizeof(double) * (size_t)n);
    rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, d, n, MPI_DOUBLE, MPI_MAX, comm);
    snprintf(what, sizeof what, "%s reduce_scatter_block in-place n=%d", name, n);
    report(what, rc, d, sizeof(double) * (size_t)n);
    for (int i = 0; i < n * p; ++i) d[i] = (double)(r * 10 + i % 7), e[i] = -1;
    rc = MPI_Gather(d, n, MPI_DOUBLE, e, n, MPI_DOUBLE, p - 1, comm);
    snprintf(what, sizeof what, "%s gather root=last n=%d", name, n);
    report(what, rc, r == p - 1 ? (void*)e : (void*)"",
           r == p - 1 ? sizeof(double) * (size_t)n * (size_t)p : 0);
    rc = r == 0 ? MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d, n, MPI_DOUBLE, 0, comm)
                : MPI_Gather(d, n, MPI_DOUBLE, NULL, 0, MPI_DATATYPE_NULL, 0, comm);
    snprintf(what, sizeof what, "%s gather in-place root=0 n=%d", name, n);
    report(what, rc, r == 0 ? (void*)d : (void*)"",
           r == 0 ? sizeof(double) * (size_t)n * (size_t)p : 0);
    for (int i = 0; i < n * p; ++i) d[i] = r == 0 ? (double)i : -2.0, e[i] = -1;
    rc = MPI_Scatter(d, n, MPI_DOUBLE, e, n, MPI_DOUBLE, 0, comm);
    snprintf(what, sizeof what, "%s scatter n=%d", name, n);
    report(what, rc, e, sizeof(double) * (size_t)n);
    rc = r == p - 1 ? MPI_Scatter(d, n, MPI_DOUBLE, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, p - 1, comm)
                    : MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, e, n, MPI_DOUBLE, p - 1, comm);
    snprintf(what, sizeof what, "%s scatter in-place root=last n=%d", name, n);
    report(what, rc, r == p - 1 ? (void*)d : (void*)e,
           sizeof(double) * (size_t)n * (size_t)(r == p - 1 ? p : 1));
    free(d);
    free(e);
  }
  /* A strided type (every other int) in a bcast: only the signature is equal on all ranks, the
   * gaps of the buffer must stay untouched. */
  MPI_Datatype strided;
  MPI_Type_vector(3, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  int sv[6 * 4];
  for (int i = 0; i < 24; ++i) sv[i] = r == 0 ? i : -7 - r;
  int rc = MPI_Bcast(sv, 4, strided, 0, comm);
  snprintf(what, sizeof what, "%s bcast vector type", name);
  report(what, rc, sv, sizeof sv);
  MPI_Type_free(&strided);
  /* Non-commutative op: the result depends on the rank order, which MPI fixes. */
  MPI_Op op;
  MPI_Op_create(matmul, 0, &op);
  int m[4 * 3], out[4 * 3];
  for (int i = 0; i < 3; ++i) {
    m[4 * i + 0] = 1, m[4 * i + 1] = r + i, m[4 * i + 2] = 0, m[4 * i + 3] = 1 + (r % 2);
  }
  MPI_Datatype four;
  MPI_Type_contiguous(4, MPI_INT, &four);
  MPI_Type_commit(&four);
  rc = MPI_Allreduce(m, out, 3, four, op, comm);
  snprintf(what, sizeof what, "%s allreduce non-commutative", name);
  report(what, rc, out, sizeof out);
  rc = MPI_Reduce(m, out, 3, four, op, 0, comm);
  snprintf(what, sizeof what, "%s reduce non-commutative", name);
  report(what, rc, r == 0 ? (void*)out : (void*)"", r == 0 ? sizeof out : 0);
  MPI_Type_free(&four);
  MPI_Op_free(&op);
  rc = MPI_Barrier(comm);
  snprintf(what, sizeof what, "%s barrier", name);
  report(what, rc, "", 0);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  out = stdout;
  if (argc > 1) {
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", argv[1], rank);
    out = fopen(path, "w");
    if (out == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  }
  collectives(MPI_COMM_WORLD, "world");
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half); /* reversed order */
  collectives(half, rank % 2 ? "odd" : "even");
  if (size >= 2) { /* an intercommunicator between the halves */
    MPI_Comm inter;
    /* Each half's leader (its rank 0) is its highest world rank: the split reversed the order. */
    const int top_even = (size - 1) % 2 == 0 ? size - 1 : size - 2;
    const int top_odd = (size - 1) % 2 == 1 ? size - 1 : size - 2;
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? top_even : top_odd, 5, &inter);
    double x = rank, y = -1;
    int rc = MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, inter);
    report("inter allreduce", rc, &y, sizeof y);
    rc = MPI_Barrier(inter);
    report("inter barrier", rc, "", 0);
    MPI_Comm_free(&inter);
  }
  MPI_Comm_free(&half);
  if (out != stdout) fclose(out);
  MPI_Finalize();
  return 0;
}
