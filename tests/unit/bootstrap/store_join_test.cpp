#include <sys/socket.h>

#include <atomic>
#include <future>
#include <thread>

#include "helpers.hpp"
#include "runtime/bootstrap/wire.hpp"

namespace tutti::bootstrap {
namespace {

using namespace std::chrono_literals;
using testing::EnvGuard;
using testing::errorOf;
using testing::loopback;
using testing::Warnings;
using Clock = std::chrono::steady_clock;

struct Job {
  Secret secret = Secret::random();
  std::unique_ptr<StoreServer> server = StoreServer::start(loopback(), secret);
  std::unique_ptr<Store> client() {
    return connectStore(server->address(), secret, Deadline::after(5s));
  }
};

// A JOIN to a server without a secret over a connection from `source`: another loopback
// address plays another host. Returns the reply frame.
wire::Frame joinFrom(const std::string& source, const StoreServer& server, int rank, int nranks) {
  const std::string what = "store";
  const Deadline deadline = Deadline::after(10s);
  Fd fd(checkSys(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), "socket"));
  const SockAddr local = SockAddr::resolve(source, 0);
  checkSys(bind(fd.get(), reinterpret_cast<const sockaddr*>(&local.storage), local.length), "bind");
  const SockAddr to = server.address();
  checkSys(connect(fd.get(), reinterpret_cast<const sockaddr*>(&to.storage), to.length), "connect");
  wire::writeFrame(fd.get(), wire::Type::kClaim, wire::encodeClaim(Claim{rank, nranks, source, ""}),
                   deadline, what);
  wire::writeFrame(fd.get(), wire::Type::kHello, {}, deadline, what);
  REQUIRE(wire::readFrame(fd.get(), false, deadline, 10s, what)->type == wire::Type::kOk);
  ByteWriter join;
  join.i32(rank).i32(nranks).str("host " + source).u64(10'000);
  wire::writeFrame(fd.get(), wire::Type::kJoin, join.bytes(), deadline, what);
  return *wire::readFrame(fd.get(), false, deadline, 10s, what);
}

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
  Warnings warnings;
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
  CHECK(warnings.all().empty());
}

TEST_CASE("join: a missing rank is a timeout naming it", "[bootstrap][join]") {
  Warnings warnings;
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
  CHECK(warnings.all().empty());
}

TEST_CASE("join: a rank joining twice fails the whole job", "[bootstrap][join]") {
  Warnings warnings;
  warnings.expect();
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
  CHECK(warnings.all().size() == 1);
}

TEST_CASE("join: a world size mismatch fails the whole job", "[bootstrap][join]") {
  Warnings warnings;
  warnings.expect();
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
  Warnings warnings;
  warnings.expect();
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
  CHECK(warnings.all().size() == 2);  // one failure per job, logged once
}

TEST_CASE("join: without a secret, a conflicting JOIN is refused and the job goes on",
          "[bootstrap][join]") {
  Warnings warnings;
  warnings.expect();
  auto server = StoreServer::start(loopback(), Secret());
  const auto client = [&] {
    return connectStore(server->address(), Secret(), Deadline::after(5s));
  };
  auto a = client();
  auto b = client();
  auto stranger = client();
  auto joinA = inThread([&] { a->join(0, 2, "host a pid 1", Deadline::after(20s)); });
  std::this_thread::sleep_for(200ms);
  // Another world size (a second job on the port), then a rank already taken.
  const Error mismatch =
      errorOf([&] { stranger->join(1, 3, "host s pid 9", Deadline::after(5s)); });
  CHECK(mismatch.code() == ErrorCode::kInvalidUsage);
  CHECK_THAT(mismatch.what(),
             Catch::Contains("claiming rank 1 of 3 (host s pid 9) was refused: world size "
                             "mismatch: rank 1 says 3, rank 0 says 2"));
  CHECK_THAT(mismatch.what(), Catch::Contains("goes on"));
  const Error twice = errorOf([&] { stranger->join(0, 2, "host s pid 9", Deadline::after(5s)); });
  CHECK_THAT(twice.what(), Catch::Contains("was refused: rank 0 joined twice"));
  // The real rank 1 completes the world, and the store keeps serving everyone.
  b->join(1, 2, "host b pid 2", Deadline::after(10s));
  CHECK_FALSE(joinA.get());
  b->set("w/aborted", "1");
  CHECK(a->get("w/aborted", Deadline::after(1s)) == "1");
  CHECK(warnings.all().empty());
}

TEST_CASE("join: a timeout quotes the JOIN refused meanwhile", "[bootstrap][join]") {
  auto server = StoreServer::start(loopback(), Secret());
  auto a = connectStore(server->address(), Secret(), Deadline::after(5s));
  auto stranger = connectStore(server->address(), Secret(), Deadline::after(5s));
  auto joinA = inThread([&] { a->join(0, 2, "host a pid 1", Deadline::after(1500ms)); });
  std::this_thread::sleep_for(200ms);
  CHECK_THROWS(stranger->join(1, 3, "host s pid 9", Deadline::after(5s)));
  const auto error = joinA.get();
  REQUIRE(error);
  CHECK(error->code() == ErrorCode::kTimeout);
  CHECK_THAT(error->what(),
             Catch::Contains("missing: 1; meanwhile a JOIN from 127.0.0.1 claiming rank 1 of 3 "
                             "(host s pid 9) was refused: world size mismatch"));
}

TEST_CASE("join: a job without a secret that spans hosts is warned about once",
          "[bootstrap][join]") {
  Warnings warnings;
  warnings.expect();
  auto server = StoreServer::start(loopback(), Secret());
  auto there = inThread([&] {
    const wire::Frame reply = joinFrom("127.0.0.2", *server, 1, 2);
    if (reply.type != wire::Type::kOk) raise(ErrorCode::kRemote, "JOIN from 127.0.0.2 failed");
  });
  const wire::Frame here = joinFrom("127.0.0.1", *server, 0, 2);
  CHECK(here.type == wire::Type::kOk);
  CHECK_FALSE(there.get());
  CHECK(warnings.count({"this job spans 2 hosts and has no secret", "TUTTI_SECRET"}) == 1);
  CHECK(warnings.all().size() == 1);
}

// A secured job's ranks, each connected with its claim.
std::unique_ptr<Store> member(const Job& job, int rank, int nranks) {
  return connectStore(job.server->address(), job.secret, Deadline::after(5s),
                      Claim{rank, nranks, "host h:" + std::to_string(rank), ""});
}

TEST_CASE("join: a connection that claims a rank without the secret cannot fail the job",
          "[bootstrap][join][init_failures]") {
  Warnings warnings;
  warnings.expect();
  Job job;
  auto a = member(job, 0, 3);
  auto b = member(job, 1, 3);
  auto joinA = inThread([&] { a->join(0, 3, "host h:0", Deadline::after(20s)); });
  auto joinB = inThread([&] { b->join(1, 3, "host h:1", Deadline::after(20s)); });
  Secret wrong = job.secret;
  wrong.bytes[5] ^= 1;
  const Error refused = errorOf([&] {
    connectStore(job.server->address(), wrong, Deadline::after(5s), Claim{2, 3, "host x:7", ""});
  });
  CHECK_THAT(refused.what(), Catch::Contains("TUTTI_SECRET"));
  // The real rank 2 still joins, and the world completes.
  member(job, 2, 3)->join(2, 3, "host h:2", Deadline::after(10s));
  CHECK_FALSE(joinA.get());
  CHECK_FALSE(joinB.get());
  CHECK(warnings.count({"(claiming rank 2 of 3, host x:7)", "did not prove the job secret"}) == 1);
}

TEST_CASE("join: the waiters' timeout names the refused connection that claimed a missing rank",
          "[bootstrap][join][init_failures]") {
  Warnings warnings;
  warnings.expect();
  Job job;
  auto a = member(job, 0, 3);
  auto joinA = inThread([&] { a->join(0, 3, "host h:0", Deadline::after(2s)); });
  CHECK_THROWS(connectStore(job.server->address(), Secret(), Deadline::after(8s),
                            Claim{2, 3, "host x:7", ""}));
  const auto error = joinA.get();
  REQUIRE(error);
  CHECK(error->code() == ErrorCode::kTimeout);
  CHECK_THAT(error->what(), Catch::Contains("missing: 1, 2; meanwhile a connection from 127.0.0.1 "
                                            "claiming rank 2 of 3 (host x:7) was refused"));
}

TEST_CASE("join: a member's failure report fails every waiting rank at once",
          "[bootstrap][join][init_failures]") {
  Warnings warnings;
  warnings.expect();
  Job job;
  auto a = member(job, 0, 3);
  auto joinA = inThread([&] { a->join(0, 3, "host h:0", Deadline::after(60s)); });
  std::this_thread::sleep_for(200ms);
  const std::string why = "rank 0 was started twice: rank 0 (host h:9) found ...";
  CHECK(member(job, 0, 3)->reportFailure(why));
  const auto error = joinA.get();  // at once, not after 60 s: a hang fails the suite's limit
  REQUIRE(error);
  CHECK(error->code() == ErrorCode::kInvalidUsage);
  CHECK(std::string(error->what()) == why);
  CHECK(warnings.count({"the job failed", why}) == 1);
}

TEST_CASE("join: without a secret, the launcher's job id tells members from strangers",
          "[bootstrap][join][init_failures]") {
  Warnings warnings;
  warnings.expect();
  const std::string jobId = "PMIX_NAMESPACE=4242";
  auto server = StoreServer::start(loopback(), Secret(), jobId);
  const auto connect = [&](int rank, int nranks, const std::string& id) {
    return connectStore(server->address(), Secret(), Deadline::after(5s),
                        Claim{rank, nranks, "host h:" + std::to_string(rank), id});
  };
  // Another job's rank, and an unnamed one, even when they come first: refused, and they fix
  // nothing (the world size stays for the job's own first JOIN).
  for (const std::string& other : {std::string("PMIX_NAMESPACE=1"), std::string()}) {
    auto stranger = connect(1, 3, other);
    CHECK_THAT(errorOf([&] { stranger->join(1, 3, "host s:1", Deadline::after(5s)); }).what(),
               Catch::Contains("was refused: it is not of this job"));
    CHECK_FALSE(stranger->reportFailure("stop"));
  }
  auto a = connect(0, 2, jobId);
  auto joinA = inThread([&] { a->join(0, 2, "host h:0", Deadline::after(60s)); });
  std::this_thread::sleep_for(200ms);
  // The job's own rank with another world size: the job fails at once, on every rank.
  auto ours = connect(1, 3, jobId);
  const std::string expected = "world size mismatch: rank 1 says 3, rank 0 says 2";
  CHECK(errorOf([&] { ours->join(1, 3, "host h:1", Deadline::after(5s)); }).what() == expected);
  const auto error = joinA.get();
  REQUIRE(error);
  CHECK(std::string(error->what()) == expected);
}

TEST_CASE("connectStore: nobody listening is reported after TUTTI_RENDEZVOUS_WAIT, not the timeout",
          "[bootstrap][init_failures]") {
  EnvGuard env;
  env.set("TUTTI_RENDEZVOUS_WAIT", "1");
  int port = 0;
  {
    const Fd probe = listenOn(loopback(), 1);
    port = SockAddr::ofFd(probe.get()).port();
  }  // closed: nobody listens there now
  const SockAddr nobody = SockAddr::resolve("127.0.0.1", port);
  const Error error = errorOf([&] {
    connectStore(nobody, Secret(), Deadline::after(30s), Claim{1, 2, "", ""});
  });
  CHECK(error.code() == ErrorCode::kTimeout);
  CHECK_THAT(error.what(),
             Catch::Contains("nobody is listening at 127.0.0.1:" + std::to_string(port) +
                             " (rank 0 not started or exited)"));
}

}  // namespace
}  // namespace tutti::bootstrap
