// Catch2's main, compiled once and linked into every test binary (or Debian's prebuilt one, see
// tests/meson.build), and the one listener that fails a test case on a warning it did not
// expect: while each run of a test case lasts, every WARN is collected instead of printed
// (tests/warnings.hpp reads them); at its end, unless the test case called Warnings::expect(),
// each one is a failure that quotes it.
#ifndef TUTTI_CATCH_MAIN_PREBUILT
#define CATCH_CONFIG_MAIN
#endif
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>
#include <mutex>
#include <thread>

#include "base/log.hpp"
#include "tests/warnings.hpp"

namespace tutti::tests {
namespace {

// What the running test case has logged; the runtime's threads log too, hence the lock.
struct Collected {
  std::mutex mutex;
  std::vector<std::string> lines;
  bool expected = false;
};

Collected& collected() {
  static Collected instance;
  return instance;
}

class WarningListener : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;

  // The outermost section is the test case itself, once per run of its sections.
  void sectionStarting(const Catch::SectionInfo& info) override {
    TestEventListenerBase::sectionStarting(info);
    if (depth_++ > 0) return;
    {
      std::lock_guard lock(collected().mutex);
      collected().lines.clear();
      collected().expected = false;
    }
    previousLevel_ = log::level();
    if (previousLevel_ < log::Level::kWarn) log::setLevel(log::Level::kWarn);
    log::setSink([](log::Level level, const std::string& message) {
      if (level != log::Level::kWarn) return;
      std::lock_guard lock(collected().mutex);
      collected().lines.push_back(message);
    });
  }

  // Still inside the test case's run: a failure here counts against it.
  void sectionEnded(const Catch::SectionStats& stats) override {
    if (--depth_ == 0) {
      log::setSink(nullptr);
      log::setLevel(previousLevel_);
      std::vector<std::string> unexpected;
      {
        std::lock_guard lock(collected().mutex);
        if (!collected().expected) unexpected = collected().lines;
      }
      for (const std::string& line : unexpected) FAIL_CHECK("unexpected warning: " << line);
    }
    TestEventListenerBase::sectionEnded(stats);
  }

 private:
  int depth_ = 0;
  log::Level previousLevel_ = log::Level::kWarn;
};

CATCH_REGISTER_LISTENER(WarningListener)

}  // namespace

void Warnings::expect() {
  std::lock_guard lock(collected().mutex);
  collected().expected = true;
}

std::vector<std::string> Warnings::all() const {
  std::lock_guard lock(collected().mutex);
  return collected().lines;
}

size_t Warnings::count(const std::vector<std::string>& parts) const {
  size_t n = 0;
  for (const std::string& line : all()) {
    bool every = true;
    for (const std::string& part : parts) every = every && line.find(part) != std::string::npos;
    n += every ? 1 : 0;
  }
  return n;
}

bool Warnings::waitFor(const std::vector<std::string>& parts,
                       std::chrono::milliseconds span) const {
  const auto deadline = std::chrono::steady_clock::now() + span;
  while (count(parts) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace tutti::tests
