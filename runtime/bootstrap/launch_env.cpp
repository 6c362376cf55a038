// What environment initialisation reads, from the first launcher found:
//   tutti     TUTTI_RANK, TUTTI_WORLD_SIZE, TUTTI_LOCAL_RANK, TUTTI_ADDR, TUTTI_PORT
//   torchrun  RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT
//   openmpi   OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK (rendezvous: see below)
//   slurm     SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID (rendezvous: see below)
// TUTTI_ADDR and TUTTI_PORT override the rendezvous for every launcher, and TUTTI_SECRET (32 hex
// digits) is read for all. Open MPI and Slurm name no rendezvous: on one host it is 127.0.0.1 on
// a port derived from the job id (PMIX_NAMESPACE or OMPI_MCA_ess_base_jobid, which Open MPI 4.1
// sets; SLURM_JOB_ID.SLURM_STEP_ID), the same in every rank; across hosts it is rank 0's address,
// handed out with a fresh secret through the launcher's PMIx server where one started the ranks
// (pmix_share.hpp; init does that exchange), else TUTTI_ADDR is needed.
#include <cerrno>
#include <cstdlib>
#include <optional>

#include "base/config.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/bootstrap/pmix_share.hpp"

namespace tutti::bootstrap {
namespace {

constexpr int64_t kMaxRanks = int64_t{1} << 24;
constexpr int kDerivedPortBase = 20000;
constexpr int kDerivedPortCount = 40000;

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (!value) return std::nullopt;
  return std::string(value);
}

// A launcher's integer variable, validated; throws kInvalidArgument naming it.
int64_t envInt(const char* name, int64_t min, int64_t max) {
  const auto text = env(name);
  if (!text) raise(ErrorCode::kInvalidArgument, "{} is not set", name);
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text->c_str(), &end, 10);
  if (text->empty() || errno != 0 || *end != '\0')
    raise(ErrorCode::kInvalidArgument, "{}='{}' is not an integer", name, *text);
  if (value < 0) raise(ErrorCode::kInvalidArgument, "{}={} is negative", name, value);
  if (value < min || value > max)
    raise(ErrorCode::kInvalidArgument, "{}={} is out of range [{}, {}]", name, value, min, max);
  return value;
}

// FNV-1a of the job's id, folded into [20000, 60000): every rank of the job computes the same.
int derivedPort(const std::string& jobKey) {
  uint64_t hash = 1469598103934665603ull;
  for (const char c : jobKey) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 1099511628211ull;
  }
  return kDerivedPortBase + static_cast<int>(hash % kDerivedPortCount);
}

struct Names {
  const char* rank;
  const char* size;
  const char* localRank;
};

void readRanks(const Names& names, LaunchEnv& out) {
  out.rank = static_cast<int>(envInt(names.rank, 0, kMaxRanks));
  out.nranks = static_cast<int>(envInt(names.size, 1, kMaxRanks));
  if (out.rank >= out.nranks)
    raise(ErrorCode::kInvalidArgument, "{}={} is not below {}={}", names.rank, out.rank, names.size,
          out.nranks);
  if (env(names.localRank)) {
    out.localRank = static_cast<int>(envInt(names.localRank, 0, kMaxRanks));
    if (out.localRank >= out.nranks)
      raise(ErrorCode::kInvalidArgument, "{}={} is not below {}={}", names.localRank, out.localRank,
            names.size, out.nranks);
  }
}

std::optional<std::string> tuttiAddr() {
  if (!config::isSet("TUTTI_ADDR")) return std::nullopt;
  const std::string addr = config::getString("TUTTI_ADDR");
  if (addr.empty()) raise(ErrorCode::kInvalidArgument, "TUTTI_ADDR is set but empty");
  return addr;
}

std::optional<int> tuttiPort() {
  if (!config::isSet("TUTTI_PORT")) return std::nullopt;
  return static_cast<int>(config::getInt("TUTTI_PORT"));
}

