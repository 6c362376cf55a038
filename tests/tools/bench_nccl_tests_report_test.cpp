// The *_perf report and JSON, against nccl-tests 2.19's util.cu: its header lines, number widths
// (getFloatStr), "#wrong" as %6g, "N/A", -I's columns, the footer with NCCL_TESTS_MIN_BW's 0.9
// slack, and its JSON (version 3) field names and nesting.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "bench/nccl_tests_json.hpp"
#include "bench/nccl_tests_report.hpp"

using namespace tutti::bench;

namespace {

BenchOptions ncclOptions() {
  BenchOptions o;
  o.collective = "allreduce";
  o.nccl.program = "all_reduce_perf";
  o.minBytes = 8;
  o.maxBytes = 1024;
  o.stepFactor = 2;
  o.warmupIters = 1;
  o.args = {"all_reduce_perf", "-b", "8"};
  return o;
}

}  // namespace

TEST_CASE("numbers narrowed as nccl-tests' getFloatStr", "[bench][nccl]") {
  CHECK(fitNumber(4.214, 7) == "   4.21");
  CHECK(fitNumber(12345.678, 7) == "12345.7");
  CHECK(fitNumber(123456.7, 7) == " 123457");
  CHECK(fitNumber(12345678.0, 7) == "1.2e+07");
  CHECK(fitNumber(123.456, 6) == "123.46");
  CHECK(fitNumber(1234.56, 6) == "1234.6");
  CHECK(fitNumber(123456.0, 6) == "123456");
  CHECK(fitNumber(1234567.0, 6) == " 1e+06");
}

TEST_CASE("the table's header and rows as nccl-tests 2.19 prints them", "[bench][nccl]") {
  BenchOptions o = ncclOptions();
  CHECK(formatNcclTableHeader(o) ==
        "#\n"
        "#                                                              out-of-place              "
        "         in-place          \n"
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong    "
        " time   algbw   busbw  #wrong \n"
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)           "
        "  (us)  (GB/s)  (GB/s)         \n");
  Measurement m{1234.5, {1.5, 2.625}, 0, 0};
  m.seconds = 1234.5e-6;
  CHECK(formatRowStart(1024, 256, "float", "sum", -1) + formatNcclMeasurement(m) ==
        "        1024           256     float     sum      -1  1234.50    1.50    2.62       0");
  m.wrong = std::nullopt;
  CHECK(formatNcclMeasurement(m) == "  1234.50    1.50    2.62    N/A");
  m.wrong = 1234567;
  CHECK(formatNcclMeasurement(m) == "  1234.50    1.50    2.62  1.23457e+06");

  o.iterationStats = true;
  o.nccl.cpuTime = true;
  const std::string header = formatNcclTableHeader(o);
  CHECK(header.find("out-of-place (+ per-iteration)                                in-place (+ "
                    "per-iteration)\n") != std::string::npos);
  CHECK(header.find("  cputime   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%  "
                    "cputime") != std::string::npos);
  m.wrong = 0;
  m.iterationStats = IterationStats{1e-6, 3e-6, 2e-6, 2.5e-6, 2.75e-6, 2e-6, 0.5e-6, 0.25};
  CHECK(formatNcclMeasurement(m) ==
        "  1234.50    1.50    2.62       0     1.00     3.00     2.75    25.00");
}

TEST_CASE("the preamble and the footer, with NCCL_TESTS_MIN_BW's verdict", "[bench][nccl]") {
  BenchOptions o = ncclOptions();
  const std::string preamble = formatNcclPreamble(o, {{0, 0, 42, "node1"}, {1, 1, 43, "node1"}});
  CHECK(preamble.rfind("# nccl-tests version 2.19.6 nccl-headers=100 nccl-library=100\n"
                       "# Collective test starting: all_reduce_perf\n"
                       "# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup "
                       "iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0\n"
                       "#\n# Using devices\n",
                       0) == 0);
  CHECK(preamble.find("#  Rank  1 Group  0 Pid     43 on      node1 device  1 [cpu] tutti shm\n") !=
        std::string::npos);
  CHECK(formatNcclFooter(0, 12.5, std::nullopt, "all_reduce_perf") ==
        "# Out of bounds values : 0 OK\n"
        "# Avg bus bandwidth    : 12.5 \n"
        "#\n"
        "# Collective test concluded: all_reduce_perf\n");
  // 0.9 of the minimum passes; below it fails.
  CHECK(formatNcclFooter(0, 9.0, 10.0, "x").find("# Avg bus bandwidth    : 9 OK\n") !=
        std::string::npos);
  CHECK(formatNcclFooter(2, 8.99, 10.0, "x")
            .find("# Out of bounds values : 2 FAILED\n"
                  "# Avg bus bandwidth    : 8.99 FAILED\n") != std::string::npos);
  CHECK_FALSE(belowMinBusBw(9.0, 10.0));
  CHECK(belowMinBusBw(8.99, 10.0));
  CHECK_FALSE(belowMinBusBw(0, std::nullopt));
  // The exit status: nccl-tests' testNumResults (7) for wrong data or too little bandwidth.
  CHECK(ncclTestsStatus(0, 9.0, 10.0) == 0);
  CHECK(ncclTestsStatus(1, 9.0, 10.0) == 7);
  CHECK(ncclTestsStatus(1, 0, std::nullopt) == 7);
  CHECK(ncclTestsStatus(0, 8.99, 10.0) == 7);
}

