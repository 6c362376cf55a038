// The store's bounds: keys and bytes are capped, so that nobody who reaches the port of a job
// without a secret can grow rank 0's memory without end. Real server, real sockets.
#include "helpers.hpp"

namespace tutti::bootstrap {
namespace {

using namespace std::chrono_literals;
using testing::errorOf;
using testing::loopback;
using testing::Warnings;

std::unique_ptr<Store> connect(const StoreServer& server) {
  return connectStore(server.address(), Secret(), Deadline::after(5s));
}

std::string keyOf(size_t i) {
  return "fill/" + std::to_string(1000 + i);  // all the same length
}

// SETs `value` under fresh keys until one is refused; returns how many were stored.
size_t fillUntilRefused(Store& store, const std::string& value, size_t most) {
  for (size_t i = 0; i < most; ++i) {
    try {
      store.set(keyOf(i), value);
    } catch (const Error& error) {
      CHECK(error.code() == ErrorCode::kInvalidUsage);
      CHECK_THAT(error.what(),
                 Catch::Contains("the bootstrap store is full: SET of key '" + keyOf(i) + "'"));
      return i;
    }
  }
  return most;
}

TEST_CASE("store limits: a stranger's 1 MiB values stop at the default byte limit",
          "[bootstrap][limits]") {
  Warnings warnings;
  warnings.expect();
  auto server = StoreServer::start(loopback(), Secret());
  auto stranger = connect(*server);
  const std::string mib(size_t{1} << 20, 'x');
  const StoreLimits limits;
  const size_t entry = keyOf(0).size() + mib.size() + StoreLimits::kEntryBytes;
  const size_t fits = limits.maxBytes / entry;
  CHECK(fits < 300);  // the 300 SETs once seen growing a store by 300 MB
  CHECK(fillUntilRefused(*stranger, mib, 300) == fits);
  // Refused again and again, but logged once on the store's side.
  for (int i = 0; i < 3; ++i) CHECK_THROWS(stranger->set("more/" + std::to_string(i), mib));
  CHECK(warnings.count({"the bootstrap store is full", "later refusals are not logged"}) == 1);
  CHECK(warnings.all().size() == 1);
  // The store still serves: what it holds, small updates of existing keys, and waits.
  auto rank = connect(*server);
  CHECK(rank->get(keyOf(0), Deadline::after(1s)) == mib);
  rank->set(keyOf(0), "small");
  CHECK(rank->get(keyOf(0), Deadline::after(1s)) == "small");
  rank->set("abort", "1");  // freed room takes a new key again
  CHECK(rank->check("abort"));
}

TEST_CASE("store limits: keys and bytes, counted exactly", "[bootstrap][limits]") {
  Warnings warnings;
  warnings.expect();
  SECTION("key count") {
    StoreLimits limits;
    limits.maxKeys = 10;
    auto server = StoreServer::start(loopback(), Secret(), "", limits);
    auto store = connect(*server);
    CHECK(fillUntilRefused(*store, "v", 100) == 10);
    store->set(keyOf(3), "overwritten");  // not a new key
    const Error error = errorOf([&] { store->add("n", 1); });
    CHECK_THAT(error.what(), Catch::Contains("ADD of key 'n'"));
  }
  SECTION("bytes, with ADD counted too") {
    StoreLimits limits;
    limits.maxBytes = 1000;
    auto server = StoreServer::start(loopback(), Secret(), "", limits);
    auto store = connect(*server);
    const std::string value(100, 'v');
    const size_t entry = keyOf(0).size() + value.size() + StoreLimits::kEntryBytes;
    CHECK(fillUntilRefused(*store, value, 100) == 1000 / entry);
    const std::string longKey(1000, 'n');
    const Error error = errorOf([&] { store->add(longKey, 7); });
    CHECK_THAT(error.what(), Catch::Contains("ADD of key 'nnn"));
  }
  CHECK(warnings.count({"the bootstrap store is full"}) == 1);
}

}  // namespace
}  // namespace tutti::bootstrap
