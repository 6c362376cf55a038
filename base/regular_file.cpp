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
  // Refused before opening where it can be (opening a device may do something), and opened
  // non-blocking for what is swapped in between, so that a FIFO then is refused below too.
  struct stat info {};
  if (stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode))
    raise(ErrorCode::kInvalidArgument, "{}: not a file", where);
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid())
    raise(ErrorCode::kInvalidArgument, "{}: cannot open it: {}", where, std::strerror(errno));
  if (fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode))
    raise(ErrorCode::kInvalidArgument, "{}: not a file", where);
  // Reads block as usual: a network file system may answer a non-blocking one with EAGAIN.
  fcntl(fd.get(), F_SETFL, fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
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
