// The C ABI (tutti_bucketing.h): a reducer driven from C calls, its errors as codes and messages
// in libtutti's own last error (tutti_get_last_error), which a later success leaves in place.
#include <catch2/catch.hpp>

#include "tests/unit/bucketing/grad_store.hpp"
#include "tests/unit/bucketing/rank_threads.hpp"
#include "tutti/tutti_bucketing.h"

namespace tb = tutti::bucketing;

namespace {

struct CTensors {
  explicit CTensors(const std::vector<tb::TensorBuffer>& buffers) {
    for (const tb::TensorBuffer& buffer : buffers)
      list.push_back({buffer.name.c_str(), buffer.shape.data(),
                      static_cast<int>(buffer.shape.size()), buffer.dtype, buffer.data});
  }
  std::vector<tuttiTensor> list;
};

void ok(tuttiResult_t result) {
  if (result != tuttiSuccess) throw std::runtime_error(tutti_get_last_error());
}

}  // namespace

TEST_CASE("the C API averages gradients and reports errors by name", "[bucketing]") {
  const auto specs = tb::testing::smallModel();
  std::vector<size_t> mismatches(2, 0), buckets(2, 0);
  std::vector<tuttiResult_t> twice(2, tuttiSuccess);
  std::vector<std::string> twiceMessage(2), messageAfterSuccess(2);
  const auto errors = tb::testing::onEveryRank(2, [&](tuttiComm_t comm, int rank) {
    tb::testing::GradStore grads(specs);
    CTensors tensors(grads.buffers());
    ok(tutti_params_verify(comm, tensors.list.data(), tensors.list.size()));
    const tuttiReducerConfig config{4096, 1024, 0, 0};
    tuttiReducer_t reducer = nullptr;
    ok(tutti_reducer_create(comm, tensors.list.data(), tensors.list.size(), &config, &reducer));
    ok(tutti_reducer_set_comm_hook(reducer, tuttiHookAllreduce));
    for (int iteration = 0; iteration < 2; ++iteration) {
      ok(tutti_reducer_prepare(reducer, nullptr, 0));
      for (size_t p = specs.size(); p-- > 0;) {
        for (size_t i = 0; i < grads.numel(p); ++i)
          grads.set(p, i, tb::testing::seededValue(p + iteration, rank, i));
        ok(tutti_reducer_mark_ready(reducer, p));
      }
      if (iteration == 1) {
        twice[static_cast<size_t>(rank)] = tutti_reducer_mark_ready(reducer, 5);
        twiceMessage[static_cast<size_t>(rank)] = tutti_get_last_error();
      }
      ok(tutti_reducer_finalize(reducer));
      if (iteration == 1) messageAfterSuccess[static_cast<size_t>(rank)] = tutti_get_last_error();
      for (size_t p = 0; p < specs.size(); ++p)
        for (size_t i = 0; i < grads.numel(p); ++i)
          if (grads.get(p, i) != (tb::testing::seededValue(p + iteration, 0, i) +
                                  tb::testing::seededValue(p + iteration, 1, i)) /
                                     2)
            ++mismatches[static_cast<size_t>(rank)];
    }
    tuttiReducerStats stats{};
    size_t bytes[8] = {};
    ok(tutti_reducer_get_stats(reducer, &stats, bytes, 8));
    buckets[static_cast<size_t>(rank)] = stats.num_buckets;
    ok(tutti_reducer_destroy(reducer));
  });
  for (const std::string& error : errors) CHECK(error.empty());
  for (size_t r = 0; r < 2; ++r) {
    CHECK(mismatches[r] == 0);
    CHECK(buckets[r] > 2);  // rebuilt with 1 KiB / 4 KiB limits
    CHECK(twice[r] == tuttiInvalidUsage);
    CHECK_THAT(twiceMessage[r], Catch::Contains("5 ('p5')"));
    CHECK(messageAfterSuccess[r] == twiceMessage[r]);
  }
}

TEST_CASE("the C API rejects bad arguments", "[bucketing]") {
  tuttiReducer_t reducer = nullptr;
  CHECK(tutti_reducer_create(nullptr, nullptr, 0, nullptr, &reducer) == tuttiInvalidArgument);
  CHECK(tutti_reducer_mark_ready(nullptr, 0) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Catch::Contains("reducer is NULL"));
  CHECK(tutti_reducer_destroy(nullptr) == tuttiSuccess);
  CHECK_THAT(tutti_get_last_error(), Catch::Contains("reducer is NULL"));
}

TEST_CASE("the C API's errors and libtutti's share one last error", "[bucketing]") {
  int version = 0;
  CHECK(tutti_reducer_set_sync(nullptr, 1) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Catch::Contains("reducer is NULL"));
  CHECK(tutti_get_version(nullptr) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Catch::Contains("version is NULL"));
  CHECK(tutti_get_version(&version) == tuttiSuccess);
  CHECK(tutti_reducer_set_sync(nullptr, 1) == tuttiInvalidArgument);
  CHECK(tutti_reducer_destroy(nullptr) == tuttiSuccess);
  CHECK_THAT(tutti_get_last_error(), Catch::Contains("reducer is NULL"));
}
