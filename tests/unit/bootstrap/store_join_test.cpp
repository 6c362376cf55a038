#include <atomic>
#include <future>
#include <thread>

#include "helpers.hpp"

namespace tutti::bootstrap {
namespace {

using namespace std::chrono_literals;
using testing::errorOf;
using testing::loopback;
using testing::WarnCatcher;
using Clock = std::chrono::steady_clock;

struct Job {
  Secret secret = Secret::random();
  std::unique_ptr<StoreServer> server = StoreServer::start(loopback(), secret);
  std::unique_ptr<Store> client() {
    return connectStore(server->address(), secret, Deadline::after(5s));
  }
};

// Runs `body` on a thread; the future holds the Error it threw, or nullopt.
std::future<std::optional<Error>> inThread(std::function<void()> body) {
  return std::async(std::launch::async, [body = std::move(body)]() -> std::optional<Error> {
    try {
      body();
    } catch (const Error& error) {
      return error;
    }
    return std::nullopt;
  });
}

TEST_CASE("join: four ranks meet, nobody returns before the last", "[bootstrap][join]") {
  WarnCatcher warnings;
  Job job;
  std::vector<std::unique_ptr<Store>> stores;
  for (int rank = 0; rank < 4; ++rank) stores.push_back(job.client());
  std::atomic<int> returned{0};
  std::vector<std::future<std::optional<Error>>> joins;
  for (int rank = 0; rank < 3; ++rank)
    joins.push_back(inThread([&, rank] {
      stores[rank]->join(rank, 4, "host h pid " + std::to_string(rank), Deadline::after(10s));
      ++returned;
    }));
  std::this_thread::sleep_for(300ms);
  CHECK(returned == 0);
  stores[3]->join(3, 4, "host h pid 3", Deadline::after(10s));
  for (auto& join : joins) CHECK_FALSE(join.get());
  CHECK(returned == 3);
  // The joined connections carry on as stores.
  stores[0]->set("after", "join");
  CHECK(stores[3]->get("after", Deadline::after(1s)) == "join");
  CHECK(warnings.warnings().empty());
}

TEST_CASE("join: a missing rank is a timeout naming it", "[bootstrap][join]") {
  WarnCatcher warnings;
  Job job;
  auto a = job.client();
  auto b = job.client();
  auto first = inThread([&] { a->join(0, 3, "host a pid 1", Deadline::after(500ms)); });
  const Error error = errorOf([&] { b->join(2, 3, "host b pid 2", Deadline::after(500ms)); });
  CHECK(error.code() == ErrorCode::kTimeout);
  CHECK_THAT(error.what(), Catch::Contains("2 of 3 ranks joined"));
  CHECK_THAT(error.what(), Catch::Contains("missing: 1"));
  const auto other = first.get();
  REQUIRE(other);
  CHECK(other->code() == ErrorCode::kTimeout);
  CHECK(warnings.warnings().empty());
}

TEST_CASE("join: a rank joining twice fails the whole job", "[bootstrap][join]") {
  WarnCatcher warnings;
  Job job;
  auto a = job.client();
  auto b = job.client();
  auto c = job.client();
  auto bystander = job.client();
  const std::string expected = "rank 1 joined twice: host a pid 10 and host b pid 11";
  SECTION("an earlier joiner blocked in get") {
    auto joinA = inThread([&] { a->join(0, 2, "host z pid 9", Deadline::after(10s)); });
    b->join(1, 2, "host a pid 10", Deadline::after(10s));
    REQUIRE_FALSE(joinA.get());
    auto blocked = inThread([&] { a->get("never/set", Deadline::after(20s)); });
    std::this_thread::sleep_for(200ms);
    const auto start = Clock::now();
    const Error newcomer = errorOf([&] { c->join(1, 2, "host b pid 11", Deadline::after(10s)); });
    CHECK(newcomer.code() == ErrorCode::kInvalidUsage);
    CHECK_THAT(newcomer.what(), Catch::Contains(expected));
    const auto earlier = blocked.get();
    CHECK(Clock::now() - start < 3s);
    REQUIRE(earlier);
    CHECK(earlier->code() == ErrorCode::kInvalidUsage);
    CHECK_THAT(earlier->what(), Catch::Contains(expected));
  }
  SECTION("an earlier joiner still waiting in join") {
    auto joinB = inThread([&] { b->join(1, 3, "host a pid 10", Deadline::after(20s)); });
    std::this_thread::sleep_for(200ms);
    const Error newcomer = errorOf([&] { c->join(1, 3, "host b pid 11", Deadline::after(10s)); });
    CHECK(newcomer.code() == ErrorCode::kInvalidUsage);
    CHECK_THAT(newcomer.what(), Catch::Contains(expected));
    const auto earlier = joinB.get();
    REQUIRE(earlier);
    CHECK(earlier->code() == ErrorCode::kInvalidUsage);
    CHECK_THAT(earlier->what(), Catch::Contains(expected));
  }
  // Every later call of every client gets the same error: nobody hangs on a failed job.
  for (const auto& call : std::vector<std::function<void()>>{
           [&] { bystander->get("anything", Deadline::after(10s)); },
           [&] { bystander->join(0, 2, "host c pid 12", Deadline::after(10s)); },
           [&] { bystander->set("k", "v"); },
           [&] { bystander->add("k", 1); },
           [&] { bystander->check("k"); },
           [&] { job.client()->get("x", Deadline::after(10s)); },
       }) {
    const Error later = errorOf(call);
    CHECK(later.code() == ErrorCode::kInvalidUsage);
    CHECK_THAT(later.what(), Catch::Contains(expected));
  }
  CHECK(warnings.count({"job failed", expected}) == 1);
  CHECK(warnings.warnings().size() == 1);
}

TEST_CASE("join: a world size mismatch fails the whole job", "[bootstrap][join]") {
  WarnCatcher warnings;
  Job job;
  auto a = job.client();
  auto b = job.client();
  const std::string expected = "world size mismatch: rank 3 says 5, rank 0 says 4";
  auto joinA = inThread([&] { a->join(0, 4, "host a pid 1", Deadline::after(20s)); });
  std::this_thread::sleep_for(200ms);
  const auto start = Clock::now();
  const Error newcomer = errorOf([&] { b->join(3, 5, "host b pid 2", Deadline::after(10s)); });
  CHECK(newcomer.code() == ErrorCode::kInvalidUsage);
  CHECK_THAT(newcomer.what(), Catch::Contains(expected));
  const auto earlier = joinA.get();
  CHECK(Clock::now() - start < 3s);
  REQUIRE(earlier);
  CHECK(earlier->code() == ErrorCode::kInvalidUsage);
  CHECK_THAT(earlier->what(), Catch::Contains(expected));
  CHECK(warnings.count({expected}) == 1);
}

TEST_CASE("join: a rank out of range fails the job", "[bootstrap][join]") {
  WarnCatcher warnings;
  Job job;
  auto a = job.client();
  const Error error = errorOf([&] { a->join(4, 4, "host a pid 1", Deadline::after(5s)); });
  CHECK(error.code() == ErrorCode::kInvalidUsage);
  CHECK_THAT(error.what(), Catch::Contains("rank 4 (host a pid 1) is out of range"));
  const Error later = errorOf([&] { job.client()->join(0, 4, "x", Deadline::after(5s)); });
  CHECK_THAT(later.what(), Catch::Contains("rank 4 (host a pid 1) is out of range"));
  Job job2;
  const Error zero =
      errorOf([&] { job2.client()->join(0, 0, "host a pid 1", Deadline::after(5s)); });
  CHECK(zero.code() == ErrorCode::kInvalidUsage);
  CHECK_THAT(zero.what(), Catch::Contains("invalid world size 0"));
  CHECK(warnings.warnings().size() == 2);  // one failure per job, logged once
}

}  // namespace
}  // namespace tutti::bootstrap
