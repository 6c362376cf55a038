// Growing a communicator (tutti_comm_grow): its members and the newcomers meet in the job's store,
// which a grow token (growId) names to the newcomers, allgather who everyone is, and connect as
// any communicator does.
#include <sstream>

#include "runtime/communicator.hpp"

namespace tutti::runtime {

bootstrap::UniqueId Communicator::growId() {
  failure_.throwIfRetired();
  bootstrap::UniqueId id{job_.rendezvous.host(), job_.rendezvous.port(), job_.secret,
                         Secret::random().hex().substr(0, 16)};
  job_.store->set("grow/" + id.joinKey, fmt::format("{} {} {}", tag(), rounds_.grows, size()),
                  Deadline::after(timeout()));
  return id;
}

void Communicator::checkGrowSize(int newSize) const {
  if (newSize <= size())
    raise(ErrorCode::kInvalidArgument,
          "rank {}: new_size {} is not larger than the communicator's {} ranks", rank(), newSize,
          size());
}

std::unique_ptr<Communicator> Communicator::grow(int newSize) {
  failure_.throwIfRetired();
  throwIfFailed();
  return grown(job_, tag(), rounds_.grows++, rank(), newSize, peer(rank()), childSettings());
}

std::unique_ptr<Communicator> Communicator::grown(JobBootstrap job, const std::string& tag,
                                                  int round, int rank, int newSize,
                                                  const PeerInfo& self, const Settings& settings) {
  const Deadline deadline = Deadline::after(settings.timeout);
  const std::string prefix = tag + "/grow" + std::to_string(round);
  const auto records = bootstrap::allgather(
      *job.store, prefix, rank, newSize, std::to_string(newSize) + ";" + self.encode(), deadline);
  std::vector<PeerInfo> peers;
  for (int from = 0; from < newSize; ++from) {
    const std::string& record = records[static_cast<size_t>(from)];
    const size_t split = record.find(';');
    std::istringstream size(record.substr(0, split));
    int theirs = 0;
    if (split == std::string::npos || !(size >> theirs))
      raise(ErrorCode::kRemote, "rank {}: malformed grow record from rank {}", rank, from);
    if (theirs != newSize)
      raise(ErrorCode::kInvalidUsage,
            "rank {}: the ranks disagree on the grown size: rank {} says {}, rank {} says {}", rank,
            from, theirs, rank, newSize);
    peers.push_back(PeerInfo::decode(record.substr(split + 1), rank, from));
  }
  return create(std::move(job), tag + ".g" + std::to_string(round), rank, std::move(peers),
                settings, {});
}

}  // namespace tutti::runtime
