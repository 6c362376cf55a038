#include <atomic>
#include <mutex>
#include <thread>

#include "helpers.hpp"

namespace tutti::bootstrap {
namespace {

using namespace std::chrono_literals;
using testing::errorOf;
using testing::loopback;
using testing::Warnings;

constexpr int kRanks = 5;

struct Job {
  Secret secret = Secret::random();
  std::unique_ptr<StoreServer> server = StoreServer::start(loopback(), secret);
  std::vector<std::unique_ptr<Store>> stores;
  Job() {
    for (int rank = 0; rank < kRanks; ++rank)
      stores.push_back(connectStore(server->address(), secret, Deadline::after(5s)));
  }
  // Runs body(rank) on one thread per rank; returns what threw (Catch2 is not thread-safe, so
  // the threads make no assertions themselves).
  std::vector<std::string> run(const std::function<void(int)>& body) {
    std::mutex mutex;
    std::vector<std::string> failures;
    std::vector<std::thread> threads;
    for (int rank = 0; rank < kRanks; ++rank)
      threads.emplace_back([&, rank] {
        try {
          body(rank);
        } catch (const std::exception& error) {
          std::lock_guard lock(mutex);
          failures.push_back("rank " + std::to_string(rank) + ": " + error.what());
        }
      });
    for (auto& thread : threads) thread.join();
    return failures;
  }
};

TEST_CASE("allgather over a store with 5 ranks", "[bootstrap][collectives]") {
  Warnings warnings;
  Job job;
  std::vector<std::vector<std::string>> results(kRanks);
  for (int round = 0; round < 3; ++round) {
    CHECK(job.run([&](int rank) {
      // Different sizes per rank, including an empty value.
      const std::string value =
          std::string(static_cast<size_t>(rank * 100), 'a' + rank) + std::to_string(round);
      results[rank] = allgather(*job.stores[rank], "ag/" + std::to_string(round), rank, kRanks,
                                value, Deadline::after(10s));
    }) == std::vector<std::string>{});
    for (int rank = 0; rank < kRanks; ++rank) {
      REQUIRE(results[rank].size() == kRanks);
      for (int peer = 0; peer < kRanks; ++peer)
        CHECK(results[rank][peer] ==
              std::string(static_cast<size_t>(peer * 100), 'a' + peer) + std::to_string(round));
    }
  }
  CHECK(errorOf([&] { allgather(*job.stores[0], "bad", 5, 5, "", Deadline::after(1s)); }).code() ==
        ErrorCode::kInvalidArgument);
  CHECK(warnings.all().empty());
}

TEST_CASE("allgather with a missing rank times out naming it", "[bootstrap][collectives]") {
  Job job;
  const Error error =
      errorOf([&] { allgather(*job.stores[0], "lonely", 0, 2, "x", Deadline::after(300ms)); });
  CHECK(error.code() == ErrorCode::kTimeout);
  CHECK_THAT(error.what(), Catch::Contains("rank 1"));
}

TEST_CASE("barrier over a store with 5 ranks", "[bootstrap][collectives]") {
  Warnings warnings;
  Job job;
  std::atomic<int> arrived{0};
  std::atomic<int> early{0};
  for (int round = 0; round < 4; ++round) {
    CHECK(job.run([&](int rank) {
      // Stagger arrivals so that a barrier that does not wait would be caught.
      std::this_thread::sleep_for(std::chrono::milliseconds(rank * 20));
      ++arrived;
      barrier(*job.stores[rank], "barrier/" + std::to_string(round), kRanks, Deadline::after(10s));
      if (arrived < (round + 1) * kRanks) ++early;
    }) == std::vector<std::string>{});
  }
  CHECK(early == 0);
  CHECK(warnings.all().empty());
}

TEST_CASE("barrier with a missing rank times out counting arrivals", "[bootstrap][collectives]") {
  Job job;
  std::optional<Error> otherError;
  std::thread other([&] {
    try {
      barrier(*job.stores[1], "short", 3, Deadline::after(400ms));
    } catch (const Error& error) {
      otherError = error;
    }
  });
  const Error error = errorOf([&] { barrier(*job.stores[0], "short", 3, Deadline::after(400ms)); });
  other.join();
  REQUIRE(otherError);
  CHECK(otherError->code() == ErrorCode::kTimeout);
  CHECK(error.code() == ErrorCode::kTimeout);
  CHECK_THAT(error.what(), Catch::Contains("2 of 3 ranks arrived"));
}

}  // namespace
}  // namespace tutti::bootstrap
