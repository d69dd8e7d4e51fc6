/* The same collective call again and again on buffers that move (a pool of three buffer sets
 * taken in turn, new data every call), as IMB's -off_cache does: under the interposition library
 * MPI_<coll> is collkit's route, PMPI_<coll> the MPI's own; every output byte must be equal.
 * Rooted calls at the first and the last rank, MPI_IN_PLACE where the standard allows it.
 * Rank 0 prints "OK calls" or one "FAIL ..." line per failing case; exit status 1 on a failure. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 5, SETS = 3, CALLS = 12 };
enum { ALLREDUCE, REDUCE, BCAST, ALLGATHER, ALLTOALL, GATHER, SCATTER, RSB, KINDS };
static const char* names[KINDS] = {"allreduce", "reduce", "bcast",   "allgather",
                                   "alltoall",  "gather", "scatter", "reduce_scatter_block"};

static int P, me;

static int rooted(int kind) {
  return kind == REDUCE || kind == BCAST || kind == GATHER || kind == SCATTER;
}

/* MPI_IN_PLACE allowed for this kind on this rank (in place: at the root only where rooted). */
static int in_place_here(int kind, int root) {
  if (kind == BCAST) return 0;
  if (rooted(kind)) return me == root;
  return 1;
}

/* One call of `kind`: routed (MPI_) or the MPI's own (PMPI_). */
static int call(int own, int kind, int in_place, const int* send, int* recv, int root) {
  const void* s = in_place ? MPI_IN_PLACE : send;
  MPI_Comm w = MPI_COMM_WORLD;
  switch (kind) {
    case ALLREDUCE:
      return own ? PMPI_Allreduce(s, recv, N, MPI_INT, MPI_SUM, w)
                 : MPI_Allreduce(s, recv, N, MPI_INT, MPI_SUM, w);
    case REDUCE:
      return own ? PMPI_Reduce(s, recv, N, MPI_INT, MPI_SUM, root, w)
                 : MPI_Reduce(s, recv, N, MPI_INT, MPI_SUM, root, w);
    case BCAST:
      return own ? PMPI_Bcast(recv, N, MPI_INT, root, w) : MPI_Bcast(recv, N, MPI_INT, root, w);
    case ALLGATHER:
      return own ? PMPI_Allgather(s, N, MPI_INT, recv, N, MPI_INT, w)
                 : MPI_Allgather(s, N, MPI_INT, recv, N, MPI_INT, w);
    case ALLTOALL:
      return own ? PMPI_Alltoall(s, N, MPI_INT, recv, N, MPI_INT, w)
                 : MPI_Alltoall(s, N, MPI_INT, recv, N, MPI_INT, w);
    case GATHER:
      return own ? PMPI_Gather(s, N, MPI_INT, recv, N, MPI_INT, root, w)
                 : MPI_Gather(s, N, MPI_INT, recv, N, MPI_INT, root, w);
    case SCATTER: /* in place: the root's recvbuf is MPI_IN_PLACE, its sendbuf the vector */
      return own ? PMPI_Scatter(send, N, MPI_INT, in_place ? MPI_IN_PLACE : recv, N, MPI_INT, root,
                                w)
                 : MPI_Scatter(send, N, MPI_INT, in_place ? MPI_IN_PLACE : recv, N, MPI_INT, root,
                               w);
    default:
      return own ? PMPI_Reduce_scatter_block(s, recv, N, MPI_INT, MPI_SUM, w)
                 : MPI_Reduce_scatter_block(s, recv, N, MPI_INT, MPI_SUM, w);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const int len = N * P; /* every buffer holds P blocks: enough for any kind and role */
  int *send[SETS], *recv[SETS], *ref_send = malloc(sizeof(int) * len),
                                *ref_recv = malloc(sizeof(int) * len);
  for (int k = 0; k < SETS; ++k) {
    send[k] = malloc(sizeof(int) * len);
    recv[k] = malloc(sizeof(int) * len);
  }
  int failures = 0, calls = 0;
  for (int kind = 0; kind < KINDS; ++kind)
    for (int in_place = 0; in_place < 2; ++in_place)
      for (int r = 0; r < (rooted(kind) ? 2 : 1); ++r) {
        const int root = r == 0 ? 0 : P - 1;
        const int here = in_place && in_place_here(kind, root);
        int bad = 0;
        for (int c = 0; c < CALLS; ++c) {
          const int k = c % SETS;
          for (int i = 0; i < len; ++i) {
            send[k][i] = ref_send[i] = (me + 1) * 1000 + c * 100 + i;
            /* the input of an in-place call (or bcast's root) lies in recvbuf */
            recv[k][i] = ref_recv[i] = here || kind == BCAST ? (me + 7) * 1000 + c * 10 + i : -1;
          }
          if (call(0, kind, here, send[k], recv[k], root) != MPI_SUCCESS ||
              call(1, kind, here, ref_send, ref_recv, root) != MPI_SUCCESS)
            bad = 1;
          if (memcmp(recv[k], ref_recv, sizeof(int) * len) != 0 ||
              memcmp(send[k], ref_send, sizeof(int) * len) != 0)
            bad = 1;
          ++calls;
        }
        int any = 0;
        PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any) {
          ++failures;
          if (me == 0) printf("FAIL %s in_place=%d root=%d\n", names[kind], in_place, root);
        }
      }
  if (me == 0 && failures == 0) printf("OK %d\n", calls);
  MPI_Finalize();
  return failures ? 1 : 0;
}
