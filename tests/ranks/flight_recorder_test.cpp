// The flight recorder in thread worlds: a rank that skips a collective makes the others time out
// and dump (naming the op and the peer they waited on), abort and SIGUSR1 dump too, a
// TUTTI_DUMP_DIR gone by the time of a dump is a warning and not a failure, and TUTTI_TRACE_FILE
// holds one complete event per operation with its algorithm, bytes and sequence number.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "tests/temp_dir.hpp"
#include "tests/warnings.hpp"
#include "world.hpp"

using namespace tutti::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The dump of `rank` in dir, waiting up to 20 s for it (SIGUSR1 dumps come from another thread).
std::optional<json> dumpOf(const fs::path& dir, int rank) {
  const std::string suffix = "-rank" + std::to_string(rank) + ".json";
  for (int i = 0; i < 400; ++i) {
    for (const auto& file : fs::directory_iterator(dir)) {
      const std::string name = file.path().filename().string();
      if (name.rfind("tutti-", 0) == 0 && name.size() > suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        std::ifstream in(file.path());
        return json::parse(in);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return std::nullopt;
}

tuttiResult_t allreduce(tuttiComm_t comm, std::vector<float>& data) {
  return tutti_allreduce(data.data(), data.data(), data.size(), tuttiFloat32, tuttiSum, comm,
                         nullptr);
}

}  // namespace

TEST_CASE("ranks waiting for a rank that skipped a collective time out and dump") {
  tutti::tests::Warnings().expect();  // its ranks time out and dump on purpose
  TempDir dir("tutti-fr");
  ScopedEnv dumpDir("TUTTI_DUMP_DIR", dir.path.string());
  ScopedEnv timeout("TUTTI_TIMEOUT", "1");
  ThreadWorld world(3);
  REQUIRE(world.ok());
  const auto results = onEveryRank<int>(3, [&](int rank) {
    std::vector<float> data(1024, 1.0f);
    for (int i = 0; i < 3; ++i)
      if (allreduce(world.comm(rank), data) != tuttiSuccess) return -1;
    if (rank == 2) return static_cast<int>(tuttiSuccess);  // skips #4
    return static_cast<int>(allreduce(world.comm(rank), data));
  });
  CHECK(results[0] == tuttiTimeout);
  CHECK(results[1] == tuttiTimeout);
  CHECK(results[2] == tuttiSuccess);
  for (int rank : {0, 1}) {
    const auto dump = dumpOf(dir.path, rank);
    REQUIRE(dump);
    CHECK((*dump)["reason"] == "timeout");
    CHECK((*dump)["rank"] == rank);
    CHECK((*dump)["size"] == 3);
    CHECK((*dump)["peers"].size() == 3);
    const json& entries = (*dump)["entries"];
    REQUIRE(entries.size() == 4);
    for (int i = 0; i < 3; ++i) {
      CHECK(entries[i]["seq"] == i + 1);
      CHECK(entries[i]["state"] == "done");
      CHECK(entries[i]["collective"] == "allreduce");
      CHECK(entries[i]["count"] == 1024);
      CHECK(entries[i]["dtype"] == "float32");
      CHECK(entries[i]["op"] == "sum");
      CHECK(entries[i]["bytes"] == 4096);
      CHECK(entries[i]["algorithm"].is_string());
    }
    CHECK(entries[3]["seq"] == 4);
    CHECK(entries[3]["state"] == "failed");
    CHECK(entries[3]["waiting_on"].is_number());
    CHECK(entries[3]["error"].get<std::string>().find("timed out") != std::string::npos);
  }
  SECTION("the rank that is behind dumps on abort") {
    REQUIRE(tutti_comm_abort(world.comm(2)) == tuttiSuccess);
    const auto dump = dumpOf(dir.path, 2);
    REQUIRE(dump);
    CHECK((*dump)["reason"] == "abort");
    CHECK((*dump)["last_issued"] == 3);
    CHECK((*dump)["entries"].back()["state"] == "done");
  }
}

TEST_CASE("dumps number collectives apart from send/recv, which only some ranks make") {
  tutti::tests::Warnings().expect();  // its ranks time out and dump on purpose
  TempDir dir("tutti-fr");
  ScopedEnv dumpDir("TUTTI_DUMP_DIR", dir.path.string());
  ThreadWorld world(3);
  REQUIRE(world.ok());
  const auto results = onEveryRank<int>(3, [&](int rank) {
    std::vector<float> data(1024, 1.0f);
    if (rank < 2) {  // rank 0 sends rank 1 a message: operation #1 of theirs, none of rank 2's
      const tuttiResult_t rc =
          rank == 0 ? tutti_send(data.data(), 8, tuttiFloat32, 1, world.comm(0), nullptr)
                    : tutti_recv(data.data(), 8, tuttiFloat32, 0, world.comm(1), nullptr);
      if (rc != tuttiSuccess) return -1;
    }
    return static_cast<int>(allreduce(world.comm(rank), data));
  });
  REQUIRE(results == std::vector<int>(3, tuttiSuccess));
  for (int rank = 0; rank < 3; ++rank) REQUIRE(tutti_comm_abort(world.comm(rank)) == tuttiSuccess);
  for (int rank = 0; rank < 3; ++rank) {
    const auto dump = dumpOf(dir.path, rank);
    REQUIRE(dump);
    CHECK((*dump)["version"] == 2);
    CHECK((*dump)["last_collective"] == 1);
    const json& entries = (*dump)["entries"];
    REQUIRE(entries.size() == (rank < 2 ? 2u : 1u));
    if (rank < 2) {
      CHECK(entries[0]["collective"] == (rank == 0 ? "send" : "recv"));
      CHECK(entries[0]["collective_seq"].is_null());
    }
    CHECK(entries.back()["collective"] == "allreduce");
    CHECK(entries.back()["seq"] == (rank < 2 ? 2 : 1));
    CHECK(entries.back()["collective_seq"] == 1);
    CHECK((*dump)["last_issued"] == (rank < 2 ? 2 : 1));
  }
}

TEST_CASE("SIGUSR1 dumps every live communicator of the process") {
  tutti::tests::Warnings().expect();  // each dump is a warning
  TempDir dir("tutti-fr");
  ScopedEnv dumpDir("TUTTI_DUMP_DIR", dir.path.string());
  ThreadWorld world(2);
  REQUIRE(world.ok());
  onEveryRank<int>(2, [&](int rank) {
    std::vector<float> data(8, 1.0f);
    allreduce(world.comm(rank), data);
    return static_cast<int>(allreduce(world.comm(rank), data));
  });
  REQUIRE(raise(SIGUSR1) == 0);
  for (int rank : {0, 1}) {
    const auto dump = dumpOf(dir.path, rank);
    REQUIRE(dump);
    CHECK((*dump)["reason"] == "SIGUSR1");
    CHECK((*dump)["error"].is_null());
    REQUIRE((*dump)["entries"].size() == 2);
    CHECK((*dump)["entries"][1]["state"] == "done");
  }
}

// Init refuses a TUTTI_DUMP_DIR it cannot make (the settings test); one gone by the time of a
// dump costs the dump, not the error being reported.
TEST_CASE("a TUTTI_DUMP_DIR gone by the time of a dump is a warning naming it, not a failure") {
  tutti::tests::Warnings warnings;
  warnings.expect();
  TempDir dir("tutti-fr");
  const std::string dumps = (dir.path / "dumps").string();
  ScopedEnv dumpDir("TUTTI_DUMP_DIR", dumps);
  ThreadWorld world(2);
  REQUIRE(world.ok());
  REQUIRE(std::filesystem::is_directory(dumps));  // made at init
  std::filesystem::remove(dumps);
  CHECK(tutti_comm_abort(world.comm(0)) == tuttiSuccess);
  CHECK(warnings.count({dumps + "/tutti-"}) == 1);
  tutti_comm_abort(world.comm(1));
}

TEST_CASE("TUTTI_TRACE_FILE: one complete event per operation, with algorithm, bytes, seq") {
  TempDir dir("tutti-fr");
  ScopedEnv trace("TUTTI_TRACE_FILE", (dir.path / "trace-%r.json").string());
  {
    ThreadWorld world(2);
    REQUIRE(world.ok());
    onEveryRank<int>(2, [&](int rank) {
      tuttiComm_t comm = world.comm(rank);
      std::vector<float> data(256, 1.0f);
      for (int i = 0; i < 3; ++i) allreduce(comm, data);
      std::vector<int32_t> block(64, rank), gathered(128);
      tutti_broadcast(block.data(), block.data(), 64, tuttiInt32, 1, comm, nullptr);
      tutti_allgather(block.data(), gathered.data(), 64, tuttiInt32, comm, nullptr);
      return static_cast<int>(tutti_barrier(comm, nullptr));
    });
  }  // destroyed: the traces are written
  const std::vector<std::pair<std::string, uint64_t>> expected = {
      {"allreduce", 1024}, {"allreduce", 1024}, {"allreduce", 1024},
      {"broadcast", 256},  {"allgather", 512},  {"barrier", 0}};
  for (int rank : {0, 1}) {
    std::ifstream in(dir.path / ("trace-" + std::to_string(rank) + ".json"));
    REQUIRE(in);
    const json trace = json::parse(in);
    std::vector<json> slices;
    for (const json& event : trace["traceEvents"])
      if (event["ph"] == "X") slices.push_back(event);
    REQUIRE(slices.size() == expected.size());
    for (size_t i = 0; i < slices.size(); ++i) {
      CHECK(slices[i]["name"] == expected[i].first);
      CHECK(slices[i]["args"]["seq"] == i + 1);
      CHECK(slices[i]["args"]["bytes"] == expected[i].second);
      CHECK_FALSE(slices[i]["args"]["algorithm"].get<std::string>().empty());
      CHECK(slices[i]["pid"] == rank);
      CHECK(slices[i]["dur"].get<double>() >= 0);
      if (i > 0) CHECK(slices[i]["ts"].get<double>() >= slices[i - 1]["ts"].get<double>());
    }
    CHECK(trace["otherData"]["dropped_operations"] == 0);
  }
}
