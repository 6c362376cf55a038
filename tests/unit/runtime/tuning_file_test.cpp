// Tuning tables as files (runtime/tuning/tuning_file.hpp): a good file sets what it names and
// leaves the rest at the defaults; the file written from a table reads back as that table;
// each kind of bad input is refused whole with the line and the key named; TUTTI_TUNING_FILE
// reaches the settings (and TUTTI_CHUNK_BYTES / TUTTI_SLOTS still win over the table's FIFO);
// TUTTI_TUNING_FILE unset or auto takes this machine's table from the cache directory, where there
// is one; rank 0's table travels to the other ranks whole.
#include "runtime/tuning/tuning_file.hpp"

#include <fmt/format.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/settings.hpp"
#include "runtime/tuning/machine_tuning.hpp"
#include "tests/error_of.hpp"
#include "tests/ranks/world.hpp"

using namespace tutti;
using namespace tutti::runtime;
using Catch::Matchers::Contains;
using tutti::testing::ScopedEnv;

namespace {

// A file in a fresh directory, removed with it.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char pattern[] = "/tmp/tutti-tuning-XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    dir_ = pattern;
    std::ofstream(path()) << text;
  }
  ~TempFile() { std::filesystem::remove_all(dir_); }
  std::string path() const { return dir_ + "/tuning"; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

std::string refusal(const std::string& text) {
  return tests::messageOf(ErrorCode::kInvalidArgument, [&] { parseTuning(text, "tuning.txt"); });
}

}  // namespace

TEST_CASE("a tuning file sets the keys it names; the others keep the defaults") {
  const TuningTable table = parseTuning(
      "# from a sweep\n"
      "\n"
      "oneshot_max_bytes = 32K   # one-shot's limit\n"
      "  direct_pull_out_of_place=512K .. 4M\n"
      "shm_gbs = 12.5\r\n"
      "tcp_step_us = 40\n"
      "slot_bytes = 1M\n"
      "slots = 16\n",
      "tuning.txt");
  Tuning expected = defaultTuning();
  expected.oneShotMaxBytes = 32 << 10;
  expected.directPullOutOfPlace = {512 << 10, 4 << 20};
  expected.shmGBs = 12.5;
  expected.tcpStepUs = 40;
  expected.slotBytes = 1 << 20;
  expected.slots = 16;
  CHECK(table.any == expected);
  CHECK(table.byRanks.empty());
  CHECK(parseTuning("", "empty") == TuningTable{});
}

// Sections by rank count: a communicator of n ranks plans from the section of the most ranks not
// above n (its keys over those before any section), and from the keys before any section below
// the first section.
TEST_CASE("a tuning file's [ranks N] sections apply from N ranks to the next section") {
  const TuningTable table = parseTuning(
      "oneshot_max_bytes = 32K\n"
      "shm_step_us = 2\n"
      "[ranks 2]\n"
      "oneshot_max_bytes = 64M  # 2 ranks: one-shot all the way\n"
      "[ranks 8]\n"
      "  [ranks 4]  \n"
      "shm_step_us = 7\n"
      "slots = 4\n",
      "tuning.txt");
  Tuning any = defaultTuning();
  any.oneShotMaxBytes = 32 << 10;
  any.shmStepUs = 2;
  CHECK(table.any == any);
  REQUIRE(table.byRanks.size() == 3);
  Tuning two = any, four = any;
  two.oneShotMaxBytes = 64 << 20;
  four.shmStepUs = 7;
  four.slots = 4;
  CHECK(table.byRanks.at(2) == two);
  CHECK(table.byRanks.at(4) == four);
  CHECK(table.byRanks.at(8) == any);
  CHECK(table.forRanks(1) == any);
  CHECK(table.forRanks(2) == two);
  CHECK(table.forRanks(3) == two);
  CHECK(table.forRanks(4) == four);
  CHECK(table.forRanks(7) == four);
  CHECK(table.forRanks(64) == any);
  CHECK(parseTuning(formatTuningFile(table, "sections"), "file") == table);
  Settings settings = Settings::fromConfig();
  settings.useTuning({table, "tuning.txt"});
  settings.planFor(5);
  CHECK(settings.tuning == four);
  CHECK(settings.slots == 4);
  settings.planFor(2);
  CHECK(settings.slots == static_cast<int>(defaultTuning().slots));
  CHECK_THAT(settings.agreed(), Contains(" TUTTI_TUNING_FILE[ranks_2]:oneshot_max_bytes=64M "));
}

