/* tutti/tutti_bucketing.h: the C ABI of the bucketing layer (bucketing/reducer.hpp,
 * bucketing/state_sync.hpp), defined in libtutti_bucketing. Every function returns a
 * tuttiResult_t; on failure tutti_get_last_error() holds the message (it names the parameter), as
 * for tutti.h's own calls: one last error per thread, which a later success leaves in place. */
#ifndef TUTTI_BUCKETING_H
#define TUTTI_BUCKETING_H

#include <stddef.h>
#include <stdint.h>

#include "tutti/tutti.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tuttiReducer* tuttiReducer_t;

/* A host tensor. name and shape are copied; data is not and must outlive its use. */
typedef struct {
  const char* name;
  const int64_t* shape;
  int ndim;
  tuttiDataType_t dtype;
  void* data;
} tuttiTensor;

/* All zero means PyTorch's defaults. */
typedef struct {
  size_t bucket_cap_bytes;          /* 0: 25 MiB */
  size_t first_bucket_bytes;        /* 0: 1 MiB */
  int find_unused_parameters;       /* parameters may get no gradient; disables the rebuild */
  int multi_bucket_first_iteration; /* 0: one bucket per dtype until the ready order is known */
} tuttiReducerConfig;

typedef enum {
  tuttiHookNone = 0, /* the reducer divides by the world size and sums */
  tuttiHookAllreduce = 1,
  tuttiHookFp16Compress = 2,
  tuttiHookBf16Compress = 3,
} tuttiCommHook_t;

typedef struct {
  int64_t iteration;
  double backward_compute_ms;
  double comm_ms;
  double exposed_comm_ms; /* communication not hidden by backward */
  size_t num_buckets;
} tuttiReducerStats;

/* grads: one float32/float64 gradient buffer per parameter, in declaration order. */
tuttiResult_t tutti_reducer_create(tuttiComm_t comm, const tuttiTensor* grads, size_t count,
                                   const tuttiReducerConfig* config, tuttiReducer_t* reducer);
/* Waits for reductions in flight. */
tuttiResult_t tutti_reducer_destroy(tuttiReducer_t reducer);
/* Before the first iteration, the same on every rank. */
tuttiResult_t tutti_reducer_set_comm_hook(tuttiReducer_t reducer, tuttiCommHook_t hook);
/* 0: no_sync (gradients accumulate locally, no communication). */
tuttiResult_t tutti_reducer_set_sync(tuttiReducer_t reducer, int enabled);
/* unused: parameters without a gradient on this rank (find_unused_parameters only). */
tuttiResult_t tutti_reducer_prepare(tuttiReducer_t reducer, const size_t* unused,
                                    size_t num_unused);
/* Thread-safe. */
tuttiResult_t tutti_reducer_mark_ready(tuttiReducer_t reducer, size_t param);
/* Waits for every bucket; the gradient buffers then hold the averages. */
tuttiResult_t tutti_reducer_finalize(tuttiReducer_t reducer);
/* The last synchronised iteration. bucket_bytes (may be NULL) receives up to capacity sizes. */
tuttiResult_t tutti_reducer_get_stats(tuttiReducer_t reducer, tuttiReducerStats* stats,
                                      size_t* bucket_bytes, size_t capacity);

/* Collective: an error on every rank when the lists differ (count, dtype or shape). */
tuttiResult_t tutti_params_verify(tuttiComm_t comm, const tuttiTensor* params, size_t count);
/* Collective: rank 0's values everywhere, in broadcasts of at most chunk_bytes (0: 250 MiB). */
tuttiResult_t tutti_params_broadcast(tuttiComm_t comm, const tuttiTensor* params, size_t count,
                                     size_t chunk_bytes);

#ifdef __cplusplus
}
#endif

#endif
