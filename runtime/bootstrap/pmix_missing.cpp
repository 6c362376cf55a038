// Built without libpmix-dev: the launchers' PMIx servers go unused (TUTTI_ADDR and TUTTI_SECRET
// are needed across hosts).
#include "base/error.hpp"
#include "runtime/bootstrap/pmix_share.hpp"

namespace tutti::bootstrap {

bool pmixBuilt() {
  return false;
}

void shareThroughPmix(LaunchEnv&, std::chrono::milliseconds) {
  raise(ErrorCode::kInternal, "tutti was built without PMIx (libpmix-dev)");
}

}  // namespace tutti::bootstrap
