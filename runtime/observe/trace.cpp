#include "runtime/observe/trace.hpp"

#include <nlohmann/json.hpp>

#include "base/log.hpp"
#include "runtime/communicator.hpp"
#include "runtime/observe/op_clock.hpp"
#include "runtime/observe/report_file.hpp"

namespace tutti::runtime {
namespace {

using nlohmann::json;

// "name.json" -> "name.<suffix>.json"; a name without an extension gets ".<suffix>" appended.
std::string withSuffix(const std::string& path, const std::string& suffix) {
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1))
    return path + "." + suffix;
  return path.substr(0, dot) + "." + suffix + path.substr(dot);
}

}  // namespace

std::string tracePath(const std::string& pattern, int rank, const std::string& communicator,
                      bool isWorld) {
  std::string path;
  bool hasRank = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern.compare(i, 2, "%r") == 0) {
      path += std::to_string(rank);
      hasRank = true;
      ++i;
    } else {
      path += pattern[i];
    }
  }
  path = log::expandPath(path);
  if (!hasRank) path = withSuffix(path, "rank" + std::to_string(rank));
  if (!isWorld) path = withSuffix(path, communicator);
  return path;
}

std::string traceJson(const Communicator& comm) {
  const FlightRecorder& recorder = comm.recorder();
  // Steady times become wall-clock microseconds, so that the ranks' traces line up.
  const int64_t steadyNow = opclock::steadyNs();
  const int64_t wallOffset = opclock::wallNs() - steadyNow;
  auto micros = [&](int64_t steadyNs) { return static_cast<double>(steadyNs + wallOffset) / 1e3; };
  const int rank = comm.rank();
  const PeerInfo& self = comm.peer(rank);
  json events = json::array();
  events.push_back({{"ph", "M"},
                    {"name", "process_name"},
                    {"pid", rank},
                    {"tid", 0},
                    {"args", {{"name", fmt::format("rank {} ({})", rank, describe(self))}}}});
  events.push_back({{"ph", "M"},
                    {"name", "thread_name"},
                    {"pid", rank},
                    {"tid", 0},
                    {"args", {{"name", "communicator " + comm.tag()}}}});
  const std::vector<OpRecord> records = recorder.snapshot();
  for (const OpRecord& record : records) {
    if (!record.startedNs) continue;  // still queued: nothing ran yet
    const int64_t end = record.endedNs ? record.endedNs : steadyNow;
    json args = {{"seq", record.sequence},
                 {"algorithm", record.algorithm ? record.algorithm : ""},
                 {"bytes", record.signature.bytes},
                 {"count", record.signature.count},
                 {"state", opStateName(record.state)}};
    if (record.state == OpState::kFailed) args["error"] = record.error;
    // What the slice does not show: how long the operation waited behind earlier ones.
    if (record.enqueuedNs)
      args["queued_us"] = static_cast<double>(record.startedNs - record.enqueuedNs) / 1e3;
    events.push_back({{"ph", "X"},
                      {"name", record.signature.collective},
                      {"cat", "collective"},
                      {"pid", rank},
                      {"tid", 0},
                      {"ts", micros(record.startedNs)},
                      {"dur", static_cast<double>(end - record.startedNs) / 1e3},
                      {"args", std::move(args)}});
  }
  const json trace = {
      {"traceEvents", std::move(events)},
      {"displayTimeUnit", "ns"},
      {"otherData",
       {{"communicator", comm.tag()},
        {"rank", rank},
        {"size", comm.size()},
        {"capacity", recorder.capacity()},
        {"dropped_operations", recorder.recorded() - records.size()}}},
  };
  return trace.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

void writeTrace(const Communicator& comm) {
  const std::string& pattern = comm.settings().traceFile;
  if (pattern.empty()) return;
  try {
    const std::string path =
        tracePath(pattern, comm.rank(), comm.tag(), comm.tag() == comm.members().jobId());
    writeReportFile(path, traceJson(comm), "trace");
  } catch (const std::exception& error) {
    log::warn("could not write the trace for {}: {}", pattern, error.what());
  }
}

}  // namespace tutti::runtime
