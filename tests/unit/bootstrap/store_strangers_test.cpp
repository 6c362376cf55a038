// Strangers on the store's port: each must be dropped and logged at WARN with its address (the
// first few of a burst; the rest summarised), must not slow down real clients meanwhile, and must
// not change the store.
#include <sys/socket.h>

#include <cstring>
#include <regex>
#include <thread>

#include "base/drop_log.hpp"
#include "base/socket.hpp"
#include "helpers.hpp"
#include "runtime/bootstrap/wire.hpp"

namespace tutti::bootstrap {
namespace {

using namespace std::chrono_literals;
using testing::closedWithin;
using testing::errorOf;
using testing::loopback;
using testing::Warnings;
using Clock = std::chrono::steady_clock;

std::string rawHeader(uint32_t magic, uint16_t version, uint16_t type, uint32_t length) {
  std::string header(wire::kHeaderBytes, '\0');
  for (int i = 0; i < 4; ++i) header[i] = static_cast<char>(magic >> (8 * i));
  for (int i = 0; i < 2; ++i) header[4 + i] = static_cast<char>(version >> (8 * i));
  for (int i = 0; i < 2; ++i) header[6 + i] = static_cast<char>(type >> (8 * i));
  for (int i = 0; i < 4; ++i) header[8 + i] = static_cast<char>(length >> (8 * i));
  return header;
}

// A well-formed header of `type` and its payload.
std::string frameOf(wire::Type type, std::string_view payload) {
  return rawHeader(wire::kMagic, wire::kVersion, static_cast<uint16_t>(type),
                   static_cast<uint32_t>(payload.size())) +
         std::string(payload);
}

std::string setFrame(const std::string& key, const std::string& value) {
  ByteWriter payload;
  payload.str(key).str(value);
  return frameOf(wire::Type::kSet, payload.bytes());
}

// The frame that opens every connection: who the stranger says it is.
std::string claimFrame(int rank) {
  return frameOf(wire::Type::kClaim, wire::encodeClaim(Claim{rank, 4, "host s:99", ""}));
}

void send(int fd, const std::string& bytes) {
  writeAll(fd, bytes.data(), bytes.size(), Deadline::after(2s), "server");
}

// A raw connection; the server knows it by its local address.
struct Stranger {
  Fd fd;
  std::string name;
  explicit Stranger(const StoreServer& server)
      : fd(connectTo(server.address(), Deadline::after(2s))),
        name(SockAddr::ofFd(fd.get()).toString()) {}
};

// A connection that proved the secret and said HELLO, then misbehaves.
Stranger insider(const StoreServer& server, const Secret& secret) {
  Stranger s(server);
  send(s.fd.get(), claimFrame(-1));
  authenticateAsClient(s.fd.get(), secret, Deadline::after(2s), "server");
  wire::writeFrame(s.fd.get(), wire::Type::kHello, {}, Deadline::after(2s), "server");
  const auto reply = wire::readFrame(s.fd.get(), false, Deadline::after(2s), 2000ms, "server");
  REQUIRE(reply);
  REQUIRE(reply->type == wire::Type::kOk);
  return s;
}

// A real client does a round trip promptly.
void expectServing(const StoreServer& server, const Secret& secret, const std::string& key) {
  const auto start = Clock::now();
  auto store = connectStore(server.address(), secret, Deadline::after(5s));
  store->set(key, "real");
  CHECK(store->get(key, Deadline::after(1s)) == "real");
  CHECK(Clock::now() - start < 1s);
}

bool visible(const StoreServer& server, const Secret& secret, const std::string& key) {
  return connectStore(server.address(), secret, Deadline::after(5s))->check(key);
}

// What the warnings say about dropped connections: lines of their own, and all of them counted
// (those lines plus the "N more dropped connections" of the summaries).
struct Drops {
  size_t lines = 0;
  size_t total = 0;
};
Drops dropsIn(const std::vector<std::string>& warnings) {
  static const std::regex summary("(\\d+) more dropped connections in the last");
  Drops drops;
  for (const std::string& warning : warnings) {
    std::smatch match;
    if (std::regex_search(warning, match, summary)) {
      drops.total += std::stoul(match[1]);
    } else if (warning.find("dropped connection from") != std::string::npos) {
      ++drops.lines;
      ++drops.total;
    }
  }
  return drops;
}

TEST_CASE("strangers that send nothing are dropped without blocking anyone",
          "[bootstrap][strangers]") {
  Warnings warnings;
  warnings.expect();
  const Secret secret = Secret::random();
  for (const bool withSecret : {true, false}) {
    INFO("server secret " << withSecret);
    const size_t earlier = warnings.all().size();  // the test case's, from the other server
    auto server = StoreServer::start(loopback(), withSecret ? secret : Secret());
    const Secret& mine = withSecret ? secret : Secret();
    std::vector<Stranger> silent;
    for (int i = 0; i < 20; ++i) silent.emplace_back(*server);
    const auto start = Clock::now();
    // While twenty silent connections are open, real clients are served at once.
    for (int i = 0; i < 3; ++i) expectServing(*server, mine, "real/" + std::to_string(i));
    // The silent ones are dropped after the handshake deadline.
    for (Stranger& s : silent) CHECK(closedWithin(s.fd.get(), 9s));
    CHECK(Clock::now() - start >= 4s);
    CHECK(warnings.waitFor({"dropped connection from", "handshake"}, 2s));
    expectServing(*server, mine, "real/after");
    server.reset();  // writes the summary still owed
    // The first few have lines of their own, the rest are counted in a summary.
    const std::vector<std::string> all = warnings.all();
    const Drops drops = dropsIn({all.begin() + static_cast<long>(earlier), all.end()});
    CHECK(drops.lines == DropLog::kBurst);
    CHECK(drops.total == silent.size());
  }
}

TEST_CASE("strangers: a stream of them is summarised, not logged line by line",
          "[bootstrap][strangers]") {
  Warnings warnings;
  warnings.expect();
  auto server = StoreServer::start(loopback(), Secret::random());
  const std::string garbage = claimFrame(2) + std::string(64, '\x5a');
  const size_t strangers = 30;
  for (size_t i = 0; i < strangers; ++i) {
    Stranger s(*server);
    send(s.fd.get(), garbage);
    CHECK(closedWithin(s.fd.get(), 3s));  // refused: counted before the server hung up
  }
  server.reset();
  const Drops drops = dropsIn(warnings.all());
  CHECK(drops.lines == DropLog::kBurst);
  CHECK(drops.total == strangers);
  CHECK(warnings.count({"more dropped connections in the last", "did not prove the job secret"}) ==
        1);
  CHECK(warnings.all().size() == DropLog::kBurst + 1);
}

TEST_CASE("strangers: garbage, wrong secret, huge length", "[bootstrap][strangers]") {
  Warnings warnings;
  warnings.expect();
  const Secret secret = Secret::random();
  auto server = StoreServer::start(loopback(), secret);
  auto silent = Stranger(*server);  // held open through the whole test

  SECTION("garbage bytes, then a well-formed SET") {
    Stranger s(*server);
    std::string garbage(64, '\0');
    for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>(i * 37 + 11);
    send(s.fd.get(), garbage + setFrame("stranger/b", "evil"));
    CHECK(closedWithin(s.fd.get(), 3s));
    CHECK(warnings.waitFor({s.name, "during the handshake", "bad magic"}, 2s));
  }
  SECTION("a claim, then garbage instead of the secret") {
    Stranger s(*server);
    std::string garbage(64, '\0');
    for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>(i * 37 + 11);
    send(s.fd.get(), claimFrame(2) + garbage + setFrame("stranger/b", "evil"));
    CHECK(closedWithin(s.fd.get(), 3s));
    CHECK(warnings.waitFor(
        {s.name, "(claiming rank 2 of 4, host s:99)", "did not prove the job secret"}, 2s));
  }
  SECTION("a client with the wrong secret") {
    Secret wrong = secret;
    wrong.bytes[0] ^= 1;
    const Error error =
        errorOf([&] { connectStore(server->address(), wrong, Deadline::after(5s)); });
    CHECK(error.code() == ErrorCode::kRemote);
    CHECK_THAT(error.what(), Catch::Contains("TUTTI_SECRET"));
    CHECK(warnings.waitFor({"did not prove the job secret"}, 2s));
  }
  SECTION("a client without a secret") {
    const Error error =
        errorOf([&] { connectStore(server->address(), Secret(), Deadline::after(8s)); });
    CHECK(error.code() == ErrorCode::kRemote);
    CHECK(warnings.waitFor({"during the handshake"}, 7s));
  }
  SECTION("a header announcing 4 GiB instead of the handshake") {
    Stranger s(*server);
    send(s.fd.get(), rawHeader(wire::kMagic, wire::kVersion, 2, 0xffffffffu));
    CHECK(closedWithin(s.fd.get(), 8s));
    CHECK(warnings.waitFor({s.name}, 2s));
  }
  SECTION("a header announcing 4 GiB after a good handshake") {
    Stranger s = insider(*server, secret);
    const auto start = Clock::now();
    send(s.fd.get(), rawHeader(wire::kMagic, wire::kVersion, 2, 0xffffffffu) + "stranger/d");
    CHECK(closedWithin(s.fd.get(), 3s));
    CHECK(Clock::now() - start < 2s);  // dropped on the header, not after waiting for 4 GiB
    CHECK(warnings.waitFor({s.name, "4294967295 bytes"}, 2s));
  }
  // Meanwhile, real clients are served and nothing a stranger sent is in the store.
  expectServing(*server, secret, "real");
  CHECK_FALSE(visible(*server, secret, "stranger/b"));
  CHECK_FALSE(visible(*server, secret, "stranger/d"));
}

TEST_CASE("strangers: a huge length against a server without a secret", "[bootstrap][strangers]") {
  Warnings warnings;
  warnings.expect();
  auto server = StoreServer::start(loopback(), Secret());
  Stranger s(*server);
  send(s.fd.get(), rawHeader(wire::kMagic, wire::kVersion, 1, 0xffffffffu));
  CHECK(closedWithin(s.fd.get(), 3s));
  CHECK(warnings.waitFor({s.name, "4294967295 bytes"}, 2s));
  expectServing(*server, Secret(), "real");
}

TEST_CASE("strangers: right secret, bad frames", "[bootstrap][strangers]") {
  Warnings warnings;
  warnings.expect();
  const Secret secret = Secret::random();
  const std::string set = setFrame("stranger/e", "evil");
  const uint16_t setType = static_cast<uint16_t>(wire::Type::kSet);
  std::string longKey = setFrame(std::string(1025, 'k'), "v");
  ByteWriter truncated;
  truncated.str("stranger/e").u8(1);  // the value's length is cut short
  ByteWriter trailing;
  trailing.str("stranger/e").str("evil").u8(0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"bad magic", rawHeader(0x12345678, wire::kVersion, setType, 0) + set},
      {"protocol version 7", rawHeader(wire::kMagic, 7, setType, 0) + set},
      {"unknown type 99", rawHeader(wire::kMagic, wire::kVersion, 99, 0) + set},
      {"unknown type 256", rawHeader(wire::kMagic, wire::kVersion, 0x100, 0) + set},
      {"over the limit of 1024", longKey + set},
      {"truncated", frameOf(wire::Type::kSet, truncated.bytes()) + set},
      {"trailing", frameOf(wire::Type::kSet, trailing.bytes()) + set},
      {"HELLO out of place", rawHeader(wire::kMagic, wire::kVersion, 1, 0) + set},
  };
  // One server per case, so that each gets a line of its own rather than a summary.
  for (const auto& [why, bytes] : cases) {
    INFO(why);
    auto server = StoreServer::start(loopback(), secret);
    Stranger s = insider(*server, secret);
    send(s.fd.get(), bytes);
    CHECK(closedWithin(s.fd.get(), 2s));
    CHECK(warnings.waitFor({"dropped connection from " + s.name, why}, 2s));
    CHECK_FALSE(visible(*server, secret, "stranger/e"));
  }
  auto server = StoreServer::start(loopback(), secret);
  // A frame cut off in the middle of its payload is dropped too (after the frame deadline), but
  // we only check that it does not block others.
  Stranger cut = insider(*server, secret);
  send(cut.fd.get(), set.substr(0, set.size() - 2));
  expectServing(*server, secret, "real");
  CHECK_FALSE(visible(*server, secret, "stranger/e"));
  for (const auto& [why, bytes] : cases) CHECK(warnings.count({why}) == 1);
}

}  // namespace
}  // namespace tutti::bootstrap
