// HCAs through libibverbs (dlopen'd, as NCCL does): each device's system image GUID and its ports'
// state, link layer and active speed x width, and the HCAs grouped into cards (the PCI functions
// of one dual-port card are one NIC, as NCCL makes them). The device's PCI bus id comes from sysfs
// (/sys/class/infiniband/<name>/device), so that the hwloc reader can attach the ports to its NIC.
#include <endian.h>
#include <fmt/format.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/log.hpp"
#include "topology/device_facts.hpp"
#include "topology/shared_library.hpp"

namespace tutti::topology {
namespace {

// The exported ibv_query_port takes the original (compat) layout of ibv_port_attr, a prefix of
// today's; verbs.h's inline wrapper cannot be reached through dlsym.
using QueryPort = int(ibv_context*, uint8_t, ibv_port_attr*);

struct Verbs {
  SharedLibrary lib{"libibverbs.so.1", "libibverbs.so"};
  ibv_device** (*getDeviceList)(int*) = lib.symbol<ibv_device**(int*)>("ibv_get_device_list");
  void (*freeDeviceList)(ibv_device**) = lib.symbol<void(ibv_device**)>("ibv_free_device_list");
  const char* (*getDeviceName)(ibv_device*) =
      lib.symbol<const char*(ibv_device*)>("ibv_get_device_name");
  ibv_context* (*openDevice)(ibv_device*) =
      lib.symbol<ibv_context*(ibv_device*)>("ibv_open_device");
  int (*closeDevice)(ibv_context*) = lib.symbol<int(ibv_context*)>("ibv_close_device");
  int (*queryDevice)(ibv_context*, ibv_device_attr*) =
      lib.symbol<int(ibv_context*, ibv_device_attr*)>("ibv_query_device");
  QueryPort* queryPort = lib.symbol<QueryPort>("ibv_query_port");

  bool usable() const {
    return getDeviceList && freeDeviceList && getDeviceName && openDevice && closeDevice &&
           queryDevice && queryPort;
  }
};

std::string readLink(const std::string& path) {
  char buffer[512] = {};
  ssize_t n = readlink(path.c_str(), buffer, sizeof(buffer) - 1);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

Hca describe(const Verbs& verbs, ibv_device* device) {
  Hca hca;
  hca.name = verbs.getDeviceName(device);
  hca.busId = busIdFromSysfsLink(readLink("/sys/class/infiniband/" + hca.name + "/device"));
  ibv_context* context = verbs.openDevice(device);
  if (!context) {
    log::info("topology probe: cannot open {}: {}", hca.name, std::strerror(errno));
    return hca;
  }
  ibv_device_attr attr{};
  if (verbs.queryDevice(context, &attr) == 0) {
    // The system image GUID is the card's, shared by its PCI functions (NCCL's guid); the
    // node GUID differs from function to function.
    hca.guid = fmt::format("0x{:x}", be64toh(attr.sys_image_guid));
    for (uint8_t number = 1; number <= attr.phys_port_cnt; ++number) {
      ibv_port_attr port{};
      if (verbs.queryPort(context, number, &port) != 0) continue;
      hca.ports.push_back(HcaPort{number, port.state == IBV_PORT_ACTIVE,
                                  ibPortMbps(port.active_speed, port.active_width),
                                  port.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "IB"});
    }
  }
  verbs.closeDevice(context);
  return hca;
}

}  // namespace

double ibPortMbps(uint8_t activeSpeed, uint8_t activeWidth) {
  // Per lane in Mb/s: SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR (bits 0..7 of active_speed).
  constexpr double kLaneMbps[] = {2500, 5000, 10000, 10000, 14000, 25000, 50000, 100000};
  // Lanes: 1x, 4x, 8x, 12x, 2x (bits 0..4 of active_width).
  constexpr int kLanes[] = {1, 4, 8, 12, 2};
  auto bit = [](unsigned value) { return value ? __builtin_ctz(value) : 64; };
  int speed = bit(activeSpeed), width = bit(activeWidth);
  if (speed >= 8 || width >= 5 || (activeSpeed & (activeSpeed - 1)) ||
      (activeWidth & (activeWidth - 1)))
    return 0;
  return kLaneMbps[speed] * kLanes[width];
}

std::string busIdFromSysfsLink(const std::string& link) {
  std::string busId = link.substr(link.find_last_of('/') + 1);
  std::transform(busId.begin(), busId.end(), busId.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return busId;
}

std::vector<HcaCard> hcaCards(const std::vector<Hca>& hcas) {
  std::vector<const Hca*> sorted;
  for (const Hca& hca : hcas) sorted.push_back(&hca);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Hca* a, const Hca* b) { return a->busId < b->busId; });
  // "0000:0c:00.1" -> "0000:0c:00": the PCI device, whatever the function.
  auto device = [](const std::string& busId) { return busId.substr(0, busId.rfind('.')); };
  std::vector<HcaCard> cards;
  for (const Hca* hca : sorted) {
    auto card = std::find_if(cards.begin(), cards.end(), [&](const HcaCard& card) {
      return !hca->busId.empty() && device(card.busId) == device(hca->busId) &&
             (card.guid.empty() || hca->guid.empty() || card.guid == hca->guid);
    });
    if (card == cards.end()) card = cards.insert(cards.end(), HcaCard{hca->busId, "", {}, {}});
    if (card->guid.empty()) card->guid = hca->guid;
    card->hcas.push_back(hca);
  }
  for (HcaCard& card : cards) {
    int before = 0;  // active ports of the card's HCAs before this one
    for (const Hca* hca : card.hcas) {
      int active = 0;
      for (const HcaPort& port : hca->ports) {
        if (!port.active || port.mbps <= 0) continue;
        std::string busId =
            hca->ports.size() > 1 ? fmt::format("{}:{}", hca->name, port.port) : hca->name;
        card.ports.push_back(
            CardPort{std::move(busId), hca->name, port.port + before, port.mbps, port.linkLayer});
        ++active;
      }
      before += active;
    }
  }
  return cards;
}

std::vector<Hca> probeHcas() {
  static const Verbs verbs;
  if (!verbs.lib.loaded() || !verbs.usable()) {
    log::info("topology probe: libibverbs not found: no HCA ports probed");
    return {};
  }
  int count = 0;
  ibv_device** devices = verbs.getDeviceList(&count);
  if (!devices) return {};
  std::vector<Hca> hcas;
  for (int i = 0; i < count; ++i) hcas.push_back(describe(verbs, devices[i]));
  verbs.freeDeviceList(devices);
  for (const Hca& hca : hcas)
    log::info("topology probe: HCA {} at {} guid {}, {} ports", hca.name, hca.busId, hca.guid,
              hca.ports.size());
  return hcas;
}

}  // namespace tutti::topology
