// createUniqueIdHostedHere: a fresh secret, a server on the chosen interface, and a process-wide
// list that keeps every such server alive until exit. At exit an atexit handler stops them (in
// the process that started them only: a forked child has the objects but not their threads, so
// it leaves them alone), before the logger they may still use is destroyed.
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "base/log.hpp"
#include "runtime/bootstrap/bootstrap.hpp"

namespace tutti::bootstrap {
namespace {

struct Hosted {
  std::mutex mutex;
  std::vector<std::pair<pid_t, std::unique_ptr<StoreServer>>> servers;  // (starter pid, server)
};

// Never destroyed: a static destructor could run while another thread still creates an id.
Hosted& hosted() {
  static Hosted* instance = new Hosted;
  return *instance;
}

void stopHostedServers() {
  Hosted& h = hosted();
  std::vector<std::unique_ptr<StoreServer>> ours;
  {
    // try_lock: a forked child may have inherited the mutex locked by a thread it does not have.
    std::unique_lock lock(h.mutex, std::try_to_lock);
    if (!lock) return;
    // Servers inherited through fork stay in the list untouched: their threads are not ours.
    auto& servers = h.servers;
    for (auto it = servers.begin(); it != servers.end();) {
      if (it->first == getpid()) {
        ours.push_back(std::move(it->second));
        it = servers.erase(it);
      } else {
        ++it;
      }
    }
  }
  ours.clear();
}

}  // namespace

UniqueId createUniqueIdHostedHere() {
  // Construct the logger before registering the handler, so that it is destroyed after it runs.
  log::level();
  static const int registered = std::atexit(stopHostedServers);
  (void)registered;

  UniqueId id;
  id.secret = Secret::random();
  SockAddr address = chooseAddress(nullptr);
  address.setPort(0);
  auto server = StoreServer::start(address, id.secret);
  const SockAddr bound = server->address();
  id.host = bound.host();
  id.port = bound.port();
  Hosted& h = hosted();
  std::lock_guard lock(h.mutex);
  h.servers.emplace_back(getpid(), std::move(server));
  return id;
}

}  // namespace tutti::bootstrap
