// The `cuda` suite's main: Catch2's runner, after checking that there is a GPU to run on. Without
// one it exits 77, which meson reports as SKIP, saying why (the suite is built wherever nvcc is,
// CI included, and runs only where a GPU is).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "tests/cuda/one_gpu_ring.hpp"

int main(int argc, char** argv) {
  const std::string why = tutti::kernels::cuda::test::whyNoGpu();
  if (!why.empty()) {
    std::printf("skipped: %s\n", why.c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
