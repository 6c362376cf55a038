// tutti-bench's command line, run for real ($TUTTIBENCH): bad input stops it before any job
// starts, with exit status 2 and a message naming what was wrong.
#include <catch2/catch.hpp>

#include "subprocess.hpp"

namespace {

std::vector<std::string> bench(std::vector<std::string> args) {
  args.insert(args.begin(), tutti::test::requiredEnv("TUTTIBENCH"));
  return args;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("tutti-bench rejects bad input with exit status 2 and names it", "[bench]") {
  struct Case {
    std::vector<std::string> args;
    std::string named;  // what the message must mention
  };
  for (const auto& c : std::vector<Case>{
           {{"allreduce", "--bogus"}, "--bogus"},
           {{"allreduce", "-b", "1M", "-e", "1K"}, "-e 1K is smaller than -b 1M"},
           {{"allreduce", "-d", "float128"}, "float128"},
           {{"allreduce", "-o", "xor"}, "xor"},
           {{"allreduce", "-b", "12Q"}, "12Q"},
           {{"allreduce", "-e", "-5"}, "-5"},
           {{"allreduce", "-i", "0"}, "-i 0"},
           {{"allreduce", "-f", "2", "-i", "8"}, "-f"},
           {{"allreduce", "-f", "1"}, "stepfactor"},
           {{"allreduce", "-n", "0"}, "iters"},
           {{"allreduce", "-n", "many"}, "many"},
           {{"allreduce", "-b", "0"}, "-b 0"},
           {{"allreduce", "--ranks", "0"}, "ranks"},
           {{"gossip"}, "gossip"},
           {{"broadcast", "-r", "3", "--ranks", "3"}, "-r 3"},
           {{"reduce", "-r", "first"}, "first"},
           {{"allreduce", "-a", "4"}, "average"},
           {{"allreduce", "-m", "0"}, "agg_iters"},
           {{"allreduce", "--quiet", "--verbose"}, "excludes"},
           {{"allreduce", "-T", "-1"}, "timeout"},
           {{"allreduce", "-T", "1e10"}, "--timeout: 1e10 is not seconds"},  // overflows ns
           {{"allreduce", "-T", "nan"}, "--timeout: nan"},
           {{"allreduce", "--min-ratio", "nan"}, "--min-ratio: nan"},  // would pass every row
           {{"allreduce", "--min-busbw", "inf"}, "--min-busbw: inf"},
           {{"allreduce", "--rounds", "0"}, "--rounds"},
           {{"allreduce", "--rounds", "1001"}, "--rounds"},
           {{"allreduce", "--rounds", "3x"}, "3x"},
           {{"allreduce", "--algo", "bubble"}, "bubble"},
           {{"broadcast", "--algo", "ring"}, "not for broadcast"},
           {{"allreduce", "--transport", "carrier-pigeon"}, "carrier-pigeon"},
           {{"allreduce", "--buffers", "cuda"}, "cuda"},
           {{"allreduce", "--fault", "2"}, "--fault 2: not RANK:INDEX"},
           {{"allreduce", "--fault", "-1:5"}, "--fault -1:5: not RANK:INDEX"},
           {{"allreduce", "--fault", "2:5x"}, "--fault 2:5x: not RANK:INDEX"},
           {{}, "subcommand"},
       }) {
    auto r = tutti::test::run(bench(c.args));
    INFO("args: " << (c.args.empty() ? "" : c.args.back()) << "\nstderr: " << r.err);
    CHECK(r.status == 2);
    CHECK(contains(r.err, c.named));
    CHECK(contains(r.err, "Usage"));
    CHECK(r.out.empty());  // nothing ran
  }
}

// A fault for a rank the job does not have could never be applied: a test that expects -c to
// catch it would pass without a word.
TEST_CASE("tutti-bench refuses a --fault for a rank the job does not have", "[bench]") {
  auto r = tutti::test::run(
      bench({"allreduce", "--ranks", "2", "-b", "8", "-e", "8", "-n", "1", "--fault", "2:0"}));
  INFO(r.err);
  CHECK(r.status == 2);
  CHECK(contains(r.err, "--fault (TUTTI_BENCH_FAULT) 2:0: no rank 2 among 2"));
}

TEST_CASE("tutti-bench --help exits 0 and lists the nccl-tests flags", "[bench]") {
  auto r = tutti::test::run(bench({"allreduce", "--help"}));
  CHECK(r.status == 0);
  for (const char* flag : {"-b", "-e", "-f", "-i", "-n", "-w", "-c", "-d", "-o", "-z", "--ranks"}) {
    CHECK(contains(r.out, flag));
  }
}
