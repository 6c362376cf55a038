// The job monitor: one poll loop over a signal self-pipe and the ranks' output pipes, with three
// deadlines (job timeout, end of grace -> SIGTERM, one second later -> SIGKILL).
#include "tools/launch/launch.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <optional>
#include <system_error>

#include "base/auth.hpp"
#include "base/shm_leftovers.hpp"
#include "tools/launch/line_prefixer.hpp"
#include "tools/launch/spawn.hpp"

namespace tutti::launch {
namespace {

using Clock = std::chrono::steady_clock;
constexpr Clock::time_point kNever = Clock::time_point::max();
constexpr auto kKillDelay = std::chrono::seconds(1);
constexpr auto kDrainTime = std::chrono::milliseconds(500);
constexpr std::array<int, 4> kCaught = {SIGCHLD, SIGINT, SIGTERM, SIGHUP};

int gWakeFd = -1;  // write end of the self-pipe while a job runs

extern "C" void onSignal(int sig) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(sig);
  ssize_t ignored = write(gWakeFd, &byte, 1);
  (void)ignored;
  errno = saved;
}

// For the job's duration, SIGCHLD and the signals to forward become bytes on a non-blocking
// self-pipe, and SIGPIPE is ignored (a closed stdout must not kill the launcher).
class SignalRelay {
 public:
  SignalRelay() {
    if (pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw std::system_error(errno, std::generic_category(), "pipe2");
    }
    gWakeFd = fds_[1];
    struct sigaction action {};
    action.sa_handler = onSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (size_t i = 0; i < kCaught.size(); ++i) sigaction(kCaught[i], &action, &saved_[i]);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &savedPipe_);
  }
  ~SignalRelay() {
    for (size_t i = 0; i < kCaught.size(); ++i) sigaction(kCaught[i], &saved_[i], nullptr);
    sigaction(SIGPIPE, &savedPipe_, nullptr);
    gWakeFd = -1;
    close(fds_[0]);
    close(fds_[1]);
  }
  SignalRelay(const SignalRelay&) = delete;
  SignalRelay& operator=(const SignalRelay&) = delete;

  int readFd() const { return fds_[0]; }
  std::vector<int> received() {
    std::vector<int> sigs;
    unsigned char buf[64];
    ssize_t n;
    while ((n = read(fds_[0], buf, sizeof buf)) > 0) sigs.insert(sigs.end(), buf, buf + n);
    return sigs;
  }

 private:
  int fds_[2] = {-1, -1};
  std::array<struct sigaction, kCaught.size()> saved_{};
  struct sigaction savedPipe_ {};
};

struct Rank {
  detail::Child child;
  bool reaped = false;
  int localRank = 0;  // a replacement takes the one of the rank it replaces (its device)
  RankExit exit;
  std::optional<detail::LinePrefixer> out, err;
};

// The directory an elastic job's ranks share (grow tokens): 0700, so that only the job's user
// reads what the survivors write there; removed with everything in it at the job's end.
class ElasticDir {
 public:
  explicit ElasticDir(bool wanted) {
    if (!wanted) return;
    std::string pattern = (std::filesystem::temp_directory_path() / "tuttirun-elastic-XXXXXX");
    if (!mkdtemp(pattern.data()))
      throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
    path_ = pattern;
  }
  ~ElasticDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  ElasticDir(const ElasticDir&) = delete;
  ElasticDir& operator=(const ElasticDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class Job {
 public:
  explicit Job(const Options& options)
      : options_(options), ranks_(options.nranks), elasticDir_(options.elasticReplacements > 0) {}

  Result run() {
    SignalRelay relay;
    if (!startAll()) return result_;
    if (options_.timeoutSeconds > 0) {
      timeoutAt_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options_.timeoutSeconds));
    }
    Clock::time_point drainUntil = kNever;
    while (true) {
      bool allReaped = std::all_of(ranks_.begin(), ranks_.end(), [](auto& r) { return r.reaped; });
      if (allReaped && drainUntil == kNever) drainUntil = Clock::now() + kDrainTime;
      if (allReaped && (openPipes() == 0 || Clock::now() >= drainUntil)) break;
      waitForEvents(relay, std::min(drainUntil, nextDeadline()));
      for (int sig : relay.received()) {
        if (sig != SIGCHLD) forward(sig);
      }
      reap();
      escalate(Clock::now());
    }
    for (auto& rank : ranks_) closePipes(rank);
    // A job being stopped leaves nothing behind: whatever the ranks started goes too.
    if (stopping_) signalAll(SIGKILL);
    removeLeftSharedMemory();
    result_.exitCode = result_.timedOut            ? 124
                       : result_.firstFailure >= 0 ? ranks_[result_.firstFailure].exit.shellCode()
                                                   : 0;
    for (auto& rank : ranks_) result_.ranks.push_back(rank.exit);
    return result_;
  }

