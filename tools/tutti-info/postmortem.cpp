#include "tools/tutti-info/postmortem.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace tutti::info {
namespace {

// One communicator's dumps, indexed by rank (null: that rank left none).
struct Communicator {
  std::string id;
  int size = 0;
  std::vector<const RankDump*> byRank;
  const RankDump& any() const {
    for (const RankDump* dump : byRank)
      if (dump) return *dump;
    throw InputError("internal: a communicator without dumps");
  }
};

// "rank 3" or "ranks 0,1,3"
std::string rankList(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ","));
}

// "ranks 0,1,3 are waiting", "rank 0 is waiting"
std::string waiting(const std::vector<int>& ranks) {
  return fmt::format("{} {} waiting", rankList(ranks), ranks.size() == 1 ? "is" : "are");
}

std::string who(const Communicator& comm, int rank) {
  const DumpedPeer& peer = comm.any().peers[static_cast<size_t>(rank)];
  return fmt::format("rank {} (host {}, pid {})", rank, peer.host, peer.pid);
}

const DumpedOp* lastDone(const RankDump& dump) {
  const DumpedOp* last = nullptr;
  for (const DumpedOp& op : dump.entries)
    if (op.state == "done") last = &op;
  return last;
}

// The first operation that has not completed: where the rank is now.
const DumpedOp* current(const RankDump& dump) {
  for (const DumpedOp& op : dump.entries)
    if (op.state != "done") return &op;
  return nullptr;
}

const DumpedOp* findCollective(const RankDump& dump, uint64_t collectiveSeq) {
  for (const DumpedOp& op : dump.entries)
    if (op.collectiveSeq == collectiveSeq) return &op;
  return nullptr;
}

std::string describeOp(const DumpedOp* op, uint64_t seq) {
  return op ? fmt::format("#{} {}", op->seq, signature(*op)) : fmt::format("#{}", seq);
}

std::string rankLine(const Communicator& comm, const RankDump& dump) {
  std::string line = fmt::format("  {}, dumped on {}: ", who(comm, dump.rank), dump.reason);
  const DumpedOp* done = lastDone(dump);
  line += done ? fmt::format("last completed #{} {}", done->seq, done->collective)
               : std::string("no completed operation recorded");
  if (const DumpedOp* now = current(dump)) {
    line += fmt::format("; {} in {}", now->state, describeOp(now, now->seq));
    if (now->waitingOn) line += fmt::format(" waiting for rank {}", *now->waitingOn);
    if (!now->error.empty()) line += ": " + now->error;
  }
  return line + "\n";
}

// Collectives that differ at the same number among the communicator's collectives (send and
// recv are not collectives: they differ by nature, and between some ranks only). Where that
// number is not also every call's operation number, the line says "collective #K".
std::string mismatches(const Communicator& comm) {
  std::map<uint64_t, std::map<std::string, std::vector<int>>> calls;
  std::set<uint64_t> renumbered;
  for (const RankDump* dump : comm.byRank)
    if (dump)
      for (const DumpedOp& op : dump->entries)
        if (op.collectiveSeq != 0) {
          calls[op.collectiveSeq][signature(op)].push_back(dump->rank);
          if (op.seq != op.collectiveSeq) renumbered.insert(op.collectiveSeq);
        }
  std::string text;
  for (const auto& [collectiveSeq, bySignature] : calls) {
    if (bySignature.size() < 2) continue;
    std::vector<std::string> parts;
    for (const auto& [call, ranks] : bySignature)
      parts.push_back(fmt::format("{} called {}", rankList(ranks), call));
    text +=
        fmt::format("mismatch at {}#{}: {}\n", renumbered.count(collectiveSeq) ? "collective " : "",
                    collectiveSeq, fmt::join(parts, "; "));
  }
  return text;
}

// When a rank arrived in a collective: its entry (when it issued it) or, for one stopped inside
// it that completed it, its end; 0 when unknown.
int64_t arrival(const DumpedOp& op, bool byEntry) {
  if (byEntry) return op.enteredNs.value_or(0);
  return op.state == "done" ? op.endedNs.value_or(0) : 0;
}

// "rank 2 (...) is behind: it entered #17 ... only after ranks 0,1,3 had failed in it waiting for
// it", for each rank that arrived in collective `collectiveSeq` only after ranks waiting for it
// there had failed.
std::string arrivedLate(const Communicator& comm, uint64_t collectiveSeq,
                        const std::vector<std::pair<int, const DumpedOp*>>& failed, bool byEntry) {
  std::string text;
  for (const RankDump* dump : comm.byRank) {
    const DumpedOp* op = dump ? findCollective(*dump, collectiveSeq) : nullptr;
    const int64_t arrived = op ? arrival(*op, byEntry) : 0;
    if (arrived == 0) continue;
    std::vector<int> waiters;
    for (const auto& [rank, waited] : failed)
      if (waited->waitingOn == dump->rank && *waited->endedNs < arrived) waiters.push_back(rank);
    if (!waiters.empty())
      text += fmt::format("{} is behind: it {} {} only after {} had failed in it waiting for it\n",
                          who(comm, dump->rank), byEntry ? "entered" : "finished",
                          describeOp(op, op->seq), rankList(waiters));
  }
  return text;
}

