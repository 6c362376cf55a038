#include "transport/ucx/ucx_worker.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string_view>

#include "base/error.hpp"

namespace tutti::transport::ucx {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// "ucxMAJOR.MINOR" of the UCX this process runs.
std::string ucxRelease() {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  return fmt::format("ucx{}.{}", major, minor);
}

// The configuration UCX will use (the environment over UCX's configuration file), as UCX prints
// it: UCX_<key>=<value> lines.
std::string printedConfig(const ucp_config_t* config) {
  char* text = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  if (!out) return {};
  ucp_config_print(config, out, nullptr, UCS_CONFIG_PRINT_CONFIG);
  std::fclose(out);
  const std::unique_ptr<char, void (*)(void*)> owned(text, std::free);
  return std::string(text, size);
}

// The value of UCX_<key> in printedConfig(); `unset` when UCX does not print it.
std::string configValue(std::string_view printed, std::string_view key, const char* unset) {
  const std::string line = fmt::format("\nUCX_{}=", key);
  const size_t at = printed.find(line);
  if (at == std::string_view::npos) return unset;
  const size_t start = at + line.size();
  return std::string(printed.substr(start, printed.find('\n', start) - start));
}

// Whether a UCX_TLS list lets UCX open one of its mm (shared-memory FIFO) transports, those that
// MM_ERROR_HANDLING configures (posix, sysv; Debian's UCX has no xpmem): named, through an alias
// (UCX 1.13's "mm", "sm", "shm") or "all", or not excluded by a ^ list.
bool allowsMmTransports(const std::string& list) {
  const bool excluding = !list.empty() && list[0] == '^';
  std::set<std::string, std::less<>> items;
  for (size_t start = excluding ? 1 : 0; start <= list.size();) {
    const size_t comma = std::min(list.find(',', start), list.size());
    items.insert(list.substr(start, comma - start));
    start = comma + 1;
  }
  const auto any = [&](std::initializer_list<std::string_view> names) {
    return std::any_of(names.begin(), names.end(),
                       [&](std::string_view name) { return items.count(name) > 0; });
  };
  if (excluding) return !any({"mm", "sm", "shm"}) && !(items.count("posix") && items.count("sysv"));
  return any({"all", "mm", "sm", "shm", "posix", "sysv", "xpmem"});
}

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

}  // namespace

void check(ucs_status_t status, const char* what) {
  if (status != UCS_OK)
    raise(ErrorCode::kSystem, "ucx: {}: {} (UCX status {})", what, ucs_status_string(status),
          static_cast<int>(status));
}

Worker::Worker(bool eager) {
  ucp_config_t* config = nullptr;
  check(ucp_config_read(nullptr, nullptr, &config),
        "cannot read the UCX configuration (a UCX_* variable is malformed?)");
  std::unique_ptr<ucp_config_t, void (*)(ucp_config_t*)> owned(config, ucp_config_release);
  // UCX 1.13's shared-memory transports hide their peer error handling (keepalive) unless asked,
  // and UCX then refuses endpoints that want it, printing an error: ask, unless the user chose.
  // Only where UCX_TLS lets those transports open: UCX warns of a setting no transport used
  // ("invalid configuration: MM_ERROR_HANDLING=y" under UCX_TLS=tcp).
  const std::string printed = printedConfig(config);
  if (!getenv("UCX_MM_ERROR_HANDLING") && allowsMmTransports(configValue(printed, "TLS", "all")))
    ucp_config_modify(config, "MM_ERROR_HANDLING", "y");
  // UCX 1.13 sends a tagged message of over 8 KiB by rendezvous, on tcp and shared memory too: a
  // handshake that waits for the receiver's progress, then for the sender's, on every slot. Sent
  // eagerly, the slots went 1.2-1.3x faster over tcp between two hosts (docs/ucx.md), and no
  // slower over shared memory: the receive is always posted before the sender may send, so UCX
  // never buffers one. A user's own threshold (not "auto") wins.
  eager_ = eager && configValue(printed, "RNDV_THRESH", "auto") == "auto";
  if (eager_) ucp_config_modify(config, "RNDV_THRESH", "inf");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  check(ucp_init(&params, config, &context_),
        "cannot create a UCP context (is UCX_TLS set to transports this machine has?)");
  try {
    ucp_worker_params_t workerParams{};
    workerParams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    workerParams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    check(ucp_worker_create(context_, &workerParams, &worker_), "cannot create a UCP worker");
    check(ucp_worker_get_efd(worker_, &eventFd_), "cannot get the worker's event descriptor");
    ucp_address_t* bytes = nullptr;
    size_t length = 0;
    check(ucp_worker_get_address(worker_, &bytes, &length), "cannot get the worker's address");
    address_ = fmt::format("{}:{}/{}/", hostName(), getpid(), ucxRelease());
    const auto* raw = reinterpret_cast<const uint8_t*>(bytes);
    for (size_t i = 0; i < length; ++i) {
      address_ += kHexDigits[raw[i] >> 4];
      address_ += kHexDigits[raw[i] & 0xf];
    }
    ucp_worker_release_address(worker_, bytes);
  } catch (...) {
    if (worker_) ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
    throw;
  }
}

Worker::~Worker() {
  ucp_worker_destroy(worker_);
  ucp_cleanup(context_);
}

bool Worker::arm() {
  return ucp_worker_arm(worker_) != UCS_ERR_BUSY;
}

std::vector<uint8_t> decodeAddress(const std::string& address, const std::string& what) {
  const size_t first = address.find('/');
  const size_t slash = first == std::string::npos ? first : address.find('/', first + 1);
  const size_t digits = slash == std::string::npos ? 0 : address.size() - slash - 1;
  if (digits > 0) {
    const std::string theirs = address.substr(first + 1, slash - first - 1), ours = ucxRelease();
    if (theirs != ours)
      raise(ErrorCode::kInvalidUsage,
            "ucx: {} runs {}, this rank {}: run one UCX release on every host", what, theirs, ours);
  }
  std::vector<uint8_t> bytes;
  if (digits > 0 && digits % 2 == 0) {
    for (size_t i = slash + 1; i + 1 < address.size(); i += 2) {
      const int high = hexValue(address[i]), low = hexValue(address[i + 1]);
      if (high < 0 || low < 0) break;
      bytes.push_back(static_cast<uint8_t>(high << 4 | low));
    }
  }
  if (digits == 0 || bytes.size() * 2 != digits)
    raise(ErrorCode::kRemote, "ucx: {} published a malformed address '{:.80}'", what, address);
  return bytes;
}

std::string placeOf(const std::string& address) {
  return address.substr(0, address.find('/'));
}

}  // namespace tutti::transport::ucx
