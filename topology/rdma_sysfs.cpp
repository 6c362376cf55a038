// RDMA devices read from sysfs, as the kernel's ABI documents them
// (Documentation/ABI/stable/sysfs-class-infiniband): <root>/class/infiniband/<dev> links to the
// device under <root>/devices, its `device` link to the PCI function (whose path names the
// bridges above it, and whose numa_node is the NIC's), ports/<n>/{state, phys_state, rate,
// link_layer, gids/0, gid_attrs/types/0}, and the port counters: counters/ (the IB PMA's
// PortCounters; "N/A (no PMA)" where the device has none, as iWARP NICs) and hw_counters/ (the
// driver's, under the port, the device or both). Every value is checked against the form the kernel
// writes; a value of another form is skipped with a note, so a fixture or a driver with odd files
// costs a field, not the probe.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "base/config.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "topology/device_facts.hpp"
#include "topology/rdma_nics.hpp"

namespace tutti::topology {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxFileBytes = 4096;  // one sysfs page

bool isHex(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) != 0;
}

// `groups` groups of 4 hex digits joined by ':' (GUIDs 4, GIDs 8).
bool isHexGroups(std::string_view text, size_t groups) {
  if (text.size() != groups * 5 - 1) return false;
  for (size_t i = 0; i < text.size(); ++i)
    if (i % 5 == 4 ? text[i] != ':' : !isHex(text[i])) return false;
  return true;
}

// "0000:5e:00.1": domain, bus, device, function in hex.
bool isPciBusId(std::string_view text) {
  if (text.size() != 12 || text[4] != ':' || text[7] != ':' || text[10] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11})
    if (!isHex(text[i])) return false;
  return true;
}

std::optional<int64_t> parseInteger(std::string_view text) {
  if (text.empty()) return std::nullopt;
  const std::string copy(text);
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(copy.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' ||
      !(std::isdigit(static_cast<unsigned char>(copy[0])) || (copy[0] == '-' && copy.size() > 1)))
    return std::nullopt;
  return value;
}

std::optional<uint64_t> parseCount(std::string_view text) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      }))
    return std::nullopt;
  const std::string copy(text);
  errno = 0;
  const unsigned long long value = std::strtoull(copy.c_str(), nullptr, 10);
  if (errno != 0) return std::nullopt;
  return value;
}

// "4: ACTIVE", "5: LinkUp", "7: Phy Test".
bool parseNumbered(std::string_view text, int& number, std::string& name) {
  const size_t colon = text.find(": ");
  if (colon == std::string_view::npos || colon + 2 >= text.size()) return false;
  auto value = parseInteger(text.substr(0, colon));
  if (!value || *value < 0 || *value > 255) return false;
  number = static_cast<int>(*value);
  name = text.substr(colon + 2);
  return true;
}

// "100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X)", "12.5 Gb/sec (1X EDR)" -> Mb/s.
std::optional<double> parseRate(std::string_view text) {
  const size_t unit = text.find(" Gb/sec");
  if (unit == std::string_view::npos || unit == 0) return std::nullopt;
  const std::string number(text.substr(0, unit));
  if (!std::all_of(number.begin(), number.end(),
                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; }))
    return std::nullopt;
  char* end = nullptr;
  const double gbs = std::strtod(number.c_str(), &end);
  if (*end != '\0' || gbs < 0 || gbs > 1e6) return std::nullopt;
  return gbs * 1000;
}

// One device's or port's directory; every file is read through it, and what cannot be read or
// parsed is noted in `skipped` as "<path relative to the device>: why".
class SysfsDir {
 public:
  SysfsDir(fs::path dir, std::string prefix, std::vector<std::string>& skipped)
      : dir_(std::move(dir)), prefix_(std::move(prefix)), skipped_(skipped) {}

  // The file's first line, trailing white space trimmed; nullopt when the file is absent (not
  // noted: kernels and drivers differ in what they write) or cannot be read (noted).
  std::optional<std::string> line(const std::string& name) {
    const fs::path path = dir_ / name;
    std::error_code error;
    if (!fs::exists(path, error)) return std::nullopt;
    // O_NONBLOCK: a FIFO where a file belongs reads as empty instead of waiting for a writer.
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return skip(name, std::strerror(errno));
    char buffer[kMaxFileBytes];
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    const int readError = errno;
    close(fd);
    if (n < 0) return skip(name, std::strerror(readError));
    std::string text(buffer, static_cast<size_t>(n));
    text = text.substr(0, text.find('\n'));
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    if (text.empty()) return skip(name, "empty");
    if (!std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; }))
      return skip(name, "not text");
    return text;
  }

  std::nullopt_t skip(const std::string& name, std::string_view why) {
    skipped_.push_back(fmt::format("{}{}: {}", prefix_, name, why));
    return std::nullopt;
  }
  std::nullopt_t unexpected(const std::string& name, std::string_view text, std::string_view form) {
    return skip(name, fmt::format("'{}' is not {}", text, form));
  }

  const fs::path& path() const { return dir_; }

 private:
  fs::path dir_;
  std::string prefix_;
  std::vector<std::string>& skipped_;
};

