// The *_perf command line against what nccl-tests 2.19's common.cu does with the same argv: its
// getopt_long table (short, long, "--name=value", bundled "-n5"), strtol(value, NULL, 0) for
// numbers (base prefixes, trailing junk ignored), its "%lf %1s" size reader, its defaults and
// its messages.
#include <catch2/catch.hpp>
#include <vector>

#include "bench/nccl_tests_args.hpp"

using namespace tutti::bench;

namespace {

NcclTestsParse parse(std::vector<const char*> args, const char* program = "all_reduce_perf") {
  args.insert(args.begin(), program);
  return parseNcclTestsArgs(program, static_cast<int>(args.size()), args.data());
}

BenchOptions options(std::vector<const char*> args) {
  NcclTestsParse p = parse(std::move(args));
  INFO(p.message);
  REQUIRE(p.run);
  return p.options;
}

}  // namespace

TEST_CASE("program names choose the collective; tutti's missing ones are named", "[bench][nccl]") {
  CHECK(ncclTestsCollective("all_reduce_perf") == "allreduce");
  CHECK(ncclTestsCollective("all_gather_perf") == "allgather");
  CHECK(ncclTestsCollective("reduce_scatter_perf") == "reducescatter");
  CHECK(ncclTestsCollective("broadcast_perf") == "broadcast");
  CHECK(ncclTestsCollective("reduce_perf") == "reduce");
  CHECK(ncclTestsCollective("alltoall_perf") == "alltoall");
  CHECK(ncclTestsCollective("sendrecv_perf") == "sendrecv");
  for (const char* missing : {"scatter_perf", "gather_perf", "hypercube_perf", "alltoallv_perf"})
    CHECK(ncclTestsCollective(missing) == "");
  CHECK_FALSE(ncclTestsCollective("tutti-bench"));
  CHECK_FALSE(ncclTestsCollective("all_reduce_perf.sh"));
  CHECK(programName("/opt/nccl-tests/build/all_reduce_perf") == "all_reduce_perf");
  CHECK(programName("sendrecv_perf") == "sendrecv_perf");
}

TEST_CASE("nccl-tests' defaults under a *_perf name", "[bench][nccl]") {
  const BenchOptions o = options({});
  CHECK(o.collective == "allreduce");
  CHECK(o.nccl.program == "all_reduce_perf");
  CHECK(o.minBytes == 32u << 20);
  CHECK(o.maxBytes == 32u << 20);
  CHECK(o.stepBytes == 1u << 20);  // stepFactor 1: the 1M increment
  CHECK(o.warmupIters == 1);
  CHECK(o.iters == 20);
  CHECK(o.aggIters == 1);
  CHECK(o.check == 1);
  CHECK(o.cycles == 1);
  CHECK(o.dtypes == std::vector<tuttiDataType_t>{tuttiFloat32});
  CHECK(o.ops == std::vector<tuttiRedOp_t>{tuttiSum});
  CHECK(o.root == 0);
  CHECK_FALSE(o.allRoots);
  CHECK(o.aggregate == Aggregate::kAverage);
  CHECK_FALSE(o.misaligned);
  CHECK_FALSE(o.iterationStats);
  CHECK(o.nccl.threads == 1);
  CHECK(o.nccl.gpus == 1);
  CHECK(o.buffers == "host");
  CHECK(o.jsonPath.empty());
}

TEST_CASE("a health check's command line, short forms", "[bench][nccl]") {
  const BenchOptions o = options(
      {"-b", "8", "-e", "8G", "-f", "2", "-g", "1", "-c", "1", "-n", "20", "-w", "5", "-G", "0"});
  CHECK(o.minBytes == 8);
  CHECK(o.maxBytes == 8ull << 30);
  CHECK(o.stepFactor == 2);
  CHECK(o.stepBytes == 0);
  CHECK(o.nccl.gpus == 1);
  CHECK(o.check == 1);
  CHECK(o.iters == 20);
  CHECK(o.warmupIters == 5);
}

