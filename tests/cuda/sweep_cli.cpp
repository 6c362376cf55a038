#include "tests/cuda/sweep_cli.hpp"

#include <cstdio>
#include <exception>

#include "bench/types.hpp"
#include "tests/cuda/one_gpu_ring.hpp"

namespace tutti::kernels::cuda::test {

void addSweepOptions(CLI::App& app, SweepOptions& o) {
  app.add_option("-b,--minbytes", o.minText, "smallest size (K, M, G suffixes)")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", o.maxText, "largest size")->capture_default_str();
  app.add_option("-n,--iters", o.iters, "timed iterations")->check(CLI::PositiveNumber);
  app.add_option("-w,--warmup_iters", o.warmups, "warm-up iterations")
      ->check(CLI::NonNegativeNumber);
  app.add_option("-J,--output_file", o.jsonFile, "write the results as JSON");
}

bool finishSweep(const char* program, SweepOptions& o, size_t smallest) {
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
