/* tutti: collective communication for host and GPU buffers.
 *
 * The C ABI. Every function returns a tuttiResult_t; on failure the calling thread's last-error
 * message (tutti_get_last_error) names the rank, the operation and its sequence number. An invalid
 * argument changes nothing: no buffer is written and the communicator stays usable. */
#ifndef TUTTI_TUTTI_H
#define TUTTI_TUTTI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TUTTI_VERSION_MAJOR 0
#define TUTTI_VERSION_MINOR 1
#define TUTTI_VERSION_PATCH 0

typedef enum {
  tuttiSuccess = 0,
  tuttiInvalidArgument = 1,
  tuttiInvalidUsage = 2,
  tuttiSystemError = 3,
  tuttiRemoteError = 4,
  tuttiTimeout = 5,
  tuttiInternalError = 6,
  tuttiInProgress = 7, /* tutti_test: not finished yet (not an error) */
} tuttiResult_t;

typedef enum {
  tuttiInt8 = 0,
  tuttiUint8 = 1,
  tuttiInt32 = 2,
  tuttiUint32 = 3,
  tuttiInt64 = 4,
  tuttiUint64 = 5,
  tuttiFloat16 = 6,
  tuttiBfloat16 = 7,
  tuttiFloat32 = 8,
  tuttiFloat64 = 9,
  tuttiNumTypes = 10,
  /* Not a type: makes the enum span every int, so that C++ reads any value a C caller passes
     (and the library rejects it) instead of that being undefined behaviour. */
  tuttiDataTypeSpanInt = -0x7fffffff - 1
} tuttiDataType_t;

typedef enum {
  tuttiSum = 0,
  tuttiProd = 1,
  tuttiMin = 2,
  tuttiMax = 3,
  tuttiAvg = 4, /* integers divide with truncation, as NCCL does */
  tuttiNumOps = 5,
  tuttiRedOpSpanInt = -0x7fffffff - 1 /* not an operation: as tuttiDataTypeSpanInt */
} tuttiRedOp_t;

#define TUTTI_UNIQUE_ID_BYTES 128
/* Opaque: rendezvous address, port and a random 128-bit secret. Copy it to every rank as bytes. */
typedef struct {
  char internal[TUTTI_UNIQUE_ID_BYTES];
} tuttiUniqueId;

typedef struct tuttiComm* tuttiComm_t;
typedef struct tuttiRequest* tuttiRequest_t;
/* A CUDA stream: a cudaStream_t or CUstream passes as is, and tutti.h includes no CUDA header. */
typedef struct CUstream_st* tuttiStream_t;

const char* tutti_get_error_string(tuttiResult_t result);
/* The last failure's message on this thread ("" when none). Valid until the thread's next call. */
const char* tutti_get_last_error(void);
/* For libraries built on tutti (libtutti_bucketing): makes message this thread's last error, so
 * that their failures are read like libtutti's own, with tutti_get_last_error. */
tuttiResult_t tutti_set_last_error(const char* message);
tuttiResult_t tutti_get_version(int* version); /* major*10000 + minor*100 + patch */

/* Creates an id and hosts its rendezvous in this process (a background thread). */
tuttiResult_t tutti_get_unique_id(tuttiUniqueId* id);
tuttiResult_t tutti_comm_init_rank(tuttiComm_t* comm, tuttiUniqueId id, int rank, int nranks);
/* Reads TUTTI_RANK/WORLD_SIZE/LOCAL_RANK/ADDR/PORT/SECRET, else torchrun's, Open MPI's or Slurm's
 * variables; rank 0 hosts the rendezvous at ADDR:PORT. */
tuttiResult_t tutti_comm_init_env(tuttiComm_t* comm);
/* A whole world of nranks ranks as threads of this process (like ncclCommInitAll). */
tuttiResult_t tutti_comm_init_all(tuttiComm_t* comms, int nranks);
/* Ranks with the same color form a new communicator ordered by (key, old rank). A negative color
 * (TUTTI_SPLIT_NOCOLOR) returns a null communicator. Collective over the parent. */
#define TUTTI_SPLIT_NOCOLOR (-1)
tuttiResult_t tutti_comm_split(tuttiComm_t comm, int color, int key, tuttiComm_t* newcomm);
/* What a split may choose for the new communicator on this rank instead of inheriting it (as
 * ncclConfig_t): start from TUTTI_CONFIG_INITIALIZER, whose `size` tells tutti which fields the
 * caller knows (fields past it read as unset; a size larger than this tutti's tuttiConfig_t is
 * refused). socket_ifname: the interfaces the new communicator's TCP connections use, in
 * TUTTI_SOCKET_IFNAME's syntax ("=eth1": that interface only), NULL to inherit — e.g. one
 * communicator per NIC rail. It must match an interface that is up on this rank, else
 * tuttiInvalidArgument naming it, before the split starts (comm is left as it was; the other
 * ranks' split then waits until the timeout, as for a refused color). A rank passing
 * TUTTI_SPLIT_NOCOLOR gets no communicator and its config is not read. Collective as
 * tutti_comm_split; ranks may pass different configs. */
