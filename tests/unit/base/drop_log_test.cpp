// DropLog on a clock the test moves: which drops get a line, which are summarised, and when.
#include "base/drop_log.hpp"

#include <catch2/catch.hpp>

#include "tests/warnings.hpp"

namespace tutti {
namespace {

using namespace std::chrono_literals;
using tests::Warnings;

TEST_CASE("drop log: a burst is logged a few lines at a time, then summarised",
          "[base][drop_log]") {
  Warnings warnings;
  warnings.expect();
  const DropLog::Clock::time_point t0 = DropLog::Clock::now();
  {
    DropLog log("bootstrap store S");
    for (int i = 0; i < 100; ++i) log.dropped("peer " + std::to_string(i), t0 + i * 10ms);
    // Only the first kBurst drops of the window have lines of their own.
    REQUIRE(warnings.all().size() == DropLog::kBurst);
    CHECK(warnings.all().front() == "bootstrap store S: dropped connection from peer 0");
    CHECK(warnings.count({"peer 4"}) == 1);
    CHECK(warnings.count({"peer 5"}) == 0);
    // Within the window nothing more is written, however often flushed.
    log.flush(t0 + 5s);
    CHECK(warnings.all().size() == DropLog::kBurst);
    // Once the window has ended, one summary names the count and the latest.
    log.flush(t0 + DropLog::kWindow + 1s);
    REQUIRE(warnings.all().size() == DropLog::kBurst + 1);
    CHECK(warnings.all().back() ==
          "bootstrap store S: 95 more dropped connections in the last 11 s (the latest from "
          "peer 99)");
    // A stream that goes on is summarised only: no new burst of single lines.
    const auto t1 = t0 + DropLog::kWindow + 1s;
    for (int i = 0; i < 7; ++i) log.dropped("later " + std::to_string(i), t1 + i * 1s);
    CHECK(warnings.all().size() == DropLog::kBurst + 1);
    log.flush(t1 + DropLog::kWindow);
    CHECK(warnings.count({"7 more dropped connections", "later 6"}) == 1);
    // After a quiet window, single lines come back.
    const auto t2 = t1 + 3 * DropLog::kWindow;
    log.flush(t2);
    log.dropped("after the quiet", t2 + 1s);
    CHECK(warnings.all().back() == "bootstrap store S: dropped connection from after the quiet");
    for (int i = 0; i < DropLog::kBurst; ++i) log.dropped("owed", t2 + 2s);
  }
  // The destructor writes the summary still owed.
  CHECK(warnings.count({"1 more dropped connections", "owed"}) == 1);
}

TEST_CASE("drop log: a quiet log writes nothing but its lines", "[base][drop_log]") {
  Warnings warnings;
  warnings.expect();
  {
    DropLog log("bootstrap store S");
    log.dropped("one");
    log.flush(DropLog::Clock::now() + 1h);
  }
  CHECK(warnings.all() ==
        std::vector<std::string>{"bootstrap store S: dropped connection from one"});
}

}  // namespace
}  // namespace tutti