// Open MPI and Slurm: TUTTI_ADDR, else 127.0.0.1 when the job is on one host; TUTTI_PORT, else
// a port derived from the job id.
void launcherRendezvous(LaunchEnv& out, bool oneHost, const std::string& hosts,
                        const std::optional<std::string>& jobKey, const char* jobVar) {
  out.pmix = pmixBuilt() && pmixServed();
  if (auto addr = tuttiAddr()) {
    out.addr = *addr;
  } else if (oneHost) {
    out.addr = "127.0.0.1";
  } else if (!out.pmix) {
    raise(ErrorCode::kInvalidArgument,
          "this {} job spans several hosts ({}) and no PMIx server {}: set TUTTI_ADDR to the host "
          "of rank 0 (and TUTTI_PORT to a free port there) so that the ranks can meet",
          out.source, hosts,
          pmixBuilt() ? "started it (mpirun has one; srun needs --mpi=pmix)"
                      : "can be asked (tutti was built without libpmix-dev)");
  }
  if (auto port = tuttiPort()) {
    out.port = *port;
  } else if (jobKey) {
    out.port = derivedPort(out.source + ":" + *jobKey);
  } else {
    raise(ErrorCode::kInvalidArgument,
          "{} is not set, so no rendezvous port can be derived from "
          "the job id: set TUTTI_PORT",
          jobVar);
  }
}

void readTutti(LaunchEnv& out) {
  out.source = "tutti";
  out.rank = static_cast<int>(config::getInt("TUTTI_RANK"));
  out.nranks = static_cast<int>(config::getInt("TUTTI_WORLD_SIZE"));
  if (out.rank >= out.nranks)
    raise(ErrorCode::kInvalidArgument, "TUTTI_RANK={} is not below TUTTI_WORLD_SIZE={}", out.rank,
          out.nranks);
  if (config::isSet("TUTTI_LOCAL_RANK")) {
    out.localRank = static_cast<int>(config::getInt("TUTTI_LOCAL_RANK"));
    if (out.localRank >= out.nranks)
      raise(ErrorCode::kInvalidArgument, "TUTTI_LOCAL_RANK={} is not below TUTTI_WORLD_SIZE={}",
            out.localRank, out.nranks);
  }
  const auto addr = tuttiAddr();
  if (!addr)
    raise(ErrorCode::kInvalidArgument,
          "TUTTI_ADDR is not set: with TUTTI_RANK, set TUTTI_ADDR and TUTTI_PORT to the "
          "rendezvous (the host of rank 0 and a free port there)");
  out.addr = *addr;
  out.port = static_cast<int>(config::getInt("TUTTI_PORT"));
}

void readTorchrun(LaunchEnv& out) {
  out.source = "torchrun";
  readRanks({"RANK", "WORLD_SIZE", "LOCAL_RANK"}, out);
  if (auto addr = tuttiAddr()) {
    out.addr = *addr;
  } else {
    const auto master = env("MASTER_ADDR");
    if (!master || master->empty())
      raise(ErrorCode::kInvalidArgument,
            "MASTER_ADDR is not set (torchrun sets it; or set "
            "TUTTI_ADDR)");
    out.addr = *master;
  }
  // torchrun's own store already listens on MASTER_PORT: tutti's rendezvous takes the next one.
  if (auto port = tuttiPort())
    out.port = *port;
  else
    out.port = static_cast<int>(envInt("MASTER_PORT", 1, 65534)) + 1;
}

void readOpenMpi(LaunchEnv& out) {
  out.source = "openmpi";
  readRanks({"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"}, out);
  bool oneHost = false;
  std::string hosts = "OMPI_COMM_WORLD_LOCAL_SIZE is not set";
  if (env("OMPI_COMM_WORLD_LOCAL_SIZE")) {
    const int64_t local = envInt("OMPI_COMM_WORLD_LOCAL_SIZE", 1, kMaxRanks);
    oneHost = local == out.nranks;
    hosts =
        fmt::format("OMPI_COMM_WORLD_LOCAL_SIZE={} of OMPI_COMM_WORLD_SIZE={}", local, out.nranks);
  }
  auto jobKey = env("PMIX_NAMESPACE");
  if (!jobKey) jobKey = env("OMPI_MCA_ess_base_jobid");
  if (!jobKey) jobKey = env("OMPI_MCA_orte_ess_jobid");
  launcherRendezvous(out, oneHost, hosts, jobKey, "PMIX_NAMESPACE");
}

void readSlurm(LaunchEnv& out) {
  out.source = "slurm";
  readRanks({"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"}, out);
  const char* nodesVar = env("SLURM_NNODES") ? "SLURM_NNODES" : "SLURM_JOB_NUM_NODES";
  bool oneHost = false;
  std::string hosts = "SLURM_NNODES is not set";
  if (env(nodesVar)) {
    const int64_t nodes = envInt(nodesVar, 1, kMaxRanks);
    oneHost = nodes == 1;
    hosts = fmt::format("{}={}", nodesVar, nodes);
  }
  std::optional<std::string> jobKey;
  if (auto job = env("SLURM_JOB_ID")) jobKey = *job + "." + env("SLURM_STEP_ID").value_or("");
  launcherRendezvous(out, oneHost, hosts, jobKey, "SLURM_JOB_ID");
}

