// tutti-bench's parts that need no job: option parsing, the size sweep, the report's layout
// (nccl-tests' printf formats) and the check patterns.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "bench/check_data.hpp"
#include "bench/iteration_stats.hpp"
#include "bench/options.hpp"
#include "bench/report.hpp"
#include "bench/types.hpp"

using namespace tutti::bench;

namespace {

ParseResult parse(std::vector<const char*> args) {
  args.insert(args.begin(), {"tutti-bench", "allreduce"});
  return parseCommandLine(static_cast<int>(args.size()), args.data());
}

}  // namespace

TEST_CASE("sizes read like nccl-tests", "[bench]") {
  CHECK(parseSize("8") == 8u);
  CHECK(parseSize("64K") == 65536u);
  CHECK(parseSize("64k") == 65536u);
  CHECK(parseSize("1M") == 1048576u);
  CHECK(parseSize("2G") == 2147483648u);
  CHECK(parseSize("1.5K") == 1536u);
  CHECK_FALSE(parseSize(""));
  CHECK_FALSE(parseSize("-8"));
  CHECK_FALSE(parseSize("8X"));
  CHECK_FALSE(parseSize("8KB"));
  CHECK_FALSE(parseSize("K"));
}

TEST_CASE("--fault RANK:INDEX: the tests' wrong element, none without it", "[bench]") {
  CHECK(parse({}).options.fault.rank == -1);
  const Fault fault = parse({"--fault", "2:5"}).options.fault;
  CHECK(fault.rank == 2);
  CHECK(fault.index == 5);
  for (const char* bad : {"", "2", "2:", ":5", "2:5x", "-1:5", "2:-5", "a:b"})
    CHECK_FALSE(Fault::parse(bad));
  CHECK(Fault::parse("0:0"));
}

TEST_CASE("types and ops by nccl-tests' names and the aliases", "[bench]") {
  CHECK(parseDataType("float") == tuttiFloat32);
  CHECK(parseDataType("float32") == tuttiFloat32);
  CHECK(parseDataType("half") == tuttiFloat16);
  CHECK(parseDataType("float16") == tuttiFloat16);
  CHECK(parseDataType("bfloat16") == tuttiBfloat16);
  CHECK(parseDataType("double") == tuttiFloat64);
  CHECK(parseDataType("float64") == tuttiFloat64);
  CHECK(parseDataType("uint64") == tuttiUint64);
  CHECK_FALSE(parseDataType("float128"));
  CHECK(parseRedOp("avg") == tuttiAvg);
  CHECK_FALSE(parseRedOp("mulsum"));
  CHECK(std::string(typeName(tuttiFloat16)) == "half");
  CHECK(typeSize(tuttiBfloat16) == 2);
}

TEST_CASE("defaults and a full command line", "[bench]") {
  auto d = parse({});
  REQUIRE(d.run);
  CHECK(d.options.minBytes == 8);
  CHECK(d.options.maxBytes == 64u << 20);
  CHECK(d.options.stepFactor == 2);
  CHECK(d.options.iters == 20);
  CHECK(d.options.warmupIters == 5);
  CHECK(d.options.check == 1);
  CHECK(d.options.dtypes == std::vector{tuttiFloat32});
  CHECK(d.options.ops == std::vector{tuttiSum});
  CHECK(d.options.aggIters == 1);
  CHECK(d.options.aggregate == Aggregate::kAverage);
  CHECK(d.options.ranks == 0);
  CHECK(d.options.rounds == 1);

  auto p = parse({"-b", "1K", "-e", "1M",    "-i", "4K",  "-n", "3", "-w",      "0",
                  "-c", "0",  "-d", "int32", "-o", "max", "-z", "1", "--ranks", "4"});
  REQUIRE(p.run);
  CHECK(p.options.minBytes == 1024);
  CHECK(p.options.stepBytes == 4096);
  CHECK(p.options.iters == 3);
  CHECK(p.options.check == 0);
  CHECK(p.options.dtypes == std::vector{tuttiInt32});
  CHECK(p.options.ops == std::vector{tuttiMax});
  CHECK(p.options.ranks == 4);
  CHECK(p.options.notes.empty());

  auto q = parse({"-m", "4",       "-a", "3",   "-N", "0",   "-T", "2.5", "-u",       "-I",
                  "-M", "--quiet", "-r", "all", "-o", "all", "-d", "all", "--rounds", "5"});
  REQUIRE(q.run);
  CHECK(q.options.aggIters == 4);
  CHECK(q.options.aggregate == Aggregate::kMax);
  CHECK(q.options.cycles == 0);
  CHECK(q.options.rounds == 5);
  CHECK(q.options.timeoutSeconds == 2.5);
  CHECK((q.options.misaligned && q.options.iterationStats && q.options.memoryReport));
  CHECK((q.options.quiet && !q.options.verbose));
  CHECK(q.options.allRoots);
  CHECK(q.options.ops.size() == tuttiNumOps);
  CHECK(q.options.dtypes.size() == tuttiNumTypes);
}

