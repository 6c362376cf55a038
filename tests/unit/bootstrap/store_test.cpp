#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "helpers.hpp"

namespace {
// Set in a forked child only. LeakSanitizer cannot scan the stacks of the threads a child did not
// inherit, so it would report what they hold as leaked; the parent is checked as usual.
volatile int inForkedChild = 0;
}  // namespace

extern "C" int __lsan_is_turned_off() {
  return inForkedChild;
}

namespace tutti::bootstrap {
namespace {

using namespace std::chrono_literals;
using testing::errorOf;
using testing::loopback;
using testing::secretOf;
using testing::Warnings;
using Clock = std::chrono::steady_clock;

std::unique_ptr<Store> connect(const StoreServer& server, const Secret& secret) {
  return connectStore(server.address(), secret, Deadline::after(5s));
}

TEST_CASE("store set, get, add and check from several threads", "[bootstrap][store]") {
  Warnings warnings;
  const Secret secret = Secret::random();
  auto server = StoreServer::start(loopback(), secret);
  CHECK(server->address().port() > 0);
  constexpr int kThreads = 4;
  constexpr int kRounds = 50;
  auto shared = connect(*server, secret);
  std::vector<std::thread> threads;
  std::mutex mutex;
  std::vector<std::string> failures;  // Catch2 assertions are not thread-safe: collect, check later
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        auto own = connect(*server, secret);
        for (int i = 0; i < kRounds; ++i) {
          // Alternate between a private connection and one shared by all threads. Blocking waits
          // go through the private one: a waiting call holds its connection.
          Store& store = i % 2 ? *own : *shared;
          const std::string key = "k/" + std::to_string(t) + "/" + std::to_string(i);
          store.set(key, "value " + key);
          store.add("counter", 1);
          store.add("counter/" + std::to_string(t), 2);
          std::vector<std::string> wrong;
          if (store.get(key, Deadline::after(5s)) != "value " + key) wrong.push_back("get " + key);
          if (!store.check(key)) wrong.push_back("check " + key);
          // Read another thread's key once it exists.
          const std::string other =
              "k/" + std::to_string((t + 1) % kThreads) + "/" + std::to_string(i);
          if (own->get(other, Deadline::after(5s)) != "value " + other)
            wrong.push_back("get " + other);
          std::lock_guard lock(mutex);
          failures.insert(failures.end(), wrong.begin(), wrong.end());
        }
      } catch (const std::exception& error) {
        std::lock_guard lock(mutex);
        failures.push_back(error.what());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(failures == std::vector<std::string>{});
  CHECK(shared->add("counter", 0) == kThreads * kRounds);
  for (int t = 0; t < kThreads; ++t)
    CHECK(shared->add("counter/" + std::to_string(t), 0) == 2 * kRounds);
  CHECK(shared->add("counter", -5) == kThreads * kRounds - 5);
  CHECK_FALSE(shared->check("absent"));
  shared->set("empty", "");
  CHECK(shared->check("empty"));
  CHECK(shared->get("empty", Deadline::after(1s)).empty());
  shared->set("k/0/0", "overwritten");
  CHECK(shared->get("k/0/0", Deadline::after(1s)) == "overwritten");
  CHECK(warnings.all().empty());
}

TEST_CASE("store values: binary, large, over the limits", "[bootstrap][store]") {
  Warnings warnings;
  auto server = StoreServer::start(loopback(), Secret());
  auto store = connect(*server, Secret());
  std::string binary(300, '\0');
  for (size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>(i * 7);
  store->set(std::string("key\0with nul", 12), binary);
  CHECK(store->get(std::string("key\0with nul", 12), Deadline::after(1s)) == binary);
  const std::string big(1 << 20, 'x');
  store->set("big", big);
  CHECK(store->get("big", Deadline::after(5s)) == big);
  const Error tooBig = errorOf([&] { store->set("bigger", big + "y"); });
  CHECK(tooBig.code() == ErrorCode::kInvalidArgument);
  const Error longKey = errorOf([&] { store->set(std::string(1025, 'k'), "v"); });
  CHECK(longKey.code() == ErrorCode::kInvalidArgument);
  // The refused calls sent nothing: the connection still works.
  CHECK(store->check("big"));
  store->set("text", "not a number");
  const Error notInt = errorOf([&] { store->add("text", 1); });
  CHECK(notInt.code() == ErrorCode::kInvalidUsage);
  CHECK_THAT(notInt.what(), Catch::Contains("not an integer"));
  store->add("max", INT64_MAX);
  CHECK(errorOf([&] { store->add("max", 1); }).code() == ErrorCode::kInvalidUsage);
  CHECK(store->add("max", 0) == INT64_MAX);
  CHECK(warnings.all().empty());
}

TEST_CASE("store get waits for a later set", "[bootstrap][store]") {
  Warnings warnings;
  const Secret secret = Secret::random();
  auto server = StoreServer::start(loopback(), secret);
  auto reader = connect(*server, secret);
  auto writer = connect(*server, secret);
  std::string got;
  std::atomic<bool> returned{false};
  const auto start = Clock::now();
  std::thread waiting([&] {
    got = reader->get("later", Deadline::after(10s));
    returned = true;
  });
  std::this_thread::sleep_for(300ms);
  CHECK_FALSE(returned);
  writer->set("later", "here");
  waiting.join();
  const auto waited = Clock::now() - start;
  CHECK(got == "here");
  CHECK(waited >= 250ms);
  CHECK(waited < 5s);
  CHECK(warnings.all().empty());
}

TEST_CASE("store get past its deadline is a timeout naming the key", "[bootstrap][store]") {
  Warnings warnings;
  const Secret secret = Secret::random();
  auto server = StoreServer::start(loopback(), secret);
  auto client = connect(*server, secret);
  const auto start = Clock::now();
  const Error error = errorOf([&] { client->get("missing/key", Deadline::after(400ms)); });
  const auto waited = Clock::now() - start;
  CHECK(error.code() == ErrorCode::kTimeout);
  CHECK_THAT(error.what(), Catch::Contains("missing/key"));
  CHECK(waited >= 350ms);
  CHECK(waited < 3s);
  // The server answered the timeout itself, so the connection is still in step.
  client->set("after", "timeout");
  CHECK(client->get("after", Deadline::after(1s)) == "timeout");
  // A deadline already past still returns a key that exists.
  CHECK(client->get("after", Deadline::after(0ms)) == "timeout");
  CHECK(warnings.all().empty());
}

TEST_CASE("store client against a server that goes away", "[bootstrap][store]") {
  Warnings warnings;
  const Secret secret = Secret::random();
  auto server = StoreServer::start(loopback(), secret);
  auto idle = connect(*server, secret);
  auto waiter = connect(*server, secret);
  std::optional<Error> waiterError;
  std::thread waiting([&] {
    try {
      waiter->get("never", Deadline::after(30s));
    } catch (const Error& error) {
      waiterError = error;
    }
  });
  std::this_thread::sleep_for(200ms);
  const auto start = Clock::now();
  server.reset();  // must not wait for the pending get
  waiting.join();
  CHECK(Clock::now() - start < 3s);
  REQUIRE(waiterError);
  CHECK(waiterError->code() == ErrorCode::kRemote);
  CHECK(errorOf([&] { idle->set("x", "y"); }).code() == ErrorCode::kRemote);
  // A broken connection stays broken, with a clear message.
  const Error again = errorOf([&] { idle->check("x"); });
  CHECK(again.code() == ErrorCode::kRemote);
  CHECK_THAT(again.what(), Catch::Contains("lost earlier"));
  CHECK(warnings.all().empty());
}

TEST_CASE("connectStore waits for a server that starts late", "[bootstrap][store]") {
  SockAddr address;
  {
    auto probe = StoreServer::start(loopback(), Secret());
    address = probe->address();
  }
  const Secret secret = Secret::random();
  std::unique_ptr<StoreServer> late;
  std::thread starter([&] {
    std::this_thread::sleep_for(300ms);
    late = StoreServer::start(address, secret);
  });
  auto store = connectStore(address, secret, Deadline::after(10s));
  starter.join();
  store->set("a", "b");
  CHECK(store->get("a", Deadline::after(1s)) == "b");
  late.reset();
  // Nobody listening at all: a timeout.
  const Error error = errorOf([&] { connectStore(address, secret, Deadline::after(300ms)); });
  CHECK(error.code() == ErrorCode::kTimeout);
}

TEST_CASE("a hosted unique id serves a store until exit", "[bootstrap][store]") {
  Warnings warnings;
  const UniqueId id = createUniqueIdHostedHere();
  CHECK(id.secret.present);
  CHECK(id.port > 0);
  const UniqueId copy = UniqueId::decode(id.encode());
  auto store =
      connectStore(SockAddr::resolve(copy.host, copy.port), copy.secret, Deadline::after(5s));
  store->set("hosted", "yes");
  CHECK(store->get("hosted", Deadline::after(1s)) == "yes");
  // Two ids, two servers, two secrets.
  const UniqueId other = createUniqueIdHostedHere();
  CHECK(other.secret.bytes != id.secret.bytes);
  CHECK((other.port != id.port || other.host != id.host));
  CHECK(warnings.all().empty());
}

TEST_CASE("a forked child with an inherited hosted store exits cleanly", "[bootstrap][store]") {
  const UniqueId id = createUniqueIdHostedHere();
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    inForkedChild = 1;
    // The child has the server objects but not their threads: exit must not try to join them.
    std::exit(0);
  }
  int status = 0;
  const Deadline deadline = Deadline::after(10s);
  pid_t done = 0;
  while ((done = waitpid(child, &status, WNOHANG)) == 0 && !deadline.expired())
    std::this_thread::sleep_for(10ms);
  if (done == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
  }
  CHECK(done == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // The parent's server still serves.
  auto store = connectStore(SockAddr::resolve(id.host, id.port), id.secret, Deadline::after(5s));
  store->set("after fork", "fine");
  CHECK(store->check("after fork"));
}

}  // namespace
}  // namespace tutti::bootstrap
