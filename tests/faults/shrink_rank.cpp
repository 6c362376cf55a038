// One rank of a shrink scenario (tests/faults/shrink.py): seeded random cases of every collective
// on the world, checked against the independent reference, until a call fails (a rank was killed)
// or --ops cases passed; then tutti_comm_shrink, and --after cases of every collective on the
// survivors' communicator, checked alike. It reports on stdout, one flushed line per event:
//   ready rank R pid P                      after the first case passed
//   error rank R: MESSAGE                   a call on the world failed
//   excluded rank R                         R is in --exclude: it idles instead of shrinking
//   shrink-again rank R: MESSAGE            a member died while the new communicator was made
//                                           (with --dead 1): the rank shrinks once more
//   shrunk rank R to N/M                    the shrink gave this rank rank N of M; with --dead 1
//                                           a failure on the new one shrinks again (each time
//                                           these lines again, the cases started over)
//   shrink-failed rank R: MESSAGE           the shrink failed (exit 5)
//   old rank R: MESSAGE                     what the shrunk world says to a later call
//   done rank R cases K                     every case on the new communicator passed (exit 0)
//   grown rank R to N/M, done-grown rank R cases K, grow-failed rank R: MESSAGE   with
//                                           --token-file, the same for the communicator grown
//                                           back by one newcomer (exit 6 when the grow failed)
//   corrupt rank R: PROBLEM                 a call succeeded with wrong data (exit 4)
// A rank that does not call shrink (--callers) calls a barrier on the world instead and reports
// its result as "error" (exit 3). Every rank waits for its stdin to close before it destroys its
// communicators and exits, so the driver can look at /dev/shm while they live.
//
//   shrink_rank [--seed S] [--ops N] [--after K] [--max-bytes B] [--dead 0|1]
//               [--exclude R,R..] [--named-by R,R..] [--callers R,R..] [--timeout-ms MS]
//               [--die-in-shrink R --die-after-ms MS] [--token-file PATH]
// --exclude: the ranks excluded explicitly, named by the ranks in --named-by (default: all
// callers); the other callers name nobody. --ops -1 (default): until a call fails.
// --die-in-shrink: rank R SIGKILLs itself MS ms after it starts its shrink (a death during it),
// calling nothing after the shrink.
// --token-file: after their cases the survivors grow back by one rank: rank 0 of them writes the
// grow token to PATH, where the newcomer (a process started with SHRINK_RANK_NEWCOMER=R, R the
// survivors' count, instead of the launch variables) reads it; all then run the cases again.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collective_check.hpp"

using namespace tutti::testing;

namespace {

struct Args {
  uint64_t seed = 1;
  long ops = -1;
  int after = 2;
  size_t maxBytes = 1 << 16;
  bool dead = false;
  std::vector<int> exclude;
  std::vector<int> namedBy;  // empty: every caller
  std::vector<int> callers;  // empty: every rank not excluded
  long timeoutMs = 0;        // 0: TUTTI_TIMEOUT
  int dieInShrink = -1;
  std::string tokenFile;  // set: grow back by one newcomer after the shrink
  int dieAfterMs = 0;
};

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

[[noreturn]] void usage(const std::string& what) {
  std::fprintf(stderr, "shrink_rank: %s\n", what.c_str());
  std::exit(2);
}

std::vector<int> rankList(const std::string& text) {
  std::vector<int> ranks;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) ranks.push_back(std::atoi(item.c_str()));
  return ranks;
}

bool contains(const std::vector<int>& ranks, int rank) {
  return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

Args parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage("missing value after " + arg);
    const std::string value = argv[++i];
    if (arg == "--seed")
      args.seed = std::strtoull(value.c_str(), nullptr, 10);
    else if (arg == "--ops")
      args.ops = std::atol(value.c_str());
    else if (arg == "--after")
      args.after = std::atoi(value.c_str());
    else if (arg == "--max-bytes")
      args.maxBytes = std::strtoull(value.c_str(), nullptr, 10);
    else if (arg == "--dead")
      args.dead = value == "1";
    else if (arg == "--exclude")
      args.exclude = rankList(value);
    else if (arg == "--named-by")
      args.namedBy = rankList(value);
    else if (arg == "--callers")
      args.callers = rankList(value);
    else if (arg == "--timeout-ms")
      args.timeoutMs = std::atol(value.c_str());
    else if (arg == "--token-file")
      args.tokenFile = value;
    else if (arg == "--die-in-shrink")
      args.dieInShrink = std::atoi(value.c_str());
    else if (arg == "--die-after-ms")
      args.dieAfterMs = std::atoi(value.c_str());
    else
      usage("unknown argument " + arg);
  }
  return args;
}

