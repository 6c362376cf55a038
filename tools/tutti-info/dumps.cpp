#include "tools/tutti-info/dumps.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/regular_file.hpp"

namespace tutti::info {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Reads field `name` of `object` as T, or throws InputError naming the file and the field.
template <typename T>
T field(const json& object, const char* name, const std::string& where) {
  if (!object.is_object() || !object.contains(name))
    throw InputError(fmt::format("{}: missing field \"{}\"", where, name));
  try {
    return object.at(name).get<T>();
  } catch (const json::exception& error) {
    throw InputError(fmt::format("{}: field \"{}\": {}", where, name, error.what()));
  }
}

// A field that may be null: T's default when it is.
template <typename T>
T nullable(const json& object, const char* name, const std::string& where) {
  if (object.is_object() && object.contains(name) && object.at(name).is_null()) return T{};
  return field<T>(object, name, where);
}

template <typename T>
std::optional<T> optionalField(const json& object, const char* name, const std::string& where) {
  if (object.is_object() && object.contains(name) && object.at(name).is_null()) return std::nullopt;
  return field<T>(object, name, where);
}

// The recorder's largest capacity (TUTTI_FLIGHT_RECORDER_ENTRIES); and a bound on sequence numbers
// that no job reaches (2^53 operations take over a century at 2 per microsecond) and that JSON
// readers keep exactly.
constexpr uint64_t kMaxEntries = 1 << 20;
constexpr uint64_t kMaxSequence = uint64_t{1} << 53;

bool isPointToPoint(const std::string& collective) {
  return collective == "send" || collective == "recv";
}

// The dump's steady and wall clocks, read together: they map the entries' times to wall time.
struct DumpClock {
  int64_t steadyNs = 0, wallNs = 0;
};

// A steady-clock time of the entry as wall-clock ns; null stays null.
std::optional<int64_t> wallTime(const json& entry, const char* name, const DumpClock& clock,
                                const std::string& at) {
  const std::optional<int64_t> steady = optionalField<int64_t>(entry, name, at);
  if (!steady) return std::nullopt;
  int64_t wall = 0;
  if (*steady < 0 || __builtin_add_overflow(clock.wallNs, *steady - clock.steadyNs, &wall))
    throw InputError(
        fmt::format("{}: \"{}\" {} is not a time of the dump's clock", at, name, *steady));
  return wall;
}

DumpedOp readOp(const json& entry, int version, const DumpClock& clock, const std::string& where) {
  DumpedOp op;
  op.seq = field<uint64_t>(entry, "seq", where);
  const std::string at = fmt::format("{} entry #{}", where, op.seq);
  op.collective = field<std::string>(entry, "collective", at);
  op.algorithm = nullable<std::string>(entry, "algorithm", at);
  op.count = field<uint64_t>(entry, "count", at);
  op.bytes = field<uint64_t>(entry, "bytes", at);
  op.dtype = nullable<std::string>(entry, "dtype", at);
  op.op = nullable<std::string>(entry, "op", at);
  op.root = optionalField<int>(entry, "root", at);
  op.state = field<std::string>(entry, "state", at);
  op.waitingOn = optionalField<int>(entry, "waiting_on", at);
  op.collectiveSeq = version >= 2 ? nullable<uint64_t>(entry, "collective_seq", at)
                     : isPointToPoint(op.collective) ? 0
                                                     : op.seq;
  if (op.state == "failed") op.error = field<std::string>(entry, "error", at);
  static const char* kStates[] = {"queued", "running", "done", "failed"};
  if (std::find(std::begin(kStates), std::end(kStates), op.state) == std::end(kStates))
    throw InputError(fmt::format("{}: unknown state \"{}\"", at, op.state));
  const std::optional<int64_t> enqueued = wallTime(entry, "enqueued_ns", clock, at);
  const std::optional<int64_t> started = wallTime(entry, "started_ns", clock, at);
  op.endedNs = wallTime(entry, "ended_ns", clock, at);
  if ((enqueued && started && *started < *enqueued) ||
      (started && op.endedNs && *op.endedNs < *started))
    throw InputError(fmt::format("{}: its times are out of order (enqueued, started, ended)", at));
  op.enteredNs = enqueued ? enqueued : started;  // a blocking call's enqueue time is its start
  return op;
}

// Dumps no runtime writes: its recorder holds at most `capacity` entries, numbered at most up to
// what the rank issued, once each; peers and roots are ranks of the communicator.
void checkConsistent(const RankDump& dump, uint64_t capacity, const std::string& where) {
  const auto refuse = [&](const std::string& what) {
    throw InputError(fmt::format("{}: inconsistent dump: {}", where, what));
  };
  if (dump.lastIssued > kMaxSequence)
    refuse(fmt::format("last_issued {} is beyond any job (at most {})", dump.lastIssued,
                       kMaxSequence));
  if (dump.lastCollective > dump.lastIssued)
    refuse(fmt::format("last_collective {} is above last_issued {}", dump.lastCollective,
                       dump.lastIssued));
  if (capacity > kMaxEntries)
    refuse(fmt::format("capacity {} is above the recorder's maximum {}", capacity, kMaxEntries));
  if (dump.entries.size() > capacity)
    refuse(fmt::format("{} entries for a capacity of {}", dump.entries.size(), capacity));
  const auto isRank = [&](std::optional<int> rank) {
    return !rank || (*rank >= 0 && *rank < dump.size);
  };
  uint64_t previous = 0;
  for (const DumpedOp& op : dump.entries) {
    if (op.seq == 0 || op.seq > dump.lastIssued)
      refuse(fmt::format("entry #{} is outside the operations it issued (1 to last_issued {})",
                         op.seq, dump.lastIssued));
    if (op.seq == previous) refuse(fmt::format("two entries #{}", op.seq));
    previous = op.seq;
    if (op.collectiveSeq > dump.lastCollective)
      refuse(fmt::format("entry #{} is collective #{}, beyond last_collective {}", op.seq,
                         op.collectiveSeq, dump.lastCollective));
    if (!isRank(op.root) || !isRank(op.waitingOn) || op.waitingOn == dump.rank)
      refuse(fmt::format("entry #{} names a rank that is not a peer of rank {} of {}", op.seq,
                         dump.rank, dump.size));
  }
}

RankDump readDump(const fs::path& path) {
  const std::string where = path.string();
  std::string text;
  try {
    text = tutti::readRegularFile(where, where);
  } catch (const tutti::Error& error) {
    throw InputError(error.what());
  }
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& error) {
    throw InputError(fmt::format("{}: not valid JSON: {}", where, error.what()));
  }
  if (!doc.is_object() || doc.value("format", "") != "tutti-flight-recorder")
    throw InputError(fmt::format("{}: not a tutti flight-recorder dump", where));
  const int version = field<int>(doc, "version", where);
  if (version != 1 && version != 2)
    throw InputError(
        fmt::format("{}: dump format version {} (this tutti-info reads 1 and 2)", where, version));
  RankDump dump;
  dump.path = where;
  dump.reason = field<std::string>(doc, "reason", where);
  dump.job = field<std::string>(doc, "job", where);
  dump.communicator = field<std::string>(doc, "communicator", where);
  dump.host = field<std::string>(doc, "host", where);
  dump.pid = field<long>(doc, "pid", where);
  dump.rank = field<int>(doc, "rank", where);
  dump.size = field<int>(doc, "size", where);
  dump.lastIssued = field<uint64_t>(doc, "last_issued", where);
  dump.lastCollective =
      version >= 2 ? field<uint64_t>(doc, "last_collective", where) : dump.lastIssued;
  dump.error = nullable<std::string>(doc, "error", where);
  const json clockFields = field<json>(doc, "clock", where);
  const DumpClock clock{field<int64_t>(clockFields, "steady_ns", where + " clock"),
                        field<int64_t>(clockFields, "wall_ns", where + " clock")};
  if (clock.steadyNs < 0 || clock.wallNs < 0)
    throw InputError(fmt::format("{}: inconsistent dump: a clock before its epoch", where));
  if (dump.size < 1 || dump.rank < 0 || dump.rank >= dump.size)
    throw InputError(fmt::format("{}: rank {} is not in a communicator of size {}", where,
                                 dump.rank, dump.size));
  const json peers = field<json>(doc, "peers", where);
  if (!peers.is_array() || peers.size() != static_cast<size_t>(dump.size))
    throw InputError(fmt::format("{}: \"peers\" must list the {} ranks", where, dump.size));
  for (const json& peer : peers)
    dump.peers.push_back({field<std::string>(peer, "host", where + " peers"),
                          field<long>(peer, "pid", where + " peers")});
  const json entries = field<json>(doc, "entries", where);
  if (!entries.is_array()) throw InputError(fmt::format("{}: \"entries\" is not an array", where));
  for (const json& entry : entries) dump.entries.push_back(readOp(entry, version, clock, where));
  std::sort(dump.entries.begin(), dump.entries.end(),
            [](const DumpedOp& a, const DumpedOp& b) { return a.seq < b.seq; });
  checkConsistent(dump, field<uint64_t>(doc, "capacity", where), where);
  return dump;
}

}  // namespace

std::vector<RankDump> loadDumps(const std::string& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) throw InputError(fmt::format("{}: no such directory", dir));
  std::vector<fs::path> paths;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("tutti-", 0) == 0 && name.size() > 5 &&
        name.compare(name.size() - 5, 5, ".json") == 0)
      paths.push_back(it->path());
  }
  if (error) throw InputError(fmt::format("{}: cannot be listed: {}", dir, error.message()));
  if (paths.empty())
    throw InputError(fmt::format("{}: no flight-recorder dumps (tutti-*.json) in it", dir));
  std::sort(paths.begin(), paths.end());
  std::vector<RankDump> dumps;
  for (const fs::path& path : paths) dumps.push_back(readDump(path));
  return dumps;
}

std::string signature(const DumpedOp& op) {
  std::string text = fmt::format("{}(count={}", op.collective, op.count);
  if (!op.dtype.empty()) text += ", " + op.dtype;
  if (!op.op.empty()) text += ", " + op.op;
  if (op.root) {
    const bool p2p = isPointToPoint(op.collective);
    text += fmt::format(", {}={}", p2p ? "peer" : "root", *op.root);
  }
  return text + ")";
}

}  // namespace tutti::info