// The names of a directory's entries, sorted; none when it is absent or unreadable.
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The counters of `group` (counters or hw_counters) below a port's or device's directory;
// returns false when they read "N/A (no PMA)".
bool readCounters(SysfsDir& dir, const std::string& group, bool hw, std::vector<RdmaCounter>& out) {
  bool pma = true;
  for (const std::string& name : entries(dir.path() / group)) {
    const std::string file = group + "/" + name;
    auto text = dir.line(file);
    if (!text) continue;
    if (*text == "N/A (no PMA)") {
      pma = false;
      continue;
    }
    auto value = parseCount(*text);
    if (!value) {
      dir.unexpected(file, *text, "a count");
      continue;
    }
    out.push_back(RdmaCounter{name, *value, hw, isRdmaErrorCounter(name)});
  }
  return pma;
}

std::vector<RdmaCounter> nonZeroErrors(const std::vector<RdmaCounter>& counters) {
  std::vector<RdmaCounter> out;
  for (const RdmaCounter& counter : counters)
    if (counter.error && counter.value != 0) out.push_back(counter);
  return out;
}

RdmaPort readPort(const fs::path& dir, int number, RdmaCounters counters,
                  std::vector<std::string>& skipped) {
  RdmaPort port;
  port.number = number;
  SysfsDir files(dir, fmt::format("ports/{}/", number), skipped);
  if (auto text = files.line("state"); text && !parseNumbered(*text, port.state, port.stateName))
    files.unexpected("state", *text, "'<number>: <state>'");
  if (auto text = files.line("phys_state");
      text && !parseNumbered(*text, port.physState, port.physStateName))
    files.unexpected("phys_state", *text, "'<number>: <state>'");
  if (auto text = files.line("rate")) {
    if (auto mbps = parseRate(*text)) {
      port.rate = *text;
      port.mbps = *mbps;
    } else {
      files.unexpected("rate", *text, "'<number> Gb/sec (...)'");
    }
  }
  if (auto text = files.line("link_layer")) port.linkLayer = *text;
  if (auto text = files.line("gids/0")) {
    if (isHexGroups(*text, 8))
      port.gid0 = *text;
    else
      files.unexpected("gids/0", *text, "a GID");
  }
  if (auto text = files.line("gid_attrs/types/0")) {
    if (*text == "IB/RoCE v1" || *text == "RoCE v2")
      port.gid0Type = *text;
    else
      files.unexpected("gid_attrs/types/0", *text, "'IB/RoCE v1' or 'RoCE v2'");
  }
  if (counters == RdmaCounters::kRead) {
    port.noPma = !readCounters(files, "counters", false, port.counters);
    readCounters(files, "hw_counters", true, port.counters);
  }
  return port;
}

// The PCI function behind the device: bus id, path below <root>/devices, NUMA node.
void readPciPlace(const fs::path& root, SysfsDir& files, RdmaDevice& device) {
  std::error_code error;
  const fs::path link = files.path() / "device";
  if (!fs::is_symlink(link, error)) return;  // a virtual device (rxe, siw): no PCI function
  const fs::path target = fs::canonical(link, error);
  if (error) {
    files.skip("device", "link does not resolve");
    return;
  }
  const fs::path devices = fs::canonical(root, error) / "devices";
  const fs::path below = target.lexically_relative(devices);
  if (below.empty() || *below.begin() == "..") {
    files.skip("device", fmt::format("links outside {}", devices.string()));
    return;
  }
  device.pciPath = below.string();
  // A PCI function's name is its bus id, 0000:5e:00.1; a device on another bus (virtio, a
  // platform device) has none.
  const std::string busId = busIdFromSysfsLink(target.filename().string());
  if (isPciBusId(busId)) device.busId = busId;
  SysfsDir pci(target, "device/", device.skipped);
  if (auto text = pci.line("numa_node")) {
    auto numa = parseInteger(*text);
    if (numa && *numa >= -1 && *numa < 4096)
      device.numaNode = static_cast<int>(*numa);
    else
      pci.unexpected("numa_node", *text, "a NUMA node");
  }
}

