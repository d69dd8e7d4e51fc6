/* collkit's C API: call any collkit algorithm by name from a C or C++ MPI program.
 *
 *   ck_allreduce(sendbuf, recvbuf, count, MPI_DOUBLE, MPI_SUM, comm, "allreduce:rd");
 *
 * The arguments mean what they mean for the MPI call of the same name (MPI_IN_PLACE included);
 * counts are MPI_Count, so they may pass 2^31 elements. The algorithm name follows collkit's one
 * grammar (`collkit algorithms` lists them); its collective must match the function.
 *
 * Every function returns MPI_SUCCESS or an MPI error code; nothing in collkit aborts. For a
 * collkit error (bad name, wrong collective, unsupported P, ...), MPI_Error_string(code) and
 * ck_error_message() give the message. All ranks of `comm` call with the same name, and with
 * arguments as the MPI collective of the same name requires: for the copies (bcast, alltoall,
 * allgather, gather, scatter) only the type signatures must match (each rank may describe its
 * data with its own datatype, gaps, absolute addresses on MPI_BOTTOM included); for the
 * reductions (allreduce, reduce, reduce_scatter_block) the count, datatype and op.
 *
 * The irregular calls (allgatherv, alltoallv, gatherv, scatterv, reduce_scatter, and the prefix
 * reductions scan and exscan) take MPI 4's large-count arrays: counts as MPI_Count, displacements
 * as MPI_Aint (in extents of the side's datatype), P entries each, read only where MPI reads them
 * (gatherv's recvcounts at the root, ...). gatherv, scatterv and alltoallv first exchange the
 * ranks' counts (no rank has them all): the blocking call and the persistent init with a blocking
 * collective, the non-blocking call as its run's first, non-blocking step (where counts that
 * disagree fail the request, alike on every rank, as the MPI's own call can no longer take it).
 *
 * The name "native" (or "allreduce:native", ...) calls the MPI's own collective instead.
 *
 * Traffic runs on a private duplicate of `comm` (kept as an attribute of `comm`, freed with it),
 * so it never matches the application's own messages. Plans are cached per communicator.
 */
#ifndef COLLKIT_H
#define COLLKIT_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

int ck_allreduce(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, MPI_Comm comm, const char* algorithm);
int ck_reduce(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
              int root, MPI_Comm comm, const char* algorithm);
int ck_bcast(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
             const char* algorithm);
/* The arguments of MPI_Alltoall: `sendcount` x `sendtype` to each destination, `recvcount` x
 * `recvtype` from each source (only the type signatures need to match, as in MPI). */
int ck_alltoall(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm);
int ck_barrier(MPI_Comm comm, const char* algorithm);
/* MPI_Allgather: `sendcount` x `sendtype` from each rank, `recvcount` x `recvtype` per source in
 * recvbuf (rank order). MPI_IN_PLACE as sendbuf: each rank's block already lies in recvbuf. */
int ck_allgather(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                 MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm);
/* MPI_Reduce_scatter_block: rank r gets block r (`recvcount` elements) of the reduction of every
 * rank's P blocks. MPI_IN_PLACE as sendbuf: the P blocks are read from recvbuf. */
int ck_reduce_scatter_block(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const char* algorithm);
/* MPI_Gather: the root receives every rank's block in rank order; recvbuf, recvcount and
 * recvtype are read at the root only. MPI_IN_PLACE as the root's sendbuf: its block is in
 * recvbuf already. */
int ck_gather(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
              MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
              const char* algorithm);
/* MPI_Scatter: rank r receives block r of the root's sendbuf; sendbuf, sendcount and sendtype
 * are read at the root only. MPI_IN_PLACE as the root's recvbuf: its block stays in sendbuf. */
int ck_scatter(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
               MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
               const char* algorithm);
int ck_allgatherv(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                  const MPI_Count* recvcounts, const MPI_Aint* displs, MPI_Datatype recvtype,
                  MPI_Comm comm, const char* algorithm);
int ck_alltoallv(const void* sendbuf, const MPI_Count* sendcounts, const MPI_Aint* sdispls,
                 MPI_Datatype sendtype, void* recvbuf, const MPI_Count* recvcounts,
                 const MPI_Aint* rdispls, MPI_Datatype recvtype, MPI_Comm comm,
                 const char* algorithm);
