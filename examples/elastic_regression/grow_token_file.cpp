#include "examples/elastic_regression/grow_token_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace elastic_example {

std::string growTokenPath(const std::string& elasticDir, int grow) {
  return elasticDir + "/grow-" + std::to_string(grow) + ".token";
}

void writeGrowToken(const std::string& path, const tuttiUniqueId& token) {
  const std::string partial = path + ".partial";
  const int fd = open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const bool written = fd >= 0 && write(fd, &token, sizeof token) == sizeof token;
  const int err = errno;
  if (fd >= 0) close(fd);
  if (!written || std::rename(partial.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot write the grow token to " + path + ": " +
                             std::strerror(written ? errno : err));
}

tuttiUniqueId awaitGrowToken(const std::string& path, std::chrono::seconds patience) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (true) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      tuttiUniqueId token;
      const bool whole = read(fd, &token, sizeof token) == sizeof token;
      close(fd);
      if (!whole) throw std::runtime_error(path + " does not hold a whole grow token");
      return token;
    }
    if (errno != ENOENT)
      throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
    if (std::chrono::steady_clock::now() >= deadline)
      throw std::runtime_error("no grow token appeared in " + path + " within " +
                               std::to_string(patience.count()) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace elastic_example
