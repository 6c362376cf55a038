// Device memory one process exports and another maps (runtime/gpu/shared_device_memory.hpp), its
// descriptor passed through base/fd_mailbox.hpp, between real processes, with the CPU stand-in for
// the CUDA driver (host_cuda_driver.cpp: its "device memory" is inaccessible to the host, so every
// byte goes through the driver's copies). The peer maps it for another device, as a GPU reaching
// its neighbour's memory over NVLink would.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "base/fd_mailbox.hpp"
#include "runtime/gpu/gpu.hpp"
#include "runtime/gpu/shared_device_memory.hpp"
#include "tests/error_of.hpp"
#include "tests/warnings.hpp"

namespace gpu = tutti::runtime::gpu;
using tutti::Deadline;
using tutti::ErrorCode;
using tutti::Fd;
using tutti::FdMailbox;
using tutti::tests::messageOf;

namespace {

constexpr auto kWait = std::chrono::seconds(20);  // generous: a loaded 2-core machine
constexpr size_t kAsked = 3 << 20;                // rounds up to the granularity, 2 MiB
constexpr size_t kBytes = 4 << 20;
constexpr uint64_t kLabel = 42;

std::vector<unsigned char> pattern(uint64_t seed, size_t bytes) {
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> out(bytes);
  for (auto& b : out) b = static_cast<unsigned char>(rng());
  return out;
}

std::string jobName() {
  return "shared-memory-test-" + std::to_string(getpid());
}

// Runs `body` in a child process: its exit status, 0 when it returned true.
pid_t spawn(const std::function<bool()>& body) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  bool ok = false;
  try {
    ok = body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child %d: %s\n", getpid(), e.what());
  }
  _exit(ok ? 0 : 1);
}

int exitStatus(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void waitFor(int readEnd) {
  char go = 0;
  if (read(readEnd, &go, 1) != 1) throw std::runtime_error("the parent went away");
}

std::vector<unsigned char> readBack(const gpu::SharedDeviceMemory& memory) {
  std::vector<unsigned char> bytes(memory.bytes());
  gpu::copyToHost(bytes.data(), memory.data(), bytes.size(), gpu::classify(memory.data()));
  return bytes;
}

void write(const gpu::SharedDeviceMemory& memory, size_t offset,
           const std::vector<unsigned char>& bytes) {
  gpu::copyToDevice(static_cast<char*>(memory.data()) + offset, bytes.data(), bytes.size(),
                    gpu::classify(memory.data()));
}

}  // namespace

TEST_CASE("memory one process exports is the memory its peer maps, both ways", "[gpu]") {
  const std::string job = jobName();
  const pid_t parent = getpid();
  const auto first = pattern(11, kBytes), second = pattern(12, kBytes / 2);
  const pid_t peer = spawn([&] {
    FdMailbox mailbox(job, 1, {parent});
    const Fd fd = mailbox.receive(parent, kLabel, Deadline::after(kWait));
    // Mapped for device 1: the stand-in's other GPU.
    const auto memory = gpu::SharedDeviceMemory::import(fd, kBytes, 1);
    if (readBack(memory) != first) return false;
    write(memory, kBytes / 2, second);
    return true;
  });
  FdMailbox mailbox(job, 0, {peer});
  const auto memory = gpu::SharedDeviceMemory::allocate(kAsked, 0);
  REQUIRE(memory.bytes() == kBytes);
  CHECK(gpu::classify(memory.data()).kind == gpu::MemoryKind::kDevice);
  write(memory, 0, first);
  mailbox.send(1, kLabel, memory.exportFd().get(), Deadline::after(kWait));
  REQUIRE(exitStatus(peer) == 0);
  auto expected = first;
  std::copy(second.begin(), second.end(), expected.begin() + kBytes / 2);
  CHECK(readBack(memory) == expected);
}

TEST_CASE("host placement: the memfd one process registers is the memory its peer maps", "[gpu]") {
  // What GPUs without peer access share: pinned host memory, which the host reads in place (the
  // device's view is the host's address, as unified addressing makes it).
  const std::string job = jobName();
  const pid_t parent = getpid();
  const auto first = pattern(21, kBytes), second = pattern(22, kBytes / 2);
  const pid_t peer = spawn([&] {
    FdMailbox mailbox(job, 1, {parent});
    const Fd fd = mailbox.receive(parent, kLabel, Deadline::after(kWait));
    const auto memory = gpu::SharedDeviceMemory::import(fd, kBytes, 1, gpu::Placement::kHost);
    auto* bytes = static_cast<unsigned char*>(memory.data());
    if (memory.placement() != gpu::Placement::kHost ||
        !std::equal(first.begin(), first.end(), bytes))
      return false;
    std::copy(second.begin(), second.end(), bytes + kBytes / 2);
    return true;
  });
  FdMailbox mailbox(job, 0, {peer});
  const auto memory = gpu::SharedDeviceMemory::allocate(kBytes, 0, gpu::Placement::kHost);
  REQUIRE(memory.bytes() == kBytes);
  CHECK(gpu::classify(memory.data()).kind == gpu::MemoryKind::kRegisteredHost);
  auto* bytes = static_cast<unsigned char*>(memory.data());
  std::copy(first.begin(), first.end(), bytes);
  mailbox.send(1, kLabel, memory.exportFd().get(), Deadline::after(kWait));
  REQUIRE(exitStatus(peer) == 0);
  auto expected = first;
  std::copy(second.begin(), second.end(), expected.begin() + kBytes / 2);
  CHECK(std::equal(expected.begin(), expected.end(), bytes));

  // A descriptor that is no file, or a file shorter than asked (its mapping would fault).
  int ends[2];
  REQUIRE(pipe(ends) == 0);
  const Fd pipeEnd(ends[0]), otherEnd(ends[1]);
  CHECK_THAT(messageOf(ErrorCode::kInvalidArgument,
                       [&] {
                         gpu::SharedDeviceMemory::import(pipeEnd, kBytes, 0, gpu::Placement::kHost);
                       }),
             Catch::Contains("is not shared host memory"));
  const Fd exported = memory.exportFd();
  CHECK_THAT(
      messageOf(
          ErrorCode::kInvalidArgument,
          [&] { gpu::SharedDeviceMemory::import(exported, 2 * kBytes, 0, gpu::Placement::kHost); }),
      Catch::Contains("a file of " + std::to_string(kBytes) + " bytes"));
}

