// The flight recorder: the last N operations of one communicator (TUTTI_FLIGHT_RECORDER_ENTRIES),
// what each was, its state and times, and the peer it waited on, so that a hang or a failure can
// be explained afterwards (dumped by runtime/flight_dump.hpp, read by `tutti-info postmortem`).
//
// It sits on the 0.6 us small-message path, so recording takes no lock and allocates nothing:
// each slot is a seqlock of relaxed atomics. A slot has one writer at a time: the issuing thread
// fills it while its previous operation is finished (or the slot is empty), then the thread that
// runs the operation owns it until it marks it done or failed. Readers (a dump, from any thread)
// copy a slot and retry if a writer was in the middle of it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/error.hpp"

namespace tutti::runtime {

enum class OpState : uint8_t { kEmpty, kQueued, kRunning, kDone, kFailed };
const char* opStateName(OpState state);

// What the caller asked for; -1 marks a field that does not apply (a barrier has no type).
struct OpSignature {
  const char* collective;  // static string: "allreduce", "send", ...
  uint64_t count;
  int dtype;  // kernels::DataType
  int op;     // kernels::RedOp
  int root;   // root of a rooted collective, peer of a send/recv
  uint64_t bytes;
  // Its number among the communicator's collectives (OperationCounts::nextCollective), alike on
  // every rank for the same call where operation numbers are not (send/recv between some ranks
  // only); 0 for a send/recv.
  uint64_t collectiveSeq;
};

// A consistent copy of one recorded operation.
struct OpRecord {
  uint64_t sequence = 0;
  OpSignature signature{};
  const char* algorithm = nullptr;  // null until it starts
  OpState state = OpState::kEmpty;
  int64_t enqueuedNs = 0, startedNs = 0, endedNs = 0;  // steady clock, ns; 0 = not yet
  int waitingOn = -1;                                  // the peer it last stalled on (-1: none)
  std::string error;                                   // when failed
};

class FlightRecorder {
 public:
  static constexpr size_t kMaxEntries = 1 << 20;
  // capacity 0 disables recording; above kMaxEntries is kInvalidArgument.
  explicit FlightRecorder(size_t capacity);

  bool enabled() const { return !slots_.empty(); }
  size_t capacity() const { return slots_.size(); }

  // Issue order: queued by the issuing thread; then started, waitingOn and finished or failed by
  // the thread that runs the operation. An operation whose slot still holds an unfinished one
  // (more than `capacity` outstanding) is not recorded and counts as dropped.
  // Reading the clock is most of the recorder's cost, so a blocking call (mayWait false) takes
  // its start time as its enqueue time instead of reading the clock twice.
  void queued(uint64_t sequence, const OpSignature& signature, bool mayWait);
  void started(uint64_t sequence, const char* algorithm);
  void waitingOn(uint64_t sequence, int peer);
  void finished(uint64_t sequence);
  // Marks an operation that has not ended as failed (one already done keeps its state).
  void failed(uint64_t sequence, const Error& error);

  // The recorded operations, oldest first; safe from any thread at any time.
  std::vector<OpRecord> snapshot() const;
  uint64_t recorded() const { return recorded_.load(std::memory_order_relaxed); }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::atomic<uint32_t> version{0};  // odd while being written
    std::atomic<uint64_t> sequence{0};
    std::atomic<const char*> collective{nullptr};
    std::atomic<const char*> algorithm{nullptr};
    std::atomic<uint64_t> count{0}, bytes{0}, collectiveSeq{0};
    std::atomic<int32_t> dtype{-1}, op{-1}, root{-1}, waitingOn{-1};
    std::atomic<uint8_t> state{0};
    std::atomic<int64_t> enqueuedNs{0}, startedNs{0}, endedNs{0};  // opclock stamps
  };
  class Writing;

  Slot* owned(uint64_t sequence);
  std::string errorOf(uint64_t sequence) const;

  std::vector<Slot> slots_;
  std::atomic<uint64_t> recorded_{0};
  std::atomic<uint64_t> dropped_{0};
  // Failure messages are rare and variable-sized: kept aside, under a lock, the latest few.
  static constexpr size_t kKeptErrors = 16;
  mutable std::mutex errorsMutex_;
  std::vector<std::pair<uint64_t, std::string>> errors_;
};

}  // namespace tutti::runtime
