/* An ordinary MPI program (it knows nothing of collkit) that reduces on communicators of three
 * kinds, MPI_COMM_WORLD, a duplicate of it and one made by MPI_Comm_split (on which Open MPI puts
 * no MPI_TAG_UB attribute: the standard guarantees it on MPI_COMM_WORLD only), in the blocking,
 * non-blocking and persistent forms (MPI 4's MPI_Allreduce_init, or Open MPI 4's
 * MPIX_Allreduce_init from mpi-ext.h), and compares every result with PMPI_Allreduce of the same
 * data: the MPI's own call, which an interposition library does not see. Run under a table that
 * routes allreduce to an algorithm of many small messages, each call sends far more messages to
 * one peer than 32768 / 64 tags.
 *   mpiexec -n 4 split_segments COUNT [CALLS]
 * Prints "split_segments ok" on rank 0, or "MISMATCH ..." and exits 1. Under libcollkit_pmpi.so
 * rank 0 also prints, per communicator and form, how many calls the library ran itself
 * ("routed split persistent 1": a persistent call counts once, at its init). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#if !defined(MPI_VERSION) || MPI_VERSION < 4
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(MPI_VERSION) && MPI_VERSION >= 4
#define ALLREDUCE_INIT MPI_Allreduce_init
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define ALLREDUCE_INIT MPIX_Allreduce_init
#endif

static int check(const int* got, const int* want, int n, const char* what, int call, int rank) {
  for (int i = 0; i < n; ++i)
    if (got[i] != want[i]) {
      printf("MISMATCH %s call %d rank %d: element %d is %d, the MPI's own call gives %d\n", what,
             call, rank, i, got[i], want[i]);
      return 1;
    }
  return 0;
}

/* The interposition library's count of calls it ran (collkit_pmpi.h), -1 without it. */
static long long routed(void) {
  void (*counts)(long long*, long long*) = NULL;
  *(void**)&counts = dlsym(RTLD_DEFAULT, "collkit_pmpi_counts");
  if (counts == NULL) return -1;
  long long ran = 0, declined = 0;
  counts(&ran, &declined);
  return ran;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int wrank;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  const int n = argc > 1 ? atoi(argv[1]) : 20000;
  const int calls = argc > 2 ? atoi(argv[2]) : 3;
  MPI_Comm comms[3];
  const char* names[3] = {"world", "dup", "split"};
  comms[0] = MPI_COMM_WORLD;
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
  MPI_Comm_split(MPI_COMM_WORLD, 0, wrank, &comms[2]);
  int* x = malloc(sizeof(int) * (size_t)n);
  int* y = malloc(sizeof(int) * (size_t)n);
  int* want = malloc(sizeof(int) * (size_t)n);
  int bad = 0;
  for (int c = 0; c < 3; ++c) {
    MPI_Comm comm = comms[c];
    for (int mode = 0; mode < 3; ++mode) {
      const char* mname = mode == 0 ? "blocking" : mode == 1 ? "non-blocking" : "persistent";
      char what[64];
      snprintf(what, sizeof what, "%s %s", names[c], mname);
      MPI_Request req = MPI_REQUEST_NULL;
      const long long before = routed();
#ifdef ALLREDUCE_INIT
      if (mode == 2) ALLREDUCE_INIT(x, y, n, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &req);
#else
      if (mode == 2) continue;
#endif
      for (int k = 0; k < calls; ++k) {
        for (int i = 0; i < n; ++i) {
          x[i] = (i * 31 + wrank * 7 + k * 3 + c) % 1000 - 500;
          y[i] = -1;
        }
        PMPI_Allreduce(x, want, n, MPI_INT, MPI_SUM, comm);
        int rc = MPI_SUCCESS;
        if (mode == 0) {
          rc = MPI_Allreduce(x, y, n, MPI_INT, MPI_SUM, comm);
        } else if (mode == 1) {
          rc = MPI_Iallreduce(x, y, n, MPI_INT, MPI_SUM, comm, &req);
          if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
          rc = MPI_Start(&req);
          if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        if (rc != MPI_SUCCESS) {
          printf("MISMATCH %s call %d rank %d: error %d\n", what, k, wrank, rc);
          bad = 1;
        } else {
          bad |= check(y, want, n, what, k, wrank);
        }
      }
      if (mode == 2) MPI_Request_free(&req);
      if (wrank == 0 && before >= 0) printf("routed %s %lld\n", what, routed() - before);
    }
  }
  int any = 0;
  PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (wrank == 0 && !any) printf("split_segments ok\n");
  MPI_Comm_free(&comms[1]);
  MPI_Comm_free(&comms[2]);
  free(x);
  free(y);
  free(want);
  MPI_Finalize();
  return any ? 1 : 0;
}