TEST_CASE("-J: nccl-tests' JSON schema, tutti's extras under their own key", "[bench][nccl]") {
  BenchOptions o = ncclOptions();
  o.iterationStats = true;
  Results r;
  r.nranks = 2;
  r.ranks = {{0, 0, 42, "node1"}, {1, 1, 43, "node1"}};
  r.transports = {"default"};
  Measurement out{2e-6, {0.5, 0.75}, 0, 3e-6};
  out.iterationSeconds = {1e-6, 3e-6};
  out.iterationStats = IterationStats{1e-6, 3e-6, 3e-6, 3e-6, 3e-6, 2e-6, 1e-6, 0.5};
  r.rows.push_back({"allreduce", "auto", 1024, 256, "float", "sum", -1, out,
                    Measurement{4e-6, {0.25, 0.375}, std::nullopt, 0}});
  r.avgBusBw = 0.5;
  r.failedChecks = 0;
  const auto doc = ncclTestsJson(o, r, "2026-01-01 00:00:00", "2026-01-01 00:00:01", 1.0);
  std::vector<std::string> keys;
  for (const auto& [key, value] : doc.items()) keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"version", "start_time", "args", "env", "nccl_version",
                                         "config", "results", "out_of_bounds",
                                         "average_bus_bandwidth", "errors", "tutti", "end_time"});
  CHECK(doc["version"] == 3);
  CHECK(doc["args"] == nlohmann::ordered_json({"all_reduce_perf", "-b", "8"}));
  const auto& config = doc["config"];
  CHECK(config["step_factor"] == 2);
  CHECK_FALSE(config.contains("step_bytes"));
  CHECK(config["iterations"] == 20);
  CHECK(config["per_iter_timing"] == "true");  // nccl-tests' booleans are strings
  CHECK(config["blocking_collectives"] == "false");
  CHECK(config["devices"][1]["pid"] == 43);
  CHECK(config["devices"][1]["hostname"] == "node1");
  const auto& row = doc["results"][0];
  CHECK(row["size"] == 1024);
  CHECK(row["count"] == 256);
  CHECK(row["redop"] == "sum");
  CHECK(row["root"] == "    -1");  // "%6i", a string
  CHECK(row["out_of_place"]["time"] == Approx(2.0));
  CHECK(row["out_of_place"]["bus_bw"] == Approx(0.75));
  CHECK(row["out_of_place"]["nwrong"] == 0.0);
  CHECK(row["in_place"]["nwrong"].is_null());
  CHECK(row["out_of_place_per_iter"]["times_us"].size() == 2);
  CHECK(row["out_of_place_per_iter"]["avg_us"] == Approx(2.0));
  CHECK(row["out_of_place_per_iter"]["cv_pct"] == Approx(50.0));
  CHECK_FALSE(row.contains("in_place_per_iter"));
  CHECK(row["actual_iterations"] == 20);
  CHECK(doc["out_of_bounds"] == nlohmann::ordered_json({{"count", 0}, {"okay", "true"}}));
  CHECK(doc["average_bus_bandwidth"]["okay"] == "false");  // 0.5 < 0.9 * 1.0
  CHECK(ncclTestsJson(o, r, "", "", std::nullopt)["average_bus_bandwidth"]["okay"] == "unchecked");
  CHECK(doc["tutti"]["collective"] == "allreduce");
  // The environment as nccl-tests writes it, less the values of secrets.
  setenv("TUTTI_SECRET", "s3cr3t-value", 1);
  setenv("PERF21_PLAIN", "visible", 1);
  const std::string env = ncclTestsJson(o, r, "", "", std::nullopt)["env"].dump();
  unsetenv("TUTTI_SECRET");
  unsetenv("PERF21_PLAIN");
  CHECK(env.find("\"TUTTI_SECRET=<redacted>\"") != std::string::npos);
  CHECK(env.find("s3cr3t-value") == std::string::npos);
  CHECK(env.find("\"PERF21_PLAIN=visible\"") != std::string::npos);
}

TEST_CASE("-J FILE: only .json names, an existing file kept", "[bench][nccl]") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tutti-nccl-json-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string notice;
  CHECK_FALSE(reserveNcclJson((dir / "out.txt").string(), notice));
  CHECK(notice.empty());
  const std::string path = (dir / "out.JSON").string();
  CHECK(reserveNcclJson(path, notice) == path);
  CHECK(notice == "# Writing JSON output to " + path + "\n");
  CHECK(reserveNcclJson(path, notice) == path + ".0");
  CHECK(reserveNcclJson(path, notice) == path + ".1");
  CHECK_FALSE(reserveNcclJson((dir / "no/such/dir/x.json").string(), notice));
  CHECK(notice.find("# skipping json output;") == 0);
  std::filesystem::remove_all(dir);
}
