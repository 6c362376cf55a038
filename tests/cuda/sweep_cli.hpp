// The command line the `cuda` suite's benchmarks share (bench/gpu-check runs them): sizes doubling
// from -b to -e (K, M, G suffixes), -n timed iterations, -w warm-ups, -J a JSON file; and how each
// ends: 77 without a GPU (skipped, saying why), 1 with the message of what went wrong.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <functional>
#include <string>

namespace tutti::kernels::cuda::test {

struct SweepOptions {
  std::string minText, maxText;  // -b and -e as given; their defaults are each program's
  size_t minBytes = 0, maxBytes = 0;
  int iters = 20;
  int warmups = 5;
  std::string jsonFile;
};

void addSweepOptions(CLI::App& app, SweepOptions& o);
// Reads -b and -e; false, after saying on stderr what was wrong, unless smallest <= -b <= -e.
bool finishSweep(const char* program, SweepOptions& o, size_t smallest);
// 77 without a GPU (saying why on stdout), else what `body` returns, or 1 when it throws.
int runOnGpu(const char* program, const std::function<int()>& body);

}  // namespace tutti::kernels::cuda::test
