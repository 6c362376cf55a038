// gpuFacts (gpu_sharing.hpp) from the driver.
#include <cctype>
#include <cstring>

#include "runtime/gpu/driver.hpp"
#include "runtime/gpu/gpu_sharing.hpp"
#include "runtime/gpu/kernel_launch.hpp"

namespace tutti::runtime::gpu {

GpuFacts gpuFacts(int device) {
  const Driver& d = driver();
  CUdevice handle = 0;
  check(d.device(&handle, device), "cuDeviceGet");
  GpuFacts facts;
  CUuuid uuid{};
  check(d.deviceUuid(&uuid, handle), "cuDeviceGetUuid");
  static_assert(sizeof(uuid.bytes) == sizeof(facts.uuid));
  std::memcpy(facts.uuid.data(), uuid.bytes, sizeof(uuid.bytes));
  char busId[32] = {};
  check(d.pciBusId(busId, sizeof(busId) - 1, handle), "cuDeviceGetPCIBusId");
  // The driver spells the hex digits in upper case, topologies (NCCL's XML, sysfs) in lower.
  for (const char* c = busId; *c; ++c)
    facts.busId += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
  int multiprocessors = 0;
  check(d.deviceAttribute(&multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, handle),
        "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  // A driver older than the attribute does not say: taken as no MPS, which only ever stages.
  int mps = 0;
  if (d.deviceAttribute(&mps, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, handle) != CUDA_SUCCESS) mps = 0;
  facts.mps = mps != 0;
  int count = 0;
  check(d.deviceCount(&count), "cuDeviceGetCount");
  for (int other = 0; other < count; ++other) {
    CUdevice peer = 0;
    int reaches = 0;
    check(d.device(&peer, other), "cuDeviceGet");
    if (peer == handle) continue;
    check(d.canAccessPeer(&reaches, handle, peer), "cuDeviceCanAccessPeer");
    if (reaches) continue;
    CUuuid theirs{};
    check(d.deviceUuid(&theirs, peer), "cuDeviceGetUuid");
    std::memcpy(facts.unreachable.emplace_back().data(), theirs.bytes, sizeof(theirs.bytes));
  }
  ContextScope scope(primaryContext(device));
  facts.residentBlocks = multiprocessors * fewestCollectiveBlocksPerSm();
  return facts;
}

}  // namespace tutti::runtime::gpu
