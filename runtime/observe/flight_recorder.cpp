#include "runtime/observe/flight_recorder.hpp"

#include <algorithm>

#include "runtime/observe/op_clock.hpp"

namespace tutti::runtime {

const char* opStateName(OpState state) {
  switch (state) {
    case OpState::kEmpty: return "empty";
    case OpState::kQueued: return "queued";
    case OpState::kRunning: return "running";
    case OpState::kDone: return "done";
    case OpState::kFailed: return "failed";
  }
  return "unknown";
}

namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

bool ended(uint8_t state) {
  return state == static_cast<uint8_t>(OpState::kDone) ||
         state == static_cast<uint8_t>(OpState::kFailed);
}

size_t checkedCapacity(size_t capacity) {
  if (capacity > FlightRecorder::kMaxEntries)
    raise(ErrorCode::kInvalidArgument, "flight recorder capacity {} is above the maximum {}",
          capacity, FlightRecorder::kMaxEntries);
  return capacity;
}

}  // namespace

// Brackets the writes to one slot: a reader that sees an odd or changed version retries.
class FlightRecorder::Writing {
 public:
  explicit Writing(Slot& slot) : slot_(slot), version_(slot.version.load(kRelaxed)) {
    slot_.version.store(version_ + 1, kRelaxed);
    std::atomic_thread_fence(std::memory_order_release);
  }
  ~Writing() { slot_.version.store(version_ + 2, std::memory_order_release); }
  Writing(const Writing&) = delete;
  Writing& operator=(const Writing&) = delete;

 private:
  Slot& slot_;
  uint32_t version_;
};

FlightRecorder::FlightRecorder(size_t capacity) : slots_(checkedCapacity(capacity)) {
  opclock::origin();  // before the first stamp this recorder keeps
}

void FlightRecorder::queued(uint64_t sequence, const OpSignature& signature, bool mayWait) {
  if (!enabled()) return;
  // Only the issuing thread counts, so no read-modify-write is needed.
  recorded_.store(recorded_.load(kRelaxed) + 1, kRelaxed);
  Slot& slot = slots_[sequence % slots_.size()];
  // acquire: the runner's last writes to the slot happen before ours.
  const uint8_t previous = slot.state.load(std::memory_order_acquire);
  if (previous != static_cast<uint8_t>(OpState::kEmpty) && !ended(previous)) {
    dropped_.store(dropped_.load(kRelaxed) + 1, kRelaxed);
    return;
  }
  Writing writing(slot);
  slot.sequence.store(sequence, kRelaxed);
  slot.collective.store(signature.collective, kRelaxed);
  slot.algorithm.store(nullptr, kRelaxed);
  slot.count.store(signature.count, kRelaxed);
  slot.bytes.store(signature.bytes, kRelaxed);
  slot.collectiveSeq.store(signature.collectiveSeq, kRelaxed);
  slot.dtype.store(signature.dtype, kRelaxed);
  slot.op.store(signature.op, kRelaxed);
  slot.root.store(signature.root, kRelaxed);
  slot.waitingOn.store(-1, kRelaxed);
  slot.enqueuedNs.store(mayWait ? opclock::stamp() : 0, kRelaxed);
  slot.startedNs.store(0, kRelaxed);
  slot.endedNs.store(0, kRelaxed);
  slot.state.store(static_cast<uint8_t>(OpState::kQueued), kRelaxed);
}

FlightRecorder::Slot* FlightRecorder::owned(uint64_t sequence) {
  if (!enabled()) return nullptr;
  Slot& slot = slots_[sequence % slots_.size()];
  // Another sequence here means this operation was dropped; an ended one is no longer ours.
  if (slot.sequence.load(kRelaxed) != sequence || ended(slot.state.load(kRelaxed))) return nullptr;
  return &slot;
}

