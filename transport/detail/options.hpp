// Checks shared by every transport: the Options a transport is created with and the peer list
// and address table handed to connect(). Bad values are the caller's mistake, so they raise
// kInvalidArgument naming the field, before anything is created.
#pragma once

#include <string>
#include <vector>

#include "transport/transport.hpp"

namespace tutti::transport::detail {

// Limits of Options: a tcp frame length travels as u32, and a slot count or size past these is
// a typo rather than a plan.
inline constexpr int kMaxSlots = 4096;
inline constexpr size_t kMaxSlotBytes = size_t{1} << 30;
inline constexpr int kMaxSocketsPerPeer = 16;
inline constexpr size_t kMaxJobTagLength = 128;

// `transport` ("shm", "tcp") prefixes the messages.
void checkOptions(const Options& options, const char* transport);
// Every peer in [0, nranks), not self, listed once; addresses.size() == nranks.
void checkPeers(const Options& options, const std::vector<int>& peers,
                const std::vector<std::string>& addresses, const char* transport);

}  // namespace tutti::transport::detail
