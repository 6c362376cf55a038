// The *_perf programs run for real from the build tree (links to tutti-bench next to
// $TUTTIBENCH), on small command lines as health checks write them: the report line by line as
// nccl-tests prints it, the exit statuses, -g N as N ranks, -J with -I 1.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench_table.hpp"
#include "subprocess.hpp"

namespace {

std::string program(const std::string& name) {
  return (std::filesystem::path(tutti::test::requiredEnv("TUTTIBENCH")).parent_path() / name)
      .string();
}

tutti::test::ProcessResult perf(const std::string& name, std::vector<std::string> args,
                                const std::string& env = "") {
  args.insert(args.begin(), program(name));
  if (!env.empty()) args.insert(args.begin(), {"env", env});
  return tutti::test::run(args, 120);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("all_reduce_perf: nccl-tests' report, line by line", "[bench][nccl]") {
  auto r = perf("all_reduce_perf", {"-b", "8", "-e", "64", "-f", "2", "-n", "2", "-w", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  const auto lines = tutti::test::splitLines(r.out);
  REQUIRE(lines.size() >= 17);
  CHECK(lines[0].rfind("# nccl-tests version 2.19.6 nccl-headers=", 0) == 0);
  CHECK(lines[1] == "# Collective test starting: all_reduce_perf");
  CHECK(lines[2] ==
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 1 iters: 2 "
        "agg iters: 1 validation: 1 graph: 0 unalign: 0");
  CHECK(lines[3] == "#");
  CHECK(lines[4] == "# Using devices");
  CHECK(lines[5].rfind("#  Rank  0 Group  0 Pid ", 0) == 0);
  auto table = tutti::test::parseTable(r.out);
  REQUIRE(table);
  REQUIRE(table->rows.size() == 4);
  CHECK(table->rows[3].bytes == 64);
  CHECK(table->rows[3].count == 16);
  CHECK(table->rows[3].outOfPlace.wrong == 0);
  CHECK(table->ok);
  CHECK(lines[lines.size() - 3] == "# Collective test concluded: all_reduce_perf");
  CHECK(lines[lines.size() - 2] == "#");
  CHECK(lines.back().empty());
}

TEST_CASE("all_gather_perf -g 2: two ranks, as one process of two GPUs would be", "[bench][nccl]") {
  auto r =
      perf("all_gather_perf", {"-b", "1K", "-e", "4K", "-f", "4", "-n", "1", "-w", "0", "-g", "2"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "#  Rank  1 Group  0"));
  auto table = tutti::test::parseTable(r.out);
  REQUIRE(table);
  REQUIRE(table->rows.size() == 2);
  CHECK(table->rows[0].count == 128);  // 1 KiB of floats over two ranks
  CHECK(table->rows[0].op == "none");
  CHECK(table->ok);
}

TEST_CASE("exit statuses as nccl-tests'", "[bench][nccl]") {
  const std::vector<std::string> small = {"-b", "64", "-e", "64", "-n", "1", "-w", "0"};
  auto r = perf("reduce_scatter_perf", small, "NCCL_TESTS_MIN_BW=1e9");
  INFO(r.out << r.err);
  CHECK(r.status == 7);
  CHECK(contains(r.out, "# Avg bus bandwidth    : "));
  CHECK(contains(r.out, " FAILED\n#\n# Collective test concluded: reduce_scatter_perf\n"));
  // A wrong value (TUTTI_BENCH_FAULT: tutti-bench's --fault, which nccl-tests has no flag for).
  r = perf("all_reduce_perf", {"-b", "4K", "-e", "4K", "-n", "1", "-w", "0", "-g", "2"},
           "TUTTI_BENCH_FAULT=1:3");
  INFO(r.out << r.err);
  CHECK(r.status == 7);
  CHECK(contains(r.out, "# Out of bounds values : 2 FAILED\n"));
  r = perf("all_reduce_perf", small, "TUTTI_BENCH_FAULT=one");
  CHECK(r.status == 255);
  CHECK(contains(r.err, "TUTTI_BENCH_FAULT=one: not RANK:INDEX"));
  r = perf("all_reduce_perf", {"-b", "8X"});
  CHECK(r.status == 255);
  CHECK(r.err == "invalid size specified for 'minbytes'\n");
  CHECK(r.out.empty());
  r = perf("all_reduce_perf", {"-q"});
  CHECK(r.status == 0);
  CHECK(r.out.rfind("invalid option '?'\nUSAGE: all_reduce_perf", 0) == 0);
  r = perf("scatter_perf", {});
  CHECK(r.status == 5);
  CHECK(contains(r.err, "scatter_perf: tutti has no such collective"));
}

TEST_CASE("-J FILE.json -I 1: nccl-tests' JSON with each iteration's time", "[bench][nccl]") {
  const auto path = std::filesystem::temp_directory_path() /
                    ("tutti-perf-" + std::to_string(::getpid()) + ".json");
  std::filesystem::remove(path);
  auto r = perf("broadcast_perf", {"-b", "256", "-e", "1K", "-f", "4", "-n", "3", "-w", "0", "-I",
                                   "1", "-J", path.string(), "-r", "0"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.rfind("# Writing JSON output to " + path.string() + "\n# nccl-tests version", 0) ==
        0);
  std::ifstream in(path);
  const auto doc = nlohmann::json::parse(in);
  CHECK(doc["version"] == 3);
  CHECK(doc["config"]["per_iter_timing"] == "true");
  REQUIRE(doc["results"].size() == 2);
  CHECK(doc["results"][1]["size"] == 1024);
  CHECK(doc["results"][1]["root"] == "     0");
  CHECK(doc["results"][1]["in_place_per_iter"]["times_us"].size() == 3);
  CHECK(doc["out_of_bounds"]["okay"] == "true");
  CHECK(doc["average_bus_bandwidth"]["okay"] == "unchecked");
  std::filesystem::remove(path);
}

TEST_CASE("an argument echoed back never puts scrapers' words on stdout", "[bench][nccl]") {
  const auto path = std::filesystem::temp_directory_path() /
                    ("FAILED-bandwidth-" + std::to_string(::getpid()) + ".json");
  std::filesystem::remove(path);
  auto r = perf("all_reduce_perf", {"-b", "64", "-e", "64", "-n", "1", "-w", "0", "-d", "FAILED",
                                    "-o", "bandwidth", "-J", path.string()});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(contains(r.err, "invalid type FAILED, defaulting to float .. \n"));
  CHECK(contains(r.err, "invalid op bandwidth, defaulting to sum .. \n"));
  CHECK(contains(r.err, "# Writing JSON output to " + path.string() + "\n"));
  CHECK_FALSE(contains(r.out, "FAILED"));
  for (const auto& line : tutti::test::splitLines(r.out)) {
    if (contains(line, "bandwidth")) CHECK(line.rfind("# Avg bus bandwidth    : ", 0) == 0);
  }
  // An ordinary name stays on stdout, as nccl-tests prints it.
  r = perf("all_reduce_perf", {"-b", "64", "-e", "64", "-n", "1", "-w", "0", "-d", "fp128"});
  CHECK(r.out.rfind("invalid type fp128, defaulting to float .. \n", 0) == 0);
  std::filesystem::remove(path);
}

TEST_CASE("-T: a size running past the limit ends the run with status 4", "[bench][nccl]") {
  // One rank, so that its own watchdog fires (with several, a peer may see the abort first and
  // exit 3, as nccl-tests' processes can). 100000 iterations of 16 MiB would take minutes.
  auto r =
      perf("all_reduce_perf", {"-b", "16M", "-e", "16M", "-n", "100000", "-w", "0", "-T", "1"});
  INFO(r.out << r.err);
  CHECK(r.status == 4);
  CHECK(contains(r.out, ": Test timeout (1s)\n"));
  CHECK(contains(r.err, "took longer than -T 1 s"));
}

TEST_CASE("sendrecv_perf prints the op and loops over -o all, as nccl-tests'", "[bench][nccl]") {
  auto r =
      perf("sendrecv_perf", {"-b", "64", "-e", "64", "-n", "1", "-w", "0", "-o", "all", "-g", "2"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto table = tutti::test::parseTable(r.out);
  REQUIRE(table);
  std::vector<std::string> ops;
  for (const auto& row : table->rows) ops.push_back(row.op);
  CHECK(ops == std::vector<std::string>{"sum", "prod", "max", "min", "avg"});
  CHECK(table->ok);
}
