// TUTTI_SOCKET_IFNAME's syntax (NCCL_SOCKET_IFNAME's: prefixes, ^ excludes, = exact) on hostile
// specs. Input: the spec, a newline, the interface name. Besides not crashing, "^spec" must
// select exactly the interfaces that "spec" does not, whenever spec names any interface at all.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.hpp"
#include "runtime/bootstrap/bootstrap.hpp"

namespace {

// Whether a spec without a leading ^ holds a name: an empty list selects every interface, negated
// or not.
bool namesAny(std::string_view spec) {
  if (spec.starts_with("=")) spec.remove_prefix(1);
  return spec.find_first_not_of(',') != std::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tutti::fuzz::discardLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string spec = input.substr(0, newline);
  const std::string ifname = newline == std::string::npos ? "" : input.substr(newline + 1);
  const bool selected = tutti::bootstrap::interfaceMatches(spec, ifname);
  if (spec.empty() && !selected) tutti::fuzz::bug("an empty spec must select every interface");
  if (!spec.starts_with("^") && namesAny(spec) &&
      tutti::bootstrap::interfaceMatches("^" + spec, ifname) == selected)
    tutti::fuzz::bug("^spec selects the same as spec");
  return 0;
}
