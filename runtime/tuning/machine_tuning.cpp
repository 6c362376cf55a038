#include "runtime/tuning/machine_tuning.hpp"

#include <cctype>
#include <cstdlib>
#include <fstream>

namespace tutti::runtime {
namespace {

// "Intel(R) Xeon(R) Processor" -> "Intel-R-Xeon-R-Processor": a file name anyone can read.
std::string slug(const std::string& text) {
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) || c == '.')
      out += static_cast<char>(c);
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.substr(0, 100);
}

}  // namespace

std::string cpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0 && line.find(": ") != std::string::npos)
      return line.substr(line.find(": ") + 2);
  return "unknown";
}

std::string machineTuningPath() {
  std::string cache;
  // The XDG spec: a relative path is invalid and ignored (it would name another table in each
  // directory a job starts in).
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/')
    cache = xdg;
  else if (const char* home = std::getenv("HOME"); home && *home)
    cache = std::string(home) + "/.cache";
  else
    return "";
  const std::string model = slug(cpuModel());
  return cache + "/tutti/tuning-" + (model.empty() ? "unknown" : model);
}

}  // namespace tutti::runtime
