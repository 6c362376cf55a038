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
  RankExit exit;
  std::optional<detail::LinePrefixer> out, err;
};

class Job {
 public:
  explicit Job(const Options& options) : options_(options), ranks_(options.nranks) {}

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
    int port = findFreePort();
    const std::string secret = ranksSecret_.hex();
    for (int r = 0; r < options_.nranks; ++r) {
      detail::SpawnRequest request;
      request.argv = &options_.argv;
      request.env = rankEnvironment(options_, r, port, secret);
      request.captureOutput = options_.prefixOutput;
      request.inheritStdin = r == 0 && !isatty(0);
      Rank& rank = ranks_[r];
      rank.exit.rank = r;
      try {
        rank.child = detail::spawnChild(request);
      } catch (const detail::ExecFailure& failure) {
        fmt::print(stderr, "{}: cannot execute '{}': {}\n", options_.launcherName,
                   options_.argv.front(), std::strerror(failure.err));
        killStarted(r);
        result_.execFailed = true;
        result_.exitCode = 127;
        return false;
      } catch (...) {  // out of processes or descriptors: no half-started job survives
        killStarted(r);
        throw;
      }
      rank.exit.pid = rank.child.pid;
      if (options_.prefixOutput) {
        std::string prefix = fmt::format("[{}] ", r);
        rank.out.emplace(1, prefix);
        rank.err.emplace(2, prefix);
      }
    }
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
    for (auto& rank : ranks_) {
      if (rank.reaped) continue;
      int status = 0;
      pid_t pid = waitpid(rank.child.pid, &status, WNOHANG);
      if (pid != rank.child.pid) continue;
      rank.reaped = true;
      rank.exit.signaled = WIFSIGNALED(status);
      rank.exit.code = rank.exit.signaled ? WTERMSIG(status) : WEXITSTATUS(status);
      if (rank.exit.failed() && result_.firstFailure < 0 && !result_.timedOut) {
        result_.firstFailure = rank.exit.rank;
        fmt::print(stderr, "{}: {}\n", options_.launcherName, rank.exit.describe());
        startGrace();
      }
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
  std::vector<Rank> ranks_;
  Result result_;
  Clock::time_point timeoutAt_ = kNever;
  Clock::time_point termAt_ = kNever;
  Clock::time_point killAt_ = kNever;
  const Secret ranksSecret_ = Secret::random();
  bool stopping_ = false;  // a rank failed, the job timed out, or a signal came to stop it
};

}  // namespace

std::string RankExit::describe() const {
  if (signaled) {
    const char* name = strsignal(code);
    return fmt::format("rank {} (pid {}) was killed by signal {} ({})", rank, pid, code,
                       name ? name : "unknown");
  }
  return fmt::format("rank {} (pid {}) exited with code {}", rank, pid, code);
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