RdmaDevice readDevice(const fs::path& root, const std::string& name, RdmaCounters counters) {
  RdmaDevice device;
  device.name = name;
  const fs::path dir = root / "class" / "infiniband" / name;
  SysfsDir files(dir, "", device.skipped);
  for (auto [file, field] : {std::pair{"node_guid", &device.nodeGuid},
                             std::pair{"sys_image_guid", &device.sysImageGuid}}) {
    auto text = files.line(file);
    if (text && isHexGroups(*text, 4))
      *field = *text;
    else if (text)
      files.unexpected(file, *text, "a GUID");
  }
  readPciPlace(root, files, device);
  if (counters == RdmaCounters::kRead) readCounters(files, "hw_counters", true, device.counters);
  for (const std::string& entry : entries(dir / "ports")) {
    auto number = parseInteger(entry);
    if (!number || *number < 0 || *number > 255) {
      files.skip("ports/" + entry, "not a port number");
      continue;
    }
    device.ports.push_back(
        readPort(dir / "ports" / entry, static_cast<int>(*number), counters, device.skipped));
  }
  std::sort(device.ports.begin(), device.ports.end(),
            [](const RdmaPort& a, const RdmaPort& b) { return a.number < b.number; });
  for (const std::string& note : device.skipped)
    log::info("topology: RDMA device {}: {} skipped", name, note);
  return device;
}

}  // namespace

bool isRdmaErrorCounter(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  for (const char* word : {"err", "discard", "drop", "downed", "out_of_"})
    if (lower.find(word) != std::string::npos) return true;
  return lower == "duplicate_request";
}

std::vector<RdmaCounter> RdmaPort::errors() const {
  return nonZeroErrors(counters);
}

std::vector<RdmaCounter> RdmaDevice::errors() const {
  return nonZeroErrors(counters);
}

std::vector<RdmaDevice> readRdmaDevices(const std::string& sysfsRoot, RdmaCounters counters) {
  std::error_code error;
  if (!fs::is_directory(sysfsRoot, error))
    raise(ErrorCode::kInvalidArgument, "sysfs root '{}' is not a directory", sysfsRoot);
  std::vector<RdmaDevice> devices;
  for (const std::string& name : entries(fs::path(sysfsRoot) / "class" / "infiniband"))
    devices.push_back(readDevice(sysfsRoot, name, counters));
  return devices;
}

std::vector<Hca> hcasFromSysfs(const std::vector<RdmaDevice>& devices) {
  std::vector<Hca> hcas;
  for (const RdmaDevice& device : devices) {
    Hca hca{device.name, device.busId, "", {}};
    if (!device.sysImageGuid.empty()) {
      std::string digits = device.sysImageGuid;
      digits.erase(std::remove(digits.begin(), digits.end(), ':'), digits.end());
      hca.guid = fmt::format("0x{:x}", std::stoull(digits, nullptr, 16));
    }
    for (const RdmaPort& port : device.ports)
      hca.ports.push_back(HcaPort{port.number, port.active(), port.mbps,
                                  port.linkLayer == "InfiniBand" ? "IB" : port.linkLayer});
    hcas.push_back(std::move(hca));
  }
  return hcas;
}

std::string sysfsRoot() {
  const std::string root = config::getString("TUTTI_SYSFS_ROOT");
  return root.empty() ? "/sys" : root;
}

std::vector<RdmaDevice> probeRdmaDevices() {
  const std::string root = sysfsRoot();
  std::vector<RdmaDevice> devices;
  try {
    devices = readRdmaDevices(root);
  } catch (const Error& error) {
    raise(ErrorCode::kInvalidArgument, "TUTTI_SYSFS_ROOT: {}", error.what());
  }
  if (root != "/sys") return devices;  // libibverbs describes this machine, not the tree
  for (const Hca& hca : probeHcas()) {
    auto device = std::find_if(devices.begin(), devices.end(),
                               [&](const RdmaDevice& d) { return d.name == hca.name; });
    if (device != devices.end())
      device->verbs = true;
    else
      log::info("topology: libibverbs lists {}, which /sys/class/infiniband does not", hca.name);
  }
  return devices;
}

}  // namespace tutti::topology