 private:
  // Starts every rank; false when the program cannot be exec'd (the started ones are killed).
  bool startAll() {
    port_ = findFreePort();
    for (int r = 0; r < options_.nranks; ++r) {
      Rank& rank = ranks_[r];
      rank.exit.rank = r;
      rank.localRank = r;
      try {
        spawn(rank);
      } catch (const detail::ExecFailure& failure) {
        reportExecFailure(failure);
        killStarted(r);
        result_.execFailed = true;
        result_.exitCode = 127;
        return false;
      } catch (...) {  // out of processes or descriptors: no half-started job survives
        killStarted(r);
        throw;
      }
    }
    return true;
  }

  // Starts rank (its exit.rank, exit.replacement and localRank set); throws as spawnChild does.
  void spawn(Rank& rank) {
    detail::SpawnRequest request;
    request.argv = &options_.argv;
    request.env =
        rankEnvironment(options_, rank.exit.rank, rank.localRank, port_, ranksSecret_.hex());
    if (!elasticDir_.path().empty()) {
      auto elastic = elasticEnvironment(elasticDir_.path(), rank.exit.replacement);
      request.env.insert(request.env.end(), elastic.begin(), elastic.end());
    }
    request.captureOutput = options_.prefixOutput;
    request.inheritStdin = rank.exit.rank == 0 && rank.exit.replacement == 0 && !isatty(0);
    rank.child = detail::spawnChild(request);
    rank.exit.pid = rank.child.pid;
    if (options_.prefixOutput) {
      std::string prefix =
          rank.exit.replacement == 0
              ? fmt::format("[{}] ", rank.exit.rank)
              : fmt::format("[{} replacement {}] ", rank.exit.rank, rank.exit.replacement);
      rank.out.emplace(1, prefix);
      rank.err.emplace(2, prefix);
    }
  }

  void reportExecFailure(const detail::ExecFailure& failure) const {
    fmt::print(stderr, "{}: cannot execute '{}': {}\n", options_.launcherName,
               options_.argv.front(), std::strerror(failure.err));
  }

  // An elastic job's answer to a failed rank: a fresh process as the newcomer of the survivors'
  // grown communicator. False when none is left to start (or it cannot be), and the job stops.
  bool replace(const Rank& failed) {
    const int left = options_.elasticReplacements - result_.replacementsStarted;
    if (left == 0 || stopping_) {
      if (options_.elasticReplacements > 0 && !stopping_)
        fmt::print(stderr, "{}: {}; no replacements left (--elastic {} spent): stopping the job\n",
                   options_.launcherName, failed.exit.describe(), options_.elasticReplacements);
      return false;
    }
    Rank& rank = ranks_.emplace_back();
    rank.exit.rank = options_.nranks - 1;
    rank.exit.replacement = ++result_.replacementsStarted;
    rank.localRank = failed.localRank;
    std::string whyNot;
    try {
      spawn(rank);
    } catch (const detail::ExecFailure& failure) {
      whyNot =
          fmt::format("cannot execute '{}': {}", options_.argv.front(), std::strerror(failure.err));
    } catch (const std::exception& error) {  // out of processes or descriptors
      whyNot = error.what();
    }
    if (!whyNot.empty()) {
      ranks_.pop_back();
      --result_.replacementsStarted;
      fmt::print(stderr, "{}: {}; no replacement could be started ({}): stopping the job\n",
                 options_.launcherName, failed.exit.describe(), whyNot);
      return false;
    }
    fmt::print(stderr,
               "{}: {}; started replacement {} (pid {}) to join the survivors as rank {} of {}; "
               "{} replacement{} left\n",
               options_.launcherName, failed.exit.describe(), rank.exit.replacement, rank.exit.pid,
               rank.exit.rank, options_.nranks, left - 1, left - 1 == 1 ? "" : "s");
    return true;
  }

  void removeLeftSharedMemory() {
    const auto removed = removeSharedMemory(segmentNamePrefix(ranksSecret_));
    if (removed.empty()) return;
    fmt::print(stderr,
               "{}: removed {} shared-memory segment{} that ranks killed during init left "
               "in /dev/shm: {}\n",
               options_.launcherName, removed.size(), removed.size() == 1 ? "" : "s",
               fmt::join(removed, " "));
  }

