// hostRendezvous: rank 0 starts the store on the rendezvous address. When the port is taken, a
// bare "Address already in use" leaves the user guessing, and the other ranks would wait for a
// rank that failed: so it finds out who listens there (/proc, for processes it may look at),
// tells that store when it is this job's (a second rank 0: the job fails at once on every rank),
// and says all of it in its own error.
#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "base/error.hpp"
#include "runtime/bootstrap/bootstrap.hpp"

namespace tutti::bootstrap {
namespace {

using namespace std::chrono_literals;

// The socket inode listening on TCP `port` (any address), or "" when none is listed.
std::string listeningInode(int port) {
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      const size_t colon = local.rfind(':');
      if (state != "0A" || colon == std::string::npos) continue;  // 0A: LISTEN
      if (std::stoi(local.substr(colon + 1), nullptr, 16) == port) return inode;
    }
  }
  return {};
}

// "pid 123 (python3)" for the process holding the socket inode, or "" when it cannot be seen.
std::string processHolding(const std::string& inode) {
  const std::string target = "socket:[" + inode + "]";
  std::unique_ptr<DIR, int (*)(DIR*)> proc(opendir("/proc"), closedir);
  if (!proc) return {};
  while (const dirent* entry = readdir(proc.get())) {
    const std::string pid = entry->d_name;
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string fdDir = "/proc/" + pid + "/fd";
    std::unique_ptr<DIR, int (*)(DIR*)> fds(opendir(fdDir.c_str()), closedir);
    if (!fds) continue;  // not ours to look at, or gone
    while (const dirent* fd = readdir(fds.get())) {
      char link[64];
      const std::string path = fdDir + "/" + fd->d_name;
      const ssize_t n = readlink(path.c_str(), link, sizeof(link) - 1);
      if (n <= 0 || std::string(link, static_cast<size_t>(n)) != target) continue;
      std::string name;
      std::getline(std::ifstream("/proc/" + pid + "/comm"), name);
      return "pid " + pid + " (" + name + ")";
    }
  }
  return {};
}

// Who listens on `address`, when it is on this host and /proc shows it; else "".
std::string portOwner(const SockAddr& address) {
  SockAddr anyPort = address;
  anyPort.setPort(0);
  try {
    listenOn(anyPort, 1);  // binds only where the address is this host's
  } catch (const Error&) {
    return {};  // rank 0 was given another host's address: its listener is not in our /proc
  }
  const std::string inode = listeningInode(address.port());
  return inode.empty() || inode == "0" ? std::string() : processHolding(inode);
}

}  // namespace

std::unique_ptr<StoreServer> hostRendezvous(const SockAddr& address, const Secret& secret,
                                            const Claim& self) {
  try {
    return StoreServer::start(address, secret, self.jobId);
  } catch (const Error& error) {
    if (error.code() != ErrorCode::kSystem) throw;
    // Only a listener there makes it "taken"; any other failure to bind keeps its own message.
    try {
      connectTo(address, Deadline::after(500ms));
    } catch (const Error&) {
      throw error;
    }
    const std::string owner = portOwner(address);
    const std::string another = owner.empty() ? "another process" : owner;
    std::string whose;
    try {
      auto store = connectStore(address, secret, Deadline::after(5s), self);
      const bool told = store->reportFailure(
          fmt::format("rank 0 was started twice: rank 0 ({}) found the rendezvous {} already "
                      "served by {}",
                      self.identity, address.toString(), another));
      whose = told ? "it is this job's store, so rank 0 was started twice; the other ranks were "
                     "told"
                   : "it is a tutti store that does not take this job's ranks for its own "
                     "(another job on the same port? set TUTTI_PORT to a free port)";
    } catch (const Error& refused) {
      whose = fmt::format("it is not this job's store ({}); set TUTTI_PORT to a free port",
                          refused.what());
    }
    raise(ErrorCode::kInvalidUsage,
          "rank 0 ({}) cannot host the rendezvous at {}: {} already listens there; {}",
          self.identity, address.toString(), another, whose);
  }
}

}  // namespace tutti::bootstrap
