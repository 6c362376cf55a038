// tutti_mem_alloc / tutti_mem_free through the C API (transport/peer_memory.hpp has the memory
// itself; tests/unit/transport/registered_memory_test.cpp tests it): bad arguments are errors
// that name them.
#include <catch2/catch.hpp>
#include <cstdint>

#include "tests/warnings.hpp"
#include "tutti/tutti.h"

using Catch::Matchers::Contains;

TEST_CASE("registered memory: bad arguments are errors that name them") {
  tutti::tests::Warnings warnings;
  warnings.expect();  // the allocation larger than the host's memory is also a warning
  void* memory = nullptr;
  CHECK(tutti_mem_alloc(&memory, 0) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("bytes is 0"));
  CHECK(memory == nullptr);
  CHECK(tutti_mem_alloc(nullptr, 64) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("ptr is NULL"));
  CHECK(tutti_mem_alloc(&memory, SIZE_MAX) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("more than a file can hold"));
  CHECK(memory == nullptr);
  CHECK(tutti_mem_alloc(&memory, size_t{1} << 50) == tuttiSystemError);
  CHECK_THAT(tutti_get_last_error(), Contains("more than this host's memory"));
  CHECK(memory == nullptr);
  CHECK(warnings.count({"more than this host's memory"}) == 1);

  CHECK(tutti_mem_free(nullptr) == tuttiSuccess);
  int onStack = 0;
  CHECK(tutti_mem_free(&onStack) == tuttiInvalidArgument);
  CHECK_THAT(tutti_get_last_error(), Contains("not the start of memory from tutti_mem_alloc"));
  REQUIRE(tutti_mem_alloc(&memory, 64) == tuttiSuccess);
  CHECK(tutti_mem_free(static_cast<char*>(memory) + 8) == tuttiInvalidArgument);
  CHECK(tutti_mem_free(memory) == tuttiSuccess);
  CHECK(tutti_mem_free(memory) == tuttiInvalidArgument);  // twice
}
