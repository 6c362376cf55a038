#include "tests/cuda/sweep_cli.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "bench/types.hpp"
#include "kernels/device/launch.hpp"
#include "tests/cuda/one_gpu_ring.hpp"

namespace tutti::kernels::cuda::test {

namespace {

// Reads -b and -e; false, after saying on stderr what was wrong, unless smallest <= -b <= -e.
bool readSizes(const char* program, SweepOptions& o, size_t smallest) {
  const auto min = bench::parseSize(o.minText), max = bench::parseSize(o.maxText);
  if (!min || !max || *min < smallest || *min > *max) {
    std::fprintf(stderr, "%s: -b %s -e %s: want sizes with %zu <= -b <= -e\n", program,
                 o.minText.c_str(), o.maxText.c_str(), smallest);
    return false;
  }
  o.minBytes = *min;
  o.maxBytes = *max;
  return true;
}

}  // namespace

int parseSweep(int argc, char** argv, const char* program, const char* description, SweepOptions& o,
               size_t smallest, RingSweep* ring) {
  CLI::App app{description, program};
  app.add_option("-b,--minbytes", o.minText, "smallest size (K, M, G suffixes)")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", o.maxText, "largest size")->capture_default_str();
  app.add_option("-n,--iters", o.iters, "timed iterations")->check(CLI::PositiveNumber);
  app.add_option("-w,--warmup_iters", o.warmups, "warm-up iterations")
      ->check(CLI::NonNegativeNumber);
  app.add_option("-J,--output_file", o.jsonFile, "write the results as JSON");
  if (ring) {
    app.add_option("--ranks", ring->ranks, "ranks sharing the GPU, one table each")
        ->delimiter(',')
        ->check(CLI::Range(1, 1024));
    app.add_option("--channels", ring->channels, "channels (blocks per rank)")
        ->check(CLI::Range(1, device::kMaxChannels));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    return status == 0 ? 0 : 2;
  }
  return readSizes(program, o, smallest) ? -1 : 2;
}

int runOnGpu(const char* program, const std::function<int()>& body) {
  if (const std::string why = whyNoGpu(); !why.empty()) {
    std::printf("skipped: %s\n", why.c_str());
    return 77;
  }
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace tutti::kernels::cuda::test
