#include "runtime/observe/report_file.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/log.hpp"

namespace tutti::runtime {

bool writeReportFile(const std::string& path, const std::string& text, const char* what) {
  // Unique per call: a signal dump and a failure dump of one communicator may overlap.
  static std::atomic<unsigned> calls{0};
  const std::string temporary =
      fmt::format("{}.tmp{}.{}", path, getpid(), calls.fetch_add(1, std::memory_order_relaxed));
  std::FILE* file = std::fopen(temporary.c_str(), "w");
  bool ok = file && std::fwrite(text.data(), 1, text.size(), file) == text.size();
  int err = errno;
  if (file && std::fclose(file) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && std::rename(temporary.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    if (file) std::remove(temporary.c_str());
    log::warn("could not write the {} {}: {}", what, path, std::strerror(err));
  }
  return ok;
}

}  // namespace tutti::runtime
