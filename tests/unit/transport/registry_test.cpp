// The transport registry and TUTTI_TRANSPORT's selection: which transport joins which pair of
// ranks, and every malformed selection refused naming the variable and the word at fault.
#include "transport/registry.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "base/error.hpp"

using namespace tutti;
using namespace tutti::transport;

namespace {

const Reach kHostA{"a/boot/net:[1]"};
const Reach kHostASameNamespace{"a/boot/net:[1]"};
const Reach kHostB{"b/boot/net:[1]"};
const Reach kHostAOtherNamespace{"a/boot/net:[2]"};
const Reach kRdmaHostA{"a/boot/net:[1]", 2};
const Reach kRdmaHostB{"b/boot/net:[1]", 1};

const char* chosen(const std::string& text, const Reach& a, const Reach& b) {
  const TransportKind* kind = TransportSelection::parse(text).choose(a, b);
  // Both ends must reach the same verdict, or one would connect and the other not.
  const TransportKind* reverse = TransportSelection::parse(text).choose(b, a);
  CHECK(kind == reverse);
  return kind ? kind->name : "none";
}

std::string refusal(const std::string& text) {
  try {
    TransportSelection::parse(text);
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::kInvalidArgument);
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("registry: auto joins a host's ranks by shm and hosts by tcp", "[transport][registry]") {
  for (const std::string text : {"", "auto"}) {
    CHECK(chosen(text, kHostA, kHostASameNamespace) == std::string("shm"));
    CHECK(chosen(text, kHostA, kHostB) == std::string("tcp"));
    // Another network namespace is another host: no shared memory is assumed.
    CHECK(chosen(text, kHostA, kHostAOtherNamespace) == std::string("tcp"));
  }
}

TEST_CASE("registry: a list is tried in its order, ^ leaves transports out",
          "[transport][registry]") {
  CHECK(chosen("tcp", kHostA, kHostASameNamespace) == std::string("tcp"));
  CHECK(chosen("tcp,shm", kHostA, kHostASameNamespace) == std::string("tcp"));
  CHECK(chosen("shm,tcp", kHostA, kHostASameNamespace) == std::string("shm"));
  CHECK(chosen("shm", kHostA, kHostB) == std::string("none"));
  CHECK(chosen("^tcp", kHostA, kHostASameNamespace) == std::string("shm"));
  CHECK(chosen("^tcp", kHostA, kHostB) == std::string("none"));
  CHECK(chosen("^shm", kHostA, kHostASameNamespace) == std::string("tcp"));
  CHECK(TransportSelection::parse("^shm").text() == "^shm");
  CHECK(TransportSelection::parse("").text() == "auto");
  CHECK(TransportSelection().describe() == "shm, ucx, tcp");
}

TEST_CASE("registry: auto takes ucx between hosts that both have RDMA, a list wherever it reaches",
          "[transport][registry]") {
  CHECK(chosen("auto", kRdmaHostA, kRdmaHostB) == std::string(ucxBuilt() ? "ucx" : "tcp"));
  CHECK(chosen("auto", kRdmaHostA, kHostB) == std::string("tcp"));
  CHECK(chosen("auto", kRdmaHostA, kRdmaHostA) == std::string("shm"));
  CHECK(chosen("^shm", kRdmaHostA, kRdmaHostA) == std::string("tcp"));
  CHECK(chosen("ucx", kHostA, kHostASameNamespace) == std::string("ucx"));
  CHECK(chosen("ucx,tcp", kHostA, kHostB) == std::string("ucx"));
}

TEST_CASE("registry: every transport it lists can be made and named", "[transport][registry]") {
  REQUIRE(transportKinds().size() >= 2);
  for (const TransportKind* kind : transportKinds()) {
    CHECK(TransportSelection::parse(kind->name).describe() == kind->name);
    CHECK(kind->reaches(kHostA, kHostB) == kind->reaches(kHostB, kHostA));
  }
  CHECK_THROWS_WITH(registerTransport(*transportKinds().front()),
                    "a transport named 'shm' is registered already");
}

TEST_CASE("registry: malformed selections are refused naming the word", "[transport][registry]") {
  CHECK(refusal("udp") == "TUTTI_TRANSPORT='udp': 'udp' is not a transport (known: shm, ucx, tcp)");
  CHECK(refusal("SHM") == "TUTTI_TRANSPORT='SHM': 'SHM' is not a transport (known: shm, ucx, tcp)");
  CHECK(refusal("shm,,tcp") == "TUTTI_TRANSPORT='shm,,tcp' has an empty item");
  CHECK(refusal("shm,") == "TUTTI_TRANSPORT='shm,' has an empty item");
  CHECK(refusal("^") == "TUTTI_TRANSPORT='^' has an empty item");
  CHECK(refusal("tcp,tcp") == "TUTTI_TRANSPORT='tcp,tcp' names 'tcp' twice");
  CHECK(refusal("auto,tcp") == "TUTTI_TRANSPORT='auto,tcp': auto stands alone, not in a list");
  CHECK(refusal("^shm,ucx,tcp") ==
        "TUTTI_TRANSPORT='^shm,ucx,tcp' excludes every transport (shm, ucx, tcp)");
  CHECK(refusal("shm tcp") ==
        "TUTTI_TRANSPORT='shm tcp': 'shm tcp' is not a transport (known: shm, ucx, tcp)");
}
