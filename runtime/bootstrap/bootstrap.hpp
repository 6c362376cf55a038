// Bootstrap: the rendezvous every communicator is born from. A key-value Store (set/get/add/check)
// served over TCP by the process that created the unique id (or by rank 0 under environment
// init), plus the unique id's wire format and the collective helpers built on a store.
//
// Wire rules (see docs/bootstrap.md): every message is framed (magic, version, type, bounded
// length), every read has a deadline, and a connection that does not prove the job secret
// (base/auth.hpp) is dropped and logged at WARN. Strangers cannot crash, hang or join the job.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/auth.hpp"
#include "base/deadline.hpp"
#include "base/socket.hpp"

namespace tutti::bootstrap {

constexpr size_t kUniqueIdBytes = 128;  // == TUTTI_UNIQUE_ID_BYTES

struct UniqueId {
  std::string host;  // numeric address of the rendezvous
  int port = 0;
  Secret secret;
  // A grow token's (tutti_comm_grow_id): where the store tells newcomers what they join. Empty:
  // a plain id.
  std::string joinKey;

  std::array<char, kUniqueIdBytes> encode() const;
  // Throws kInvalidArgument ("not a tutti unique id ...") for bytes that do not decode.
  static UniqueId decode(const std::array<char, kUniqueIdBytes>& bytes);
};

// Bounds on what the store holds, so that nobody who reaches the port (a job without a secret
// trusts anyone) can grow rank 0's memory without end. A key counts its key and value bytes plus
// kEntryBytes for the map's own bookkeeping.
struct StoreLimits {
  static constexpr size_t kEntryBytes = 64;
  size_t maxBytes = size_t{64} << 20;
  size_t maxKeys = size_t{1} << 18;
};

// Who opens a connection to a store: sent before authentication, so that the store can say which
// rank a refused connection claimed to be. Nothing in it is trusted: it only names.
struct Claim {
  int rank = -1;  // -1: not a rank (a tool, a test)
  int nranks = -1;
  std::string identity;  // "host:pid"
  std::string jobId;     // the launcher's job id (LaunchEnv::jobId), empty when none
};

// The rendezvous server: a background thread that serves the store to the ranks of one job.
class StoreServer {
 public:
  // Listens on `address` (port 0 picks a free one). Serves until destroyed. `jobId` is the
  // launcher's id of the job (empty: none): without a secret, connections that claim the same
  // one count as the job's own members (docs/bootstrap.md, "Who may fail a job").
  static std::unique_ptr<StoreServer> start(const SockAddr& address, const Secret& secret,
                                            const std::string& jobId = {},
                                            const StoreLimits& limits = {});
  virtual ~StoreServer() = default;
  virtual SockAddr address() const = 0;
  // Returns once every client has closed its connection, or at the deadline. A rank that hosts
  // the store and fails at init calls it before taking the store down, so that the others, which
  // fail alike on the same data, finish their last request and report the real error.
  virtual void waitForClientsToLeave(const Deadline& deadline) = 0;
};

// Rank 0 under environment init: StoreServer::start on the rendezvous address. When another
// process already listens there it throws kInvalidUsage naming that process (when /proc shows
// it), and when that process is this job's store (a second rank 0) it first reports the failure
// there, so that every rank fails at once.
std::unique_ptr<StoreServer> hostRendezvous(const SockAddr& address, const Secret& secret,
                                            const Claim& self);

// Creates a unique id whose rendezvous is hosted in this process. The server lives until the
// process exits. The address is chosen by chooseAddress(TUTTI_SOCKET_IFNAME, nullptr).
UniqueId createUniqueIdHostedHere();

// A client of a store. Thread-safe: calls from several threads are serialised.
class Store {
 public:
  virtual ~Store() = default;
  // set and check wait for the server's answer until `deadline` (the two-argument forms: for
  // TUTTI_TIMEOUT); a connection whose answer did not come in time is not used again.
  virtual void set(const std::string& key, const std::string& value, const Deadline& deadline) = 0;
  void set(const std::string& key, const std::string& value) {
    set(key, value, Deadline::fromConfig());
  }
  // Waits until key exists (deadline), then returns its value.
  virtual std::string get(const std::string& key, const Deadline& deadline) = 0;
  // Adds delta to the integer at key (created as 0) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  virtual bool check(const std::string& key, const Deadline& deadline) = 0;
  bool check(const std::string& key) { return check(key, Deadline::fromConfig()); }
  // Registers this rank of an nranks world. Throws kInvalidUsage when another rank claimed the
  // same number ("rank 2 joined twice: host a pid 10 and host b pid 11") or a rank disagrees on
  // the world size ("world size mismatch: rank 3 says 5, rank 0 says 4"); the server then fails
  // every other rank's pending and later calls with the same message. Returns once all nranks
  // ranks have joined; a timeout lists the ranks still missing.
  virtual void join(int rank, int nranks, const std::string& identity,
                    const Deadline& deadline) = 0;
  // Tells the store why this rank cannot go on. From a member (it proved the secret, or without
  // one, claimed the job's launcher id) it fails the job: every waiting and later call of every
  // rank fails with `message`; returns true. From anyone else it is refused and only quoted in
  // timeouts, and so when the job had failed already; returns false.
  virtual bool reportFailure(const std::string& message) = 0;
};

// Retries a refused connection (rank 0 may not listen yet) for TUTTI_RENDEZVOUS_WAIT seconds at
// most, then throws kTimeout "nobody is listening at ADDR:PORT (rank 0 not started or exited)".
std::unique_ptr<Store> connectStore(const SockAddr& server, const Secret& secret,
                                    const Deadline& deadline, const Claim& claim = {});

// Collectives over a store, namespaced by prefix (each call needs a fresh prefix). whileWaiting,
// when given, runs about every 100 ms while they wait and may throw to give up early (e.g. when a
// peer's process is gone).
std::vector<std::string> allgather(Store& store, const std::string& prefix, int rank, int nranks,
                                   const std::string& value, const Deadline& deadline,
                                   const std::function<void()>& whileWaiting = nullptr);
void barrier(Store& store, const std::string& prefix, int nranks, const Deadline& deadline,
             const std::function<void()>& whileWaiting = nullptr);

// Which interfaces may carry sockets, in NCCL_SOCKET_IFNAME's syntax (comma-separated prefixes,
// leading ^ excludes, leading = matches exactly; empty: any), and where that came from, for errors:
// TUTTI_SOCKET_IFNAME, or a communicator's config (tutti_comm_split_config's socket_ifname).
struct InterfaceSpec {
  std::string names;
  std::string origin;
  static InterfaceSpec fromEnv();
};
// Picks the local address to use: the interfaces `spec` names; without a spec, the interface that
// routes to routeTo (when given), else the first non-loopback interface that is up, else loopback.
// Throws kInvalidArgument naming the spec's origin when nothing matches.
SockAddr chooseAddress(const InterfaceSpec& spec, const SockAddr* routeTo);
// chooseAddress(InterfaceSpec::fromEnv(), routeTo).
SockAddr chooseAddress(const SockAddr* routeTo);
bool interfaceMatches(const std::string& spec, const std::string& ifname);

// What environment initialisation reads: TUTTI_*, else torchrun's, Open MPI's or Slurm's.
struct LaunchEnv {
  int rank = -1;
  int nranks = -1;
  int localRank = -1;  // -1 when no variable gives it
  std::string addr;    // rendezvous host
  int port = -1;
  Secret secret;  // present only with TUTTI_SECRET
  // The launcher's id of this job, the same on every rank ("SLURM_JOB_ID=123.0"); empty when no
  // launcher gives one. Tells this job's ranks from another job's on the same port.
  std::string jobId;
  std::string source;  // "tutti", "torchrun", "openmpi", "slurm": logged at INFO
  // Open MPI or Slurm started this rank through a PMIx server (pmix_share.hpp), with tutti built
  // for PMIx: what no variable gave (addr empty across hosts, secret absent) rank 0 hands out.
  bool pmix = false;
  bool needsPmix() const { return pmix && (addr.empty() || !secret.present); }
};
// Throws kInvalidArgument naming the variable that is missing or malformed.
LaunchEnv readLaunchEnv();
// Every variable readLaunchEnv may read, for code that must clear or vary all of them (tests).
const std::vector<std::string>& launchVariableNames();

}  // namespace tutti::bootstrap
