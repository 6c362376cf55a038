// Starting one rank: fork, own process group, optional output pipes, exec. Internal to launch/.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace tutti::launch::detail {

struct Child {
  pid_t pid = -1;
  int outFd = -1;  // read ends of the rank's stdout/stderr pipes when captured, else -1
  int errFd = -1;
};

// The program could not be exec'd: errno of the failed execvp.
struct ExecFailure {
  int err = 0;
};

struct SpawnRequest {
  const std::vector<std::string>* argv = nullptr;
  std::vector<std::pair<std::string, std::string>> env;  // overrides the inherited environment
  bool captureOutput = false;
  bool inheritStdin = false;  // else stdin is /dev/null
};

// Returns once the child has exec'd (the exec status travels back on a close-on-exec pipe).
// Throws ExecFailure when exec failed (the child is reaped), std::system_error on fork/pipe errors.
Child spawnChild(const SpawnRequest& request);

// Sends sig to the rank's process group (the rank and whatever it started).
void signalGroup(pid_t pid, int sig);

}  // namespace tutti::launch::detail
