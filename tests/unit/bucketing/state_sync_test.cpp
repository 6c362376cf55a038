// Initial state sync: the chunked broadcast from rank 0 and the shape verification's errors.
#include "bucketing/state_sync.hpp"

#include <catch2/catch.hpp>

#include "tests/unit/bucketing/grad_store.hpp"
#include "tests/unit/bucketing/rank_threads.hpp"

namespace tb = tutti::bucketing;
using tb::testing::GradStore;

TEST_CASE("parameters are broadcast from rank 0 in chunks", "[bucketing]") {
  const auto specs = tb::testing::smallModel();
  for (size_t chunkBytes : {size_t{100}, size_t{4096}, tb::kBroadcastChunkBytes}) {
    INFO("chunk " << chunkBytes);
    std::vector<size_t> mismatches(3, 0);
    const auto errors = tb::testing::onEveryRank(3, [&](tuttiComm_t comm, int rank) {
      GradStore params(specs);
      for (size_t p = 0; p < specs.size(); ++p)
        for (size_t i = 0; i < params.numel(p); ++i)
          params.set(p, i, tb::testing::seededValue(p, rank, i));
      tb::verifyShapesAcrossRanks(comm, params.buffers());
      tb::broadcastFromRank0(comm, params.buffers(), chunkBytes);
      for (size_t p = 0; p < specs.size(); ++p)
        for (size_t i = 0; i < params.numel(p); ++i)
          if (params.get(p, i) != tb::testing::seededValue(p, 0, i))
            ++mismatches[static_cast<size_t>(rank)];
    });
    for (const std::string& error : errors) CHECK(error.empty());
    CHECK(mismatches == std::vector<size_t>{0, 0, 0});
  }
}

TEST_CASE("a shape mismatch is reported on every rank, naming the parameter", "[bucketing]") {
  const auto errors = tb::testing::onEveryRank(3, [](tuttiComm_t comm, int rank) {
    GradStore params(tb::testing::smallModel());
    std::vector<tb::TensorBuffer> tensors = params.buffers();
    if (rank == 1) tensors[2].shape = {10, 100};  // same element count, other shape
    tb::verifyShapesAcrossRanks(comm, tensors);
  });
  for (const std::string& error : errors)
    CHECK_THAT(error, Catch::Contains("parameter 2") &&
                          Catch::Contains("[10, 100] float32 on rank 1") &&
                          Catch::Contains("[1000] float32 on rank 0"));
}

TEST_CASE("a parameter count mismatch is reported too", "[bucketing]") {
  const auto errors = tb::testing::onEveryRank(3, [](tuttiComm_t comm, int rank) {
    GradStore params(tb::testing::smallModel());
    std::vector<tb::TensorBuffer> tensors = params.buffers();
    if (rank == 2) tensors.push_back(tensors.back());
    tb::verifyShapesAcrossRanks(comm, tensors);
  });
  for (const std::string& error : errors)
    CHECK_THAT(error, Catch::Contains("rank 2 has 7 parameters, rank 0 has 6"));
}