TEST_CASE("long forms, with '=' and as a separate word, and unique prefixes", "[bench][nccl]") {
  const BenchOptions o = options({"--minbytes=1K",
                                  "--maxbytes",
                                  "1M",
                                  "--stepfactor=4",
                                  "--iters=7",
                                  "--warmup_iters",
                                  "3",
                                  "--agg_iters=2",
                                  "--nthreads",
                                  "2",
                                  "--ngpus=3",
                                  "--datatype=half",
                                  "--op",
                                  "max",
                                  "--root=-1",
                                  "--average=3",
                                  "--unalign",
                                  "2",
                                  "--per_iter_timing=1",
                                  "--per_iter_skip=2",
                                  "--memory",
                                  "1",
                                  "--output_file",
                                  "r.json",
                                  "--check=0",
                                  "--run_cycles=4",
                                  "--local_register=1",
                                  "--blocking=1",
                                  "--timeout=30",
                                  "--report_cputime=1",
                                  "--report_timestamps=1",
                                  "--cudagraph=5",
                                  "--parallel_init=1",
                                  "--stream_null=1",
                                  "--cta_policy=1",
                                  "--device_implementation=0",
                                  "--device_cta_count=8",
                                  "--maxb=2M"});
  CHECK(o.minBytes == 1024);
  CHECK(o.maxBytes == 2u << 20);  // --maxb: a unique prefix of --maxbytes, last one wins
  CHECK(o.stepFactor == 4);
  CHECK(o.iters == 7);
  CHECK(o.warmupIters == 3);
  CHECK(o.aggIters == 2);
  CHECK(o.nccl.threads == 2);
  CHECK(o.nccl.gpus == 3);
  CHECK(o.dtypes == std::vector<tuttiDataType_t>{tuttiFloat16});
  CHECK(o.ops == std::vector<tuttiRedOp_t>{tuttiMax});
  CHECK(o.allRoots);
  CHECK(o.aggregate == Aggregate::kMax);
  CHECK(o.misaligned);
  CHECK(o.unalign == 2);
  CHECK(o.iterationStats);
  CHECK(o.nccl.perIterSkip == 2);
  CHECK(o.memoryReport);
  CHECK(o.jsonPath == "r.json");
  CHECK(o.check == 0);
  CHECK(o.cycles == 4);
  CHECK(o.buffers == "registered");
  CHECK(o.blocking == 1);
  CHECK(o.timeoutSeconds == 30);
  CHECK(o.nccl.cpuTime);
  CHECK(o.nccl.timestamps);
}

TEST_CASE("numbers as strtol(value, NULL, 0) reads them", "[bench][nccl]") {
  CHECK(options({"-w", "50--iters"}).warmupIters == 50);  // junk after the digits ignored
  CHECK(options({"-n", "0x10"}).iters == 16);             // hexadecimal
  CHECK(options({"-n", "010"}).iters == 8);               // octal
  CHECK(options({"-n", " 12abc"}).iters == 12);
  CHECK(options({"-c", "abc"}).check == 0);  // no digits: 0
  CHECK(options({"-n5"}).iters == 5);        // value attached
  CHECK(options({"-I1", "-K1"}).iterationStats);
  CHECK(options({"-u", "1"}).misaligned);
  CHECK_FALSE(options({"-u", "0"}).misaligned);
  CHECK(options({"-a", "0"}).aggregate == Aggregate::kRank0);
  // Operands are ignored, wherever they stand (getopt moves them to the end).
  CHECK(options({"stray", "-n", "3", "more"}).iters == 3);
}

TEST_CASE("sizes as nccl-tests' parsesize reads them", "[bench][nccl]") {
  CHECK(options({"-b", "1.5K", "-e", "1.5K"}).minBytes == 1536);
  CHECK(options({"-e", "8g"}).maxBytes == 8ull << 30);
  CHECK(options({"-e", "64 M"}).maxBytes == 64u << 20);         // blanks before the suffix
  CHECK(options({"-e", "64MB"}).maxBytes == 64u << 20);         // after it: ignored
  CHECK(options({"-b", "0x10", "-e", "0x10"}).minBytes == 16);  // %lf reads hexadecimal
  CHECK(options({"-i", "4K", "-b", "4K", "-e", "16K"}).stepBytes == 4096);
  for (auto [flag, value, name] : {std::tuple{"-b", "8X", "minbytes"},
                                   {"-e", "K", "maxbytes"},
                                   {"-e", "-5", "maxbytes"},
                                   {"-i", "1Q", "stepBytes"},
                                   {"-b", "", "minbytes"}}) {
    NcclTestsParse p = parse({flag, value});
    INFO(flag << " " << value);
    CHECK_FALSE(p.run);
    CHECK(p.exitCode == 255);
    CHECK(p.message == std::string("invalid size specified for '") + name + "'\n");
  }
  NcclTestsParse p = parse({"-b", "1K", "-e", "8"});
  CHECK(p.exitCode == 255);
  CHECK(p.message == "invalid sizes for 'minbytes' and 'maxbytes': 1024 > 8\n");
}

