#include "runtime/membership.hpp"

#include <unistd.h>

#include <sstream>

#include "base/allowed_cpus.hpp"
#include "base/error.hpp"

namespace tutti::runtime {
namespace {

int availableCores() {
  if (const std::vector<int> cpus = allowedCpus(); !cpus.empty())
    return static_cast<int>(cpus.size());
  return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
}

// The words of `a` and `b` (space-separated, in the same order) that differ, each side's joined.
std::pair<std::string, std::string> differingWords(const std::string& a, const std::string& b) {
  std::istringstream inA(a), inB(b);
  std::string wordA, wordB, onlyA, onlyB;
  auto append = [](std::string& to, const std::string& word) {
    to += (to.empty() ? "" : " ") + (word.empty() ? std::string("(nothing)") : word);
  };
  while (true) {
    const bool gotA = static_cast<bool>(inA >> wordA), gotB = static_cast<bool>(inB >> wordB);
    if (!gotA && !gotB) break;
    if (!gotA) wordA.clear();
    if (!gotB) wordB.clear();
    if (wordA == wordB) continue;
    append(onlyA, wordA);
    append(onlyB, wordB);
  }
  return {onlyA, onlyB};
}

void checkAgreement(int rank, const std::vector<PeerInfo>& peers, const Settings& settings) {
  const PeerInfo& self = peers[static_cast<size_t>(rank)];
  for (const PeerInfo& peer : peers) {
    if (const auto [theirs, mine] = differingWords(peer.agreedSettings, self.agreedSettings);
        theirs != mine)
      raise(ErrorCode::kInvalidUsage,
            "rank {}: settings differ between ranks: rank {} ({}) uses {}, rank {} uses {}; set "
            "them alike on every rank",
            rank, peer.rank, describe(peer), theirs, rank, mine);
    // Ranks on different rings would wait for data from different neighbours. Records carry a
    // fingerprint, not the order: n ranks each fetching n orders of n ranks would not scale. Each
    // rank names its own value.
    if (peer.ringOrderHash != self.ringOrderHash)
      raise(ErrorCode::kInvalidUsage,
            "rank {}: settings differ between ranks: rank {} ({}) uses another TUTTI_RING_ORDER "
            "than rank {}, which uses TUTTI_RING_ORDER='{}'{}; set it alike on every rank",
            rank, peer.rank, describe(peer), rank, formatRanks(settings.ringOrder),
            settings.ringOrder.empty() ? " (unset)" : "");
  }
}

}  // namespace

Membership::Membership(std::string tag, int rank, std::vector<PeerInfo> peers,
                       const Settings& settings, const std::vector<int>& ringOrder)
    : tag_(std::move(tag)), rank_(rank), peers_(std::move(peers)) {
  checkAgreement(rank_, peers_, settings);
  const std::string& host = peers_[static_cast<size_t>(rank_)].hostId;
  for (const PeerInfo& peer : peers_) {
    if (peer.hostId != host) continue;
    ++localSize_;
    if (peer.rank < rank_) ++localRank_;
  }
  oversubscribed_ = localSize_ > availableCores();
  ring_ = planCpuRing(peers_, settings.transport, settings.tuning, ringOrder);
}

std::string Membership::describePeer(int rank) const {
  return fmt::format("rank {} ({})", rank, describe(peer(rank)));
}

}  // namespace tutti::runtime