// Blocks until the driver closes our stdin, then destroys what is left and exits.
[[noreturn]] void release(std::vector<tuttiComm_t> comms, int status) {
  while (std::fgetc(stdin) != EOF) {
  }
  for (tuttiComm_t comm : comms)
    if (comm) tutti_comm_destroy(comm);
  std::exit(status);
}

// Runs `ops` seeded cases of every collective in turn (-1: until one fails). Returns whether all
// calls succeeded; wrong data exits 4.
bool runCases(tuttiComm_t comm, const std::string& me, uint64_t seed, long ops, size_t maxBytes,
              bool announceReady) {
  int n = 0;
  tutti_comm_size(comm, &n);
  std::mt19937_64 rng(seed);
  for (long i = 0; ops < 0 || i < ops; ++i) {
    const Case c = randomCase(rng, kAllKinds[i % std::size(kAllKinds)], n, maxBytes);
    tuttiResult_t rc = tuttiSuccess;
    const std::string problem = runCase(comm, c, nullptr, &rc);
    if (rc != tuttiSuccess) {
      say("error " + me + ": " + problem);
      return false;
    }
    if (!problem.empty()) {
      say("corrupt " + me + ": " + problem);
      std::exit(4);
    }
    if (i == 0 && announceReady) say("ready " + me + " pid " + std::to_string(getpid()));
  }
  return true;
}

// The survivors' communicator of `comm`. A survivor that dies while it is made fails its init on
// the others, naming it (tuttiRemoteError): with `dead` they shrink once more, which excludes it.
// Any other failure is reported and ends the rank.
tuttiComm_t shrinkOrRelease(tuttiComm_t comm, const std::vector<int>& excluded, bool dead,
                            const std::string& me, const std::vector<tuttiComm_t>& comms) {
  for (int attempt = 1;; ++attempt) {
    tuttiComm_t survivors = nullptr;
    const tuttiResult_t rc =
        tutti_comm_shrink(comm, excluded.data(), static_cast<int>(excluded.size()), &survivors,
                          dead ? TUTTI_SHRINK_DEAD : TUTTI_SHRINK_DEFAULT);
    if (rc == tuttiSuccess) return survivors;
    if (rc != tuttiRemoteError || !dead || attempt == 2) {
      say("shrink-failed " + me + ": " + tutti_get_last_error());
      release(comms, 5);
    }
    say("shrink-again " + me + ": " + tutti_get_last_error());
  }
}

// Runs the cases on the grown communicator `grown`, reports and ends the rank.
[[noreturn]] void finishGrown(const Args& args, tuttiComm_t grown, const std::string& me,
                              std::vector<tuttiComm_t> comms) {
  int rank = 0, size = 0;
  tutti_comm_rank(grown, &rank);
  tutti_comm_size(grown, &size);
  say("grown " + me + " to " + std::to_string(rank) + "/" + std::to_string(size));
  comms.push_back(grown);
  const long cases = static_cast<long>(args.after) * static_cast<long>(std::size(kAllKinds));
  if (!runCases(grown, me, args.seed + 100, cases, args.maxBytes, false)) release(comms, 3);
  say("done-grown " + me + " cases " + std::to_string(cases));
  release(comms, 0);
}

// A survivor grows `survivors` to newSize; rank 0 of it hands the newcomer the grow token through
// --token-file (written whole, then renamed into place).
[[noreturn]] void growBack(const Args& args, tuttiComm_t survivors, int newSize,
                           const std::string& me, std::vector<tuttiComm_t> comms) {
  int rank = 0;
  tutti_comm_rank(survivors, &rank);
  if (rank == 0) {
    tuttiUniqueId token;
    if (tutti_comm_grow_id(survivors, &token) != tuttiSuccess) usage(tutti_get_last_error());
    const std::string partial = args.tokenFile + ".partial";
    std::FILE* out = std::fopen(partial.c_str(), "wb");
    if (!out || std::fwrite(&token, sizeof(token), 1, out) != 1 || std::fclose(out) != 0 ||
        std::rename(partial.c_str(), args.tokenFile.c_str()) != 0)
      usage("cannot write " + args.tokenFile);
  }
  tuttiComm_t grown = nullptr;
  if (tutti_comm_grow(survivors, newSize, nullptr, -1, &grown) != tuttiSuccess) {
    say("grow-failed " + me + ": " + tutti_get_last_error());
    release(comms, 6);
  }
  finishGrown(args, grown, me, std::move(comms));
}

