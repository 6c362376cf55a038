// Environment initialisation (runtime/bootstrap/launch_env.cpp) on hostile launcher variables:
// TUTTI_*, torchrun's, Open MPI's and Slurm's, in any mix. readLaunchEnv either refuses with
// kInvalidArgument or returns a world that makes sense: 0 <= rank < nranks, a local rank below
// nranks (or -1), a port in 1..65535 and an address.
#include <cstdint>

#include "fuzz/env_lines.hpp"
#include "fuzz/fuzz_support.hpp"
#include "runtime/bootstrap/bootstrap.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tutti::fuzz::discardLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tutti::fuzz::setEnvironment(std::string_view(reinterpret_cast<const char*>(data), size),
                              tutti::bootstrap::launchVariableNames());
  tutti::bootstrap::LaunchEnv env;
  if (!tutti::fuzz::accepts(tutti::ErrorCode::kInvalidArgument,
                            [&] { env = tutti::bootstrap::readLaunchEnv(); }))
    return 0;
  if (env.rank < 0 || env.rank >= env.nranks) tutti::fuzz::bug("rank outside the world");
  if (env.localRank < -1 || env.localRank >= env.nranks) tutti::fuzz::bug("bad local rank");
  if (env.port < 1 || env.port > 65535) tutti::fuzz::bug("port outside 1..65535");
  if (env.addr.empty() || env.source.empty()) tutti::fuzz::bug("no rendezvous address or source");
  return 0;
}
