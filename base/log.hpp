// Logging: TUTTI_DEBUG=NONE|WARN|INFO|TRACE selects the level (default WARN), TUTTI_DEBUG_FILE a
// file instead of stderr (%h is replaced by the host name, %p by the pid). Each line starts with
// "host:pid:tid tutti LEVEL". Tests may install a sink to catch unexpected warnings.
#pragma once

#include <fmt/format.h>

#include <functional>
#include <string>

namespace tutti::log {

enum class Level { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

Level level();
void setLevel(Level level);
void write(Level level, const std::string& message);
// Replaces the output (nullptr restores the default); for tests.
void setSink(std::function<void(Level, const std::string&)> sink);
// A file name pattern with %h replaced by the host name and %p by the pid (TUTTI_DEBUG_FILE's).
std::string expandPath(const std::string& pattern);

template <typename... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) {
  if (level() >= Level::kWarn)
    write(Level::kWarn, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void info(fmt::format_string<Args...> format, Args&&... args) {
  if (level() >= Level::kInfo)
    write(Level::kInfo, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void trace(fmt::format_string<Args...> format, Args&&... args) {
  if (level() >= Level::kTrace)
    write(Level::kTrace, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace tutti::log
