#include "runtime/observe/flight_dump.hpp"

#include <nlohmann/json.hpp>

#include "base/log.hpp"
#include "kernels/kernels.hpp"
#include "runtime/communicator.hpp"
#include "runtime/observe/op_clock.hpp"
#include "runtime/observe/report_file.hpp"
#include "runtime/observe/trace.hpp"

namespace tutti::runtime {
namespace {

using nlohmann::json;

json entryJson(const OpRecord& record) {
  const OpSignature& s = record.signature;
  json entry = {
      {"seq", record.sequence},
      {"collective_seq", s.collectiveSeq ? json(s.collectiveSeq) : json(nullptr)},
      {"collective", s.collective},
      {"algorithm", record.algorithm ? json(record.algorithm) : json(nullptr)},
      {"count", s.count},
      {"dtype", s.dtype >= 0 ? json(kernels::typeName(static_cast<kernels::DataType>(s.dtype)))
                             : json(nullptr)},
      {"op", s.op >= 0 ? json(kernels::opName(static_cast<kernels::RedOp>(s.op))) : json(nullptr)},
      {"root", s.root >= 0 ? json(s.root) : json(nullptr)},
      {"bytes", s.bytes},
      {"state", opStateName(record.state)},
      {"enqueued_ns", record.enqueuedNs ? json(record.enqueuedNs) : json(nullptr)},
      {"started_ns", record.startedNs ? json(record.startedNs) : json(nullptr)},
      {"ended_ns", record.endedNs ? json(record.endedNs) : json(nullptr)},
      {"waiting_on", record.waitingOn >= 0 ? json(record.waitingOn) : json(nullptr)},
  };
  if (record.state == OpState::kFailed) entry["error"] = record.error;
  return entry;
}

}  // namespace

std::string flightRecordJson(const Communicator& comm, const std::string& reason) {
  const FlightRecorder& recorder = comm.recorder();
  json peers = json::array();
  for (int rank = 0; rank < comm.size(); ++rank)
    peers.push_back(
        {{"rank", rank}, {"host", comm.peer(rank).hostName}, {"pid", comm.peer(rank).pid}});
  // The snapshot before the counters: its entries never number beyond last_issued and
  // last_collective, which tutti-info checks.
  json entries = json::array();
  for (const OpRecord& record : recorder.snapshot()) entries.push_back(entryJson(record));
  const std::optional<Error> failure = comm.failure();
  const PeerInfo& self = comm.peer(comm.rank());
  const json dump = {
      {"format", "tutti-flight-recorder"},
      {"version", 2},
      {"reason", reason},
      {"job", comm.members().jobId()},
      {"communicator", comm.tag()},
      {"host", self.hostName},
      {"pid", self.pid},
      {"rank", comm.rank()},
      {"size", comm.size()},
      // Both clocks read together: entries' steady times map to wall time across ranks.
      {"clock", {{"steady_ns", opclock::steadyNs()}, {"wall_ns", opclock::wallNs()}}},
      {"last_issued", comm.counts().lastSequence()},
      {"last_collective", comm.counts().lastCollective()},
      {"capacity", recorder.capacity()},
      {"recorded", recorder.recorded()},
      {"dropped", recorder.dropped()},
      {"error", failure ? json(failure->what()) : json(nullptr)},
      {"peers", std::move(peers)},
      {"entries", std::move(entries)},
  };
  return dump.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string dumpPath(const Communicator& comm) {
  const std::string& dir = comm.settings().dumpDir;
  if (dir.empty()) return {};
  return fmt::format("{}/tutti-{}-rank{}.json", dir, comm.tag(), comm.rank());
}

void dumpFlightRecord(const Communicator& comm, const std::string& reason) {
  const std::string path = dumpPath(comm);
  if (path.empty()) return;
  try {
    if (writeReportFile(path, flightRecordJson(comm, reason), "flight recorder dump"))
      log::warn("rank {}: flight recorder dumped to {} ({})", comm.rank(), path, reason);
    writeTrace(comm);
  } catch (const std::exception& error) {
    log::warn("could not write the flight recorder dump {}: {}", path, error.what());
  }
}

}  // namespace tutti::runtime
