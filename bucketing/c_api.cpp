// bucketing/c_api.cpp: tutti_bucketing.h over the C++ classes. Exceptions stop here: each
// call returns a code and keeps the message in libtutti's last error for this thread.
#include <memory>
#include <new>
#include <stdexcept>
#include <vector>

#include "bucketing/reducer.hpp"
#include "bucketing/state_sync.hpp"
#include "tutti/tutti.hpp"
#include "tutti/tutti_bucketing.h"

struct tuttiReducer {
  tutti::bucketing::Reducer reducer;
};

namespace {

namespace tb = tutti::bucketing;

// Failures go to libtutti's own per-thread last error, read with tutti_get_last_error, and like
// libtutti's a success leaves it as it was: one convention for both C APIs.
tuttiResult_t failed(tuttiResult_t code, const char* message) {
  tutti_set_last_error(message);
  return code;
}

template <typename Body>
tuttiResult_t guarded(Body&& body) {
  try {
    body();
    return tuttiSuccess;
  } catch (const tutti::CommError& error) {
    return failed(error.code(), error.what());
  } catch (const std::invalid_argument& error) {
    return failed(tuttiInvalidArgument, error.what());
  } catch (const std::bad_alloc&) {
    return failed(tuttiSystemError, "out of memory");
  } catch (const std::exception& error) {
    return failed(tuttiInternalError, error.what());
  }
}

void require(bool condition, const char* what) {
  if (!condition) throw tutti::CommError(tuttiInvalidArgument, what);
}

std::vector<tb::TensorBuffer> tensors(const tuttiTensor* list, size_t count) {
  require(list != nullptr || count == 0, "tensor list is NULL");
  std::vector<tb::TensorBuffer> out;
  for (size_t i = 0; i < count; ++i) {
    const tuttiTensor& tensor = list[i];
    require(tensor.ndim >= 0 && (tensor.shape != nullptr || tensor.ndim == 0),
            "tensor shape is NULL");
    for (int d = 0; d < tensor.ndim; ++d) require(tensor.shape[d] >= 0, "negative dimension");
    require(tutti_type_size(tensor.dtype) != 0, "tensor dtype is invalid");
    out.push_back({tensor.name ? tensor.name : "",
                   {tensor.shape, tensor.shape + tensor.ndim},
                   tensor.dtype,
                   tensor.data});
  }
  return out;
}

std::unique_ptr<tb::CommHook> makeHook(tuttiCommHook_t hook) {
  switch (hook) {
    case tuttiHookNone: return nullptr;
    case tuttiHookAllreduce: return tb::allreduceHook();
    case tuttiHookFp16Compress: return tb::fp16CompressHook();
    case tuttiHookBf16Compress: return tb::bf16CompressHook();
  }
  throw tutti::CommError(tuttiInvalidArgument, "unknown communication hook");
}

}  // namespace

extern "C" {

tuttiResult_t tutti_reducer_create(tuttiComm_t comm, const tuttiTensor* grads, size_t count,
                                   const tuttiReducerConfig* config, tuttiReducer_t* reducer) {
  return guarded([&] {
    require(comm != nullptr && reducer != nullptr, "comm or reducer is NULL");
    tb::ReducerOptions options;
    if (config) {
      if (config->bucket_cap_bytes) options.bucketCapBytes = config->bucket_cap_bytes;
      if (config->first_bucket_bytes) options.firstBucketBytes = config->first_bucket_bytes;
      options.findUnusedParameters = config->find_unused_parameters != 0;
      options.singleBucketFirstIteration = config->multi_bucket_first_iteration == 0;
    }
    *reducer = new tuttiReducer{tb::Reducer(comm, tensors(grads, count), options)};
  });
}

tuttiResult_t tutti_reducer_destroy(tuttiReducer_t reducer) {
  return guarded([&] { delete reducer; });
}

tuttiResult_t tutti_reducer_set_comm_hook(tuttiReducer_t reducer, tuttiCommHook_t hook) {
  return guarded([&] {
    require(reducer != nullptr, "reducer is NULL");
    reducer->reducer.setCommHook(makeHook(hook));
  });
}

tuttiResult_t tutti_reducer_set_sync(tuttiReducer_t reducer, int enabled) {
  return guarded([&] {
    require(reducer != nullptr, "reducer is NULL");
    reducer->reducer.setSyncEnabled(enabled != 0);
  });
}

tuttiResult_t tutti_reducer_prepare(tuttiReducer_t reducer, const size_t* unused,
                                    size_t num_unused) {
  return guarded([&] {
    require(reducer != nullptr && (unused != nullptr || num_unused == 0), "argument is NULL");
    reducer->reducer.prepareForBackward({unused, unused + num_unused});
  });
}

tuttiResult_t tutti_reducer_mark_ready(tuttiReducer_t reducer, size_t param) {
  return guarded([&] {
    require(reducer != nullptr, "reducer is NULL");
    reducer->reducer.markReady(param);
  });
}

tuttiResult_t tutti_reducer_finalize(tuttiReducer_t reducer) {
  return guarded([&] {
    require(reducer != nullptr, "reducer is NULL");
    reducer->reducer.finalize();
  });
}

tuttiResult_t tutti_reducer_get_stats(tuttiReducer_t reducer, tuttiReducerStats* stats,
                                      size_t* bucket_bytes, size_t capacity) {
  return guarded([&] {
    require(reducer != nullptr && stats != nullptr, "reducer or stats is NULL");
    const tb::IterationStats last = reducer->reducer.lastStats();
    *stats = {last.iteration, last.backwardComputeMs, last.commMs, last.exposedCommMs,
              last.bucketBytes.size()};
    for (size_t b = 0; bucket_bytes && b < capacity && b < last.bucketBytes.size(); ++b)
      bucket_bytes[b] = last.bucketBytes[b];
  });
}

tuttiResult_t tutti_params_verify(tuttiComm_t comm, const tuttiTensor* params, size_t count) {
  return guarded([&] {
    require(comm != nullptr, "comm is NULL");
    tb::verifyShapesAcrossRanks(comm, tensors(params, count));
  });
}

tuttiResult_t tutti_params_broadcast(tuttiComm_t comm, const tuttiTensor* params, size_t count,
                                     size_t chunk_bytes) {
  return guarded([&] {
    require(comm != nullptr, "comm is NULL");
    tb::broadcastFromRank0(comm, tensors(params, count),
                           chunk_bytes ? chunk_bytes : tb::kBroadcastChunkBytes);
  });
}

}  // extern "C"