typedef struct {
  size_t size;
  const char* socket_ifname;
} tuttiConfig_t;
#define TUTTI_CONFIG_INITIALIZER \
  { sizeof(tuttiConfig_t), NULL }
tuttiResult_t tutti_comm_split_config(tuttiComm_t comm, int color, int key,
                                      const tuttiConfig_t* config, tuttiComm_t* newcomm);
/* The survivors' communicator, for going on after ranks are lost (as ncclCommShrink): every rank
 * of comm except the excluded ones, renumbered in order of their ranks in comm. Called by every
 * rank that stays; an excluded rank does not call it (it destroys comm). The excluded ranks are
 * exclude_ranks[0..exclude_count) and, with TUTTI_SHRINK_DEAD, the ranks this rank finds gone (a
 * process on this host that exited, a peer whose connection broke unexplained). The callers
 * agree over the rendezvous store, within comm's timeout: the union of what every caller
 * excludes, so a rank that saw a death and one that did not get the same communicator; a rank
 * neither calling nor excluded fails the callers with tuttiTimeout naming it. comm may have
 * failed (a dead peer); once the shrink succeeds every later call on comm fails (tuttiInvalidUsage,
 * saying it was shrunk), and comm must still be destroyed. The rendezvous's host (rank 0 under
 * tutti_comm_init_env) must be alive. docs/elastic.md. */
#define TUTTI_SHRINK_DEFAULT 0
#define TUTTI_SHRINK_DEAD 1
tuttiResult_t tutti_comm_shrink(tuttiComm_t comm, const int* exclude_ranks, int exclude_count,
                                tuttiComm_t* newcomm, int flags);
/* Growing a communicator (as ncclCommGrow): one member makes a grow token and hands it to the
 * newcomers out of band, as a unique id; then every member calls tutti_comm_grow(comm, new_size,
 * NULL, -1, &newcomm) and every newcomer tutti_comm_grow(NULL, new_size, &token, rank, &newcomm),
 * rank in [comm's size, new_size). The members keep their ranks. The token names the job's
 * rendezvous and carries its secret: newcomers prove it to the store. comm stays as it was.
 * docs/elastic.md. */
tuttiResult_t tutti_comm_grow_id(tuttiComm_t comm, tuttiUniqueId* id);
tuttiResult_t tutti_comm_grow(tuttiComm_t comm, int new_size, const tuttiUniqueId* id, int rank,
                              tuttiComm_t* newcomm);
tuttiResult_t tutti_comm_destroy(tuttiComm_t comm);
/* Callable from any thread: unblocks every wait on comm, which then fails. */
tuttiResult_t tutti_comm_abort(tuttiComm_t comm);
tuttiResult_t tutti_comm_rank(tuttiComm_t comm, int* rank);
tuttiResult_t tutti_comm_size(tuttiComm_t comm, int* size);
tuttiResult_t tutti_comm_local_rank(tuttiComm_t comm, int* local_rank);
tuttiResult_t tutti_comm_local_size(tuttiComm_t comm, int* local_size);
/* Forces the all-reduce algorithm of this communicator's later operations, as TUTTI_ALGO does for
 * all of them: "auto" (the cost model), "ring", "tree", "oneshot" or "direct" (on tutti_mem_alloc
 * buffers of one host; elsewhere it runs what "auto" would). Every rank must set the same before
 * its next all-reduce. */
tuttiResult_t tutti_comm_set_algorithm(tuttiComm_t comm, const char* algorithm);
/* How long a wait of this communicator's operations may make no progress before the operation
 * fails with tuttiTimeout, in milliseconds: 1 to TUTTI_TIMEOUT's maximum (7 days), else
 * tuttiInvalidArgument. Replaces TUTTI_TIMEOUT for this communicator (and for those later split
 * from it, tutti_comm_split's own waits included); init's waits keep TUTTI_TIMEOUT. Local: it
 * bounds only this rank's waits, so ranks need not agree. Callable from any thread; applies to
 * operations that start after the call (a wait already stalled keeps the bound it began with). */
