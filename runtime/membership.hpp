// Who a communicator's members are, fixed when it is made: its tag, this rank, every member's
// published facts, where the members sit (this rank among its host's, more ranks than cores) and
// the ring and trees planned over them. Making one checks that the members agree on the settings
// they must share: ranks that disagree would wait on each other for ever.
#pragma once

#include <string>
#include <vector>

#include "runtime/peer_info.hpp"
#include "runtime/settings.hpp"
#include "runtime/topology_plan.hpp"

namespace tutti::runtime {

class Membership {
 public:
  // peers[i] describes rank i. The ring follows `ringOrder` when given, else the plan from the
  // peers' places (planCpuRing) priced by settings.tuning. kInvalidUsage when a peer's agreed
  // settings or ring order differ from this rank's.
  Membership(std::string tag, int rank, std::vector<PeerInfo> peers, const Settings& settings,
             const std::vector<int>& ringOrder);

  const std::string& tag() const { return tag_; }
  // The world's tag, shared by every communicator split from it: names the job in dumps.
  std::string jobId() const { return tag_.substr(0, tag_.find('.')); }
  int rank() const { return rank_; }
  int size() const { return static_cast<int>(peers_.size()); }
  const PeerInfo& peer(int rank) const { return peers_[static_cast<size_t>(rank)]; }
  const std::vector<PeerInfo>& peers() const { return peers_; }
  // "rank 3 (host:pid)", for messages.
  std::string describePeer(int rank) const;
  int localRank() const { return localRank_; }
  int localSize() const { return localSize_; }
  // More ranks on this host than cores to run them: waiting must not spin.
  bool oversubscribed() const { return oversubscribed_; }
  // The ranks' ring by CPU locality (or TUTTI_RING_ORDER) and its estimated bandwidth (the tuning
  // model's beta); the ring and chain collectives follow it.
  const CpuRing& ring() const { return ring_; }

 private:
  std::string tag_;
  int rank_;
  std::vector<PeerInfo> peers_;
  int localRank_ = 0;
  int localSize_ = 0;
  bool oversubscribed_ = false;
  CpuRing ring_;
};

}  // namespace tutti::runtime
