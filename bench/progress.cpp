#include "bench/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace tutti::bench {

Progress::Progress(bool wanted, std::string collective, size_t totalRows)
    : enabled_(wanted && isatty(STDERR_FILENO)),
      collective_(std::move(collective)),
      totalRows_(totalRows) {}

Progress::~Progress() {
  clear();
}

void Progress::startRow(size_t bytes) {
  if (!enabled_) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string remaining = "?";
  if (totalRows_ && doneRows_) {
    remaining = fmt::format("~{:.1f} s", elapsed / static_cast<double>(doneRows_) *
                                             static_cast<double>(totalRows_ - doneRows_));
  }
  std::string total = totalRows_ ? std::to_string(totalRows_) : "?";
  fmt::print(stderr, "\r\033[K{} {} B (row {}/{}): {:.1f} s elapsed, {} remaining", collective_,
             bytes, doneRows_ + 1, total, elapsed, remaining);
  std::fflush(stderr);
  ++doneRows_;
}

void Progress::clear() {
  if (!enabled_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
}

}  // namespace tutti::bench
