// What every rank tells the others at init: who it is, where it runs, how it is configured.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/settings.hpp"
#include "transport/registry.hpp"

namespace tutti::runtime {

struct PeerInfo {
  int rank = 0;
  std::string hostName;
  // Host identity: host name, boot id and network namespace. Ranks in different network
  // namespaces count as different hosts, so namespace "hosts" talk TCP as real ones would.
  std::string hostId;
  long pid = 0;
  // Settings that must agree on every rank, as "VARIABLE=value" words (Settings::agreed()), and
  // the ring's order; a mismatch is an error naming them.
  std::string agreedSettings;
  uint64_t ringOrderHash = 0;  // TUTTI_RING_ORDER's ranks, hashed (0: unset, planned from places)
  // Where it runs and its host's links, from the topology (runtime/topology_plan.hpp): -1 and 0
  // where unknown.
  int package = -1, numa = -1, core = -1;
  double smpGBs = 0;  // the host's slowest CPU interconnect link (0: one NUMA node)
  double netGBs = 0;  // the host's fastest network port
  // RDMA ports this rank may use (active, InfiniBand or RoCE, chosen by TUTTI_IB_HCA), from sysfs.
  int rdmaPorts = 0;

  // The machine it runs on: hostId's boot id, which the network namespaces and containers of one
  // machine share (with its GPUs); hostId whole where it has no such part.
  std::string machine() const;

  // What decides which transports reach this rank.
  transport::Reach reach() const { return {hostId, rdmaPorts}; }

  // The byte codec's form (base/byte_codec.hpp), versioned so that ranks of different builds are
  // told apart instead of misread.
  static constexpr uint32_t kRecordVersion = 1;
  std::string encode() const;
  // Rank `from`'s record as rank `rank` reads it; kRemote naming both when malformed, of another
  // version or of another rank.
  static PeerInfo decode(const std::string& bytes, int rank, int from);
  static PeerInfo local(int rank, const Settings& settings);
};

// "host:pid", for messages.
std::string describe(const PeerInfo& peer);

}  // namespace tutti::runtime
