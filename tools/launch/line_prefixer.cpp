#include "tools/launch/line_prefixer.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tutti::launch::detail {

void LinePrefixer::feed(const char* data, size_t size) {
  while (size > 0) {
    const char* newline = static_cast<const char*>(std::memchr(data, '\n', size));
    if (!newline) {
      pending_.append(data, size);
      if (pending_.size() >= kMaxLine) {
        emit(pending_.data(), pending_.size());
        pending_.clear();
      }
      return;
    }
    size_t length = static_cast<size_t>(newline - data);
    if (pending_.empty()) {
      emit(data, length);
    } else {
      pending_.append(data, length);
      emit(pending_.data(), pending_.size());
      pending_.clear();
    }
    data += length + 1;
    size -= length + 1;
  }
}

void LinePrefixer::finish() {
  if (!pending_.empty()) emit(pending_.data(), pending_.size());
  pending_.clear();
}

void LinePrefixer::emit(const char* line, size_t size) {
  scratch_.assign(prefix_);
  scratch_.append(line, size);
  scratch_.push_back('\n');
  const char* p = scratch_.data();
  size_t left = scratch_.size();
  while (left > 0) {
    ssize_t n = write(outFd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // our own output is gone (closed pipe): drop the line, keep the job running
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace tutti::launch::detail
