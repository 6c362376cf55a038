#include "tools/launch/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <system_error>

extern char** environ;

namespace tutti::launch::detail {
namespace {

[[noreturn]] void throwErrno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// RAII pair of pipe ends.
struct Pipe {
  int fds[2] = {-1, -1};
  explicit Pipe(bool closeOnExec) {
    if (pipe2(fds, closeOnExec ? O_CLOEXEC : 0) != 0) throwErrno("pipe2");
  }
  ~Pipe() {
    closeEnd(0);
    closeEnd(1);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  void closeEnd(int i) {
    if (fds[i] >= 0) close(fds[i]);
    fds[i] = -1;
  }
  int release(int i) {
    int fd = fds[i];
    fds[i] = -1;
    return fd;
  }
};

// The inherited environment with the request's variables replacing or adding entries; built
// before fork so that the child only calls async-signal-safe functions.
std::vector<std::string> mergedEnvironment(const SpawnRequest& request) {
  std::map<std::string, std::string> vars;
  for (char** entry = environ; entry && *entry; ++entry) {
    const char* eq = std::strchr(*entry, '=');
    if (eq) vars[std::string(*entry, static_cast<size_t>(eq - *entry))] = eq + 1;
  }
  for (const auto& [name, value] : request.env) vars[name] = value;
  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Runs in the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void execChild(const SpawnRequest& request, char** argv, char** envp, int outFd,
                            int errFd, int statusFd, pid_t parent) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  setpgid(0, 0);
  // Die with the launcher, should it be killed outright.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  if (!request.inheritStdin) {
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0 && devnull != 0) {
      dup2(devnull, 0);
      close(devnull);
    }
  }
  if (outFd >= 0) dup2(outFd, 1);
  if (errFd >= 0) dup2(errFd, 2);
  execvpe(argv[0], argv, envp);
  int err = errno;
  ssize_t ignored = write(statusFd, &err, sizeof err);
  (void)ignored;
  _exit(127);
}

}  // namespace

Child spawnChild(const SpawnRequest& request) {
  std::vector<std::string> argStrings = *request.argv;
  std::vector<char*> argv = pointers(argStrings);
  std::vector<std::string> envStrings = mergedEnvironment(request);
  std::vector<char*> envp = pointers(envStrings);

  Pipe status(true);
  std::optional<Pipe> out, err;
  if (request.captureOutput) {
    out.emplace(true);
    err.emplace(true);
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throwErrno("fork");
  if (pid == 0) {
    execChild(request, argv.data(), envp.data(), out ? out->fds[1] : -1, err ? err->fds[1] : -1,
              status.fds[1], parent);
  }
  setpgid(pid, pid);  // also done by the child: whichever runs first wins the race
  status.closeEnd(1);
  Child child;
  child.pid = pid;
  if (out) {
    out->closeEnd(1);
    err->closeEnd(1);
    child.outFd = out->release(0);
    child.errFd = err->release(0);
  }
  int execErr = 0;
  ssize_t n;
  do {
    n = read(status.fds[0], &execErr, sizeof execErr);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof execErr)) {
    if (child.outFd >= 0) close(child.outFd);
    if (child.errFd >= 0) close(child.errFd);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    throw ExecFailure{execErr};
  }
  return child;
}

void signalGroup(pid_t pid, int sig) {
  if (kill(-pid, sig) != 0) kill(pid, sig);
}

}  // namespace tutti::launch::detail
