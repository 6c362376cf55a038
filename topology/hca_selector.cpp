// TUTTI_IB_HCA with NCCL_IB_HCA's meaning (NCCL's parseStringList and matchIfList): '^' first
// inverts the match, '=' next makes it whole-name; entries are device[:port], a device matching by
// prefix otherwise, an entry without a port taking every port. Where NCCL lets a malformed value
// through silently (":x" read as port 0, which matches nothing; "^" alone excluding everything),
// this parser refuses it by name, so a typo cannot switch the NICs off.
#include <algorithm>
#include <cctype>

#include "base/config.hpp"
#include "base/error.hpp"
#include "topology/rdma_nics.hpp"

namespace tutti::topology {
namespace {

constexpr size_t kMaxDeviceName = 63;  // IB_DEVICE_NAME_MAX, less its '\0'

bool isNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

}  // namespace

HcaSelector parseHcaSelector(std::string_view spec, std::string_view variable) {
  HcaSelector selector;
  std::string_view rest = spec;
  auto fail = [&](std::string_view why) {
    raise(ErrorCode::kInvalidArgument,
          "{}='{}': {} (NCCL_IB_HCA's syntax: mlx5_0:1,mlx5_1, "
          "^mlx5_3 excludes, =mlx5_0 matches whole names)",
          variable, spec, why);
  };
  if (rest.empty()) return selector;
  if (rest.front() == '^') {
    selector.exclude = true;
    rest.remove_prefix(1);
  }
  if (!rest.empty() && rest.front() == '=') {
    selector.exact = true;
    rest.remove_prefix(1);
  }
  for (size_t start = 0; start <= rest.size();) {
    size_t comma = rest.find(',', start);
    if (comma == std::string_view::npos) comma = rest.size();
    const std::string_view entry = rest.substr(start, comma - start);
    start = comma + 1;
    if (entry.empty()) continue;  // "mlx5_0," as NCCL reads it
    const size_t colon = entry.find(':');
    HcaSelector::Entry parsed{std::string(entry.substr(0, colon)), -1};
    if (parsed.device.empty()) fail(fmt::format("'{}' names no device", entry));
    auto bad = std::find_if_not(parsed.device.begin(), parsed.device.end(), isNameChar);
    if (bad != parsed.device.end())
      fail(fmt::format("'{}' in device name '{}' (letters, digits, '_', '-', '.')", *bad,
                       parsed.device));
    if (parsed.device.size() > kMaxDeviceName)
      fail(fmt::format("device name '{}...' is longer than {} bytes", parsed.device.substr(0, 16),
                       kMaxDeviceName));
    if (colon != std::string_view::npos) {
      const std::string_view port = entry.substr(colon + 1);
      const bool digits =
          !port.empty() && port.size() <= 3 && std::all_of(port.begin(), port.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c));
          });
      parsed.port = digits ? std::stoi(std::string(port)) : 0;
      if (parsed.port < 1 || parsed.port > 255)
        fail(fmt::format("port '{}' in '{}' is not a port number (1..255)", port, entry));
    }
    selector.entries.push_back(std::move(parsed));
  }
  if (selector.entries.empty()) fail("names no device");
  return selector;
}

HcaSelector hcaSelectorFromEnv() {
  return parseHcaSelector(config::getString("TUTTI_IB_HCA"));
}

bool HcaSelector::selects(std::string_view device, int port) const {
  if (entries.empty()) return true;
  const bool listed = std::any_of(entries.begin(), entries.end(), [&](const Entry& entry) {
    const bool name =
        exact ? device == entry.device : device.substr(0, entry.device.size()) == entry.device;
    return name && (entry.port < 0 || entry.port == port);
  });
  return listed != exclude;
}

std::vector<RdmaPortRef> selectRdmaPorts(const std::vector<RdmaDevice>& devices,
                                         const HcaSelector& selector) {
  std::vector<RdmaPortRef> chosen;
  for (const RdmaDevice& device : devices)
    for (const RdmaPort& port : device.ports)
      if (port.active() && (port.linkLayer == "InfiniBand" || port.linkLayer == "Ethernet") &&
          selector.selects(device.name, port.number))
        chosen.push_back(RdmaPortRef{&device, &port});
  return chosen;
}

}  // namespace tutti::topology
