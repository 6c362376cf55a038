#include "runtime/peer_info.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <fstream>

#include "base/byte_codec.hpp"
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

std::string PeerInfo::machine() const {
  // hostId is "hostName/bootId/netns" (current()).
  const size_t first = hostId.find('/');
  const size_t second = first == std::string::npos ? first : hostId.find('/', first + 1);
  return second == std::string::npos ? hostId : hostId.substr(first + 1, second - first - 1);
}

std::string PeerInfo::encode() const {
  ByteWriter out;
  out.u32(kRecordVersion)
      .i32(rank)
      .str(hostName)
      .str(hostId)
      .i64(pid)
      .str(agreedSettings)
      .i32(package)
      .i32(numa)
      .i32(core)
      .u64(std::bit_cast<uint64_t>(smpGBs))
      .u64(std::bit_cast<uint64_t>(netGBs))
      .i32(rdmaPorts)
      .u64(ringOrderHash);
  return std::string(out.bytes());
}

PeerInfo PeerInfo::decode(const std::string& bytes, int rank, int from) {
  const std::string what = fmt::format("rank {}: rank {}'s peer record", rank, from);
  ByteReader in(bytes, ErrorCode::kRemote, what);  // keeps a view of `what`
  if (const uint32_t version = in.u32(); version != kRecordVersion)
    in.fail("version {}, this rank's is {} (do they run the same tutti build?)", version,
            kRecordVersion);
  PeerInfo info;
  info.rank = in.i32();
  if (info.rank != from) in.fail("it says rank {}", info.rank);
  // Host names are at most 64 bytes, ids a few dozen; settings a few hundred.
  info.hostName = in.str(1024);
  info.hostId = in.str(1024);
  info.pid = in.i64();
  info.agreedSettings = in.str(64 * 1024);
  info.package = in.i32();
  info.numa = in.i32();
  info.core = in.i32();
  info.smpGBs = std::bit_cast<double>(in.u64());
  info.netGBs = std::bit_cast<double>(in.u64());
  info.rdmaPorts = in.i32();
  info.ringOrderHash = in.u64();
  in.end();
  return info;
}

std::string describe(const PeerInfo& peer) {
  return peer.hostName + ":" + std::to_string(peer.pid);
}

}  // namespace tutti::runtime
