// Reading the flight-recorder dumps of a job (docs/flight-recorder.md): every tutti-*.json file of
// a directory, each checked field by field and for consistency (no more entries than its capacity,
// no sequence number beyond the rank's last), so that a bad input is an error naming the file and
// the field instead of a wrong analysis.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tutti::info {

// Input that cannot be analysed; tutti-info prints it and exits 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct DumpedOp {
  uint64_t seq = 0;
  // Its number among the communicator's collectives, alike on every rank for the same call; 0
  // for send/recv. Version 1 dumps lack it: their collectives' operation numbers stand in.
  uint64_t collectiveSeq = 0;
  std::string collective;
  std::string algorithm;  // "" before it started
  uint64_t count = 0;
  uint64_t bytes = 0;
  std::string dtype, op;  // "" where they do not apply
  std::optional<int> root;
  std::string state;  // queued, running, done, failed
  std::optional<int> waitingOn;
  std::string error;
  // Wall-clock ns since the epoch (from the rank's steady clock and the dump's pair of readings),
  // so that ranks' times compare: when the rank issued (or, blocking, started) it, when it ended.
  std::optional<int64_t> enteredNs, endedNs;
};

struct DumpedPeer {
  std::string host;
  long pid = 0;
};

struct RankDump {
  std::string path;
  std::string reason;
  std::string job;
  std::string communicator;
  std::string host;
  long pid = 0;
  int rank = 0;
  int size = 0;
  uint64_t lastIssued = 0;
  uint64_t lastCollective = 0;  // collectives issued (version 1: last_issued)
  std::string error;            // the communicator's failure, "" when healthy
  std::vector<DumpedPeer> peers;
  std::vector<DumpedOp> entries;  // by sequence number
};

// Throws InputError for a missing or unreadable directory, no dumps, or a malformed dump.
std::vector<RankDump> loadDumps(const std::string& dir);

// "allreduce(count=1024, float32, sum)", "broadcast(count=8, int32, root=1)"
std::string signature(const DumpedOp& op);

}  // namespace tutti::info
