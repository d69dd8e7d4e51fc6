/* Stress of the shared-memory transport's slot reuse (tests/mpi/test_shm_mpi.py): many back-to-back
 * collkit calls of different collectives, algorithms and sizes (some above the slot size, so
 * MPI and shared memory alternate within one pair) on several communicators, each result checked
 * against the value it must have. The sequence is drawn from one seed, the same on every rank.
 *
 *   shm_stress ITERATIONS
 * Prints "shm_stress ok CALLS transport=..." on rank 0, or the first wrong value and exits 1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collkit.h"

static unsigned long long state = 12345;
static unsigned next(unsigned n) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (unsigned)((state >> 33) % n);
}

static double value(int rank, int i, int iter) {
  return (double)((rank * 7919 + i * 31 + iter) % 1000);
}

static int fail(const char* what, int iter, int i, double got, double want) {
  fprintf(stderr, "shm_stress: %s wrong at call %d element %d: %g, not %g\n", what, iter, i, got,
          want);
  return 1;
}

static int check_rc(int rc, const char* name) {
  if (rc != MPI_SUCCESS && !ck_declined(rc)) {
    fprintf(stderr, "shm_stress: %s failed: %s\n", name, ck_error_message());
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int iters = argc > 1 ? atoi(argv[1]) : 300;
  int wrank = 0, wsize = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  MPI_Comm comms[3];
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
  MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &comms[1]); /* reversed */
  MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &comms[2]); /* halves */
  /* Sizes in doubles: tiny, around the slot (16 KiB = 2048 doubles) and above it. */
  static const int counts[] = {0, 1, 3, 17, 200, 1000, 2047, 2048, 2049, 5000};
  static const char* allreduce[] = {"allreduce:rd", "allreduce:ring", "allreduce:rabenseifner",
                                    "allreduce:ring(seg=64)"};
  static const char* bcast[] = {"bcast:binomial", "bcast:pipeline(seg=16)", "bcast:knomial(k=3)"};
  static const char* reduce[] = {"reduce:binomial", "reduce:pipeline(seg=256)"};
  static const char* alltoall[] = {"alltoall:pairwise", "alltoall:bruck", "alltoall:linear"};
  static const char* allgather[] = {"allgather:ring", "allgather:bruck"};
  const int maxc = 5000;
  double* in = malloc(sizeof(double) * (size_t)maxc * (size_t)wsize);
  double* out = malloc(sizeof(double) * (size_t)maxc * (size_t)wsize);
  int bad = 0, calls = 0;
  /* The call: half of them repeat one of the last three (same communicator, collective,
   * algorithm, count, root and buffers) with new data, as loops and programs that alternate a
   * few calls do: the library's shortcut for a repeated call (mpi/src/capi.cpp, RecentCall)
   * must still read and write the buffers of each call. */
  struct Choice {
    unsigned which, coll, pick, root_pick;
    int n;
  } recent[3];
  int known = 0, made = 0; /* choices kept, choices made */
  for (int iter = 0; iter < iters; ++iter) { /* on to the end: every rank makes every call */
    struct Choice ch;
    if (known > 0 && next(2) == 0) {
      ch = recent[next((unsigned)known)];
    } else {
      ch.which = next(3);
      ch.coll = next(6);
      ch.n = counts[next(sizeof counts / sizeof counts[0])];
      ch.pick = next(12);
      ch.root_pick = next(64);
      if (ch.coll >= 3 && ch.n > 1000) ch.n = 1000; /* per block: keep alltoall / allgather small */
      recent[made++ % 3] = ch;
      if (known < 3) ++known;
    }
    const unsigned which = ch.which, coll = ch.coll, pick = ch.pick, root_pick = ch.root_pick;
    const int n = ch.n;
    MPI_Comm comm = comms[which];
    int rank = 0, P = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    const int root = (int)(root_pick % (unsigned)P);
    for (int i = 0; i < n * P; ++i) in[i] = value(rank, i, iter);
    memset(out, 0, sizeof(double) * (size_t)(n * P + 1));
    const char* name = "";
    int rc = MPI_SUCCESS;
    switch (coll) {
      case 0:
        name = allreduce[pick % 4];
        rc = ck_allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, comm, name);
        for (int i = 0; i < n && !bad && rc == MPI_SUCCESS; ++i) {
          double want = 0;
          for (int r = 0; r < P; ++r) want += value(r, i, iter);
          if (out[i] != want) bad = fail(name, iter, i, out[i], want);
        }
        break;
      case 1:
        name = bcast[pick % 3];
        if (rank == root) memcpy(out, in, sizeof(double) * (size_t)n);
        rc = ck_bcast(out, n, MPI_DOUBLE, root, comm, name);
        for (int i = 0; i < n && !bad && rc == MPI_SUCCESS; ++i)
          if (out[i] != value(root, i, iter)) bad = fail(name, iter, i, out[i], value(root, i, iter));
        break;
      case 2:
        name = reduce[pick % 2];
        rc = ck_reduce(in, out, n, MPI_DOUBLE, MPI_MAX, root, comm, name);
        for (int i = 0; i < n && !bad && rank == root && rc == MPI_SUCCESS; ++i) {
          double want = value(0, i, iter);
          for (int r = 1; r < P; ++r)
            if (value(r, i, iter) > want) want = value(r, i, iter);
          if (out[i] != want) bad = fail(name, iter, i, out[i], want);
        }
        break;
      case 3:
        name = alltoall[pick % 3];
        rc = ck_alltoall(in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, comm, name);
        for (int r = 0; r < P && !bad && rc == MPI_SUCCESS; ++r)
          for (int i = 0; i < n && !bad; ++i) {
            const double want = value(r, rank * n + i, iter);
            if (out[r * n + i] != want) bad = fail(name, iter, r * n + i, out[r * n + i], want);
          }
        break;
      case 4:
        name = allgather[pick % 2];
        rc = ck_allgather(in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, comm, name);
        for (int r = 0; r < P && !bad && rc == MPI_SUCCESS; ++r)
          for (int i = 0; i < n && !bad; ++i)
            if (out[r * n + i] != value(r, i, iter))
              bad = fail(name, iter, r * n + i, out[r * n + i], value(r, i, iter));
        break;
      default:
        name = "barrier:dissemination";
        rc = ck_barrier(comm, name);
        break;
    }
    if (!bad) bad = check_rc(rc, name);
    ++calls;
  }
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  bad = any;
  if (wrank == 0 && !bad)
    printf("shm_stress ok %d transport=%s\n", calls, ck_transport(comms[0]));
  for (int k = 0; k < 3; ++k) MPI_Comm_free(&comms[k]);
  free(in);
  free(out);
  MPI_Finalize();
  return bad;
}
