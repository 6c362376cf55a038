#include "transport/detail/options.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace tutti::transport::detail {

void checkOptions(const Options& options, const char* transport) {
  if (options.nranks < 1)
    raise(ErrorCode::kInvalidArgument, "{}: nranks is {}, it must be at least 1", transport,
          options.nranks);
  if (options.rank < 0 || options.rank >= options.nranks)
    raise(ErrorCode::kInvalidArgument, "{}: rank {} is not in [0, {})", transport, options.rank,
          options.nranks);
  if (options.slots < 1 || options.slots > kMaxSlots)
    raise(ErrorCode::kInvalidArgument, "{}: slots is {}, it must be in [1, {}]", transport,
          options.slots, kMaxSlots);
  if (options.slotBytes < 1 || options.slotBytes > kMaxSlotBytes)
    raise(ErrorCode::kInvalidArgument, "{}: slotBytes is {}, it must be in [1, {}]", transport,
          options.slotBytes, kMaxSlotBytes);
  if (options.socketsPerPeer < 1 || options.socketsPerPeer > kMaxSocketsPerPeer)
    raise(ErrorCode::kInvalidArgument, "{}: socketsPerPeer is {}, it must be in [1, {}]", transport,
          options.socketsPerPeer, kMaxSocketsPerPeer);
  // The tag names shm segments ("/tutti-<tag>-...") and travels in tcp hellos.
  const std::string& tag = options.jobTag;
  if (tag.size() > kMaxJobTagLength)
    raise(ErrorCode::kInvalidArgument, "{}: jobTag has {} characters, at most {} are allowed",
          transport, tag.size(), kMaxJobTagLength);
  const bool printable =
      std::all_of(tag.begin(), tag.end(), [](char c) { return c > ' ' && c < 127 && c != '/'; });
  if (!printable)
    raise(ErrorCode::kInvalidArgument,
          "{}: jobTag '{}' must be printable ASCII without spaces or '/'", transport, tag);
}

void checkPeers(const Options& options, const std::vector<int>& peers,
                const std::vector<std::string>& addresses, const char* transport) {
  if (addresses.size() != static_cast<size_t>(options.nranks))
    raise(ErrorCode::kInvalidArgument, "{}: connect got {} addresses for {} ranks", transport,
          addresses.size(), options.nranks);
  std::vector<bool> seen(options.nranks, false);
  for (int peer : peers) {
    if (peer < 0 || peer >= options.nranks || peer == options.rank)
      raise(ErrorCode::kInvalidArgument, "{}: rank {} cannot connect to peer {} (nranks {})",
            transport, options.rank, peer, options.nranks);
    if (seen[peer])
      raise(ErrorCode::kInvalidArgument, "{}: peer {} is listed twice", transport, peer);
    seen[peer] = true;
  }
}

}  // namespace tutti::transport::detail
