// The ucx transport's factory in a build without UCX (libucx-dev was missing when meson ran).
#include "base/error.hpp"
#include "transport/transport.hpp"

namespace tutti::transport {

bool ucxBuilt() {
  return false;
}

std::unique_ptr<Transport> makeUcxTransport(const Options& /*options*/) {
  raise(ErrorCode::kInvalidUsage,
        "ucx: tutti was built without UCX (install libucx-dev and rebuild to use "
        "TUTTI_TRANSPORT=ucx)");
}

}  // namespace tutti::transport
