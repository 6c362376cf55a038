#include "tools/tutti-validate/measure.hpp"

#include <fmt/format.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <sstream>

#include "base/net_interfaces.hpp"

namespace tutti::validate {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void send(Comm& comm, const void* data, size_t bytes, int peer) {
  check(tutti_send(data, bytes, tuttiUint8, peer, comm.handle(), nullptr));
}

void recv(Comm& comm, void* data, size_t bytes, int peer) {
  check(tutti_recv(data, bytes, tuttiUint8, peer, comm.handle(), nullptr));
}

// GB/s of a stream from `from` to `to` as the sender sees it, up to the receiver's acknowledgement
// of the last message (0 on the receiving side).
double streamGBs(Comm& comm, std::vector<uint8_t>& buffer, int from, int to,
                 const Workload& workload) {
  uint8_t ack = 0;
  if (comm.rank() == from) {
    const auto start = Clock::now();
    for (int i = 0; i < workload.messages; ++i) send(comm, buffer.data(), buffer.size(), to);
    recv(comm, &ack, 1, to);
    return static_cast<double>(buffer.size()) * workload.messages / secondsSince(start) / 1e9;
  }
  for (int i = 0; i < workload.messages; ++i) recv(comm, buffer.data(), buffer.size(), from);
  send(comm, &ack, 1, from);
  return 0;
}

// Half the mean round trip of 8 bytes, in microseconds, as the lower rank sees it.
double pingPongUs(Comm& comm, int low, int high, const Workload& workload) {
  uint64_t word = 0;
  const bool isLow = comm.rank() == low;
  const int peer = isLow ? high : low;
  const auto start = Clock::now();
  for (int i = 0; i < workload.pingPongs; ++i) {
    if (isLow) {
      send(comm, &word, sizeof word, peer);
      recv(comm, &word, sizeof word, peer);
    } else {
      recv(comm, &word, sizeof word, peer);
      send(comm, &word, sizeof word, peer);
    }
  }
  return isLow ? secondsSince(start) * 1e6 / workload.pingPongs / 2 : 0;
}

// What one rank measured in a round, as every rank gathers it.
struct Measured {
  double sentGBs = 0;    // to its partner
  double latencyUs = 0;  // the lower rank's
};

}  // namespace

std::vector<std::string> gatherText(Comm& comm, const std::string& text) {
  const auto n = static_cast<size_t>(comm.size());
  const uint64_t mine = text.size();
  std::vector<uint64_t> lengths(n);
  check(tutti_allgather(&mine, lengths.data(), 1, tuttiUint64, comm.handle(), nullptr));
  const uint64_t longest = *std::max_element(lengths.begin(), lengths.end());
  std::string padded = text;
  padded.resize(longest);
  std::string all(longest * n, '\0');
  check(tutti_allgather(padded.data(), all.data(), longest, tuttiUint8, comm.handle(), nullptr));
  std::vector<std::string> texts;
  for (size_t rank = 0; rank < n; ++rank)
    texts.push_back(all.substr(rank * longest, lengths[rank]));
  return texts;
}

std::vector<std::string> hostNames(Comm& comm, const std::string& name) {
  char host[256] = {};
  if (name.empty()) gethostname(host, sizeof host - 1);
  std::vector<std::string> names = gatherText(comm, name.empty() ? std::string(host) : name);
  std::map<std::string, int> seen;
  for (const std::string& label : names) ++seen[label];
  for (size_t rank = 0; rank < names.size(); ++rank)
    if (seen[names[rank]] > 1) names[rank] += "#" + std::to_string(rank);
  return names;
}

std::vector<PairResult> measureRounds(Comm& comm, const std::vector<Round>& rounds,
                                      const Workload& workload,
                                      const std::function<void(const std::string&)>& progress) {
  std::vector<uint8_t> buffer(workload.messageBytes, 0x5a);
  std::vector<PairResult> results;
  const int rank = comm.rank();
  std::vector<Measured> gathered(static_cast<size_t>(comm.size()));
  for (size_t r = 0; r < rounds.size(); ++r) {
    progress(fmt::format("round {}/{}: {} pairs", r + 1, rounds.size(), rounds[r].size()));
    Measured mine;
    if (const int partner = partnerIn(rounds[r], rank); partner >= 0) {
      const int low = std::min(rank, partner), high = std::max(rank, partner);
      mine.sentGBs = streamGBs(comm, buffer, low, high, workload) +
                     streamGBs(comm, buffer, high, low, workload);
      mine.latencyUs = pingPongUs(comm, low, high, workload);
    }
    // Measured is two doubles: gathered as doubles.
    check(tutti_allgather(&mine, gathered.data(), 2, tuttiFloat64, comm.handle(), nullptr));
    for (const auto& [a, b] : rounds[r])
      results.push_back({a, b, gathered[static_cast<size_t>(a)].sentGBs,
                         gathered[static_cast<size_t>(b)].sentGBs,
                         gathered[static_cast<size_t>(a)].latencyUs});
  }
  return results;
}

double allreduceBusGBs(Comm& comm, const Workload& workload) {
  std::vector<float> data(workload.allreduceBytes / sizeof(float), 1.0f);
  comm.allreduce(data.data(), data.data(), data.size(), tuttiSum);  // warm-up
  comm.barrier();
  const auto start = Clock::now();
  for (int i = 0; i < workload.allreduceIterations; ++i)
    comm.allreduce(data.data(), data.data(), data.size(), tuttiSum);
  const double seconds = secondsSince(start) / workload.allreduceIterations;
  const double n = comm.size();
  return static_cast<double>(data.size() * sizeof(float)) / seconds / 1e9 * 2 * (n - 1) / n;
}

std::vector<NetInterface> localInterfaces() {
  std::map<std::string, std::string> found;  // name -> its address
  for (const HostInterface& i : listInterfaces().usable) {
    if (i.loopback) continue;
    // An IPv4 address over an IPv6 one, as tutti's sockets take.
    const auto [at, added] = found.emplace(i.name, i.address.host());
    if (!added && i.address.family() == AF_INET && at->second.find(':') != std::string::npos)
      at->second = i.address.host();
  }
  std::vector<NetInterface> interfaces;
  for (const auto& [name, address] : found) interfaces.push_back({name, address});
  return interfaces;
}

std::vector<std::vector<NetInterface>> gatherInterfaces(Comm& comm) {
  // One "name address" line per interface: neither holds a space or a newline.
  std::string mine;
  for (const NetInterface& i : localInterfaces()) mine += i.name + " " + i.address + "\n";
  std::vector<std::vector<NetInterface>> all;
  for (const std::string& text : gatherText(comm, mine)) {
    std::istringstream lines(text);
    NetInterface i;
    auto& host = all.emplace_back();
    while (lines >> i.name >> i.address) host.push_back(i);
  }
  return all;
}

Comm railComm(Comm& comm, const std::string& name) {
  const std::string exactly = "=" + name;
  tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
  config.socket_ifname = exactly.c_str();
  return comm.split(0, comm.rank(), config);
}

}  // namespace tutti::validate
