#include "runtime/observe/dump_signal.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "base/log.hpp"
#include "runtime/communicator.hpp"
#include "runtime/observe/flight_dump.hpp"

namespace tutti::runtime {
namespace {

struct Watchers {
  std::mutex mutex;
  std::vector<Communicator*> comms;
  bool installed = false;
};

Watchers& watchers() {
  static Watchers* instance = new Watchers();  // never destroyed: the dump thread outlives main
  return *instance;
}

int wakeWriteFd = -1;
struct sigaction previousAction {};

void onSignal(int signo, siginfo_t* info, void* context) {
  const int savedErrno = errno;
  const char byte = 1;
  // A full pipe means a dump is already pending; losing this byte loses nothing.
  [[maybe_unused]] const ssize_t written = write(wakeWriteFd, &byte, 1);
  errno = savedErrno;
  // An application's own SIGUSR1 handler still runs.
  if (previousAction.sa_flags & SA_SIGINFO) {
    if (previousAction.sa_sigaction) previousAction.sa_sigaction(signo, info, context);
  } else if (previousAction.sa_handler != SIG_DFL && previousAction.sa_handler != SIG_IGN) {
    previousAction.sa_handler(signo);
  }
}

void dumpLoop(int readFd) {
  for (;;) {
    char bytes[64];
    const ssize_t got = read(readFd, bytes, sizeof(bytes));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return;
    std::lock_guard lock(watchers().mutex);
    for (Communicator* comm : watchers().comms) dumpFlightRecord(*comm, "SIGUSR1");
  }
}

// Called under the watchers' lock, once per process.
void install() {
  int fds[2];
  checkSys(pipe2(fds, O_CLOEXEC), "pipe2 for the SIGUSR1 dump thread");
  checkSys(fcntl(fds[1], F_SETFL, O_NONBLOCK), "fcntl O_NONBLOCK on the dump pipe");
  wakeWriteFd = fds[1];
  std::thread(dumpLoop, fds[0]).detach();
  struct sigaction action {};
  action.sa_sigaction = onSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  checkSys(sigaction(SIGUSR1, &action, &previousAction), "sigaction SIGUSR1");
  log::info("SIGUSR1 dumps the flight recorder into TUTTI_DUMP_DIR");
}

}  // namespace

void watchForDumpSignal(Communicator* comm) {
  Watchers& w = watchers();
  std::lock_guard lock(w.mutex);
  if (!w.installed) {
    w.installed = true;  // one try per process: a failure is reported once
    try {
      install();
    } catch (const Error& error) {
      log::warn("SIGUSR1 will not dump the flight recorder: {}", error.what());
    }
  }
  w.comms.push_back(comm);
}

void stopWatching(Communicator* comm) {
  Watchers& w = watchers();
  std::lock_guard lock(w.mutex);
  w.comms.erase(std::remove(w.comms.begin(), w.comms.end(), comm), w.comms.end());
}

}  // namespace tutti::runtime