TEST_CASE("per-iteration statistics", "[bench]") {
  std::vector<double> samples;
  for (int i = 100; i >= 1; --i) samples.push_back(i);
  IterationStats s = iterationStats(samples);
  CHECK(s.min == 1);
  CHECK(s.max == 100);
  CHECK(s.p50 == 50);
  CHECK(s.p99 == 99);
  CHECK(s.cv == Approx(28.866 / 50.5).epsilon(1e-3));
  CHECK(iterationStats({2, 2, 2}).cv == 0);
  CHECK(iterationStats({}).max == 0);
}

TEST_CASE("--rounds reports the round of median time, a measured one", "[bench]") {
  CHECK(medianRound({7.0}) == 0);
  CHECK(medianRound({9.0, 3.0, 5.0}) == 2);
  CHECK(medianRound({1.0, 50.0, 2.0, 40.0, 3.0}) == 4);  // two slow rounds move nothing
  // An even count: the lower of the two middle times, not their average (never measured).
  CHECK(medianRound({4.0, 1.0, 3.0, 2.0}) == 3);
  const std::vector<double> ties = {6.0, 5.0, 5.0, 6.0};
  CHECK(ties.at(medianRound(ties)) == 5.0);
  CHECK_THROWS(medianRound({}));
}

TEST_CASE("the sweep rounds sizes down to the type size and says so", "[bench]") {
  auto p = parse({"-b", "10", "-e", "100", "-d", "double"});
  REQUIRE(p.run);
  CHECK(sweepSizes(p.options, 8) == std::vector<size_t>{8, 16, 40, 80});
  REQUIRE(p.options.notes.size() == 2);
  CHECK(p.options.notes[0].find("-b 10") != std::string::npos);
  CHECK(p.options.notes[1].find("-e 100") != std::string::npos);

  auto linear = parse({"-b", "8", "-e", "32", "-i", "8"});
  CHECK(sweepSizes(linear.options, 4) == std::vector<size_t>{8, 16, 24, 32});
  auto factor = parse({"-b", "8", "-e", "64K", "-f", "4"});
  CHECK(sweepSizes(factor.options, 4) == std::vector<size_t>{8, 32, 128, 512, 2048, 8192, 32768});
}

TEST_CASE("--ranks is dropped from the ranks' command line", "[bench]") {
  const char* argv[] = {"tutti-bench", "allreduce", "--ranks", "2", "-b", "8", "--ranks=3"};
  CHECK(argvWithoutRanks(7, argv) ==
        std::vector<std::string>{"tutti-bench", "allreduce", "-b", "8"});
}

TEST_CASE("a report row has nccl-tests' layout", "[bench][report]") {
  Measurement out{4.21e-6, {0.0, 0.0}, 0};
  Measurement in{4.03e-6, {0.0, 0.0}, 0};
  CHECK(formatRowStart(8, 2, "float", "sum", -1) + formatMeasurement(out) + formatMeasurement(in) ==
        "           8             2     float     sum      -1     4.21    0.00    0.00      0"
        "     4.03    0.00    0.00      0");

  Measurement big{0.0123456, {5.4321, 9.87654}, std::nullopt};
  CHECK(formatRowStart(67108864, 16777216, "bfloat16", "prod", -1) + formatMeasurement(big) ==
        "    67108864      16777216  bfloat16    prod      -1    12346    5.43    9.88    N/A");
  Measurement wrong{123.456e-6, {1.0, 1.5}, 12345};
  CHECK(formatMeasurement(wrong) == "    123.5    1.00    1.50  12345");

  CHECK(formatTime(4.214) == "   4.21");
  CHECK(formatTime(99.994) == "  99.99");
  CHECK(formatTime(100.0) == "  100.0");
  CHECK(formatTime(9999.94) == " 9999.9");
  CHECK(formatTime(10000.0) == "  10000");
  CHECK(formatTime(12345678.0) == "12345678");
}

