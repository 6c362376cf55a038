#include "base/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.hpp"
#include "base/socket.hpp"

namespace tutti {

std::string readRegularFile(const std::string& path, const std::string& where) {
  // Non-blocking, so that a FIFO is opened without a writer and refused below.
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid())
    raise(ErrorCode::kInvalidArgument, "{}: cannot open it: {}", where, std::strerror(errno));
  struct stat info {};
  if (fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode))
    raise(ErrorCode::kInvalidArgument, "{}: not a file", where);
  std::string text;
  char chunk[64 << 10];
  for (;;) {
    const ssize_t got = read(fd.get(), chunk, sizeof chunk);
    if (got == 0) return text;
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      raise(ErrorCode::kInvalidArgument, "{}: cannot read it: {}", where, std::strerror(errno));
    text.append(chunk, static_cast<size_t>(got));
  }
}

}  // namespace tutti