int ck_gatherv(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
               const MPI_Count* recvcounts, const MPI_Aint* displs, MPI_Datatype recvtype, int root,
               MPI_Comm comm, const char* algorithm);
int ck_scatterv(const void* sendbuf, const MPI_Count* sendcounts, const MPI_Aint* displs,
                MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                int root, MPI_Comm comm, const char* algorithm);
int ck_reduce_scatter(const void* sendbuf, void* recvbuf, const MPI_Count* recvcounts,
                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const char* algorithm);
int ck_scan(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
            MPI_Comm comm, const char* algorithm);
int ck_exscan(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm, const char* algorithm);

/* Non-blocking forms: the arguments of the blocking call, then the request, then the name
 * (MPI_Iallreduce's signature with the name last). *request is a real MPI_Request (a generalized
 * request): MPI_Wait, MPI_Test, MPI_Waitall, MPI_Waitany, MPI_Testsome ... complete it, alone or
 * in arrays mixed with the program's other requests. The buffers must not be touched until then.
 * Calls on one communicator are matched in call order, blocking and non-blocking alike, and any
 * number may be in flight (each has its own tags; a call and the 64th after it must not both
 * still be moving messages).
 *
 * Progress: collkit moves its runs whenever the program enters MPI through a call collkit sees:
 * the completion calls (MPI_Wait*, MPI_Test*, MPI_Request_get_status, which this library defines
 * over PMPI_), every ck_* call and, with the interposition library, every collective it routes.
 * A rank that computes without entering MPI, or blocks in another MPI call (MPI_Recv, MPI_Probe),
 * moves no collkit run meanwhile: test its request now and then, as one would for most MPIs'
 * own non-blocking collectives without an asynchronous progress thread. The first non-blocking
 * call on a communicator duplicates it (a blocking step, taken by every rank at the same call).
 * On an error or a decline at the start, *request is MPI_REQUEST_NULL. */
int ck_iallreduce(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm, MPI_Request* request, const char* algorithm);
int ck_ireduce(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
               MPI_Op op, int root, MPI_Comm comm, MPI_Request* request, const char* algorithm);
int ck_ibcast(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
              MPI_Request* request, const char* algorithm);
int ck_ialltoall(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                 MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request,
                 const char* algorithm);
int ck_ibarrier(MPI_Comm comm, MPI_Request* request, const char* algorithm);
int ck_iallgather(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                  MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request,
                  const char* algorithm);
int ck_ireduce_scatter_block(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request,
                             const char* algorithm);
int ck_igather(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
               MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
               MPI_Request* request, const char* algorithm);
int ck_iscatter(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                MPI_Request* request, const char* algorithm);
int ck_iallgatherv(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                   const MPI_Count* recvcounts, const MPI_Aint* displs, MPI_Datatype recvtype,
                   MPI_Comm comm, MPI_Request* request, const char* algorithm);
int ck_ialltoallv(const void* sendbuf, const MPI_Count* sendcounts, const MPI_Aint* sdispls,
                  MPI_Datatype sendtype, void* recvbuf, const MPI_Count* recvcounts,
                  const MPI_Aint* rdispls, MPI_Datatype recvtype, MPI_Comm comm,
                  MPI_Request* request, const char* algorithm);
int ck_igatherv(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                const MPI_Count* recvcounts, const MPI_Aint* displs, MPI_Datatype recvtype,
                int root, MPI_Comm comm, MPI_Request* request, const char* algorithm);
int ck_iscatterv(const void* sendbuf, const MPI_Count* sendcounts, const MPI_Aint* displs,
                 MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm, MPI_Request* request, const char* algorithm);
int ck_ireduce_scatter(const void* sendbuf, void* recvbuf, const MPI_Count* recvcounts,
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request,
                       const char* algorithm);
int ck_iscan(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
             MPI_Comm comm, MPI_Request* request, const char* algorithm);
int ck_iexscan(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
               MPI_Op op, MPI_Comm comm, MPI_Request* request, const char* algorithm);

