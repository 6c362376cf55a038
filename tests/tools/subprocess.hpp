// Running a real binary from a test: argv in, exit status, stdout, stderr and wall time out.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace tutti::test {

struct ProcessResult {
  int status = -1;  // exit status, or 128 + signal
  std::string out;
  std::string err;
  double seconds = 0;
};

class Subprocess {
 public:
  explicit Subprocess(const std::vector<std::string>& argv);  // stdout/stderr piped, stdin closed
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  // Collects the output until both pipes close and reaps the process; past timeoutSeconds the
  // process is killed (SIGKILL) and the status says so.
  ProcessResult wait(double timeoutSeconds = 60);

 private:
  pid_t pid_ = -1;
  int outFd_ = -1;
  int errFd_ = -1;
  double started_ = 0;
};

inline ProcessResult run(const std::vector<std::string>& argv, double timeoutSeconds = 60) {
  return Subprocess(argv).wait(timeoutSeconds);
}

// The value of an environment variable the test needs (the test fails without it).
std::string requiredEnv(const char* name);

std::vector<std::string> splitLines(const std::string& text);

}  // namespace tutti::test