void FlightRecorder::started(uint64_t sequence, const char* algorithm) {
  Slot* slot = owned(sequence);
  if (!slot) return;
  Writing writing(*slot);
  const int64_t now = opclock::stamp();
  slot->algorithm.store(algorithm, kRelaxed);
  slot->startedNs.store(now, kRelaxed);
  if (slot->enqueuedNs.load(kRelaxed) == 0) slot->enqueuedNs.store(now, kRelaxed);
  slot->state.store(static_cast<uint8_t>(OpState::kRunning), kRelaxed);
}

void FlightRecorder::waitingOn(uint64_t sequence, int peer) {
  Slot* slot = owned(sequence);
  if (!slot || slot->waitingOn.load(kRelaxed) == peer) return;
  Writing writing(*slot);
  slot->waitingOn.store(peer, kRelaxed);
}

void FlightRecorder::finished(uint64_t sequence) {
  Slot* slot = owned(sequence);
  if (!slot) return;
  Writing writing(*slot);
  slot->endedNs.store(opclock::stamp(), kRelaxed);
  slot->waitingOn.store(-1, kRelaxed);
  // release: hands the slot back to the issuing thread (see queued).
  slot->state.store(static_cast<uint8_t>(OpState::kDone), std::memory_order_release);
}

void FlightRecorder::failed(uint64_t sequence, const Error& error) {
  Slot* slot = owned(sequence);
  if (!slot) return;
  {
    std::lock_guard lock(errorsMutex_);
    if (errors_.size() == kKeptErrors) errors_.erase(errors_.begin());
    errors_.emplace_back(sequence, error.what());
  }
  Writing writing(*slot);
  const int64_t now = opclock::stamp();
  slot->endedNs.store(now, kRelaxed);
  // A blocking call that fails before it starts still says when the rank came to it.
  if (slot->enqueuedNs.load(kRelaxed) == 0) slot->enqueuedNs.store(now, kRelaxed);
  slot->state.store(static_cast<uint8_t>(OpState::kFailed), std::memory_order_release);
}

std::string FlightRecorder::errorOf(uint64_t sequence) const {
  std::lock_guard lock(errorsMutex_);
  for (const auto& [failedSequence, message] : errors_)
    if (failedSequence == sequence) return message;
  return {};
}

std::vector<OpRecord> FlightRecorder::snapshot() const {
  const opclock::Converter converter;
  std::vector<OpRecord> records;
  records.reserve(slots_.size());
  for (const Slot& slot : slots_) {
    OpRecord record;
    for (;;) {
      const uint32_t before = slot.version.load(std::memory_order_acquire);
      if (before & 1) continue;
      record.sequence = slot.sequence.load(kRelaxed);
      record.signature = {slot.collective.load(kRelaxed),   slot.count.load(kRelaxed),
                          slot.dtype.load(kRelaxed),        slot.op.load(kRelaxed),
                          slot.root.load(kRelaxed),         slot.bytes.load(kRelaxed),
                          slot.collectiveSeq.load(kRelaxed)};
      record.algorithm = slot.algorithm.load(kRelaxed);
      record.state = static_cast<OpState>(slot.state.load(kRelaxed));
      record.enqueuedNs = slot.enqueuedNs.load(kRelaxed);
      record.startedNs = slot.startedNs.load(kRelaxed);
      record.endedNs = slot.endedNs.load(kRelaxed);
      record.waitingOn = slot.waitingOn.load(kRelaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (slot.version.load(kRelaxed) == before) break;
    }
    if (record.state == OpState::kEmpty) continue;
    for (int64_t* time : {&record.enqueuedNs, &record.startedNs, &record.endedNs})
      if (*time) *time = converter.toSteadyNs(*time);
    if (record.state == OpState::kFailed) record.error = errorOf(record.sequence);
    records.push_back(std::move(record));
  }
  std::sort(records.begin(), records.end(),
            [](const OpRecord& a, const OpRecord& b) { return a.sequence < b.sequence; });
  return records;
}

}  // namespace tutti::runtime