TEST_CASE("the file written from a table reads back as that table") {
  TuningTable table;
  Tuning& tuning = table.any;
  CHECK(parseTuning(formatTuningFile(table, "defaults\nsecond line"), "file") == table);
  tuning.oneShotMaxBytes = 12345;
  tuning.directPullInPlace = {3 << 20, 3 << 20};
  tuning.shmStepUs = 0.125;
  tuning.tcpGBs = 1.75;
  table.byRanks[4] = tuning;
  table.byRanks[4].slots = 3;
  const std::string text = formatTuningFile(table, "tutti-bench tune");
  CHECK_THAT(text, Contains("# tutti-bench tune\n") && Contains("oneshot_max_bytes = 12345\n") &&
                       Contains("direct_pull_in_place = 3M..3M\n") &&
                       Contains("\n[ranks 4]\nslots = 3\n"));
  CHECK(parseTuning(text, "file") == table);
}

TEST_CASE("a bad tuning file is refused, naming the line and the key") {
  const auto [text, says] = GENERATE(
      std::make_pair("slots = 8\nfast_path = 1\n", "tuning.txt: line 2: unknown key 'fast_path'"),
      std::make_pair("oneshot_max_bytes 64K\n", "line 1: 'oneshot_max_bytes 64K' is not 'key"),
      std::make_pair("oneshot_max_bytes = 64Q\n", "line 1: oneshot_max_bytes = 64Q: not a size"),
      std::make_pair("oneshot_max_bytes = -1\n", "oneshot_max_bytes = -1: not a size"),
      std::make_pair("direct_min_bytes =\n", "direct_min_bytes = : not a size"),
      std::make_pair("slots = 8K\n", "slots = 8K: not a whole number"),
      std::make_pair("slots = 1\n", "slots = 1: out of range [2, 64] count"),
      std::make_pair("slot_bytes = 1K\n", "slot_bytes = 1K: out of range [4K, 64M] bytes"),
      std::make_pair("shm_gbs = fast\n", "shm_gbs = fast: not a number"),
      std::make_pair("shm_gbs = 0\n", "shm_gbs = 0: out of range"),
      std::make_pair("tcp_step_us = nan\n", "tcp_step_us = nan: not a number"),
      // Subnormal: written back in decimal it would not read again.
      std::make_pair("shm_step_us = 0x1p-1030\n", "shm_step_us = 0x1p-1030: not a number"),
      std::make_pair("direct_pull_in_place = 4M\n", "direct_pull_in_place = 4M: not a range"),
      std::make_pair("direct_pull_in_place = 16M..4M\n", "its least size exceeds its most"),
      std::make_pair("direct_pull_in_place = 4M..x\n", "direct_pull_in_place = 4M..x: not a size"),
      std::make_pair("slots = 8\n\nslots = 4\n", "line 3: slots is given twice (first on line 1)"),
      std::make_pair("[ranks 2]\nslots = 8\nslots = 4\n", "line 3: slots is given twice"),
      std::make_pair("[ranks 2]\n[ranks 2]\n",
                     "line 2: [ranks 2] is given twice (first on line 1)"),
      std::make_pair("[ranks 0]\n", "line 1: '[ranks 0]' is not a section of a rank count"),
      std::make_pair("[ranks 2x]\n", "line 1: '[ranks 2x]' is not a section"),
      std::make_pair("[nodes 2]\n", "line 1: '[nodes 2]' is not a section"),
      std::make_pair("[ranks 2\n", "line 1: '[ranks 2' is not a section"),
      std::make_pair("[ranks 2]\nslots = 99\n", "line 2: slots = 99: out of range"));
  INFO(text);
  CHECK_THAT(refusal(text), Contains(says));
}

