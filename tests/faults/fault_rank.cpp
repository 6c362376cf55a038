// One rank of a fault-injection job (tests/faults/*.py start it). It runs seeded random cases of
// one collective (the same sequence on every rank), checks each against the independent
// reference, and reports on stdout, one flushed line per event, what the drivers assert on:
//   ready rank R pid P             after the first case passed: data is flowing
//   error rank R at NS: MESSAGE    a call failed (NS: wall clock in ns, to time detection)
//   comm-failed rank R | comm-healthy rank R   whether the communicator stayed failed
//   corrupt rank R: PROBLEM        a call succeeded with wrong data (exit 4)
//   done rank R ops N              --ops cases all passed (exit 0)
// After an error the rank stays alive until its stdin closes, then destroys its communicator and
// exits 3; with --exit-on-error it exits 3 at once, without destroying it, as a program that
// ends on its error does (its peers must still name the rank that caused it, not this one).
//
//   fault_rank [--kind allreduce|allgather|broadcast] [--seed S] [--max-bytes B] [--ops N]
//              [--abort-rank R --abort-after-ms MS]   a second thread aborts rank R's communicator
//              [--misbehave count|collective|broadcast|dtype|op|skip|skip-one
//               --misbehave-rank R --at K]
//              [--exit-on-error 1] [--leave-early R]
// --misbehave changes case K on rank R: another count, allgather, broadcast, int32 where the
// others all-reduce float32, max where they sum, not calling it at all (skip: the rank then idles
// until stdin closes) or skipping it alone (skip-one: its case K+1 meets the others' case K).
// --leave-early R: after the --ops cases, a last broadcast from rank R, which the others enter
// 400 ms or more late, each later than the ranks after it on the chain; R destroys its
// communicator and exits as soon as its part is done (printing "left rank R"), while the others
// still wait for each other. Everybody must finish: an orderly exit is no death.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "collective_check.hpp"

using namespace tutti::testing;

namespace {

struct Args {
  Kind kind = Kind::kAllReduce;
  uint64_t seed = 1;
  size_t maxBytes = 1 << 20;
  long ops = -1;  // forever
  int abortRank = -1;
  int abortAfterMs = 0;
  std::string misbehave;
  int misbehaveRank = -1;
  long at = -1;
  bool exitOnError = false;
  int leaveEarly = -1;
};

int64_t wallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

[[noreturn]] void usage(const char* what) {
  std::fprintf(stderr, "fault_rank: %s\n", what);
  std::exit(2);
}

Kind kindNamed(const std::string& name) {
  for (Kind kind : kAllKinds)
    if (name == kindName(kind)) return kind;
  usage(("unknown --kind " + name).c_str());
}

Args parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage(("missing value after " + arg).c_str());
    const char* value = argv[++i];
    if (arg == "--kind")
      args.kind = kindNamed(value);
    else if (arg == "--seed")
      args.seed = std::strtoull(value, nullptr, 10);
    else if (arg == "--max-bytes")
      args.maxBytes = std::strtoull(value, nullptr, 10);
    else if (arg == "--ops")
      args.ops = std::atol(value);
    else if (arg == "--abort-rank")
      args.abortRank = std::atoi(value);
    else if (arg == "--abort-after-ms")
      args.abortAfterMs = std::atoi(value);
    else if (arg == "--misbehave")
      args.misbehave = value;
    else if (arg == "--misbehave-rank")
      args.misbehaveRank = std::atoi(value);
    else if (arg == "--at")
      args.at = std::atol(value);
    else if (arg == "--exit-on-error")
      args.exitOnError = std::atoi(value) != 0;
    else if (arg == "--leave-early")
      args.leaveEarly = std::atoi(value);
    else
      usage(("unknown argument " + arg).c_str());
  }
  return args;
}

// Blocks until the driver closes our stdin (or it is gone), then destroys the communicator (the
// driver's limit on the exit catches a destroy that hangs) and exits.
[[noreturn]] void idleUntilReleased(tuttiComm_t comm, int status) {
  while (std::fgetc(stdin) != EOF) {
  }
  tutti_comm_destroy(comm);
  std::exit(status);
}

