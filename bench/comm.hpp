// The job as tutti-bench sees it: a communicator set up from the environment, the ranks' identity
// and values combined across ranks. Every failed tutti call throws std::runtime_error.
#pragma once

#include <tutti/tutti.h>

#include <cstdint>
#include <vector>

#include "bench/options.hpp"
#include "bench/report.hpp"

namespace tutti::bench {

void check(tuttiResult_t result, const char* call);

// A communicator that is destroyed on every path out (aborted first when unwinding), and the GPU
// this rank's buffers live on.
class Comm {
 public:
  explicit Comm(const BenchOptions& options);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  tuttiComm_t get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int device() const { return device_; }  // -1: host buffers

  // Every rank's pid, host, local rank and GPU, gathered to all.
  std::vector<RankInfo> gatherRanks() const;
  int64_t sum(int64_t value) const;
  // Each rank's value combined as -a says (rank 0's, the mean, the minimum or the maximum).
  double combine(double value, Aggregate how) const;

 private:
  tuttiComm_t comm_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  int device_ = -1;
};

}  // namespace tutti::bench
