#include "tools/tutti-validate/inventory.hpp"

#include <fmt/format.h>

#include <set>
#include <sstream>
#include <stdexcept>

#include "base/config.hpp"

namespace tutti::validate {
namespace {

using topology::NodeKind;

std::string pcieLink(const topology::Node& node) {
  return node.pciWidth > 0 ? fmt::format("x{} {:g} GT/s", node.pciWidth, node.pciGts) : "unknown";
}

constexpr const char* kNone = "(none)";

}  // namespace

Inventory inventoryOf(const topology::Topology& topo,
                      const std::vector<topology::RdmaDevice>& rdma) {
  Inventory inventory;
  auto& facts = inventory.facts;
  facts["NUMA nodes"] = std::to_string(topo.nodesOf(NodeKind::kCpu, 0).size());
  std::set<int> cores;
  for (const topology::Pu& pu : topo.pus) cores.insert(pu.core);
  if (!cores.empty()) facts["cores"] = std::to_string(cores.size());
  for (const auto& [kind, label] : {std::pair{NodeKind::kGpu, "GPU"}, {NodeKind::kNic, "NIC"}}) {
    const std::vector<int> ids = topo.nodesOf(kind, 0);
    facts[std::string(label) + "s"] = std::to_string(ids.size());
    for (int id : ids) {
      const topology::Node& node = topo.node(id);
      facts[fmt::format("{} {} PCIe", label, node.busId)] = pcieLink(node);
    }
  }
  for (int id : topo.nodesOf(NodeKind::kNet, 0)) {
    const topology::Node& port = topo.node(id);
    double gbs = 0;
    for (int link : topo.linksFrom(id)) gbs = std::max(gbs, topo.links()[link].bw);
    facts[fmt::format("port {}:{}", port.name, port.port)] =
        fmt::format("{} {:g} GB/s", port.linkLayer.empty() ? "net" : port.linkLayer, gbs);
  }
  for (const topology::RdmaDevice& device : rdma)
    for (const topology::RdmaPort& port : device.ports) {
      facts[fmt::format("RDMA {}:{}", device.name, port.number)] =
          fmt::format("{} {}", port.stateName, port.rate);
      for (const topology::RdmaCounter& counter : port.errors())
        inventory.errors.push_back(
            fmt::format("{}:{} {} {}", device.name, port.number, counter.name, counter.value));
    }
  return inventory;
}

Inventory localInventory() {
  const std::string file = config::getString("TUTTI_TOPO_FILE");
  const topology::Topology topo = file.empty() ? topology::probeHost(topology::ProbeScope::kFull)
                                               : topology::loadTopologyFile(file);
  return inventoryOf(topo, topology::probeRdmaDevices());
}

std::string encodeInventory(const Inventory& inventory) {
  std::string text;
  for (const auto& [key, value] : inventory.facts) text += "F\t" + key + "\t" + value + "\n";
  for (const std::string& error : inventory.errors) text += "E\t" + error + "\n";
  return text;
}

Inventory decodeInventory(const std::string& text) {
  Inventory inventory;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t tab = line.find('\t');
    if (line.rfind("E\t", 0) == 0) {
      inventory.errors.push_back(line.substr(2));
    } else if (const size_t second = line.find('\t', tab + 1);
               line.rfind("F\t", 0) == 0 && second != std::string::npos) {
      inventory.facts[line.substr(2, second - 2)] = line.substr(second + 1);
    } else {
      throw std::runtime_error("a malformed inventory line from a peer: '" + line + "'");
    }
  }
  return inventory;
}

std::vector<Finding> compareInventories(const std::vector<Inventory>& hosts,
                                        const Inventory* expected) {
  std::set<std::string> keys;
  if (expected)
    for (const auto& fact : expected->facts) keys.insert(fact.first);
  else
    for (const Inventory& host : hosts)
      for (const auto& fact : host.facts) keys.insert(fact.first);
  auto valueOf = [](const Inventory& inventory, const std::string& key) {
    const auto found = inventory.facts.find(key);
    return found == inventory.facts.end() ? std::string(kNone) : found->second;
  };
  std::vector<std::string> differences(hosts.size());
  for (const std::string& key : keys) {
    std::string want;
    std::string why;
    if (expected) {
      want = valueOf(*expected, key);
      why = "the expected topology";
    } else {
      std::map<std::string, size_t> votes;
      for (const Inventory& host : hosts) ++votes[valueOf(host, key)];
      size_t most = 0;
      for (const auto& [value, count] : votes)
        if (count > most) most = count, want = value;
      // No majority, no verdict: a split is reported as a difference of every minority only.
      if (most * 2 <= hosts.size()) continue;
      why = fmt::format("as {} of {} hosts", most, hosts.size());
    }
    for (size_t h = 0; h < hosts.size(); ++h)
      if (const std::string have = valueOf(hosts[h], key); have != want)
        differences[h] += fmt::format("{}{} {}, expected {} ({})",
                                      differences[h].empty() ? "" : "; ", key, have, want, why);
  }
  std::vector<Finding> findings;
  for (size_t h = 0; h < hosts.size(); ++h) {
    if (!differences[h].empty())
      findings.push_back(
          {Finding::Kind::kInventory, static_cast<int>(h), -1, "inventory: " + differences[h]});
    if (!hosts[h].errors.empty()) {
      std::string errors;
      for (const std::string& error : hosts[h].errors)
        errors += (errors.empty() ? "" : ", ") + error;
      findings.push_back({Finding::Kind::kInventory, static_cast<int>(h), -1,
                          "RDMA error counters not zero: " + errors});
    }
  }
  return findings;
}

}  // namespace tutti::validate
