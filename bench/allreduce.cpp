// Measurement, as all_reduce_perf does it: warm up at the largest and smallest size; then for each
// size and each placement (out-of-place, then in-place): one untimed call, a barrier, `iters` timed
// calls; the time is the mean over ranks of each rank's loop time / iters. Then, with -c, fresh
// inputs, one call, and the wrong elements counted on every rank and summed.
#include "bench/allreduce.hpp"

#include <fmt/format.h>
#include <tutti/tutti.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/check_data.hpp"
#include "bench/report.hpp"
#include "bench/types.hpp"

namespace tutti::bench {
namespace {

void check(tuttiResult_t result, const char* call) {
  if (result == tuttiSuccess) return;
  throw std::runtime_error(fmt::format("{} failed: {}: {}", call, tutti_get_error_string(result),
                                       tutti_get_last_error()));
}

// A communicator that is destroyed on every path out (aborted first when unwinding).
class Comm {
 public:
  Comm() { check(tutti_comm_init_env(&comm_), "tutti_comm_init_env"); }
  ~Comm() {
    if (std::uncaught_exceptions()) tutti_comm_abort(comm_);
    tutti_comm_destroy(comm_);
  }
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  tuttiComm_t get() const { return comm_; }

 private:
  tuttiComm_t comm_ = nullptr;
};

struct Buffer {
  explicit Buffer(size_t bytes)
      : data(static_cast<unsigned char*>(
            std::aligned_alloc(4096, (std::max<size_t>(bytes, 1) + 4095) / 4096 * 4096))) {
    if (!data) throw std::runtime_error("out of memory");
    std::memset(data.get(), 0, bytes);
  }
  struct Free {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  std::unique_ptr<unsigned char, Free> data;
};

template <typename T>
T sumOverRanks(T value, tuttiDataType_t dtype, tuttiComm_t comm) {
  check(tutti_allreduce(&value, &value, 1, dtype, tuttiSum, comm, nullptr), "tutti_allreduce");
  return value;
}

// Every rank's pid, host and local rank, gathered to all (rank 0 prints them).
std::vector<RankInfo> gatherRanks(tuttiComm_t comm, int nranks) {
  struct Wire {
    int32_t pid;
    int32_t localRank;
    char host[56];
  };
  Wire mine{};
  mine.pid = static_cast<int32_t>(getpid());
  int localRank = 0;
  check(tutti_comm_local_rank(comm, &localRank), "tutti_comm_local_rank");
  mine.localRank = localRank;
  gethostname(mine.host, sizeof mine.host - 1);
  std::vector<Wire> all(static_cast<size_t>(nranks));
  check(tutti_allgather(&mine, all.data(), sizeof(Wire), tuttiUint8, comm, nullptr),
        "tutti_allgather");
  std::vector<RankInfo> out;
  for (int r = 0; r < nranks; ++r) {
    const Wire& w = all[static_cast<size_t>(r)];
    out.push_back({r, w.localRank, w.pid, std::string(w.host, strnlen(w.host, sizeof w.host))});
  }
  return out;
}

class AllreduceBench {
 public:
  AllreduceBench(const BenchOptions& options, tuttiComm_t comm, int rank, int nranks)
      : o_(options),
        comm_(comm),
        rank_(rank),
        nranks_(nranks),
        unit_(typeSize(options.dtype)),
        maxBytes_(options.maxBytes / unit_ * unit_),
        send_(maxBytes_),
        recv_(maxBytes_),
        data_(options.dtype, options.op, nranks) {}

  int run() {
    if (o_.check) data_.fillInput(send_.data.get(), maxBytes_ / unit_, rank_);
    for (size_t bytes : {maxBytes_, o_.minBytes / unit_ * unit_}) {
      for (int i = 0; i < o_.warmupIters; ++i) allreduce(bytes / unit_, false);
    }
    if (rank_ == 0) std::fputs(formatTableHeader().c_str(), stdout);
    for (size_t bytes : sweepSizes(o_)) {
      size_t count = bytes / unit_;
      std::string line = formatRowStart(bytes, count, typeName(o_.dtype), opName(o_.op), -1);
      for (bool inPlace : {false, true}) line += formatMeasurement(measure(count, inPlace));
      if (rank_ == 0) std::printf("%s\n", line.c_str());
    }
    if (rank_ == 0) {
      std::fputs(formatFooter(failedChecks_, busBwCount_ ? busBwSum_ / busBwCount_ : 0).c_str(),
                 stdout);
    }
    return failedChecks_ ? 1 : 0;
  }

 private:
  void allreduce(size_t count, bool inPlace) {
    void* recv = recv_.data.get();
    const void* send = inPlace ? recv : send_.data.get();
    check(tutti_allreduce(send, recv, count, o_.dtype, o_.op, comm_, nullptr), "tutti_allreduce");
  }

  Measurement measure(size_t count, bool inPlace) {
    if (o_.check) prepare(count, inPlace);
    allreduce(count, inPlace);
    check(tutti_barrier(comm_, nullptr), "tutti_barrier");
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < o_.iters; ++i) allreduce(count, inPlace);
    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    Measurement m;
    m.seconds = sumOverRanks(elapsed.count() / o_.iters, tuttiFloat64, comm_) / nranks_;
    m.bandwidth = allreduceBandwidth(count * unit_, m.seconds, nranks_);
    busBwSum_ += m.bandwidth.busbw;
    ++busBwCount_;
    if (o_.check) {
      int64_t wrong = 0;
      for (int c = 0; c < o_.check && wrong == 0; ++c) {
        prepare(count, inPlace);
        allreduce(count, inPlace);
        int64_t mine = data_.countWrong(recv_.data.get(), count);
        wrong = sumOverRanks(mine, tuttiInt64, comm_);
      }
      m.wrong = wrong;
      failedChecks_ += wrong != 0;
    }
    return m;
  }

  // Inputs in place: the send buffer (out-of-place, with poison where the result goes) or the
  // receive buffer itself (in-place).
  void prepare(size_t count, bool inPlace) {
    if (inPlace) {
      data_.fillInput(recv_.data.get(), count, rank_);
    } else {
      data_.fillInput(send_.data.get(), count, rank_);
      CheckData::fillPoison(recv_.data.get(), count * unit_);
    }
  }

  const BenchOptions& o_;
  tuttiComm_t comm_;
  int rank_;
  int nranks_;
  size_t unit_;
  size_t maxBytes_;
  Buffer send_, recv_;
  CheckData data_;
  int64_t failedChecks_ = 0;
  double busBwSum_ = 0;
  int busBwCount_ = 0;
};

}  // namespace

int runAllreduce(const BenchOptions& options) {
  Comm comm;
  int rank = 0, nranks = 1;
  check(tutti_comm_rank(comm.get(), &rank), "tutti_comm_rank");
  check(tutti_comm_size(comm.get(), &nranks), "tutti_comm_size");
  std::vector<RankInfo> ranks = gatherRanks(comm.get(), nranks);
  if (rank == 0) {
    for (const auto& note : options.notes) std::fprintf(stderr, "%s\n", note.c_str());
    std::fputs(formatPreamble(options, ranks).c_str(), stdout);
    std::fflush(stdout);
  }
  AllreduceBench bench(options, comm.get(), rank, nranks);
  int status = bench.run();
  std::fflush(stdout);
  return status;
}

}  // namespace tutti::bench
