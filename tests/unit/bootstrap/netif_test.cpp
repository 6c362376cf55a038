#include "helpers.hpp"

namespace tutti::bootstrap {
namespace {

using testing::EnvGuard;
using testing::errorOf;

TEST_CASE("interfaceMatches: NCCL_SOCKET_IFNAME syntax", "[bootstrap][netif]") {
  // Prefixes.
  CHECK(interfaceMatches("eth", "eth0"));
  CHECK(interfaceMatches("eth", "eth"));
  CHECK_FALSE(interfaceMatches("eth", "ib0"));
  CHECK_FALSE(interfaceMatches("eth0", "eth"));
  CHECK(interfaceMatches("eth,ib", "ib1"));
  CHECK(interfaceMatches("eth,ib", "eth12"));
  CHECK_FALSE(interfaceMatches("eth,ib", "enp3s0"));
  // Excluded prefixes.
  CHECK_FALSE(interfaceMatches("^docker,lo", "docker0"));
  CHECK_FALSE(interfaceMatches("^docker,lo", "lo"));
  CHECK_FALSE(interfaceMatches("^docker,lo", "loopy"));
  CHECK(interfaceMatches("^docker,lo", "eth0"));
  // Exact names.
  CHECK(interfaceMatches("=eth0", "eth0"));
  CHECK_FALSE(interfaceMatches("=eth0", "eth01"));
  CHECK_FALSE(interfaceMatches("=eth0", "eth"));
  CHECK(interfaceMatches("=eth0,ib0", "ib0"));
  CHECK_FALSE(interfaceMatches("=eth0,ib0", "ib01"));
  // Excluded exact names.
  CHECK_FALSE(interfaceMatches("^=eth0", "eth0"));
  CHECK(interfaceMatches("^=eth0", "eth01"));
  CHECK(interfaceMatches("^=eth0,lo", "lo0"));
  CHECK_FALSE(interfaceMatches("^=eth0,lo", "lo"));
  // Empty entries are ignored; an empty list selects everything, as in NCCL.
  CHECK(interfaceMatches("eth,,ib,", "ib0"));
  CHECK(interfaceMatches("", "anything"));
  CHECK(interfaceMatches("^", "anything"));
  // "=" after "^" only: a leading "=" then "^" is a prefix "^..." that matches nothing usual.
  CHECK_FALSE(interfaceMatches("=^eth0", "eth0"));
}

TEST_CASE("chooseAddress honours TUTTI_SOCKET_IFNAME", "[bootstrap][netif]") {
  EnvGuard env({"TUTTI_SOCKET_IFNAME"});
  SECTION("lo gives 127.0.0.1 with port 0") {
    env.set("TUTTI_SOCKET_IFNAME", "lo");
    const SockAddr address = chooseAddress(nullptr);
    CHECK(address.host() == "127.0.0.1");
    CHECK(address.port() == 0);
    env.set("TUTTI_SOCKET_IFNAME", "=lo");
    CHECK(chooseAddress(nullptr).host() == "127.0.0.1");
  }
  SECTION("excluding lo never gives loopback") {
    env.set("TUTTI_SOCKET_IFNAME", "^lo");
    try {
      CHECK_FALSE(chooseAddress(nullptr).isLoopback());
    } catch (const Error& error) {
      // A machine with loopback only: the error must still name the variable.
      CHECK_THAT(error.what(), Catch::Contains("TUTTI_SOCKET_IFNAME"));
    }
  }
  SECTION("a name that does not exist") {
    env.set("TUTTI_SOCKET_IFNAME", "nosuchif9");
    const Error error = errorOf([] { chooseAddress(nullptr); });
    CHECK(error.code() == ErrorCode::kInvalidArgument);
    CHECK_THAT(error.what(), Catch::Contains("TUTTI_SOCKET_IFNAME"));
    CHECK_THAT(error.what(), Catch::Contains("nosuchif9"));
    CHECK_THAT(error.what(), Catch::Contains("lo"));  // the interfaces that exist
  }
  SECTION("the routing choice is overridden by the variable") {
    env.set("TUTTI_SOCKET_IFNAME", "=lo");
    const SockAddr remote = SockAddr::resolve("192.0.2.200", 80);
    CHECK(chooseAddress(&remote).host() == "127.0.0.1");
  }
}

TEST_CASE("chooseAddress without TUTTI_SOCKET_IFNAME", "[bootstrap][netif]") {
  EnvGuard env({"TUTTI_SOCKET_IFNAME"});
  SECTION("the interface that routes to a loopback peer is loopback") {
    const SockAddr peer = SockAddr::resolve("127.0.0.1", 1234);
    const SockAddr address = chooseAddress(&peer);
    CHECK(address.host() == "127.0.0.1");
    CHECK(address.port() == 0);
  }
  SECTION("with no peer: some usable address, port 0, bindable") {
    const SockAddr address = chooseAddress(nullptr);
    CHECK(address.port() == 0);
    CHECK_FALSE(address.host().empty());
    CHECK(listenOn(address, 1).valid());
  }
  SECTION("an empty variable means unset") {
    env.set("TUTTI_SOCKET_IFNAME", "");
    CHECK_NOTHROW(chooseAddress(nullptr));
  }
}

}  // namespace
}  // namespace tutti::bootstrap