/* Persistent forms (MPI 4's MPI_Allreduce_init ... with the name last): the plan is built, and
 * every decline decided, at init, alike on every rank; *request is then a handle that
 * MPI_Start / MPI_Startall start, each start a run of that plan on the buffers given here, read
 * at the start (new data each time), completed by MPI_Wait / MPI_Test / ... alone or in arrays
 * mixed with other requests, after which the handle is inactive and may be started again;
 * MPI_Request_free frees it. The handle is a real persistent MPI_Request (a receive from
 * MPI_PROC_NULL that the MPI never starts) and collkit keeps the call's state keyed by it: the
 * MPI_Start, MPI_Startall, MPI_Wait*, MPI_Test*, MPI_Request_get_status and MPI_Request_free of
 * this library (defined over PMPI_) know it, so the program must reach those calls through it
 * (link it, or the interposition library), not call PMPI_Start itself. Starts on a communicator
 * are matched in start order with its non-blocking calls (each start takes its own tags, as a
 * non-blocking call does), and progress is that of the non-blocking forms above. `info` is
 * accepted and not read. "native" is the MPI's own MPI_<Coll>_init (MPI 4), or before MPI 4 a
 * handle of collkit's whose every start is the MPI's own MPI_I<coll>. On an error or a decline,
 * *request is MPI_REQUEST_NULL. */
int ck_allreduce_init(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                      MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request,
                      const char* algorithm);
int ck_reduce_init(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                   MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request* request,
                   const char* algorithm);
int ck_bcast_init(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                  MPI_Info info, MPI_Request* request, const char* algorithm);
int ck_alltoall_init(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                     MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                     MPI_Request* request, const char* algorithm);
int ck_barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request* request, const char* algorithm);
int ck_allgather_init(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                      void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                      MPI_Info info, MPI_Request* request, const char* algorithm);
int ck_reduce_scatter_block_init(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                 MPI_Request* request, const char* algorithm);
int ck_gather_init(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                   MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                   MPI_Info info, MPI_Request* request, const char* algorithm);
int ck_scatter_init(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                    MPI_Info info, MPI_Request* request, const char* algorithm);
int ck_allgatherv_init(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                       void* recvbuf, const MPI_Count* recvcounts, const MPI_Aint* displs,
                       MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request* request,
                       const char* algorithm);
int ck_alltoallv_init(const void* sendbuf, const MPI_Count* sendcounts, const MPI_Aint* sdispls,
                      MPI_Datatype sendtype, void* recvbuf, const MPI_Count* recvcounts,
                      const MPI_Aint* rdispls, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                      MPI_Request* request, const char* algorithm);
int ck_gatherv_init(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    const MPI_Count* recvcounts, const MPI_Aint* displs, MPI_Datatype recvtype,
                    int root, MPI_Comm comm, MPI_Info info, MPI_Request* request,
                    const char* algorithm);
int ck_scatterv_init(const void* sendbuf, const MPI_Count* sendcounts, const MPI_Aint* displs,
                     MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount,
                     MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                     MPI_Request* request, const char* algorithm);
int ck_reduce_scatter_init(const void* sendbuf, void* recvbuf, const MPI_Count* recvcounts,
                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                           MPI_Request* request, const char* algorithm);
int ck_scan_init(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request,
                 const char* algorithm);
int ck_exscan_init(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                   MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request,
                   const char* algorithm);

/* 1 when `rc`, returned by a ck_* call, means that collkit declined the call before any
 * communication, and that every rank of the communicator declined it alike: the decision reads only
 * what MPI makes equal on all ranks (the communicator, count x type-signature size, the op, the
 * root), never a rank's own datatype layout or buffer. The caller may then call the MPI's own
 * collective instead (as the interposition library does). 0 for MPI_SUCCESS and other errors. */
int ck_declined(int rc);

/* The message of the last collkit error on this thread ("" if none). */
const char* ck_error_message(void);

/* How collkit moves the messages of its schedules on `comm`: "shm" (shared memory between the
 * ranks of a node, MPI point-to-point otherwise and above the slot size) or "p2p (why)" (MPI
 * point-to-point only: COLLKIT_SHM=0, no two ranks on a node, setup failed). Chosen by the first
 * collkit call on `comm`; "" before it. */
const char* ck_transport(MPI_Comm comm);

#ifdef __cplusplus
}
#endif

#endif /* COLLKIT_H */
