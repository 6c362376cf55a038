#include "base/net_interfaces.hpp"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "base/error.hpp"

namespace tutti {

InterfaceInventory listInterfaces() {
  ifaddrs* list = nullptr;
  checkSys(getifaddrs(&list), "getifaddrs");
  InterfaceInventory inventory;
  std::vector<std::string> seen;
  for (const ifaddrs* ifa = list; ifa; ifa = ifa->ifa_next) {
    const std::string name = ifa->ifa_name ? ifa->ifa_name : "?";
    const bool up = (ifa->ifa_flags & IFF_UP) != 0;
    const int family = ifa->ifa_addr ? ifa->ifa_addr->sa_family : AF_UNSPEC;
    bool usable = up && (family == AF_INET || family == AF_INET6);
    HostInterface entry;
    if (usable) {
      entry.name = name;
      entry.address.length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
      std::memcpy(&entry.address.storage, ifa->ifa_addr, entry.address.length);
      entry.address.setPort(0);
      entry.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0 || entry.address.isLoopback();
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(ifa->ifa_addr);
      if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) usable = false;
    }
    if (usable) inventory.usable.push_back(entry);
    if (std::find(seen.begin(), seen.end(), name) == seen.end()) {
      seen.push_back(name);
      if (!inventory.described.empty()) inventory.described += ", ";
      inventory.described += name + (up ? "" : " (down)");
    }
  }
  freeifaddrs(list);
  return inventory;
}

}  // namespace tutti