// What a refusal quotes of the file is printable and short: a binary file's bytes must not reach
// the terminal, nor a NUL cut the message, nor one long line fill the screen.
TEST_CASE("a refusal quotes the line printable and cut short") {
  using namespace std::string_literals;
  CHECK_THAT(refusal("\x1b[2Jslots\n"), Contains("line 1: '?[2Jslots' is not 'key = value'"));
  CHECK_THAT(refusal("sl\0ts = 8\n"s),
             Contains("line 1: unknown key 'sl?ts' (the keys: ") && Contains("slot_bytes"));
  CHECK_THAT(refusal("slots = " + std::string(1000, '9') + "\n"),
             Contains("slots = " + std::string(60, '9') + "...: not a whole number"));
}

TEST_CASE("TUTTI_TUNING_FILE: the table in force, or an error naming it; never half of a file") {
  SECTION("defaults: tutti's table") {
    const ScopedEnv set("TUTTI_TUNING_FILE", "defaults");
    const Settings settings = Settings::fromConfig();
    CHECK(settings.tuning == defaultTuning());
    CHECK(settings.tuningOrigin == "TUTTI_TUNING_FILE=defaults");
    CHECK_FALSE(settings.tuningFromRank0);
    CHECK(settings.slotBytes == defaultTuning().slotBytes);
    CHECK(settings.slots == static_cast<int>(defaultTuning().slots));
  }
  SECTION("a good file: its table, its FIFO geometry unless the variables say otherwise") {
    const TempFile file("direct_min_bytes = 1M\nslot_bytes = 64K\nslots = 4\n");
    const ScopedEnv set("TUTTI_TUNING_FILE", file.path());
    Settings settings = Settings::fromConfig();
    CHECK(settings.tuning.directMinBytes == size_t{1} << 20);
    CHECK(settings.tuningOrigin == "TUTTI_TUNING_FILE=" + file.path());
    CHECK_FALSE(settings.tuningFromRank0);
    CHECK(settings.slotBytes == size_t{64} << 10);
    CHECK(settings.slots == 4);
    CHECK_THAT(settings.agreed(), Contains("TUTTI_CHUNK_BYTES=unset TUTTI_SLOTS=unset ") &&
                                      Contains(" TUTTI_TUNING_FILE:slot_bytes=64K ") &&
                                      Contains(" TUTTI_TUNING_FILE:direct_min_bytes=1M "));
    const ScopedEnv chunk("TUTTI_CHUNK_BYTES", "8K"), slots("TUTTI_SLOTS", "4");
    settings = Settings::fromConfig();
    CHECK(settings.slotBytes == size_t{8} << 10);
    CHECK(settings.slots == 4);
    // Set, even to the table's value, is told apart from unset: a section for another rank
    // count could give the unset rank another geometry.
    CHECK_THAT(settings.agreed(), Contains("TUTTI_CHUNK_BYTES=8192 TUTTI_SLOTS=4 "));
  }
  SECTION("a file good but for its last line is refused whole") {
    const TempFile file("oneshot_max_bytes = 1M\nslots = 65\n");
    const ScopedEnv set("TUTTI_TUNING_FILE", file.path());
    CHECK_THAT(tests::messageOf(ErrorCode::kInvalidArgument, [] { Settings::fromConfig(); }),
               Contains("TUTTI_TUNING_FILE=" + file.path() + ": line 2: slots = 65: out of range"));
  }
  SECTION("a file that is not there, or not a file") {
    const TempFile file("");
    const std::string directory = std::filesystem::path(file.path()).parent_path();
    // A FIFO that no process writes: refused, not waited on for a writer.
    const std::string fifo = file.path() + ".fifo";
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    for (const auto& [path, says] :
         {std::pair{file.path() + ".missing", "cannot open it"}, std::pair{directory, "not a file"},
          std::pair{fifo, "not a file"}}) {
      const ScopedEnv set("TUTTI_TUNING_FILE", path);
      CHECK_THAT(tests::messageOf(ErrorCode::kInvalidArgument, [] { Settings::fromConfig(); }),
                 Contains("TUTTI_TUNING_FILE=" + path + ": " + says));
    }
  }
}

