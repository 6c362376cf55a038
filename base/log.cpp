#include "base/log.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "base/config.hpp"

namespace tutti::log {
namespace {

struct State {
  std::mutex mutex;
  std::FILE* file = stderr;
  std::function<void(Level, const std::string&)> sink;
  std::string prefix;
};

State& state() {
  static State s;
  return s;
}

std::string hostName() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

std::atomic<int> currentLevel{-1};

Level initLevel() {
  // Logging must work while the configuration itself is being validated, so a bad TUTTI_DEBUG
  // falls back to WARN here; config::validateAll() reports it as an error.
  Level parsed = Level::kWarn;
  try {
    const std::string name = config::getString("TUTTI_DEBUG");
    if (name == "NONE") parsed = Level::kNone;
    if (name == "INFO") parsed = Level::kInfo;
    if (name == "TRACE") parsed = Level::kTrace;
    const std::string file = config::getString("TUTTI_DEBUG_FILE");
    if (!file.empty()) {
      if (std::FILE* f = std::fopen(expandPath(file).c_str(), "a")) state().file = f;
    }
  } catch (const std::exception&) {
  }
  state().prefix = fmt::format("{}:{}", hostName(), getpid());
  return parsed;
}

const char* levelName(Level level) {
  switch (level) {
    case Level::kWarn: return "WARN";
    case Level::kInfo: return "INFO";
    case Level::kTrace: return "TRACE";
    default: return "";
  }
}

}  // namespace

std::string expandPath(const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'h') {
      out += hostName();
      ++i;
    } else if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'p') {
      out += std::to_string(getpid());
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

Level level() {
  int value = currentLevel.load(std::memory_order_relaxed);
  if (value < 0) {
    static const Level initial = initLevel();
    int expected = -1;
    currentLevel.compare_exchange_strong(expected, static_cast<int>(initial));
    value = currentLevel.load();
  }
  return static_cast<Level>(value);
}

void setLevel(Level newLevel) {
  level();
  currentLevel.store(static_cast<int>(newLevel));
}

void setSink(std::function<void(Level, const std::string&)> sink) {
  std::lock_guard lock(state().mutex);
  state().sink = std::move(sink);
}

void write(Level lvl, const std::string& message) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.sink) {
    s.sink(lvl, message);
    return;
  }
  const long tid = syscall(SYS_gettid);
  fmt::print(s.file, "{}:{} tutti {} {}\n", s.prefix, tid, levelName(lvl), message);
  std::fflush(s.file);
}

}  // namespace tutti::log
