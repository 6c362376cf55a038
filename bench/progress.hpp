// The progress line on stderr while a sweep runs (collective, size, elapsed, remaining), redrawn in
// place; only on a terminal, so that piped or captured output never holds one.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace tutti::bench {

class Progress {
 public:
  // totalRows: rows to measure (0: unknown, as with -N 0).
  Progress(bool wanted, std::string collective, size_t totalRows);
  ~Progress();  // clears the line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void startRow(size_t bytes);  // before measuring a row
  void clear();                 // before anything else is written to the terminal

 private:
  bool enabled_;
  std::string collective_;
  size_t totalRows_, doneRows_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace tutti::bench
