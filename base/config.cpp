#include "base/config.hpp"

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "base/error.hpp"
#include "base/log.hpp"

extern char** environ;

namespace tutti::config {

const std::vector<Var>& table() {
  static const std::vector<Var> vars = {
      {"TUTTI_DEBUG", Type::kChoice, "WARN", "NONE|WARN|INFO|TRACE", 0, 0, "log level"},
      {"TUTTI_DEBUG_FILE", Type::kString, "", "", 0, 0,
       "log to this file instead of stderr (%h host, %p pid)"},
      {"TUTTI_TIMEOUT", Type::kInt, "300", "", 1, kTimeoutMaxSeconds,
       "seconds any blocking wait may last before it fails with a timeout "
       "(tutti_comm_set_timeout replaces it for one communicator's operations)"},
      {"TUTTI_TRANSPORT", Type::kString, "auto", "", 0, 0,
       "the transports allowed, tried in this order for each pair of ranks: auto (shm within a "
       "host; between hosts ucx where both have an RDMA port, else tcp), a list (tcp; shm,ucx), "
       "or ^ and the ones to leave out (^ucx)"},
      {"TUTTI_ALGO", Type::kChoice, "auto", "auto|oneshot|ring|tree|doubling|direct", 0, 0,
       "force the all-reduce algorithm (auto: the cost model picks per size; direct reads the "
       "peers' buffers in place when all are reachable (TUTTI_DIRECT_BUFFERS), else runs what "
       "auto picks)"},
      {"TUTTI_AUTOTUNE", Type::kChoice, "auto", "auto|on|off", 0, 0,
       "where auto times the all-reduce algorithms while the job runs and keeps the fastest per "
       "size (the ranks agree on it, keeping the table's pick unless another is over 5% faster; "
       "again every 1000 calls of a size): on, off (the tuning table decides), or auto (on with 2 "
       "ranks, where every algorithm computes the same bits but for which NaN payload or signed "
       "zero a tie keeps)"},
      {"TUTTI_DIRECT_BUFFERS", Type::kChoice, "any", "any|registered", 0, 0,
       "which buffers the direct algorithms reach in place: any (tutti_mem_alloc memory mapped, "
       "ordinary memory read through the kernel with process_vm_readv) or registered "
       "(tutti_mem_alloc memory only; other buffers go through the FIFOs)"},
      {"TUTTI_ENGINE_AFFINITY", Type::kChoice, "auto", "auto|spread|none", 0, 0,
       "the CPU each communicator's engine thread (where asynchronous operations run) keeps to: "
       "spread (local rank i's on the i-th CPU the process may use, modulo their count), none "
       "(wherever the kernel puts it), or auto (spread where no two of those CPUs share a "
       "last-level cache the kernel knows of, as on VMs that show none: there the kernel wakes "
       "an engine on the CPU of the engine that woke it)"},
      {"TUTTI_CHECK_CALLS", Type::kChoice, "0", "0|1", 0, 0,
       "1: ranks compare each collective's count, type, operation, root, number among the "
       "communicator's collectives and the algorithm each picked before moving data, and fail "
       "with both calls named on a mismatch"},
      {"TUTTI_CHUNK_BYTES", Type::kBytes, "", "", 4096, 64 << 20,
       "bytes per pipeline slot (one chunk of a collective step); unset: the tuning table's "
       "slot_bytes (256K by default; tutti-info algorithms)"},
      {"TUTTI_SLOTS", Type::kInt, "", "", 2, 64,
       "slots per connection FIFO; unset: the tuning table's slots (8 by default)"},
      {"TUTTI_TUNING_FILE", Type::kString, "", "", 0, 0,
       "the planner's tuning table (thresholds between algorithms, link costs, FIFO geometry) "
       "as key = value lines (docs/tuning.md); unset or auto: this machine's, written by "
       "tutti-bench tune --save, else tutti's defaults, and every rank plans from rank 0's; "
       "defaults: tutti's"},
      {"TUTTI_NSOCKS", Type::kInt, "2", "", 1, 16, "TCP sockets per peer"},
      {"TUTTI_SOCKET_IFNAME", Type::kString, "", "", 0, 0,
       "network interfaces to use: prefix list, ^ excludes, = exact (NCCL_SOCKET_IFNAME syntax)"},
      {"TUTTI_RANK", Type::kInt, "", "", 0, 1 << 24, "this process's rank (environment init)"},
      {"TUTTI_WORLD_SIZE", Type::kInt, "", "", 1, 1 << 24, "number of ranks (environment init)"},
      {"TUTTI_LOCAL_RANK", Type::kInt, "", "", 0, 1 << 24, "rank within the host"},
      {"TUTTI_ADDR", Type::kString, "", "", 0, 0, "rendezvous host (rank 0 listens there)"},
      {"TUTTI_PORT", Type::kInt, "", "", 1, 65535, "rendezvous port"},
      {"TUTTI_RENDEZVOUS_WAIT", Type::kInt, "60", "", 1, 86400 * 7,
       "seconds a rank retries a rendezvous nobody listens on (rank 0 not started yet) before "
       "it fails"},
      {"TUTTI_SECRET", Type::kString, "", "", 0, 0,
       "job secret, 32 hex digits; ranks that cannot prove it are refused"},
      {"TUTTI_ELASTIC_DIR", Type::kString, "", "", 0, 0,
       "set by tuttirun --elastic for the program, not read by tutti: the job's private "
       "directory, where survivors write grow tokens for replacements (docs/elastic.md)"},
      {"TUTTI_GROW_TOKEN_FILE", Type::kString, "", "", 0, 0,
       "set by tuttirun --elastic for a replacement, not read by tutti: the file in which the "
       "survivors put the grow token it joins with (docs/elastic.md)"},
      {"TUTTI_FLIGHT_RECORDER_ENTRIES", Type::kInt, "2048", "", 0, 1 << 20,
       "operations each communicator remembers for dumps and traces (0: none)"},
      {"TUTTI_DUMP_DIR", Type::kString, "", "", 0, 0,
       "directory for flight-recorder dumps, written on timeout, abort, fatal error and SIGUSR1 "
       "(unset: no dumps, no SIGUSR1 handler); made at init where its parent exists, and init "
       "fails where it cannot be made or written"},
      {"TUTTI_TRACE_FILE", Type::kString, "", "", 0, 0,
       "Chrome/Perfetto trace file per rank, written at destroy (%r rank, %h host, %p pid)"},
      {"TUTTI_TOPO_FILE", Type::kString, "", "", 0, 0,
       "topology file to use instead of probing this machine: NCCL XML or hwloc XML"},
      {"TUTTI_TOPO_DUMP_FILE", Type::kString, "", "", 0, 0,
       "rank 0 writes the topology it found here: NCCL XML, or JSON for a .json name"},
      {"TUTTI_IB_HCA", Type::kString, "", "", 0, 0,
       "RDMA NIC ports to use: device[:port] list, prefix match, ^ excludes, = exact "
       "(NCCL_IB_HCA syntax: mlx5_0:1,mlx5_1 / ^mlx5_3 / =mlx5_0; unset: every active port)"},
      {"TUTTI_SYSFS_ROOT", Type::kString, "/sys", "", 0, 0,
       "where the topology reads sysfs' RDMA devices (class/infiniband, devices): a copy of a "
       "machine's tree for tests and offline looks"},
      {"TUTTI_CUDA_DRIVER", Type::kString, "libcuda.so.1", "", 0, 0,
       "the CUDA driver library, loaded on the first operation (a name or a path); none: no GPU "
       "path, every buffer is host memory and no operation asks the driver"},
      {"TUTTI_GPU_PATH", Type::kChoice, "kernels", "kernels|staged", 0, 0,
       "how collectives on device buffers run when every rank is on this host: kernels (the "
       "device kernels move the data GPU to GPU through FIFOs in GPU memory the peers map) or "
       "staged (copied through pinned host memory, run by the host, copied back); across hosts "
       "they are staged"},
      {"TUTTI_GPU_CHANNELS", Type::kInt, "16", "", 1, 16,
       "the device kernels' channels (one thread block each); a message takes one per 16 KiB, up "
       "to this"},
      {"TUTTI_BENCH_FAULT", Type::kString, "", "", 0, 0,
       "tests only: tutti-bench's *_perf programs corrupt one result element, RANK:INDEX (as "
       "tutti-bench's --fault; nccl-tests has no flag for it), so that -c finds it"},
      {"TUTTI_RING_ORDER", Type::kString, "", "", 0, 0,
       "the ring the ring and chain collectives follow, as the world's ranks in order (e.g. "
       "\"0 2 1 3\"; each rank once, same on every rank; unset: planned by package, NUMA node "
       "and core)"},
  };
  return vars;
}

const Var& find(const std::string& name) {
  for (const Var& var : table())
    if (name == var.name) return var;
  raise(ErrorCode::kInternal, "configuration variable {} is not in the table", name);
}

std::optional<int64_t> parseBytes(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || value < 0) return std::nullopt;
  std::string suffix(end);
  int shift = 0;
  if (suffix == "K" || suffix == "k")
    shift = 10;
  else if (suffix == "M" || suffix == "m")
    shift = 20;
  else if (suffix == "G" || suffix == "g")
    shift = 30;
  else if (!suffix.empty())
    return std::nullopt;
  if (value > (INT64_MAX >> shift)) return std::nullopt;
  return static_cast<int64_t>(value) << shift;
}

