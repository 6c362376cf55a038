#include "integrations/torch/src/store_rendezvous.hpp"

#include <c10/util/Exception.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace tutti_torch {
namespace {

constexpr const char* kUniqueIdKey = "tutti_unique_id";

void check(tuttiResult_t result, const char* what) {
  TORCH_CHECK(result == tuttiSuccess, "tutti: ", what, ": ", tutti_get_last_error());
}

}  // namespace

tuttiComm_t connectThroughStore(c10d::Store& store, int rank, int size) {
  // Checked before the store is read: a rank that is not among `size` would wait for rank 0's id
  // until the store's timeout, then be told only that it waited.
  TORCH_CHECK(size >= 1 && rank >= 0 && rank < size, "tutti: rank ", rank,
              " is not a rank of a group of ", size);
  tuttiUniqueId id;
  if (rank == 0) {
    check(tutti_get_unique_id(&id), "creating the unique id");
    store.set(kUniqueIdKey, std::vector<uint8_t>(id.internal, id.internal + sizeof id.internal));
  } else {
    const std::vector<uint8_t> bytes = store.get(kUniqueIdKey);
    TORCH_CHECK(bytes.size() == sizeof id.internal, "tutti: the store's ", kUniqueIdKey, " has ",
                bytes.size(), " bytes, not ", sizeof id.internal);
    std::memcpy(id.internal, bytes.data(), bytes.size());
  }
  tuttiComm_t comm = nullptr;
  check(tutti_comm_init_rank(&comm, id, rank, size), "joining the process group");
  return comm;
}

}  // namespace tutti_torch