// The newcomer (SHRINK_RANK_NEWCOMER=its rank): waits for the token file, then joins.
[[noreturn]] void joinGrowing(const Args& args, int rank) {
  const std::string me = "newcomer " + std::to_string(rank);
  tuttiUniqueId token;
  for (int tries = 0;; ++tries) {
    if (std::FILE* in = std::fopen(args.tokenFile.c_str(), "rb")) {
      const bool read = std::fread(&token, sizeof(token), 1, in) == 1;
      std::fclose(in);
      if (read) break;
    }
    if (tries == 6000) usage("no token in " + args.tokenFile + " after 60 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  tuttiComm_t grown = nullptr;
  if (tutti_comm_grow(nullptr, rank + 1, &token, rank, &grown) != tuttiSuccess) {
    say("grow-failed " + me + ": " + tutti_get_last_error());
    release({}, 6);
  }
  finishGrown(args, grown, me, {});
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  if (const char* newcomer = std::getenv("SHRINK_RANK_NEWCOMER"))
    joinGrowing(args, std::atoi(newcomer));
  tuttiComm_t world = nullptr;
  if (tutti_comm_init_env(&world) != tuttiSuccess) {
    std::fprintf(stderr, "shrink_rank: init: %s\n", tutti_get_last_error());
    return 1;
  }
  int rank = 0;
  tutti_comm_rank(world, &rank);
  const std::string me = "rank " + std::to_string(rank);
  if (args.timeoutMs > 0) tutti_comm_set_timeout(world, args.timeoutMs);
  runCases(world, me, args.seed, args.ops, args.maxBytes, true);

  if (contains(args.exclude, rank)) {
    say("excluded " + me);
    release({world}, 0);
  }
  if (!args.callers.empty() && !contains(args.callers, rank)) {
    if (tutti_barrier(world, nullptr) == tuttiSuccess) usage("the barrier succeeded");
    say("error " + me + ": " + tutti_get_last_error());
    release({world}, 3);
  }
  if (rank == args.dieInShrink)
    std::thread([ms = args.dieAfterMs] {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      raise(SIGKILL);
    }).detach();
  const bool names = args.namedBy.empty() || contains(args.namedBy, rank);
  std::vector<int> excluded = names ? args.exclude : std::vector<int>{};
  std::vector<tuttiComm_t> comms{world};  // every communicator made, destroyed at the end
  const long cases = static_cast<long>(args.after) * static_cast<long>(std::size(kAllKinds));
  // As an elastic program would: when a call on the shrunk communicator fails too (a survivor
  // died after the shrink, with --dead 1), shrink that one and start the cases over.
  for (int shrinks = 1;; ++shrinks) {
    tuttiComm_t old = comms.back();
    tuttiComm_t survivors = shrinkOrRelease(old, excluded, args.dead, me, comms);
    excluded.clear();  // later shrinks exclude the dead only
    comms.push_back(survivors);
    // It dies in its shrink or right after: a member of the new communicator that calls nothing.
    if (rank == args.dieInShrink)
      for (;;) pause();
    int newRank = 0, newSize = 0;
    tutti_comm_rank(survivors, &newRank);
    tutti_comm_size(survivors, &newSize);
    say("shrunk " + me + " to " + std::to_string(newRank) + "/" + std::to_string(newSize));
    if (tutti_barrier(old, nullptr) == tuttiSuccess) usage("the shrunk communicator still works");
    say("old " + me + ": " + tutti_get_last_error());
    // Every survivor draws the same cases: the seed is shared, the ranks are the new ones.
    if (runCases(survivors, me, args.seed + static_cast<uint64_t>(shrinks), cases, args.maxBytes,
                 false)) {
      say("done " + me + " cases " + std::to_string(cases));
      if (!args.tokenFile.empty()) growBack(args, survivors, newSize + 1, me, comms);
      release(comms, 0);
    }
    if (!args.dead || shrinks == 3) release(comms, 3);
  }
}