TEST_CASE("the table header and footer are nccl-tests' lines", "[bench][report]") {
  std::string header = formatTableHeader();
  CHECK(header ==
        "#                                                              out-of-place            "
        "           in-place          \n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong    "
        " time   algbw   busbw #wrong\n"
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)         "
        "   (us)  (GB/s)  (GB/s)       \n");
  CHECK(formatFooter(0, 12.5) ==
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 12.5 \n#\n");
  CHECK(formatFooter(3, 0.125) ==
        "# Out of bounds values : 3 FAILED\n# Avg bus bandwidth    : 0.125 \n#\n");
}

TEST_CASE("the preamble lists the settings and every rank", "[bench][report]") {
  auto p = parse({"-b", "8", "-e", "1M"});
  p.options.commandLine = "tutti-bench allreduce -b 8 -e 1M";
  std::string text = formatPreamble(p.options, {{0, 0, 1234, "host"}, {1, 1, 1235, "host"}});
  CHECK(text.find("# Command line: tutti-bench allreduce -b 8 -e 1M\n") != std::string::npos);
  CHECK(text.find("# nThread 1 nGpus 1 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: "
                  "5 iters: 20 agg iters: 1 validation: 1 graph: 0\n") != std::string::npos);
  CHECK(text.find("#  Rank  0 Group  0 Pid   1234 on       host device  0 [cpu shm]\n") !=
        std::string::npos);
  CHECK(text.find("#  Rank  1 Group  0 Pid   1235 on       host device  1 [cpu shm]\n") !=
        std::string::npos);
  CHECK(text.find("tuning table") == std::string::npos);
  p.options.tuning = "TUTTI_TUNING_FILE=defaults";
  text = formatPreamble(p.options, {{0, 0, 1234, "host"}});
  CHECK(text.find("# tutti: algorithm auto, transport default, buffers host\n"
                  "# tutti: tuning table TUTTI_TUNING_FILE=defaults\n") != std::string::npos);
}

TEST_CASE("each rank's line names the transport it uses to its peers", "[bench][report]") {
  auto p = parse({"-b", "8", "-e", "1M"});
  const std::vector<RankInfo> ranks = {{0, 0, 10, "a"}, {1, 1, 11, "a"}, {2, 0, 12, "b"}};
  std::string text = formatPreamble(p.options, ranks);
  CHECK(text.find("device  0 [cpu shm+tcp]") != std::string::npos);
  CHECK(text.find("Pid     12 on          b device  0 [cpu tcp]") != std::string::npos);
  p.options.transport = "tcp";
  text = formatPreamble(p.options, {{0, 0, 10, "a"}, {1, 1, 11, "a"}});
  CHECK(text.find("device  1 [cpu tcp]") != std::string::npos);
}

TEST_CASE("bandwidths follow nccl-tests", "[bench][report]") {
  auto bw = bandwidth(1000000000, 0.5, 1.5);
  CHECK(bw.algbw == Approx(2.0));
  CHECK(bw.busbw == Approx(3.0));
  CHECK(bandwidth(8, 0, 1).busbw == 0.0);
}

TEST_CASE("every algorithm --algo all measures is one tutti_comm_set_algorithm takes") {
  tuttiComm_t comm = nullptr;
  REQUIRE(tutti_comm_init_all(&comm, 1) == tuttiSuccess);
  for (const std::string& algorithm : kAllReduceAlgorithms) {
    INFO(algorithm);
    CHECK(tutti_comm_set_algorithm(comm, algorithm.c_str()) == tuttiSuccess);
  }
  CHECK(tutti_comm_set_algorithm(comm, "all") == tuttiInvalidArgument);
  CHECK(tutti_comm_destroy(comm) == tuttiSuccess);
}