tuttiResult_t tutti_comm_set_timeout(tuttiComm_t comm, int64_t timeout_ms);
/* The communicator's first error, if any (tuttiSuccess while healthy). */
tuttiResult_t tutti_comm_get_async_error(tuttiComm_t comm, tuttiResult_t* error);

/* Collectives. Blocking forms return when the result is in recvbuf; the _async forms return a
 * request at once (NULL request pointer = blocking). sendbuf == recvbuf means in-place.
 *
 * Device memory. Every collective and send/recv takes host buffers or CUDA device buffers (not
 * both in one call: tuttiInvalidArgument naming the buffers and their kinds). Pointer kinds are
 * asked of the CUDA driver, loaded on the first operation with dlopen (TUTTI_CUDA_DRIVER); where
 * none can be loaded, every pointer is host memory and nothing is asked. Device buffers are
 * copied into pinned host memory, reduced there and copied back (the blocking and request forms
 * copy when the operation runs, on the running thread's per-thread default stream: finish the
 * work that writes them first). A communicator's device buffers are all on one device, the first
 * one's; a buffer on another is tuttiInvalidArgument naming both ordinals. */
tuttiResult_t tutti_allreduce(const void* sendbuf, void* recvbuf, size_t count,
                              tuttiDataType_t dtype, tuttiRedOp_t op, tuttiComm_t comm,
                              tuttiRequest_t* request);
/* recvbuf holds recvcount elements; sendbuf holds nranks*recvcount. In-place: sendbuf == recvbuf
 * holds nranks*recvcount and the rank's block is written at offset rank*recvcount. */
tuttiResult_t tutti_reduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                   tuttiDataType_t dtype, tuttiRedOp_t op, tuttiComm_t comm,
                                   tuttiRequest_t* request);
/* sendbuf holds sendcount elements; recvbuf nranks*sendcount. In-place: sendbuf ==
 * recvbuf + rank*sendcount. */
tuttiResult_t tutti_allgather(const void* sendbuf, void* recvbuf, size_t sendcount,
                              tuttiDataType_t dtype, tuttiComm_t comm, tuttiRequest_t* request);
tuttiResult_t tutti_broadcast(const void* sendbuf, void* recvbuf, size_t count,
                              tuttiDataType_t dtype, int root, tuttiComm_t comm,
                              tuttiRequest_t* request);
/* recvbuf is written on root only (may be NULL elsewhere). */
tuttiResult_t tutti_reduce(const void* sendbuf, void* recvbuf, size_t count, tuttiDataType_t dtype,
                           tuttiRedOp_t op, int root, tuttiComm_t comm, tuttiRequest_t* request);
/* count elements go to each rank: buffers hold nranks*count. */
tuttiResult_t tutti_alltoall(const void* sendbuf, void* recvbuf, size_t count,
                             tuttiDataType_t dtype, tuttiComm_t comm, tuttiRequest_t* request);
tuttiResult_t tutti_barrier(tuttiComm_t comm, tuttiRequest_t* request);

/* Stream-ordered forms, in NCCL's shape: the operation runs after the work enqueued before it on
 * `stream` and the work enqueued after it runs after it; the call returns once enqueued and
 * nothing blocks the host. Buffers must be device (or managed) memory on the stream's device;
 * stream must be one the caller created (NULL and the legacy default stream are refused: ranks
 * as threads of one process would wait for each other on it). On the stream: a copy into pinned
 * host memory, a host function that lets the communicator's engine run the operation (in issue
 * order with its other operations), a wait for the engine's completion word, a copy back.
 * Argument errors return before anything is enqueued; without a CUDA driver they return
 * tuttiSystemError naming libcuda.so.1. A failure while the operation runs (a dead peer, a
 * timeout, tutti_comm_abort) still releases the stream, whose later work then sees undefined data
 * in recvbuf; the error is the communicator's async error (tutti_comm_get_async_error) and is in
 * the flight recorder. Inside tutti_group_start/end, a communicator's stream forms are enqueued
 * together when the group ends (one wait on the stream for all of them); they must all be on one
 * stream and not mixed with host forms of the same communicator (tuttiInvalidUsage, nothing
 * enqueued), and tutti_group_end returns once they are enqueued. */
tuttiResult_t tutti_allreduce_stream(const void* sendbuf, void* recvbuf, size_t count,
                                     tuttiDataType_t dtype, tuttiRedOp_t op, tuttiComm_t comm,
                                     tuttiStream_t stream);
tuttiResult_t tutti_reduce_scatter_stream(const void* sendbuf, void* recvbuf, size_t recvcount,
                                          tuttiDataType_t dtype, tuttiRedOp_t op, tuttiComm_t comm,
                                          tuttiStream_t stream);