TEST_CASE(
    "TUTTI_TUNING_FILE unset or auto: this machine's table in the cache directory, else the "
    "defaults; rank 0's in a communicator") {
  const TempFile cache("");
  const ScopedEnv xdg("XDG_CACHE_HOME", cache.dir());
  const std::string path = machineTuningPath();
  CHECK(path.rfind(cache.dir() + "/tutti/tuning-", 0) == 0);
  CHECK(path.find_first_of(" ()@") == std::string::npos);
  for (const auto& [value, where] : {std::pair{"", "TUTTI_TUNING_FILE unset (auto)"},
                                     std::pair{"auto", "TUTTI_TUNING_FILE=auto"}}) {
    INFO(where);
    const ScopedEnv set("TUTTI_TUNING_FILE", value);
    std::filesystem::remove_all(cache.dir() + "/tutti");
    Settings settings = Settings::fromConfig();
    CHECK(settings.tuning == defaultTuning());
    CHECK(settings.tuningFromRank0);
    CHECK(settings.tuningOrigin == fmt::format("defaults ({}: no table for this machine at {}; "
                                               "tutti-bench tune --save writes one)",
                                               where, path));
    std::filesystem::create_directories(cache.dir() + "/tutti");
    std::ofstream(path) << "direct_min_bytes = 2M\nslots = 4\n";
    settings = Settings::fromConfig();
    CHECK(settings.tuning.directMinBytes == size_t{2} << 20);
    CHECK(settings.slots == 4);
    CHECK(settings.tuningFromRank0);
    CHECK(settings.tuningOrigin == fmt::format("{} ({})", where, path));
    std::ofstream(path) << "direct_min_bytes = 2X\n";
    CHECK_THAT(tests::messageOf(ErrorCode::kInvalidArgument, [] { Settings::fromConfig(); }),
               Contains(fmt::format("{} ({}): line 1: direct_min_bytes = 2X", where, path)));
  }
  const ScopedEnv home("HOME", cache.dir() + "/home");
  // Empty, or relative (which the XDG spec calls invalid): ~/.cache.
  for (const char* xdgValue : {"", "relative/cache"}) {
    const ScopedEnv xdgAgain("XDG_CACHE_HOME", xdgValue);
    CHECK(machineTuningPath().rfind(cache.dir() + "/home/.cache/tutti/tuning-", 0) == 0);
  }
}

// What init sends from rank 0 to the ranks that take its table reads back as that table, its FIFO
// geometry with it unless TUTTI_CHUNK_BYTES / TUTTI_SLOTS say otherwise; a damaged one is refused.
TEST_CASE("rank 0's table travels whole to the ranks that take it") {
  TuningTable table;
  table.any.oneShotMaxBytes = 3 << 20;
  table.any.directPullInPlace = {1 << 20, 5 << 20};
  table.any.tcpGBs = 0.75;
  table.any.slotBytes = 64 << 10;
  table.byRanks[4] = table.any;
  table.byRanks[4].shmStepUs = 7.123456789012;  // more digits than %g keeps: they travel too
  const std::string sent = encodeTuning({table, "TUTTI_TUNING_FILE=auto (/x/tuning-CPU)"});
  const TuningSource got = decodeTuning(sent, "rank 1: rank 0's tuning table");
  CHECK(got.table == table);
  CHECK(got.origin == "rank 0's: TUTTI_TUNING_FILE=auto (/x/tuning-CPU)");
  Settings settings = Settings::fromConfig();
  settings.useTuning(got);
  CHECK(settings.tuning == table.any);
  CHECK(settings.slotBytes == size_t{64} << 10);
  const ScopedEnv chunk("TUTTI_CHUNK_BYTES", "8K");
  settings = Settings::fromConfig();
  settings.useTuning(got);
  CHECK(settings.slotBytes == size_t{8} << 10);
  settings.planFor(4);
  CHECK(settings.slotBytes == size_t{8} << 10);
  for (const std::string& damaged : {std::string("no newline"), sent + "slots = many\n"})
    CHECK_THAT(tests::messageOf(ErrorCode::kRemote,
                                [&] { decodeTuning(damaged, "rank 1: rank 0's tuning table"); }),
               Contains("rank 1: rank 0's tuning table"));
}