namespace {

// A choice set to nothing (TUTTI_ALGO=) means its default, as when unset: no choice is "".
std::string rawValue(const Var& var) {
  // Set but empty is unset, whatever the type: `TUTTI_TIMEOUT=` said "is not set" while
  // `TUTTI_SLOTS=` meant the default.
  const char* value = std::getenv(var.name);
  if (!value || *value == '\0') return var.defaultValue;
  return value;
}

int64_t checkedInt(const Var& var, const std::string& text) {
  std::optional<int64_t> value;
  if (var.type == Type::kBytes) {
    value = parseBytes(text);
  } else {
    char* end = nullptr;
    errno = 0;
    const long long parsed = std::strtoll(text.c_str(), &end, 10);
    if (errno == 0 && end != text.c_str() && *end == '\0') value = parsed;
  }
  if (!value)
    raise(ErrorCode::kInvalidArgument, "{}='{}' is not {}", var.name, text,
          var.type == Type::kBytes ? "a size (e.g. 4096, 64K, 1M)" : "an integer");
  if (*value < var.min || *value > var.max)
    raise(ErrorCode::kInvalidArgument, "{}={} is out of range [{}, {}]", var.name, *value, var.min,
          var.max);
  return *value;
}

void checkChoice(const Var& var, const std::string& text) {
  const std::string choices = var.choices;
  size_t start = 0;
  while (start <= choices.size()) {
    const size_t bar = choices.find('|', start);
    const size_t stop = bar == std::string::npos ? choices.size() : bar;
    if (choices.compare(start, stop - start, text) == 0 && text.size() == stop - start) return;
    start = stop + 1;
  }
  raise(ErrorCode::kInvalidArgument, "{}='{}' is not one of {}", var.name, text, var.choices);
}

}  // namespace

std::string getString(const std::string& name) {
  const Var& var = find(name);
  const std::string text = rawValue(var);
  if (var.type == Type::kChoice && !text.empty()) checkChoice(var, text);
  if ((var.type == Type::kInt || var.type == Type::kBytes) && !text.empty()) checkedInt(var, text);
  return text;
}

int64_t getInt(const std::string& name) {
  const Var& var = find(name);
  const std::string text = rawValue(var);
  if (text.empty()) raise(ErrorCode::kInvalidArgument, "{} is not set (or empty)", name);
  return checkedInt(var, text);
}

bool isSet(const std::string& name) {
  return std::getenv(find(name).name) != nullptr;
}

void validateAll() {
  for (const Var& var : table())
    if (std::getenv(var.name)) getString(var.name);
  static std::once_flag warned;
  std::call_once(warned, [] {
    for (char** env = environ; env && *env; ++env) {
      const char* entry = *env;
      if (std::strncmp(entry, "TUTTI_", 6) != 0) continue;
      const std::string name(entry, std::strcspn(entry, "="));
      bool known = false;
      for (const Var& var : table()) known = known || name == var.name;
      if (!known) log::warn("unknown variable {} ignored (see tutti-info for the list)", name);
    }
  });
}

}  // namespace tutti::config
