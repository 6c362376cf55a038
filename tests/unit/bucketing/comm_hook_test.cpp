// Communication hooks: the plain average is exact on small integers; fp16 and bf16 compression
// stay within their precision and really do round.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "bucketing/reducer.hpp"
#include "tests/unit/bucketing/grad_store.hpp"
#include "tests/unit/bucketing/rank_threads.hpp"

namespace tb = tutti::bucketing;
using tb::testing::GradStore;

namespace {

// Uniform in [-1, 1), from (rank, param, index).
double noise(int rank, size_t param, size_t i) {
  std::mt19937_64 engine(static_cast<uint64_t>(rank) * 1000003u + param * 7919u + i);
  return std::uniform_real_distribution<double>(-1.0, 1.0)(engine);
}

struct HookResult {
  double maxError = 0;
  size_t inexact = 0;
  std::vector<std::string> errors;
};

// Two iterations (the second after the rebuild) of the small model with `makeHook` on every rank;
// the error is against the exact average computed here in double.
template <typename MakeHook>
HookResult runWithHook(int nranks, MakeHook makeHook, bool integers) {
  const auto specs = tb::testing::smallModel();
  std::vector<double> maxError(static_cast<size_t>(nranks), 0);
  std::vector<size_t> inexact(static_cast<size_t>(nranks), 0);
  auto value = [&](int rank, size_t p, size_t i) {
    return integers ? tb::testing::seededValue(p, rank, i) : noise(rank, p, i);
  };
  HookResult result;
  result.errors = tb::testing::onEveryRank(nranks, [&](tuttiComm_t comm, int rank) {
    GradStore grads(specs);
    tb::Reducer reducer(comm, grads.buffers());
    reducer.setCommHook(makeHook());
    for (int iteration = 0; iteration < 2; ++iteration) {
      reducer.prepareForBackward();
      for (size_t p = 0; p < specs.size(); ++p) {
        for (size_t i = 0; i < grads.numel(p); ++i) grads.set(p, i, value(rank, p, i));
        reducer.markReady(p);
      }
      reducer.finalize();
      for (size_t p = 0; p < specs.size(); ++p)
        for (size_t i = 0; i < grads.numel(p); ++i) {
          double sum = 0;
          for (int r = 0; r < nranks; ++r) sum += value(r, p, i);
          const double error = std::fabs(grads.get(p, i) - sum / nranks);
          auto& worst = maxError[static_cast<size_t>(rank)];
          worst = std::max(worst, error);
          if (error > 1e-6) ++inexact[static_cast<size_t>(rank)];
        }
    }
  });
  for (size_t r = 0; r < maxError.size(); ++r) {
    result.maxError = std::max(result.maxError, maxError[r]);
    result.inexact += inexact[r];
  }
  return result;
}

}  // namespace

TEST_CASE("the allreduce hook averages exactly", "[bucketing]") {
  const HookResult result = runWithHook(2, tb::allreduceHook, true);
  for (const std::string& error : result.errors) CHECK(error.empty());
  CHECK(result.maxError == 0);
}

TEST_CASE("fp16 compression is within float16 precision", "[bucketing]") {
  for (int nranks : {2, 3}) {
    const HookResult result = runWithHook(nranks, tb::fp16CompressHook, false);
    for (const std::string& error : result.errors) CHECK(error.empty());
    CHECK(result.maxError < 2e-3);  // |average| < 1, a few roundings of 2^-11 relative
    CHECK(result.inexact > 0);      // it did go through 16 bits
  }
}

TEST_CASE("bf16 compression is within bfloat16 precision", "[bucketing]") {
  for (int nranks : {2, 3}) {
    const HookResult result = runWithHook(nranks, tb::bf16CompressHook, false);
    for (const std::string& error : result.errors) CHECK(error.empty());
    CHECK(result.maxError < 2e-2);  // a few roundings of 2^-8 relative
    CHECK(result.inexact > 0);
  }
}

TEST_CASE("a hook cannot be set after the first iteration", "[bucketing]") {
  const auto errors = tb::testing::onEveryRank(1, [](tuttiComm_t comm, int) {
    GradStore grads(tb::testing::smallModel());
    tb::Reducer reducer(comm, grads.buffers());
    reducer.prepareForBackward();
    for (size_t p = 0; p < grads.size(); ++p) reducer.markReady(p);
    reducer.finalize();
    reducer.setCommHook(tb::fp16CompressHook());
  });
  CHECK_THAT(errors[0], Catch::Contains("before the first iteration"));
}
