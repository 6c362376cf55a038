// The flight recorder's ring: contents, wrap-around, operations it must drop rather than
// overwrite, failure messages, and copies that stay consistent while a writer is busy.
#include "runtime/observe/flight_recorder.hpp"

#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "runtime/observe/op_clock.hpp"
#include "runtime/observe/trace.hpp"

using tutti::Error;
using tutti::ErrorCode;
using namespace tutti::runtime;

namespace {

OpSignature allreduce(uint64_t count) {
  return {.collective = "allreduce",
          .count = count,
          .dtype = 8,
          .op = 0,
          .root = -1,
          .bytes = count * 4,
          .collectiveSeq = count + 1};
}

void complete(FlightRecorder& recorder, uint64_t sequence) {
  recorder.queued(sequence, allreduce(sequence), false);
  recorder.started(sequence, "ring");
  recorder.finished(sequence);
}

}  // namespace

TEST_CASE("a recorded operation keeps its signature, state, times and the peer it waited on") {
  FlightRecorder recorder(8);
  recorder.queued(1, allreduce(1024), true);
  auto records = recorder.snapshot();
  REQUIRE(records.size() == 1);
  CHECK(records[0].state == OpState::kQueued);
  CHECK(records[0].algorithm == nullptr);
  CHECK(records[0].startedNs == 0);
  CHECK(records[0].enqueuedNs > 0);

  recorder.started(1, "ring");
  recorder.waitingOn(1, 3);
  records = recorder.snapshot();
  CHECK(records[0].state == OpState::kRunning);
  CHECK(std::string(records[0].algorithm) == "ring");
  CHECK(records[0].waitingOn == 3);

  recorder.finished(1);
  records = recorder.snapshot();
  const OpRecord& r = records[0];
  CHECK(r.sequence == 1);
  CHECK(std::string(r.signature.collective) == "allreduce");
  CHECK(r.signature.count == 1024);
  CHECK(r.signature.bytes == 4096);
  CHECK(r.signature.dtype == 8);
  CHECK(r.signature.root == -1);
  CHECK(r.signature.collectiveSeq == 1025);
  CHECK(r.state == OpState::kDone);
  CHECK(r.waitingOn == -1);
  CHECK(r.enqueuedNs > 0);
  CHECK(r.startedNs >= r.enqueuedNs);
  CHECK(r.endedNs >= r.startedNs);
}

TEST_CASE("a blocking call's enqueue time is its start time (one clock read fewer)") {
  FlightRecorder recorder(2);
  recorder.queued(1, allreduce(8), false);
  CHECK(recorder.snapshot()[0].enqueuedNs == 0);
  recorder.started(1, "oneshot");
  const OpRecord r = recorder.snapshot()[0];
  CHECK(r.startedNs > 0);
  CHECK(r.enqueuedNs == r.startedNs);
}

TEST_CASE("a blocking call that fails before it starts is stamped as entered when it failed") {
  FlightRecorder recorder(2);
  recorder.queued(1, allreduce(8), false);
  recorder.failed(1, Error(ErrorCode::kRemote, "rank 0: allreduce #1: rank 1 is gone"));
  const OpRecord r = recorder.snapshot()[0];
  CHECK(r.state == OpState::kFailed);
  CHECK(r.startedNs == 0);
  CHECK(r.endedNs > 0);
  CHECK(r.enqueuedNs == r.endedNs);
}

TEST_CASE("the ring keeps the last N operations, oldest first") {
  FlightRecorder recorder(4);
  for (uint64_t seq = 1; seq <= 10; ++seq) complete(recorder, seq);
  const auto records = recorder.snapshot();
  REQUIRE(records.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(records[i].sequence == 7 + i);
    CHECK(records[i].signature.count == 7 + i);
    CHECK(records[i].state == OpState::kDone);
  }
  CHECK(recorder.recorded() == 10);
  CHECK(recorder.dropped() == 0);
}

TEST_CASE("an unfinished operation is never overwritten: the newer one is dropped") {
  FlightRecorder recorder(2);
  recorder.queued(1, allreduce(1), true);
  recorder.started(1, "ring");
  recorder.queued(2, allreduce(2), true);
  recorder.queued(3, allreduce(3), true);  // slot of #1, still running
  recorder.started(3, "tree");             // not recorded: must not touch #1
  CHECK(recorder.dropped() == 1);
  auto records = recorder.snapshot();
  REQUIRE(records.size() == 2);
  CHECK(records[0].sequence == 1);
  CHECK(std::string(records[0].algorithm) == "ring");
  CHECK(records[0].state == OpState::kRunning);
  recorder.finished(1);
  recorder.queued(5, allreduce(5), true);  // #1 ended: its slot is free again
  records = recorder.snapshot();
  CHECK(records.back().sequence == 5);
}