tuttiResult_t tutti_allgather_stream(const void* sendbuf, void* recvbuf, size_t sendcount,
                                     tuttiDataType_t dtype, tuttiComm_t comm, tuttiStream_t stream);
tuttiResult_t tutti_broadcast_stream(const void* sendbuf, void* recvbuf, size_t count,
                                     tuttiDataType_t dtype, int root, tuttiComm_t comm,
                                     tuttiStream_t stream);
tuttiResult_t tutti_reduce_stream(const void* sendbuf, void* recvbuf, size_t count,
                                  tuttiDataType_t dtype, tuttiRedOp_t op, int root,
                                  tuttiComm_t comm, tuttiStream_t stream);
tuttiResult_t tutti_alltoall_stream(const void* sendbuf, void* recvbuf, size_t count,
                                    tuttiDataType_t dtype, tuttiComm_t comm, tuttiStream_t stream);
tuttiResult_t tutti_send_stream(const void* sendbuf, size_t count, tuttiDataType_t dtype, int peer,
                                tuttiComm_t comm, tuttiStream_t stream);
tuttiResult_t tutti_recv_stream(void* recvbuf, size_t count, tuttiDataType_t dtype, int peer,
                                tuttiComm_t comm, tuttiStream_t stream);

/* Point to point. Inside tutti_group_start/end the sends and receives are issued together when
 * the group ends, so paired send/recv between two ranks cannot deadlock. Outside a group each is a
 * blocking (or async) operation of its own. */
tuttiResult_t tutti_send(const void* sendbuf, size_t count, tuttiDataType_t dtype, int peer,
                         tuttiComm_t comm, tuttiRequest_t* request);
tuttiResult_t tutti_recv(void* recvbuf, size_t count, tuttiDataType_t dtype, int peer,
                         tuttiComm_t comm, tuttiRequest_t* request);
/* Receives count elements from whichever other rank's send comes first, and writes that rank to
 * *source (by the time a request completes). It takes that one message whole, from that rank
 * alone: every other rank's messages stay for later receives. Messages from one rank arrive in
 * the order sent; ranks whose messages have arrived together are taken in turn (looking first
 * at the rank after the one the last receive from any source took from). As MPI_ANY_SOURCE, it
 * matches before any receive issued after it. The message's size must be count elements. count
 * 0 (a send of 0 elements sends nothing to match), source NULL or a communicator of one rank:
 * tuttiInvalidArgument. */
tuttiResult_t tutti_recv_any(void* recvbuf, size_t count, tuttiDataType_t dtype, int* source,
                             tuttiComm_t comm, tuttiRequest_t* request);
tuttiResult_t tutti_group_start(void);
/* Runs the group; with a non-NULL request it completes asynchronously. */
tuttiResult_t tutti_group_end(void);
tuttiResult_t tutti_group_end_async(tuttiRequest_t* request);

/* Requests: test returns tuttiSuccess when done, tuttiInProgress when not, or the error. */
tuttiResult_t tutti_test(tuttiRequest_t request);
tuttiResult_t tutti_wait(tuttiRequest_t request);
/* tuttiTimeout when not done within timeout_ms (the request stays valid and pending). Any
 * timeout_ms >= 0 is honoured: INT64_MAX waits as long as tutti_wait. */
tuttiResult_t tutti_wait_timeout(tuttiRequest_t request, int64_t timeout_ms);
/* Waits for completion, then frees the request. */
tuttiResult_t tutti_request_free(tuttiRequest_t request);

/* Registered host memory (as ncclMemAlloc): page-aligned, zero-filled memory that the other ranks
 * on this host can map. An all-reduce whose send and receive buffers (a reduce-scatter or
 * allgather whose send buffers) lie in such memory on every rank of a one-host communicator reads
 * the peers' buffers in place (algorithm "direct") instead of copying through shared-memory
 * FIFOs: about twice as fast for large messages. Any collective accepts it like other memory.
 * Each allocation holds a file descriptor until freed: allocate few, large, long-lived buffers.
 * Peers that mapped it keep it alive until their communicator is destroyed. bytes 0 is
 * tuttiInvalidArgument; memory the system cannot give, tuttiSystemError. */
tuttiResult_t tutti_mem_alloc(void** ptr, size_t bytes);
/* ptr must be what tutti_mem_alloc returned (tuttiInvalidArgument otherwise); NULL is ignored. */
tuttiResult_t tutti_mem_free(void* ptr);

size_t tutti_type_size(tuttiDataType_t dtype); /* 0 for an invalid type */
const char* tutti_type_name(tuttiDataType_t dtype);
const char* tutti_op_name(tuttiRedOp_t op);

#ifdef __cplusplus
}
#endif

#endif
