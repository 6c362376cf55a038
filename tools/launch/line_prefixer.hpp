// Reassembles a rank's output into whole lines and writes each with a "[rank] " prefix, so that
// the lines of concurrent ranks interleave but never mix.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace tutti::launch::detail {

class LinePrefixer {
 public:
  LinePrefixer(int outFd, std::string prefix) : outFd_(outFd), prefix_(std::move(prefix)) {}

  // Writes every complete line in the data seen so far; keeps the partial tail.
  void feed(const char* data, size_t size);
  // Writes the partial last line, if any, with a newline added.
  void finish();

 private:
  void emit(const char* line, size_t size);  // one write: prefix + line + '\n'

  static constexpr size_t kMaxLine = 64 * 1024;  // longer "lines" are cut into pieces
  int outFd_;
  std::string prefix_;
  std::string pending_;
  std::string scratch_;
};

}  // namespace tutti::launch::detail