  void killStarted(int count) {
    for (int r = 0; r < count; ++r) {
      detail::signalGroup(ranks_[r].child.pid, SIGKILL);
      while (waitpid(ranks_[r].child.pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      closePipes(ranks_[r]);
    }
  }

  int openPipes() const {
    int n = 0;
    for (const auto& rank : ranks_) n += (rank.child.outFd >= 0) + (rank.child.errFd >= 0);
    return n;
  }

  void closePipes(Rank& rank) {
    for (auto [fd, prefixer] :
         {std::pair{&rank.child.outFd, &rank.out}, std::pair{&rank.child.errFd, &rank.err}}) {
      if (*fd < 0) continue;
      if (*prefixer) (*prefixer)->finish();
      close(*fd);
      *fd = -1;
    }
  }

  Clock::time_point nextDeadline() const { return std::min({timeoutAt_, termAt_, killAt_}); }

  // Polls the self-pipe and the output pipes until something happens or `until`.
  void waitForEvents(SignalRelay& relay, Clock::time_point until) {
    std::vector<pollfd> fds = {{relay.readFd(), POLLIN, 0}};
    std::vector<std::pair<int*, detail::LinePrefixer*>> sources;
    for (auto& rank : ranks_) {
      if (rank.child.outFd >= 0) sources.emplace_back(&rank.child.outFd, &*rank.out);
      if (rank.child.errFd >= 0) sources.emplace_back(&rank.child.errFd, &*rank.err);
    }
    for (auto& [fd, prefixer] : sources) fds.push_back({*fd, POLLIN, 0});
    int timeoutMs = -1;
    if (until != kNever) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
      timeoutMs = static_cast<int>(std::clamp<long long>(left, 0, 60'000));
    }
    if (poll(fds.data(), fds.size(), timeoutMs) <= 0) return;
    char buf[16384];
    for (size_t i = 1; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto [fd, prefixer] = sources[i - 1];
      ssize_t n = read(*fd, buf, sizeof buf);
      if (n > 0) {
        prefixer->feed(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        prefixer->finish();
        close(*fd);
        *fd = -1;
      }
    }
  }

  void reap() {
    std::vector<size_t> failed;
    for (size_t i = 0; i < ranks_.size(); ++i) {
      Rank& rank = ranks_[i];
      if (rank.reaped) continue;
      int status = 0;
      pid_t pid = waitpid(rank.child.pid, &status, WNOHANG);
      if (pid != rank.child.pid) continue;
      rank.reaped = true;
      rank.exit.signaled = WIFSIGNALED(status);
      rank.exit.code = rank.exit.signaled ? WTERMSIG(status) : WEXITSTATUS(status);
      if (rank.exit.failed()) failed.push_back(i);
    }
    // After the loop: a replacement joins ranks_.
    for (size_t i : failed) {
      if (result_.firstFailure >= 0 || result_.timedOut || replace(ranks_[i])) continue;
      result_.firstFailure = static_cast<int>(i);
      if (options_.elasticReplacements == 0 || stopping_)
        fmt::print(stderr, "{}: {}\n", options_.launcherName, ranks_[i].exit.describe());
      startGrace();
    }
  }

  void startGrace() {
    stopping_ = true;
    if (termAt_ != kNever || killAt_ != kNever) return;
    termAt_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(options_.graceSeconds));
  }

  void forward(int sig) {
    signalAll(sig);
    startGrace();
  }

  void escalate(Clock::time_point now) {
    if (now >= timeoutAt_) {
      timeoutAt_ = kNever;
      if (result_.firstFailure < 0) {
        result_.timedOut = true;
        fmt::print(stderr, "{}: the job ran past its timeout of {} s; killing all ranks\n",
                   options_.launcherName, options_.timeoutSeconds);
      }
      termAt_ = now;
      stopping_ = true;
    }
    if (now >= termAt_) {
      termAt_ = kNever;
      signalAll(SIGTERM);
      killAt_ = now + kKillDelay;
    }
    if (now >= killAt_) {
      killAt_ = kNever;
      signalAll(SIGKILL);
    }
  }

  // Signals each rank's process group: the rank and what it started. The group of a rank already
  // reaped may still hold its strays (its id is not reused while it does).
  void signalAll(int sig) {
    for (auto& rank : ranks_) {
      if (rank.reaped) {
        kill(-rank.child.pid, sig);
      } else {
        detail::signalGroup(rank.child.pid, sig);
      }
    }
  }

  const Options& options_;
  std::deque<Rank> ranks_;  // a replacement's output sources stay where they are
  ElasticDir elasticDir_;
  int port_ = 0;
  Result result_;
  Clock::time_point timeoutAt_ = kNever;
  Clock::time_point termAt_ = kNever;
  Clock::time_point killAt_ = kNever;
  const Secret ranksSecret_ = Secret::random();
  bool stopping_ = false;  // a rank failed, the job timed out, or a signal came to stop it
};

}  // namespace

std::string RankExit::describe() const {
  const std::string who =
      replacement == 0 ? fmt::format("rank {} (pid {})", rank, pid)
                       : fmt::format("replacement {} (rank {}, pid {})", replacement, rank, pid);
  if (signaled) {
    const char* signalName = strsignal(code);
    return fmt::format("{} was killed by signal {} ({})", who, code,
                       signalName ? signalName : "unknown");
  }
  return fmt::format("{} exited with code {}", who, code);
}

Result spawnRanks(const Options& options) {
  if (options.nranks < 1 || options.argv.empty()) {
    throw std::invalid_argument("spawnRanks: need at least one rank and a program");
  }
  // Whoever set them meant something by it (a port, a world size): say that it has no effect.
  // Not the value: it may be the secret.
  for (const std::string& name : launcherVariables())
    if (std::getenv(name.c_str()))
      fmt::print(stderr,
                 "{}: {} in the environment is ignored: the launcher sets it for each rank\n",
                 options.launcherName, name);
  return Job(options).run();
}

}  // namespace tutti::launch
