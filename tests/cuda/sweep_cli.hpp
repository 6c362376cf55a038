// The command line the `cuda` suite's benchmarks share (bench/gpu-check runs them): sizes doubling
// from -b to -e (K, M, G suffixes), -n timed iterations, -w warm-ups, -J a JSON file; and how each
// ends: 77 without a GPU (skipped, saying why), 1 with the message of what went wrong. Only
// sweep_cli.cpp includes CLI11, which costs each file that does half a minute of compile time.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace tutti::kernels::cuda::test {

struct SweepOptions {
  std::string minText, maxText;  // -b and -e as given; their defaults are each program's
  size_t minBytes = 0, maxBytes = 0;
  int iters = 20;
  int warmups = 5;
  std::string jsonFile;
};

// ring_one_gpu_bench's own options: --ranks sharing the GPU (a table each), --channels per rank.
struct RingSweep {
  std::vector<int> ranks = {2, 4};
  int channels = 8;
};

// Parses the command line into `o` (and `ring`, where the program has those options), -b and -e
// as sizes no smaller than `smallest`. Returns -1 to go on, else the status to exit with: 0 after
// --help, 2 after saying on stderr what was wrong.
int parseSweep(int argc, char** argv, const char* program, const char* description, SweepOptions& o,
               size_t smallest, RingSweep* ring = nullptr);
// 77 without a GPU (saying why on stdout), else what `body` returns, or 1 when it throws.
int runOnGpu(const char* program, const std::function<int()>& body);

}  // namespace tutti::kernels::cuda::test
