#include "runtime/settings.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>

#include "base/config.hpp"
#include "base/error.hpp"
#include "runtime/collectives/algorithm.hpp"
#include "runtime/topology_plan.hpp"

namespace tutti::runtime {
namespace {

// The value of the choice variable `name` as the one of `values` whose word it is. The table
// refuses words outside its choices, naming the variable; the settings test checks that each of
// them has its value here.
template <typename Choice>
Choice parseChoice(const char* name, std::initializer_list<Choice> values) {
  const std::string word = config::getString(name);
  for (Choice value : values)
    if (word == choiceName(value)) return value;
  raise(ErrorCode::kInternal, "{}='{}' is in the variable table but not known here", name, word);
}

// TUTTI_DUMP_DIR, made where its parent exists. Checked at init, not at the first dump: dumps are
// written when something went wrong, and one lost then is lost for good.
void makeDumpDirectory(const std::string& dir) {
  const int made = mkdir(dir.c_str(), 0755) == 0 ? 0 : errno;
  struct stat info {};
  if (stat(dir.c_str(), &info) != 0)
    raise(ErrorCode::kInvalidArgument, "TUTTI_DUMP_DIR={}: cannot make it: {}", dir,
          std::strerror(made));
  if (!S_ISDIR(info.st_mode))
    raise(ErrorCode::kInvalidArgument, "TUTTI_DUMP_DIR={}: not a directory", dir);
  if (access(dir.c_str(), W_OK | X_OK) != 0)
    raise(ErrorCode::kInvalidArgument, "TUTTI_DUMP_DIR={}: cannot write in it: {}", dir,
          std::strerror(errno));
}

}  // namespace

const char* choiceName(DirectBuffers buffers) {
  switch (buffers) {
    case DirectBuffers::kAny: return "any";
    case DirectBuffers::kRegistered: return "registered";
  }
  return "?";
}

const char* choiceName(AutotuneMode mode) {
  switch (mode) {
    case AutotuneMode::kAuto: return "auto";
    case AutotuneMode::kOn: return "on";
    case AutotuneMode::kOff: return "off";
  }
  return "?";
}

std::string Settings::agreed() const {
  std::string words = fmt::format(
      "TUTTI_CHUNK_BYTES={} TUTTI_SLOTS={} TUTTI_CHECK_CALLS={} TUTTI_TRANSPORT={} "
      "TUTTI_ALGO={} TUTTI_AUTOTUNE={} TUTTI_GPU_PATH={} TUTTI_GPU_CHANNELS={}",
      slotBytesVariable ? std::to_string(*slotBytesVariable) : "unset",
      slotsVariable ? std::to_string(*slotsVariable) : "unset", int(checkCalls), transport.text(),
      algorithm ? algorithm->name : kAutoAlgorithm, choiceName(autotune),
      gpuKernels ? "kernels" : "staged", gpuChannels);
  for (const TuningKey& key : tuningKeys())
    words +=
        fmt::format(" TUTTI_TUNING_FILE:{}={}", key.name, formatTuningValue(tuningTable.any, key));
  for (const auto& [ranks, section] : tuningTable.byRanks)
    for (const TuningKey& key : tuningKeys())
      words += fmt::format(" TUTTI_TUNING_FILE[ranks_{}]:{}={}", ranks, key.name,
                           formatTuningValue(section, key));
  return words;
}

void Settings::useTuning(TuningSource source) {
  tuningTable = std::move(source.table);
  tuningOrigin = std::move(source.origin);
  tuningFromRank0 = source.fromRank0;
  planFor(0);
}

void Settings::planFor(int ranks) {
  tuning = tuningTable.forRanks(ranks);
  slotBytes = slotBytesVariable.value_or(tuning.slotBytes);
  slots = slotsVariable.value_or(static_cast<int>(tuning.slots));
  // Each within its range, the two could still ask for 4 GiB a connection: every local peer pair's
  // FIFOs in /dev/shm, each page touched before data flows. Either at its most with the other's
  // default stays within it.
  constexpr size_t kMaxFifoBytes = size_t{512} << 20;
  if (const size_t fifo = static_cast<size_t>(slots) * slotBytes; fifo > kMaxFifoBytes) {
    const std::string table = "the tuning table's (" + tuningOrigin + ")";
    raise(ErrorCode::kInvalidArgument,
          "a connection's FIFO of {} slots ({}) of {} bytes ({}) would take {} bytes; at most {} "
          "(512 MiB)",
          slots, slotsVariable ? "TUTTI_SLOTS" : table + " slots", slotBytes,
          slotBytesVariable ? "TUTTI_CHUNK_BYTES" : table + " slot_bytes", fifo, kMaxFifoBytes);
  }
}

Settings Settings::fromConfig() {
  config::validateAll();
  Settings settings;
  if (!config::getString("TUTTI_CHUNK_BYTES").empty())
    settings.slotBytesVariable = static_cast<size_t>(config::getInt("TUTTI_CHUNK_BYTES"));
  if (!config::getString("TUTTI_SLOTS").empty())
    settings.slotsVariable = static_cast<int>(config::getInt("TUTTI_SLOTS"));
  settings.useTuning(tuningInForce());
  settings.socketsPerPeer = static_cast<int>(config::getInt("TUTTI_NSOCKS"));
  settings.socketInterfaces = bootstrap::InterfaceSpec::fromEnv();
  settings.transport = transport::TransportSelection::parse(config::getString("TUTTI_TRANSPORT"));
  settings.ibHca = topology::hcaSelectorFromEnv();
  settings.algorithm = allReduceChoice(config::getString("TUTTI_ALGO"));
  settings.checkCalls = config::getString("TUTTI_CHECK_CALLS") == "1";
  settings.gpuKernels = config::getString("TUTTI_GPU_PATH") == "kernels";
  settings.gpuChannels = static_cast<int>(config::getInt("TUTTI_GPU_CHANNELS"));
  settings.directBuffers =
      parseChoice("TUTTI_DIRECT_BUFFERS", {DirectBuffers::kAny, DirectBuffers::kRegistered});
  settings.autotune =
      parseChoice("TUTTI_AUTOTUNE", {AutotuneMode::kAuto, AutotuneMode::kOn, AutotuneMode::kOff});
  settings.enginePlacement =
      parseChoice("TUTTI_ENGINE_AFFINITY",
                  {EnginePlacement::kAuto, EnginePlacement::kSpread, EnginePlacement::kNone});
  settings.timeout = std::chrono::seconds(config::getInt("TUTTI_TIMEOUT"));
  settings.flightRecorderEntries =
      static_cast<size_t>(config::getInt("TUTTI_FLIGHT_RECORDER_ENTRIES"));
  settings.dumpDir = config::getString("TUTTI_DUMP_DIR");
  if (!settings.dumpDir.empty()) makeDumpDirectory(settings.dumpDir);
  settings.traceFile = config::getString("TUTTI_TRACE_FILE");
  settings.ringOrder = parseRingOrder(config::getString("TUTTI_RING_ORDER"));
  // The trace is drawn from the recorder's buffer.
  if (!settings.traceFile.empty() && settings.flightRecorderEntries == 0)
    raise(ErrorCode::kInvalidArgument,
          "TUTTI_TRACE_FILE is set but TUTTI_FLIGHT_RECORDER_ENTRIES=0 records nothing to trace");
  return settings;
}

}  // namespace tutti::runtime
