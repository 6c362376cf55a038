// This host's network interfaces as tutti's sockets see them: up, with an IPv4 or IPv6 address,
// IPv6 link-local ones left out (they need a scope that a numeric host cannot carry, as NCCL
// skips them). The bootstrap picks its address from them; tutti-validate its rails.
#pragma once

#include <string>
#include <vector>

#include "base/socket.hpp"

namespace tutti {

struct HostInterface {
  std::string name;
  SockAddr address;  // port 0
  bool loopback = false;
};

struct InterfaceInventory {
  std::vector<HostInterface> usable;  // one entry per address, in getifaddrs' order
  std::string described;  // every interface with its state ("eth0, eth1 (down)"), for messages
};

// getifaddrs' interfaces; kSystem when it fails.
InterfaceInventory listInterfaces();

}  // namespace tutti
