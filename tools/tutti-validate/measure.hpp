// The measurements, collective over every rank of the job (one rank is one host): each round's
// pairs measure at once, one-way bandwidth in each direction (a stream of messages, then a
// one-byte acknowledgement) and latency (ping-pong of 8 bytes); every rank then holds every pair's
// results. And the all-reduce's bus bandwidth over all ranks.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "tools/tutti-validate/pairing.hpp"
#include "tools/tutti-validate/verdict.hpp"
#include "tutti/tutti.hpp"

namespace tutti::validate {

struct Workload {
  size_t messageBytes = 16 << 20;  // per message of the bandwidth stream
  int messages = 4;                // per direction and pair
  int pingPongs = 50;
  size_t allreduceBytes = 64 << 20;
  int allreduceIterations = 5;
};

// Every rank's `text`, in rank order.
std::vector<std::string> gatherText(Comm& comm, const std::string& text);
// Every rank's host label (the host name, or the given one), "#rank" added where two are equal.
std::vector<std::string> hostNames(Comm& comm, const std::string& name);
// Measures `rounds` (the same on every rank); `progress` hears "round 3/7".
std::vector<PairResult> measureRounds(Comm& comm, const std::vector<Round>& rounds,
                                      const Workload& workload,
                                      const std::function<void(const std::string&)>& progress);
// The all-reduce's bus bandwidth in GB/s (nccl-tests' busbw: algbw x 2(n-1)/n).
double allreduceBusGBs(Comm& comm, const Workload& workload);
// This host's network interfaces that could carry a rail: up, not loopback, with an IPv4 or a
// routable IPv6 address (an IPv4 one where it has both), by name: the bootstrap's listing
// (base/net_interfaces.hpp).
std::vector<NetInterface> localInterfaces();
// Every rank's interfaces, in rank order.
std::vector<std::vector<NetInterface>> gatherInterfaces(Comm& comm);
// A communicator of every rank of `comm` whose TCP connections use interface `name` on every
// host (tutti_comm_split_config's socket_ifname): one rail. Collective.
Comm railComm(Comm& comm, const std::string& name);

}  // namespace tutti::validate