TEST_CASE("a mailbox drops what strangers send and takes its peer's", "[gpu]") {
  const std::string job = jobName();
  const pid_t parent = getpid();
  const auto peerBytes = pattern(21, kBytes), strangerBytes = pattern(22, kBytes);
  // Sends an allocation holding `bytes`, labelled kLabel, to rank 0.
  auto sender = [&](const std::vector<unsigned char>& bytes) {
    const auto memory = gpu::SharedDeviceMemory::allocate(kBytes, 1);
    write(memory, 0, bytes);
    FdMailbox(job, 9, {parent}).send(0, kLabel, memory.exportFd().get(), Deadline::after(kWait));
    return true;
  };
  int ends[2];
  REQUIRE(pipe(ends) == 0);
  // Closed on every way out, so that a waiting peer sees the end rather than waiting forever.
  Fd goRead(ends[0]), goWrite(ends[1]);
  const pid_t peer = spawn([&] {
    goWrite.reset();
    waitFor(goRead.get());
    return sender(peerBytes);
  });
  FdMailbox mailbox(job, 0, {peer});
  const pid_t stranger = spawn([&] { return sender(strangerBytes); });
  REQUIRE(exitStatus(stranger) == 0);  // its message waits in the queue, ahead of the peer's
  REQUIRE(write(goWrite.get(), "g", 1) == 1);
  const Fd fd = mailbox.receive(peer, kLabel, Deadline::after(kWait));
  REQUIRE(exitStatus(peer) == 0);
  CHECK(readBack(gpu::SharedDeviceMemory::import(fd, kBytes, 0)) == peerBytes);
  tutti::tests::Warnings warnings;
  warnings.expect();
  CHECK(warnings.count({"fd mailbox of rank 0", "pid " + std::to_string(stranger),
                        "not a peer of this job"}) == 1);
  const std::string late = messageOf(ErrorCode::kTimeout, [&] {
    mailbox.receive(stranger, kLabel, Deadline::after(std::chrono::milliseconds(200)));
  });
  CHECK_THAT(late, Catch::Contains("from pid " + std::to_string(stranger)));
}

TEST_CASE("bad input to shared device memory and mailboxes says what was wrong", "[gpu]") {
  CHECK_THAT(
      messageOf(ErrorCode::kInvalidArgument, [] { gpu::SharedDeviceMemory::allocate(0, 0); }),
      Catch::Contains("0 bytes"));
  CHECK_THAT(
      messageOf(ErrorCode::kInvalidArgument, [] { gpu::SharedDeviceMemory::allocate(kBytes, 5); }),
      Catch::Contains("device 5 does not exist"));
  int ends[2];
  REQUIRE(pipe(ends) == 0);
  const Fd pipeEnd(ends[0]), otherEnd(ends[1]);
  CHECK_THAT(messageOf(ErrorCode::kInvalidArgument,
                       [&] { gpu::SharedDeviceMemory::import(pipeEnd, kBytes, 0); }),
             Catch::Contains("is not exported device memory"));
  // More bytes than the exporter has: the mapping is refused.
  const auto memory = gpu::SharedDeviceMemory::allocate(kBytes, 0);
  const Fd exported = memory.exportFd();
  CHECK_THAT(messageOf(ErrorCode::kSystem,
                       [&] { gpu::SharedDeviceMemory::import(exported, 2 * kBytes, 0); }),
             Catch::Contains("cuMemMap"));
  const std::string job = jobName();
  FdMailbox mailbox(job, 0, {});
  CHECK_THAT(messageOf(ErrorCode::kSystem, [&] { FdMailbox(job, 0, {}); }),
             Catch::Contains("bind @tutti-fd/" + job + "/0"));
  CHECK_THAT(messageOf(ErrorCode::kTimeout,
                       [&] {
                         mailbox.send(3, kLabel, exported.get(),
                                      Deadline::after(std::chrono::milliseconds(200)));
                       }),
             Catch::Contains("rank 3's mailbox"));
  CHECK_THAT(
      messageOf(ErrorCode::kInvalidArgument, [] { FdMailbox(std::string(200, 'x'), 0, {}); }),
      Catch::Contains("longer than"));
}
