#include "runtime/init.hpp"

#include <sstream>
#include <thread>

#include "base/log.hpp"
#include "runtime/bootstrap/pmix_share.hpp"

namespace tutti::runtime {
namespace {

void checkRankAndSize(int rank, int nranks) {
  if (nranks < 1) raise(ErrorCode::kInvalidArgument, "nranks {} must be at least 1", nranks);
  if (rank < 0 || rank >= nranks)
    raise(ErrorCode::kInvalidArgument, "rank {} is out of range [0, {})", rank, nranks);
}

// What this rank tells the store before authenticating, so that a refusal can name it.
bootstrap::Claim claimOf(const PeerInfo& self, int nranks, const std::string& jobId) {
  return bootstrap::Claim{self.rank, nranks, describe(self), jobId};
}

// Where the world's rank 0 leaves its tuning table for the ranks that take it (newcomers of a
// grow too: the members planned from it).
constexpr char kRank0Tuning[] = "world/tuning";

// A rank on its machine's table plans from rank 0's instead: hosts of other CPU models, or with
// and without a saved table, would plan differently. Its record then says so.
void takeRank0Tuning(bootstrap::Store& store, Settings& settings, PeerInfo& self,
                     const Deadline& deadline) {
  if (!settings.tuningFromRank0) return;
  settings.useTuning(decodeTuning(store.get(kRank0Tuning, deadline),
                                  fmt::format("rank {}: rank 0's tuning table", self.rank)));
  self.agreedSettings = settings.agreed();
  log::info("rank {}: plans from rank 0's tuning table ({})", self.rank, settings.tuningOrigin);
}

// Joins the job through the store, allgathers who everyone is, and connects.
std::unique_ptr<Communicator> joinWorld(JobBootstrap job, PeerInfo self, int nranks,
                                        Settings settings) {
  const Deadline deadline = Deadline::after(settings.timeout);
  const int rank = self.rank;
  bootstrap::Store* store = job.store.get();
  store->join(rank, nranks, describe(self), deadline);
  // The tag names this world's shm segments and prefixes its store keys: random, so that two
  // jobs on one host never collide.
  if (rank == 0) {
    store->set("world/tag", Secret::random().hex().substr(0, 12));
    store->set(kRank0Tuning, encodeTuning({settings.tuningTable, settings.tuningOrigin}));
  } else {
    takeRank0Tuning(*store, settings, self, deadline);
  }
  const std::string tag = "w" + store->get("world/tag", deadline);
  const auto records =
      bootstrap::allgather(*store, tag + "/peers", rank, nranks, self.encode(), deadline);
  std::vector<PeerInfo> peers;
  for (int from = 0; from < nranks; ++from)
    peers.push_back(PeerInfo::decode(records[static_cast<size_t>(from)], rank, from));
  return Communicator::create(std::move(job), tag, rank, std::move(peers), settings,
                              settings.ringOrder);
}

}  // namespace

std::unique_ptr<Communicator> initRank(const bootstrap::UniqueId& id, int rank, int nranks) {
  checkRankAndSize(rank, nranks);
  const Settings settings = Settings::fromConfig();
  const PeerInfo self = PeerInfo::local(rank, settings);
  JobBootstrap job{nullptr, nullptr, SockAddr::resolve(id.host, id.port), id.secret};
  job.store = bootstrap::connectStore(job.rendezvous, id.secret, Deadline::after(settings.timeout),
                                      claimOf(self, nranks, ""));
  return joinWorld(std::move(job), self, nranks, settings);
}

std::unique_ptr<Communicator> initFromEnv() {
  bootstrap::LaunchEnv env = bootstrap::readLaunchEnv();
  checkRankAndSize(env.rank, env.nranks);
  const Settings settings = Settings::fromConfig();
  if (env.needsPmix()) bootstrap::shareThroughPmix(env, settings.timeout);
  const PeerInfo self = PeerInfo::local(env.rank, settings);
  const bootstrap::Claim claim = claimOf(self, env.nranks, env.jobId);
  JobBootstrap job{nullptr, nullptr, SockAddr::resolve(env.addr, env.port), env.secret};
  if (env.rank == 0) job.storeServer = bootstrap::hostRendezvous(job.rendezvous, env.secret, claim);
  job.store =
      bootstrap::connectStore(job.rendezvous, env.secret, Deadline::after(settings.timeout), claim);
  const auto storeServer = job.storeServer;
  try {
    return joinWorld(std::move(job), self, env.nranks, settings);
  } catch (...) {
    if (storeServer) storeServer->waitForClientsToLeave(Deadline::after(std::chrono::seconds(2)));
    throw;
  }
}

std::unique_ptr<Communicator> initGrowing(const bootstrap::UniqueId& id, int rank, int newSize) {
  checkRankAndSize(rank, newSize);
  if (id.joinKey.empty())
    raise(ErrorCode::kInvalidArgument,
          "rank {}: the id is not a grow token (tutti_comm_grow_id makes one; "
          "tutti_get_unique_id's ids start worlds)",
          rank);
  Settings settings = Settings::fromConfig();
  const Deadline deadline = Deadline::after(settings.timeout);
  PeerInfo self = PeerInfo::local(rank, settings);
  JobBootstrap job{nullptr, nullptr, SockAddr::resolve(id.host, id.port), id.secret};
  job.store =
      bootstrap::connectStore(job.rendezvous, id.secret, deadline, claimOf(self, newSize, ""));
  takeRank0Tuning(*job.store, settings, self, deadline);
  std::istringstream growing(job.store->get("grow/" + id.joinKey, deadline));
  std::string tag;
  int round = 0, members = 0;
  if (!(growing >> tag >> round >> members))
    raise(ErrorCode::kRemote, "rank {}: the store's record of grow token {} is malformed", rank,
          id.joinKey);
  if (rank < members)
    raise(ErrorCode::kInvalidArgument,
          "rank {}: not a newcomer's rank: the communicator to grow has {} ranks, so newcomers "
          "to a communicator of {} are ranks {}..{}",
          rank, members, newSize, members, newSize - 1);
  return Communicator::grown(std::move(job), tag, round, rank, newSize, self, settings);
}

std::vector<std::unique_ptr<Communicator>> initAll(int nranks) {
  checkRankAndSize(0, nranks);
  const bootstrap::UniqueId id = bootstrap::createUniqueIdHostedHere();
  std::vector<std::unique_ptr<Communicator>> comms(static_cast<size_t>(nranks));
  std::vector<std::optional<Error>> errors(static_cast<size_t>(nranks));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < nranks; ++rank)
    threads.emplace_back([&, rank] {
      try {
        comms[static_cast<size_t>(rank)] = initRank(id, rank, nranks);
      } catch (const Error& error) {
        errors[static_cast<size_t>(rank)] = error;
      }
    });
  for (std::thread& thread : threads) thread.join();
  for (const auto& error : errors)
    if (error) throw *error;
  return comms;
}

}  // namespace tutti::runtime