// The error has been reported; a failed communicator must stay failed: its error is kept and
// the next call fails at once with the same message instead of moving data.
[[noreturn]] void reportFailure(tuttiComm_t comm, int rank, const std::string& problem,
                                bool exitAtOnce) {
  say("error rank " + std::to_string(rank) + " at " + std::to_string(wallNs()) + ": " + problem);
  if (exitAtOnce) std::exit(3);
  tuttiResult_t async = tuttiSuccess;
  tutti_comm_get_async_error(comm, &async);
  const bool stillFails = tutti_barrier(comm, nullptr) != tuttiSuccess &&
                          problem.ends_with(std::string(": ") + tutti_get_last_error());
  say(std::string(async != tuttiSuccess && stillFails ? "comm-failed" : "comm-healthy") + " rank " +
      std::to_string(rank));
  idleUntilReleased(comm, 3);
}

// Case K as rank `rank` runs it.
Case misbehaved(const Args& args, Case c, int rank) {
  // A non-empty call of one type, operation and root on every rank, so that only the
  // misbehaviour differs.
  c.count = 1024;
  c.dtype = tuttiFloat32;
  c.op = tuttiSum;
  c.root = 0;
  if (rank != args.misbehaveRank) return c;
  if (args.misbehave == "count") c.count = 2048;
  if (args.misbehave == "collective")
    c.kind = c.kind == Kind::kAllGather ? Kind::kAllReduce : Kind::kAllGather;
  if (args.misbehave == "broadcast") c.kind = Kind::kBroadcast;
  if (args.misbehave == "dtype") c.dtype = tuttiInt32;  // as many bytes as float32
  if (args.misbehave == "op") c.op = tuttiMax;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  tuttiComm_t comm = nullptr;
  if (tutti_comm_init_env(&comm) != tuttiSuccess) {
    std::fprintf(stderr, "fault_rank: init: %s\n", tutti_get_last_error());
    return 1;
  }
  int rank = 0, n = 0;
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &n);

  std::mt19937_64 rng(args.seed);
  for (long i = 0; args.ops < 0 || i < args.ops; ++i) {
    Case c = randomCase(rng, args.kind, n, args.maxBytes);
    const bool skipping = args.misbehave == "skip" || args.misbehave == "skip-one";
    if (i == args.at && skipping && rank == args.misbehaveRank) {
      say("skipping rank " + std::to_string(rank) + " case " + std::to_string(i));
      if (args.misbehave == "skip") idleUntilReleased(comm, 0);
      continue;
    }
    if (i == args.at) c = misbehaved(args, c, rank);
    tuttiResult_t rc = tuttiSuccess;
    const std::string problem = runCase(comm, c, nullptr, &rc);
    if (rc != tuttiSuccess) reportFailure(comm, rank, problem, args.exitOnError);
    if (!problem.empty()) {
      say("corrupt rank " + std::to_string(rank) + ": " + problem);
      return 4;
    }
    if (i == 0) {
      say("ready rank " + std::to_string(rank) + " pid " + std::to_string(getpid()));
      if (rank == args.abortRank)
        std::thread([comm, rank, ms = args.abortAfterMs] {
          std::this_thread::sleep_for(std::chrono::milliseconds(ms));
          say("aborting rank " + std::to_string(rank) + " at " + std::to_string(wallNs()));
          tutti_comm_abort(comm);
        }).detach();
    }
  }
  if (args.leaveEarly >= 0) {
    Case last = randomCase(rng, Kind::kBroadcast, n, args.maxBytes, 4096);
    last.root = args.leaveEarly;
    // Along the chain (the driver sets TUTTI_RING_ORDER to 0 1 .. n-1) the later ranks enter
    // first, so that they wait for their live predecessors while the root is gone.
    if (const int hops = (rank - last.root + n) % n; hops > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(300 + 100 * (n - hops)));
    tuttiResult_t rc = tuttiSuccess;
    const std::string problem = runCase(comm, last, nullptr, &rc);
    if (rc != tuttiSuccess) reportFailure(comm, rank, problem, true);
    if (!problem.empty()) {
      say("corrupt rank " + std::to_string(rank) + ": " + problem);
      return 4;
    }
    if (rank == args.leaveEarly) say("left rank " + std::to_string(rank));
  }
  say("done rank " + std::to_string(rank) + " ops " + std::to_string(args.ops));
  tutti_comm_destroy(comm);
  return 0;
}