TEST_CASE("-d, -o, -r: names, all, and nccl-tests' fallbacks", "[bench][nccl]") {
  // nccl-tests' order, not tutti's enum order.
  CHECK(options({"-d", "all"}).dtypes ==
        std::vector<tuttiDataType_t>{tuttiInt8, tuttiUint8, tuttiInt32, tuttiUint32, tuttiInt64,
                                     tuttiUint64, tuttiFloat16, tuttiFloat32, tuttiFloat64,
                                     tuttiBfloat16});
  CHECK(options({"-o", "all"}).ops ==
        std::vector<tuttiRedOp_t>{tuttiSum, tuttiProd, tuttiMax, tuttiMin, tuttiAvg});
  CHECK(options({"-d", "bfloat16"}).dtypes == std::vector<tuttiDataType_t>{tuttiBfloat16});
  NcclTestsParse p = parse({"-d", "f8e4m3", "-o", "mulsum"});
  REQUIRE(p.run);
  CHECK(p.notices ==
        "invalid type f8e4m3, defaulting to float .. \ninvalid op mulsum, defaulting to sum .. \n");
  CHECK(p.options.dtypes == std::vector<tuttiDataType_t>{tuttiFloat32});
  CHECK(p.options.ops == std::vector<tuttiRedOp_t>{tuttiSum});
  CHECK(options({"-r", "2"}).root == 2);
  CHECK(options({"-r", "-1"}).allRoots);
}

TEST_CASE("-h and unknown options: the usage on stdout, status 0, as nccl-tests", "[bench][nccl]") {
  for (auto args : {std::vector<const char*>{"-h"},
                    {"--help"},
                    {"-q"},
                    {"--bogus", "1"},
                    {"-n"} /* value missing */}) {
    NcclTestsParse p = parse(args);
    INFO(args.front());
    CHECK_FALSE(p.run);
    CHECK(p.exitCode == 0);
    CHECK(p.message.find("USAGE: all_reduce_perf") != std::string::npos);
    CHECK(p.message.find("--per_iter_skip") != std::string::npos);
    const bool help =
        std::string(args.front()).rfind("-h", 0) == 0 || std::string(args.front()) == "--help";
    CHECK((p.message.rfind("invalid option '?'\n", 0) == 0) == !help);
  }
}

TEST_CASE("nccl-tests' corrections of -I and -K, on stderr", "[bench][nccl]") {
  NcclTestsParse p = parse({"-I", "2"});
  REQUIRE(p.run);
  CHECK_FALSE(p.options.iterationStats);
  CHECK(p.options.notes ==
        std::vector<std::string>{
            "per-iteration timing (-I) only supports 0=off or 1=on. Disabling."});
  p = parse({"-I", "1", "-n", "5", "-K", "5"});
  CHECK(p.options.nccl.perIterSkip == 0);
  CHECK(p.options.notes ==
        std::vector<std::string>{"per-iteration skip (-K) must be between 0 and 4. Disabling."});
  p = parse({"-K", "1"});
  CHECK(p.options.notes == std::vector<std::string>{"per-iteration skip (-K) requires "
                                                    "per-iteration timing (-I 1). Disabling."});
}

TEST_CASE("what nccl-tests would hang or crash on is refused, status 255", "[bench][nccl]") {
  for (auto [args, named] : std::vector<std::pair<std::vector<const char*>, std::string>>{
           {{"-n", "0"}, "-n 0"},
           {{"-m", "0"}, "-m 0"},
           {{"-N", "-1"}, "-N -1"},
           {{"-a", "4"}, "-a 4"},
           {{"-r", "-2"}, "-r -2"},
           {{"-g", "0"}, "-g 0"},
           {{"-t", "-1"}, "-t -1"},
           {{"-u", "-1"}, "-u -1"},
           {{"-D", "1"}, "-D 1"},
           {{"-b", "8", "-e", "64", "-i", "0"}, "-i 0"},
           {{"-b", "0", "-e", "64", "-f", "2"}, "-b 0"},
           {{"-T", "9223372037"}, "-T 9223372037"},  // its nanoseconds overflow
       }) {
    NcclTestsParse p = parse(args);
    INFO(named << ": " << p.message);
    CHECK_FALSE(p.run);
    CHECK(p.exitCode == 255);
    CHECK(p.message.find(named) != std::string::npos);
  }
}

TEST_CASE("warm-up: every size from -b doubling to -e, as nccl-tests' TimeTest", "[bench][nccl]") {
  BenchOptions o = options({"-b", "8", "-e", "100", "-f", "3", "-w", "2"});
  CHECK(warmupSizes(o, 4) == std::vector<size_t>{8, 16, 32, 64});
  o = options({"-b", "0", "-e", "6", "-i", "2"});
  CHECK(warmupSizes(o, 1) == std::vector<size_t>{0, 1, 2, 4});
  o.nccl.program.clear();  // tutti-bench: the largest and the smallest
  CHECK(warmupSizes(o, 1) == std::vector<size_t>{6, 0});
}
