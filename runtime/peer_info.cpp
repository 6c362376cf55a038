#include "runtime/peer_info.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "base/error.hpp"
#include "base/log.hpp"
#include "runtime/topology_plan.hpp"
#include "topology/rdma_nics.hpp"

namespace tutti::runtime {
namespace {

std::string readLink(const char* path) {
  char buffer[256] = {};
  const ssize_t n = readlink(path, buffer, sizeof(buffer) - 1);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

std::string bootId() {
  std::ifstream file("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(file, id);
  return id;
}

// No RDMA port is what a machine without a readable /sys has, so a failure to read it is not an
// error: the rank simply offers no RDMA.
int usableRdmaPorts(const topology::HcaSelector& selector) {
  try {
    const std::vector<topology::RdmaDevice> devices =
        topology::readRdmaDevices(topology::sysfsRoot(), topology::RdmaCounters::kSkip);
    return static_cast<int>(topology::selectRdmaPorts(devices, selector).size());
  } catch (const Error& error) {
    log::info("RDMA ports unknown: {}", error.what());
    return 0;
  }
}

}  // namespace

PeerInfo PeerInfo::local(int rank, const Settings& settings) {
  PeerInfo info;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  info.rank = rank;
  info.hostName = host;
  info.hostId = info.hostName + "/" + bootId() + "/" + readLink("/proc/self/ns/net");
  info.pid = getpid();
  info.agreedSettings = settings.agreed();
  if (const std::vector<int>& ringOrder = settings.ringOrder;
      !ringOrder.empty()) {  // FNV-1a over the ranks, never 0 (unset)
    uint64_t hash = 14695981039346656037ULL;
    for (int ringRank : ringOrder)
      hash = (hash ^ static_cast<uint32_t>(ringRank)) * 1099511628211ULL;
    info.ringOrderHash = std::max<uint64_t>(hash, 1);
  }
  describePlace(info);
  info.rdmaPorts = usableRdmaPorts(settings.ibHca);
  return info;
}

// One field per line: host names and ids never contain newlines.
std::string PeerInfo::encode() const {
  std::ostringstream out;
  out << rank << '\n'
      << hostName << '\n'
      << hostId << '\n'
      << pid << '\n'
      << agreedSettings << '\n'
      << package << ' ' << numa << ' ' << core << ' ' << smpGBs << ' ' << netGBs << ' ' << rdmaPorts
      << '\n'
      << ringOrderHash << '\n';
  return out.str();
}

PeerInfo PeerInfo::decode(const std::string& text) {
  std::istringstream in(text);
  PeerInfo info;
  std::string line;
  auto next = [&]() -> std::string {
    if (!std::getline(in, line)) raise(ErrorCode::kRemote, "malformed peer record '{}'", text);
    return line;
  };
  try {
    info.rank = std::stoi(next());
    info.hostName = next();
    info.hostId = next();
    info.pid = std::stol(next());
    info.agreedSettings = next();
    std::istringstream place(next());
    if (!(place >> info.package >> info.numa >> info.core >> info.smpGBs >> info.netGBs >>
          info.rdmaPorts))
      raise(ErrorCode::kRemote, "malformed peer record '{}'", text);
    const std::string hash = next();
    size_t used = 0;
    info.ringOrderHash = std::stoull(hash, &used);
    if (used != hash.size()) raise(ErrorCode::kRemote, "malformed peer record '{}'", text);
  } catch (const std::logic_error&) {
    raise(ErrorCode::kRemote, "malformed peer record '{}'", text);
  }
  return info;
}

std::string describe(const PeerInfo& peer) {
  return peer.hostName + ":" + std::to_string(peer.pid);
}

}  // namespace tutti::runtime