// The first job id a launcher gives, whichever launcher started the ranks (torchrun under srun has
// both): every rank of a job sees the same one. torchrun's default run id "none" tells nothing.
std::string launcherJobId() {
  for (const char* name : {"TORCHELASTIC_RUN_ID", "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid",
                           "OMPI_MCA_orte_ess_jobid"}) {
    const auto value = env(name);
    if (value && !value->empty() && *value != "none") return std::string(name) + "=" + *value;
  }
  if (auto job = env("SLURM_JOB_ID"))
    return "SLURM_JOB_ID=" + *job + "." + env("SLURM_STEP_ID").value_or("");
  return {};
}

}  // namespace

LaunchEnv readLaunchEnv() {
  LaunchEnv out;
  if (config::isSet("TUTTI_RANK") || config::isSet("TUTTI_WORLD_SIZE"))
    readTutti(out);
  else if (env("RANK") && env("WORLD_SIZE"))
    readTorchrun(out);
  else if (env("OMPI_COMM_WORLD_RANK") && env("OMPI_COMM_WORLD_SIZE"))
    readOpenMpi(out);
  else if (env("SLURM_PROCID") && env("SLURM_NTASKS"))
    readSlurm(out);
  else
    raise(ErrorCode::kInvalidArgument,
          "no launcher environment found: set TUTTI_RANK, TUTTI_WORLD_SIZE, TUTTI_ADDR and "
          "TUTTI_PORT, or start the ranks with torchrun, mpirun or srun");
  if (config::isSet("TUTTI_SECRET")) {
    const std::string text = config::getString("TUTTI_SECRET");
    const auto secret = Secret::fromHex(text);
    // The value is a secret: say what is wrong with it, never what it is.
    if (!secret)
      raise(ErrorCode::kInvalidArgument,
            "TUTTI_SECRET must be 32 hex digits (it has {} "
            "characters{})",
            text.size(), text.size() == 32 ? ", not all hex digits" : "");
    out.secret = *secret;
  }
  out.jobId = launcherJobId();
  log::info("bootstrap: {} environment: rank {} of {}, local rank {}, rendezvous {}:{}{}{}",
            out.source, out.rank, out.nranks, out.localRank,
            out.addr.empty() ? "rank 0's address" : out.addr, out.port,
            out.secret.present ? ", with a secret"
            : out.pmix         ? ", with a secret through PMIx"
                               : "",
            out.jobId.empty() ? "" : ", job " + out.jobId);
  return out;
}

const std::vector<std::string>& launchVariableNames() {
  static const std::vector<std::string> names = {"TUTTI_RANK",
                                                 "TUTTI_WORLD_SIZE",
                                                 "TUTTI_LOCAL_RANK",
                                                 "TUTTI_ADDR",
                                                 "TUTTI_PORT",
                                                 "TUTTI_SECRET",
                                                 "RANK",
                                                 "WORLD_SIZE",
                                                 "LOCAL_RANK",
                                                 "MASTER_ADDR",
                                                 "MASTER_PORT",
                                                 "OMPI_COMM_WORLD_RANK",
                                                 "OMPI_COMM_WORLD_SIZE",
                                                 "OMPI_COMM_WORLD_LOCAL_RANK",
                                                 "OMPI_COMM_WORLD_LOCAL_SIZE",
                                                 "PMIX_NAMESPACE",
                                                 "PMIX_RANK",
                                                 "PMIX_SERVER_URI2",
                                                 "PMIX_SERVER_URI21",
                                                 "PMIX_SERVER_URI3",
                                                 "PMIX_SERVER_URI4",
                                                 "PMIX_SERVER_URI41",
                                                 "OMPI_MCA_ess_base_jobid",
                                                 "OMPI_MCA_orte_ess_jobid",
                                                 "SLURM_PROCID",
                                                 "SLURM_NTASKS",
                                                 "SLURM_LOCALID",
                                                 "SLURM_NNODES",
                                                 "SLURM_JOB_NUM_NODES",
                                                 "SLURM_JOB_ID",
                                                 "SLURM_STEP_ID",
                                                 "TORCHELASTIC_RUN_ID"};
  return names;
}

}  // namespace tutti::bootstrap
