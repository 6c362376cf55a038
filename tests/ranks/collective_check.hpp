// One collective call on one rank, checked against the independent reference (reference.hpp).
// Used alike by the thread-world tests and by the process-world program run under tuttirun.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tutti/tutti.h"

namespace tutti::testing {

enum class Kind {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSendRecv
};
constexpr Kind kAllKinds[] = {Kind::kAllReduce, Kind::kReduceScatter, Kind::kAllGather,
                              Kind::kBroadcast, Kind::kReduce,        Kind::kAllToAll,
                              Kind::kSendRecv};
const char* kindName(Kind kind);

struct Case {
  Kind kind;
  tuttiDataType_t dtype;
  tuttiRedOp_t op;
  size_t count;  // the C API's count for the collective
  int root;
  bool inPlace;
  bool async;
  uint64_t seed;
  bool registered = false;  // buffers from tutti_mem_alloc
};
std::string describe(const Case& c);

// A random case from (rng): counts 0, 1, primes, not divisible by nranks, up to maxBytes per rank,
// raised to minBytes where smaller.
Case randomCase(std::mt19937_64& rng, Kind kind, int nranks, size_t maxBytes, size_t minBytes = 0);

// Where runCase puts a case's buffers instead of host memory (tests/cuda: device memory). The
// host buffers are set up and checked as always; the same bytes go to this memory before the call
// and come back after it. With a stream, the call is the _stream form (a group of them for
// send/recv), waited for with synchronize().
class CaseMemory {
 public:
  virtual ~CaseMemory() = default;
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* data) = 0;
  virtual void upload(void* to, const void* from, size_t bytes) = 0;
  virtual void download(void* to, const void* from, size_t bytes) = 0;
  virtual tuttiStream_t stream() = 0;  // nullptr: the blocking and request forms
  virtual void synchronize() = 0;
  // Called on every rank once its buffers are in place, before the call, and once its results
  // are read, before its buffers go. Ranks as threads of one process on a real GPU meet there:
  // CUDA orders work issued after a device allocation or free behind all work issued before it,
  // so a rank allocating while a peer's kernel waits for it would never launch its own.
  virtual void buffersReady() {}
  virtual void resultsRead() {}
};

// Runs c on this rank of comm; returns "" or what went wrong. `output` receives the bytes the
// rank ended with (for cross-rank comparisons); `callResult` what the call returned, so that a
// caller can tell a failed call (expected under fault injection) from wrong data.
std::string runCase(tuttiComm_t comm, const Case& c, std::vector<char>* output,
                    tuttiResult_t* callResult = nullptr, CaseMemory* memory = nullptr);

}  // namespace tutti::testing