// A rank stopped (SIGSTOP, a debugger) or stuck in its own work while the others failed waiting
// for it may resume, fail too or even go on, so that the numbers of collectives issued no longer
// show it behind; the times do. The lowest collective where they show it is where the job went
// wrong.
std::string lateRanks(const Communicator& comm) {
  // The failures that waited on a peer, by collective number: (waiter, its operation).
  std::map<uint64_t, std::vector<std::pair<int, const DumpedOp*>>> failures;
  for (const RankDump* dump : comm.byRank)
    if (dump)
      for (const DumpedOp& op : dump->entries)
        if (op.collectiveSeq != 0 && op.state == "failed" && op.waitingOn && op.endedNs)
          failures[op.collectiveSeq].emplace_back(dump->rank, &op);
  for (const auto& [collectiveSeq, failed] : failures)
    for (const bool byEntry : {true, false})
      if (std::string text = arrivedLate(comm, collectiveSeq, failed, byEntry); !text.empty())
        return text;
  return {};
}

// The rank(s) that issued the fewest collectives, when others issued more: the others wait for
// them in the next one. Collectives, not operations: send/recv between some ranks put no rank
// behind.
std::string fewestCollectives(const Communicator& comm) {
  uint64_t least = UINT64_MAX, most = 0;
  for (const RankDump* dump : comm.byRank)
    if (dump) {
      least = std::min(least, dump->lastCollective);
      most = std::max(most, dump->lastCollective);
    }
  if (least == most) return {};
  std::string text;
  std::vector<int> ahead;
  const DumpedOp* awaited = nullptr;
  for (const RankDump* dump : comm.byRank)
    if (dump && dump->lastCollective > least) {
      ahead.push_back(dump->rank);
      if (!awaited) awaited = findCollective(*dump, least + 1);
    }
  for (const RankDump* dump : comm.byRank) {
    if (!dump || dump->lastCollective != least) continue;
    const DumpedOp* now = current(*dump);
    const DumpedOp* done = lastDone(*dump);
    const std::string where =
        now    ? fmt::format("{} in {}", now->state, describeOp(now, now->seq))
        : done ? fmt::format("last completed #{} {}", done->seq, done->collective)
               : fmt::format("issued {} operations", dump->lastIssued);
    const std::string next =
        awaited ? describeOp(awaited, awaited->seq) : fmt::format("collective #{}", least + 1);
    text += fmt::format("{} is behind: {}; {} in {} for rank {}\n", who(comm, dump->rank), where,
                        waiting(ahead), next, dump->rank);
  }
  return text;
}

// Ranks that left no dump, with the ranks whose current operation waits for them.
std::string withoutDumps(const Communicator& comm) {
  std::string text;
  for (int rank = 0; rank < comm.size; ++rank) {
    if (comm.byRank[static_cast<size_t>(rank)]) continue;
    std::vector<int> waiters;
    const DumpedOp* in = nullptr;
    for (const RankDump* dump : comm.byRank)
      if (const DumpedOp* now = dump ? current(*dump) : nullptr; now && now->waitingOn == rank) {
        waiters.push_back(dump->rank);
        in = now;
      }
    text += fmt::format("{} left no dump", who(comm, rank));
    if (!waiters.empty())
      text += fmt::format("; {} for it in {}", waiting(waiters), describeOp(in, in->seq));
    text += "\n";
  }
  return text;
}

std::string behind(const Communicator& comm) {
  std::string text = lateRanks(comm);
  if (text.empty()) text = fewestCollectives(comm);
  text += withoutDumps(comm);
  if (text.empty()) {
    uint64_t issued = 0;
    for (const RankDump* dump : comm.byRank)
      if (dump) issued = dump->lastCollective;
    text = fmt::format("no rank is behind: every rank issued {} collectives\n", issued);
    for (const RankDump* dump : comm.byRank)
      if (const DumpedOp* now = dump ? current(*dump) : nullptr; now && now->waitingOn)
        text += fmt::format("rank {} is {} in {} waiting for rank {}\n", dump->rank, now->state,
                            describeOp(now, now->seq), *now->waitingOn);
  }
  return text;
}

std::vector<Communicator> group(const std::vector<RankDump>& dumps) {
  std::set<std::string> jobs;
  for (const RankDump& dump : dumps) jobs.insert(dump.job);
  if (jobs.size() > 1)
    throw InputError(
        fmt::format("the dumps come from {} jobs ({}); give a directory with one job's",
                    jobs.size(), fmt::join(jobs, ", ")));
  std::map<std::string, Communicator> byId;
  for (const RankDump& dump : dumps) {
    Communicator& comm = byId[dump.communicator];
    if (comm.byRank.empty()) {
      comm.id = dump.communicator;
      comm.size = dump.size;
      comm.byRank.assign(static_cast<size_t>(dump.size), nullptr);
    }
    if (dump.size != comm.size)
      throw InputError(fmt::format("{}: communicator {} has size {} here but {} in {}", dump.path,
                                   comm.id, dump.size, comm.size, comm.any().path));
    const RankDump*& slot = comm.byRank[static_cast<size_t>(dump.rank)];
    if (slot)
      throw InputError(fmt::format("{} and {} are both rank {} of communicator {}", slot->path,
                                   dump.path, dump.rank, comm.id));
    slot = &dump;
  }
  std::vector<Communicator> comms;
  for (auto& [id, comm] : byId) comms.push_back(std::move(comm));
  return comms;
}

}  // namespace

std::string postmortem(const std::vector<RankDump>& dumps) {
  std::string report;
  for (const Communicator& comm : group(dumps)) {
    std::vector<int> dumped;
    for (const RankDump* dump : comm.byRank)
      if (dump) dumped.push_back(dump->rank);
    report += fmt::format("communicator {} (job {}): {} ranks, dumps from {}\n", comm.id,
                          comm.any().job, comm.size, rankList(dumped));
    for (const RankDump* dump : comm.byRank)
      if (dump) report += rankLine(comm, *dump);
    report += mismatches(comm);
    report += behind(comm);
  }
  return report;
}

}  // namespace tutti::info
