// What an algorithm sees of its communicator: this rank among how many, the connections to its
// peers (whatever their transports), the peers' published facts, the ring and trees it was planned
// with, and its settings (tuning table, FIFO geometry, a forced algorithm). Not the communicator:
// its engine, peer watch, recorder and failure state are reached only through the operation's
// waits and the few calls OpContext offers (op_context.hpp), so no file of runtime/collectives/
// but op_context.cpp includes communicator.hpp. The planner's memo of its last picks comes along
// (pick_memo.hpp).
#pragma once

#include <vector>

#include "runtime/collectives/pick_memo.hpp"
#include "runtime/connections.hpp"
#include "runtime/peer_info.hpp"
#include "runtime/settings.hpp"
#include "runtime/topology_plan.hpp"

namespace tutti::runtime {

struct GroupView {
  int rank;
  int size;
  Connections& connections;
  const std::vector<PeerInfo>& peers;
  const CpuRing& ring;  // the ring and chain collectives' order, and the trees
  const Settings& settings;
  PickMemo& picks;

  const PeerInfo& peer(int of) const { return peers[static_cast<size_t>(of)]; }
};

}  // namespace tutti::runtime
