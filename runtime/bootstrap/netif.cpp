// Interface choice, with NCCL_SOCKET_IFNAME's syntax: "eth,ib" keeps interfaces whose names start
// with eth or ib, "^docker,lo" drops those, "=eth0" and "^=eth0" match whole names. Only
// interfaces that are up with an address count (base/net_interfaces.hpp); IPv4 is preferred.
#include <sys/socket.h>

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "base/config.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/net_interfaces.hpp"
#include "runtime/bootstrap/bootstrap.hpp"

namespace tutti::bootstrap {
namespace {

// The first IPv4 address of an interface that `keep` accepts, else the first IPv6 one.
const HostInterface* pick(const std::vector<HostInterface>& interfaces,
                          const std::function<bool(const HostInterface&)>& keep) {
  const HostInterface* v6 = nullptr;
  for (const HostInterface& candidate : interfaces) {
    if (!keep(candidate)) continue;
    if (candidate.address.family() == AF_INET) return &candidate;
    if (!v6) v6 = &candidate;
  }
  return v6;
}

// The local address the kernel would use to reach `peer`: connect() a UDP socket (no packet is
// sent) and read its name. nullopt when there is no route.
std::optional<SockAddr> sourceAddressFor(const SockAddr& peer) {
  Fd fd(socket(peer.family(), SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return std::nullopt;
  SockAddr target = peer;
  if (target.port() <= 0) target.setPort(9);  // any port: UDP connect only picks a route
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&target.storage), target.length) != 0)
    return std::nullopt;
  SockAddr local = SockAddr::ofFd(fd.get());
  local.setPort(0);
  return local;
}

bool startsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

}  // namespace

bool interfaceMatches(const std::string& spec, const std::string& ifname) {
  std::string_view rest = spec;
  const bool exclude = startsWith(rest, "^");
  if (exclude) rest.remove_prefix(1);
  const bool exact = startsWith(rest, "=");
  if (exact) rest.remove_prefix(1);
  bool anyToken = false;
  bool matched = false;
  for (size_t start = 0;;) {
    const size_t comma = rest.find(',', start);
    const std::string_view token =
        rest.substr(start, comma == std::string_view::npos ? rest.npos : comma - start);
    if (!token.empty()) {
      anyToken = true;
      matched = matched || (exact ? ifname == token : startsWith(ifname, token));
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (!anyToken) return true;  // an empty list selects everything, as in NCCL
  return exclude ? !matched : matched;
}

InterfaceSpec InterfaceSpec::fromEnv() {
  return {config::getString("TUTTI_SOCKET_IFNAME"), "TUTTI_SOCKET_IFNAME"};
}

SockAddr chooseAddress(const SockAddr* routeTo) {
  return chooseAddress(InterfaceSpec::fromEnv(), routeTo);
}

SockAddr chooseAddress(const InterfaceSpec& spec, const SockAddr* routeTo) {
  const InterfaceInventory inventory = listInterfaces();
  if (!spec.names.empty()) {
    const HostInterface* chosen = pick(inventory.usable, [&](const HostInterface& candidate) {
      return interfaceMatches(spec.names, candidate.name);
    });
    if (!chosen)
      raise(ErrorCode::kInvalidArgument,
            "{}='{}' matches no interface that is up with an IPv4/IPv6 address; interfaces "
            "here: {}",
            spec.origin, spec.names, inventory.described.empty() ? "none" : inventory.described);
    log::info("bootstrap: using {} on {} ({}={})", chosen->address.host(), chosen->name,
              spec.origin, spec.names);
    return chosen->address;
  }
  if (routeTo) {
    if (auto local = sourceAddressFor(*routeTo)) return *local;
    log::info("bootstrap: no route to {}; choosing an interface by name", routeTo->toString());
  }
  const HostInterface* chosen = pick(inventory.usable, [](const HostInterface& candidate) {
    return !candidate.loopback && !startsWith(candidate.name, "docker");
  });
  if (!chosen)
    chosen =
        pick(inventory.usable, [](const HostInterface& candidate) { return !candidate.loopback; });
  if (!chosen) chosen = pick(inventory.usable, [](const HostInterface&) { return true; });
  if (!chosen)
    raise(ErrorCode::kSystem,
          "no network interface is up with an IPv4/IPv6 address; interfaces "
          "here: {}",
          inventory.described.empty() ? "none" : inventory.described);
  log::info("bootstrap: using {} on {}", chosen->address.host(), chosen->name);
  return chosen->address;
}

}  // namespace tutti::bootstrap