TEST_CASE("a failed operation keeps its error; a finished one cannot fail afterwards") {
  FlightRecorder recorder(4);
  complete(recorder, 1);
  recorder.queued(2, allreduce(2), true);
  recorder.started(2, "ring");
  recorder.waitingOn(2, 1);
  recorder.failed(2, Error(ErrorCode::kTimeout, "rank 0: allreduce #2 timed out"));
  recorder.failed(1, Error(ErrorCode::kTimeout, "late"));
  const auto records = recorder.snapshot();
  REQUIRE(records.size() == 2);
  CHECK(records[0].state == OpState::kDone);
  CHECK(records[0].error.empty());
  CHECK(records[1].state == OpState::kFailed);
  CHECK(records[1].error == "rank 0: allreduce #2 timed out");
  CHECK(records[1].waitingOn == 1);
  CHECK(records[1].endedNs > 0);
}

TEST_CASE("capacity 0 records nothing; an absurd capacity is refused") {
  FlightRecorder off(0);
  CHECK_FALSE(off.enabled());
  complete(off, 1);
  CHECK(off.snapshot().empty());
  CHECK_THROWS_AS(FlightRecorder(FlightRecorder::kMaxEntries + 1), Error);
}

TEST_CASE("copies taken while a writer runs are never torn") {
  FlightRecorder recorder(16);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (uint64_t seq = 1; !stop.load(); ++seq) complete(recorder, seq);
  });
  while (recorder.recorded() < 1000) std::this_thread::yield();
  size_t checked = 0;
  for (int round = 0; round < 2000; ++round)
    for (const OpRecord& r : recorder.snapshot()) {
      // Every field of one record comes from the same operation.
      if (r.signature.count != r.sequence || r.signature.bytes != r.sequence * 4)
        FAIL("torn record #" << r.sequence << ": count " << r.signature.count);
      ++checked;
    }
  stop = true;
  writer.join();
  CHECK(checked > 2000);
}

TEST_CASE("trace file names: %r, %h, %p, and a rank suffix when the pattern has no %r") {
  CHECK(tracePath("/tmp/t-%r.json", 3, "wabc", true) == "/tmp/t-3.json");
  CHECK(tracePath("/tmp/trace.json", 3, "wabc", true) == "/tmp/trace.rank3.json");
  CHECK(tracePath("/tmp/trace", 1, "wabc", true) == "/tmp/trace.rank1");
  CHECK(tracePath("/tmp/t-%r.json", 0, "wabc.s0c1", false) == "/tmp/t-0.wabc.s0c1.json");
  CHECK(tracePath("/tmp/t-%p-%r.json", 2, "w", true) ==
        "/tmp/t-" + std::to_string(getpid()) + "-2.json");
}

TEST_CASE("the TSC is trusted where the kernel keeps time with it or the CPU and VM vouch for it") {
  using tutti::runtime::opclock::tscTrusted;
  CHECK(tscTrusted("tsc", ""));
  const char* vouched = "fpu tsc msr constant_tsc rep_good nonstop_tsc cpuid tsc_reliable x2apic";
  CHECK(tscTrusted("kvm-clock", vouched));
  CHECK_FALSE(tscTrusted("kvm-clock", "fpu tsc msr constant_tsc nonstop_tsc cpuid"));
  CHECK_FALSE(tscTrusted("hpet", "fpu tsc constant_tsc tsc_reliable"));
  // Whole words only: constant_tsc_x is not constant_tsc, no_nonstop_tsc is not nonstop_tsc.
  CHECK_FALSE(tscTrusted("kvm-clock", "constant_tsc_x no_nonstop_tsc tsc_reliable"));
  CHECK(tscTrusted("kvm-clock", "nonstop_tsc constant_tsc tsc_reliable"));
}

TEST_CASE("stamps read out as steady-clock nanoseconds, whichever clock this machine stamps with") {
  using namespace tutti::runtime::opclock;
  origin();  // the conversion's start, as a recorder takes it when it is made
  const int64_t before = steadyNs();
  const int64_t first = stamp();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const int64_t second = stamp();
  const int64_t after = steadyNs();
  const Converter converter;
  const int64_t firstNs = converter.toSteadyNs(first), secondNs = converter.toSteadyNs(second);
  // Bounds a preempted clock read cannot cross, which a stamp read out in the wrong unit (TSC
  // ticks as nanoseconds) or from the wrong start would.
  constexpr int64_t kSlackNs = 5'000'000;
  CHECK(firstNs >= before - kSlackNs);
  CHECK(secondNs <= after + kSlackNs);
  CHECK(secondNs - firstNs >= 40'000'000);
  CHECK(secondNs - firstNs <= after - before + kSlackNs);
}
