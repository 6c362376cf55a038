#include <cstdlib>
#include <cstring>

#include "runtime/bootstrap/pmix_share.hpp"

extern char** environ;

namespace tutti::bootstrap {

bool pmixServed() {
  if (!std::getenv("PMIX_NAMESPACE") || !std::getenv("PMIX_RANK")) return false;
  // The server's address comes as PMIX_SERVER_URI, _URI2, _URI21, _URI3, _URI4, ... by version.
  for (char** variable = environ; *variable; ++variable)
    if (std::strncmp(*variable, "PMIX_SERVER_URI", 15) == 0) return true;
  return false;
}

}  // namespace tutti::bootstrap
