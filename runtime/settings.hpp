// A communicator's settings: the TUTTI_* variables it depends on, read and validated once at init
// (Settings::fromConfig) into typed values, so that no operation compares words or looks a
// variable up by name. The variable table (base/config.cpp) stays the one place for their names,
// defaults and docs.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/engine_placement.hpp"
#include "runtime/tuning/tuning_file.hpp"
#include "topology/rdma_nics.hpp"
#include "transport/registry.hpp"

namespace tutti::runtime {

struct Algorithm;  // runtime/collectives/algorithm.hpp

// TUTTI_DIRECT_BUFFERS: which buffers the direct algorithms reach in place.
enum class DirectBuffers { kAny, kRegistered };

// The variable's word for each value: "any", "registered".
const char* choiceName(DirectBuffers buffers);

// TUTTI_AUTOTUNE: where auto times the all-reduce algorithms while the job runs
// (collectives/autotune.hpp). kAuto where that cannot change the results' bits (two ranks: each
// element is the one sum, product, minimum or maximum of two numbers, whichever algorithm runs;
// but for ties between NaN payloads, or +0 and -0 under min and max, which keep the operands'
// order); kOn everywhere; kOff nowhere (the tuning table decides).
enum class AutotuneMode { kAuto, kOn, kOff };
const char* choiceName(AutotuneMode mode);

struct Settings {
  // TUTTI_TUNING_FILE's table; where it came from; whether init trades it for rank 0's
  // (tuning_file.hpp); the part of it that a communicator of its size plans from (planFor).
  TuningTable tuningTable;
  std::string tuningOrigin = "defaults";
  bool tuningFromRank0 = false;
  Tuning tuning = defaultTuning();
  // TUTTI_CHUNK_BYTES and TUTTI_SLOTS as set (read once, at fromConfig), and the FIFO geometry:
  // theirs, else the table's part for the communicator's size.
  std::optional<size_t> slotBytesVariable;
  std::optional<int> slotsVariable;
  size_t slotBytes = 0;
  int slots = 0;
  int socketsPerPeer = 1;
  // TUTTI_SOCKET_IFNAME, or the config's socket_ifname (tutti_comm_split_config): where this
  // rank's TCP connections listen (one rail of several NICs).
  bootstrap::InterfaceSpec socketInterfaces;
  transport::TransportSelection transport;  // TUTTI_TRANSPORT
  topology::HcaSelector ibHca;              // TUTTI_IB_HCA: the RDMA NICs transports may use
  // TUTTI_ALGO, or tutti_comm_set_algorithm: the all-reduce entry of the algorithm table that
  // every all-reduce runs; nullptr for auto (the planner picks per call).
  const Algorithm* algorithm = nullptr;
  DirectBuffers directBuffers = DirectBuffers::kAny;         // TUTTI_DIRECT_BUFFERS
  AutotuneMode autotune = AutotuneMode::kAuto;               // TUTTI_AUTOTUNE
  EnginePlacement enginePlacement = EnginePlacement::kAuto;  // TUTTI_ENGINE_AFFINITY
  bool checkCalls = false;                                   // TUTTI_CHECK_CALLS
  size_t flightRecorderEntries = 0;                          // TUTTI_FLIGHT_RECORDER_ENTRIES
  std::string dumpDir;                                       // TUTTI_DUMP_DIR ("": no dumps)
  std::string traceFile;                                     // TUTTI_TRACE_FILE ("": no trace)
  std::vector<int> ringOrder;  // TUTTI_RING_ORDER (empty: planned by locality)
  bool gpuKernels = true;      // TUTTI_GPU_PATH=kernels (false: staged)
  int gpuChannels = 8;         // TUTTI_GPU_CHANNELS
  // TUTTI_TIMEOUT: bounds init's waits, and is the stall timeout a communicator starts with.
  std::chrono::milliseconds timeout{0};

  // Validates the TUTTI_* variables; a bad value is kInvalidArgument naming the variable.
  static Settings fromConfig();
  // Plans from `source`'s table (its part for every rank count until planFor), its FIFO
  // geometry where TUTTI_CHUNK_BYTES and TUTTI_SLOTS were unset.
  void useTuning(TuningSource source);
  // Plans from the table's part for communicators of `ranks` ranks.
  void planFor(int ranks);
  // What must be alike on every rank, as space-separated "VARIABLE=value" words (TUTTI_CHUNK_BYTES
  // and TUTTI_SLOTS as set, or "unset": the table, compared whole, decides): ranks with other
  // FIFO geometries, transports, forced algorithms or tuning tables (the table in force, from a
  // file or not, as "TUTTI_TUNING_FILE:key=value" words) would wait for messages never sent;
  // ranks checking calls for signatures the others never send.
  std::string agreed() const;
};

}  // namespace tutti::runtime
