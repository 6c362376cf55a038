#include "bench/comm.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "bench/buffer.hpp"

namespace tutti::bench {

void check(tuttiResult_t result, const char* call) {
  if (result == tuttiSuccess) return;
  throw std::runtime_error(fmt::format("{} failed: {}: {}", call, tutti_get_error_string(result),
                                       tutti_get_last_error()));
}

Comm::Comm(const BenchOptions& options) {
  check(tutti_comm_init_env(&comm_), "tutti_comm_init_env");
  check(tutti_comm_rank(comm_, &rank_), "tutti_comm_rank");
  check(tutti_comm_size(comm_, &size_), "tutti_comm_size");
  int localRank = 0;
  check(tutti_comm_local_rank(comm_, &localRank), "tutti_comm_local_rank");
  try {
    device_ = bufferDevice(options, localRank);
  } catch (...) {
    tutti_comm_abort(comm_);
    tutti_comm_destroy(comm_);
    throw;
  }
}

Comm::~Comm() {
  if (std::uncaught_exceptions()) tutti_comm_abort(comm_);
  tutti_comm_destroy(comm_);
}

std::vector<RankInfo> Comm::gatherRanks() const {
  struct Wire {
    int32_t pid;
    int32_t localRank;
    int32_t device;
    char host[52];
  };
  Wire mine{};
  mine.pid = static_cast<int32_t>(getpid());
  int localRank = 0;
  check(tutti_comm_local_rank(comm_, &localRank), "tutti_comm_local_rank");
  mine.localRank = localRank;
  mine.device = device_;
  gethostname(mine.host, sizeof mine.host - 1);
  std::vector<Wire> all(static_cast<size_t>(size_));
  check(tutti_allgather(&mine, all.data(), sizeof(Wire), tuttiUint8, comm_, nullptr),
        "tutti_allgather");
  std::vector<RankInfo> out;
  for (int r = 0; r < size_; ++r) {
    const Wire& w = all[static_cast<size_t>(r)];
    out.push_back(
        {r, w.localRank, w.pid, std::string(w.host, strnlen(w.host, sizeof w.host)), w.device});
  }
  return out;
}

int64_t Comm::sum(int64_t value) const {
  check(tutti_allreduce(&value, &value, 1, tuttiInt64, tuttiSum, comm_, nullptr),
        "tutti_allreduce");
  return value;
}

double Comm::combine(double value, Aggregate how) const {
  if (how == Aggregate::kRank0) {
    check(tutti_broadcast(&value, &value, 1, tuttiFloat64, 0, comm_, nullptr), "tutti_broadcast");
    return value;
  }
  const tuttiRedOp_t op = how == Aggregate::kMin   ? tuttiMin
                          : how == Aggregate::kMax ? tuttiMax
                                                   : tuttiAvg;
  check(tutti_allreduce(&value, &value, 1, tuttiFloat64, op, comm_, nullptr), "tutti_allreduce");
  return value;
}

}  // namespace tutti::bench
