// Local job launcher: spawns N ranks of one program on this host with the TUTTI_* environment,
// watches them, and tears the job down when one fails. Used by tuttirun and tutti-bench --ranks.
//
// Life of a job: a free port on 127.0.0.1 and a fresh secret are chosen; every rank is forked
// into its own process group and exec'd (an exec failure is reported before any other rank
// starts). The monitor then waits. When a rank exits non-zero or dies by a signal, the others get
// `graceSeconds` to finish, then SIGTERM, then SIGKILL one second later; the job's exit code is
// that first failing rank's (128+signal for a signal). SIGINT/SIGTERM/SIGHUP sent to the launcher
// are forwarded to every rank and start the same escalation. `timeoutSeconds` bounds the whole job
// (exit code 124). Once every rank has ended, shared memory the ranks left in /dev/shm (ranks
// killed during init) is removed and named on stderr.
//
// Elastic jobs (`elasticReplacements` > 0, tuttirun --elastic N): a failing rank does not stop
// the job while replacements are left; a fresh process takes its place instead, as the newcomer
// of the survivors' grown communicator (docs/elastic.md). Every rank gets TUTTI_ELASTIC_DIR, a
// directory only the job's user can enter (0700), removed at the end; the k-th replacement also
// gets TUTTI_GROW_TOKEN_FILE=<dir>/grow-<k>.token, where the survivors write the grow token, and
// TUTTI_RANK = nranks - 1, its rank in the grown communicator. Once N replacements are spent, a
// failure stops the job as above.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace tutti::launch {

struct Options {
  int nranks = 1;
  std::vector<std::string> argv;  // program (looked up in PATH) and its arguments
  // Set after the TUTTI_* variables; none of launcherVariables() (tuttirun refuses them in -x).
  std::vector<std::pair<std::string, std::string>> extraEnv;
  bool prefixOutput = false;  // "[rank] " before every line of stdout and stderr
  double graceSeconds = 3.0;
  double timeoutSeconds = 0.0;            // 0: none
  std::string launcherName = "tuttirun";  // how messages on stderr begin
  int elasticReplacements = 0;            // failed ranks replaced before a failure stops the job
};

// How one rank ended.
struct RankExit {
  int rank = -1;
  int replacement = 0;  // k for the k-th replacement of an elastic job, 0 for the first ranks
  pid_t pid = -1;
  bool signaled = false;
  int code = 0;  // exit status, or the signal number when signaled

  // The shell's convention: the exit status, or 128 + signal.
  int shellCode() const { return signaled ? 128 + code : code; }
  bool failed() const { return signaled || code != 0; }
  // "rank 2 (pid 1234) exited with code 3" / "rank 2 (pid 1234) was killed by signal 9 (Killed)";
  // a replacement is "replacement 1 (rank 3, pid 1234) ..."
  std::string describe() const;
};

struct Result {
  int exitCode = 0;             // what the launcher should exit with
  bool timedOut = false;        // the job ran past timeoutSeconds (exitCode 124)
  bool execFailed = false;      // the program could not be exec'd (exitCode 127)
  int firstFailure = -1;        // index into ranks of the failure that stopped the job, or -1
  std::vector<RankExit> ranks;  // in rank order, then the replacements in the order started
  int replacementsStarted = 0;
};

// Runs the job to completion; messages about failures go to stderr, and so does a warning for
// each of launcherVariables() found in the launcher's own environment, which no rank sees. Throws
// std::system_error when the launcher itself cannot work (no fork, no pipe, no free port).
Result spawnRanks(const Options& options);

// The environment of one rank: TUTTI_RANK, TUTTI_WORLD_SIZE, TUTTI_LOCAL_RANK, TUTTI_ADDR,
// TUTTI_PORT, TUTTI_SECRET, then the extra variables. Exposed for tests.
std::vector<std::pair<std::string, std::string>> rankEnvironment(const Options& options, int rank,
                                                                 int localRank, int port,
                                                                 const std::string& secret);

// What an elastic job adds for a rank: TUTTI_ELASTIC_DIR, and for the k-th replacement (k > 0)
// TUTTI_GROW_TOKEN_FILE. Exposed for tests.
std::vector<std::pair<std::string, std::string>> elasticEnvironment(const std::string& dir,
                                                                    int replacement);

// The names of the variables the launcher sets for each rank itself: TUTTI_RANK ... TUTTI_SECRET,
// TUTTI_ELASTIC_DIR, TUTTI_GROW_TOKEN_FILE.
std::vector<std::string> launcherVariables();

// A port on 127.0.0.1 that was free a moment ago (bind port 0, read it, close it).
int findFreePort();

}  // namespace tutti::launch
