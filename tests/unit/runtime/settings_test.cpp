// Settings::fromConfig: each variable a communicator depends on, parsed once into its typed value.
// Every word the variable table accepts gives the value of that name; any other word is refused
// with an error naming the variable; agreed() shows the words the ranks compare at init.
#include "runtime/settings.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/config.hpp"
#include "base/error.hpp"
#include "runtime/collectives/algorithm.hpp"
#include "tests/ranks/world.hpp"

using namespace tutti;
using namespace tutti::runtime;
using Catch::Matchers::Contains;
using tutti::testing::ScopedEnv;

namespace {

std::vector<std::string> tableChoices(const char* name) {
  std::vector<std::string> words;
  std::istringstream choices(config::find(name).choices);
  for (std::string word; std::getline(choices, word, '|');) words.push_back(word);
  return words;
}

// fromConfig's error with `name` set to `value`; "" when it accepted the value.
std::string refusal(const char* name, const std::string& value) {
  ScopedEnv set(name, value);
  try {
    Settings::fromConfig();
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::kInvalidArgument);
    return error.what();
  }
  return "";
}

}  // namespace

// TUTTI_DUMP_DIR is made at init where its parent exists, and refused there otherwise: dumps are
// written when something went wrong, when a lost one is lost for good.
TEST_CASE("TUTTI_DUMP_DIR: made at init, or refused naming it") {
  char parent[] = "/tmp/tutti-settings-XXXXXX";
  REQUIRE(mkdtemp(parent));
  const std::string made = std::string(parent) + "/dumps", file = std::string(parent) + "/file";
  CHECK(refusal("TUTTI_DUMP_DIR", made) == "");
  CHECK(std::filesystem::is_directory(made));
  std::ofstream(file) << "not a directory\n";
  CHECK_THAT(refusal("TUTTI_DUMP_DIR", file),
             Contains("TUTTI_DUMP_DIR=" + file + ": not a directory"));
  CHECK_THAT(
      refusal("TUTTI_DUMP_DIR", made + "/a/b"),
      Contains("TUTTI_DUMP_DIR=" + made + "/a/b: cannot make it: No such file or directory"));
  std::filesystem::remove_all(parent);
}

// Each within its range, slots x slot bytes may still not exceed 512 MiB a connection; either at
// its most with the other's default does not.
TEST_CASE("TUTTI_SLOTS x TUTTI_CHUNK_BYTES: at most 512 MiB a connection") {
  CHECK(refusal("TUTTI_CHUNK_BYTES", "64M") == "");
  ScopedEnv slots("TUTTI_SLOTS", "64");
  CHECK(refusal("TUTTI_CHUNK_BYTES", "8M") == "");
  CHECK_THAT(refusal("TUTTI_CHUNK_BYTES", "9M"),
             Contains("a connection's FIFO of 64 slots (TUTTI_SLOTS) of 9437184 bytes "
                      "(TUTTI_CHUNK_BYTES) would take 603979776 bytes; at most 536870912 (512 "
                      "MiB)"));
  // The table's value: named with the table it came from.
  char file[] = "/tmp/tutti-settings-XXXXXX";
  const int fd = mkstemp(file);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(file) << "slot_bytes = 16M\n";
  CHECK_THAT(refusal("TUTTI_TUNING_FILE", file),
             Contains(fmt::format("of 16777216 bytes (the tuning table's (TUTTI_TUNING_FILE={}) "
                                  "slot_bytes) would take",
                                  file)));
  std::remove(file);
}

namespace {

const char* algorithmName(const Settings& settings) {
  return settings.algorithm ? settings.algorithm->name : "auto";
}

}  // namespace

TEST_CASE("unset variables give the defaults of the table") {
  const Settings settings = Settings::fromConfig();
  CHECK(settings.transport.text() == "auto");
  CHECK(settings.algorithm == nullptr);
  CHECK(settings.directBuffers == DirectBuffers::kAny);
  CHECK_FALSE(settings.checkCalls);
  CHECK(settings.agreed() ==
        "TUTTI_CHUNK_BYTES=unset TUTTI_SLOTS=unset TUTTI_CHECK_CALLS=0 TUTTI_TRANSPORT=auto "
        "TUTTI_ALGO=auto TUTTI_AUTOTUNE=auto TUTTI_GPU_PATH=kernels TUTTI_GPU_CHANNELS=16 "
        "TUTTI_TUNING_FILE:oneshot_max_bytes=64K TUTTI_TUNING_FILE:tcp_oneshot_max_bytes=64K "
        "TUTTI_TUNING_FILE:direct_min_bytes=256K "
        "TUTTI_TUNING_FILE:direct_pull_out_of_place=256K..8M "
        "TUTTI_TUNING_FILE:direct_pull_in_place=4M..16M "
        "TUTTI_TUNING_FILE:tree_over_ring=0..0 TUTTI_TUNING_FILE:tcp_tree_over_ring=0..0 "
        "TUTTI_TUNING_FILE:doubling_range=0..0 TUTTI_TUNING_FILE:tcp_doubling_range=0..64K "
        "TUTTI_TUNING_FILE:reduce_scatter_kernel_max_bytes=8M "
        "TUTTI_TUNING_FILE:direct_staged_bytes=128K TUTTI_TUNING_FILE:shm_step_us=0.3 "
        "TUTTI_TUNING_FILE:tcp_step_us=15 TUTTI_TUNING_FILE:shm_gbs=5 "
        "TUTTI_TUNING_FILE:tcp_gbs=2 TUTTI_TUNING_FILE:shm_streaming_min_bytes=1024G "
        "TUTTI_TUNING_FILE:slot_bytes=256K "
        "TUTTI_TUNING_FILE:slots=8");
}

// Set but empty is unset for every type: an empty integer had said "is not set".
TEST_CASE("empty variables give the defaults of the table") {
  ScopedEnv timeout("TUTTI_TIMEOUT", ""), slots("TUTTI_SLOTS", ""), algo("TUTTI_ALGO", "");
  const Settings settings = Settings::fromConfig();
  CHECK(settings.timeout == std::chrono::seconds(300));
  CHECK(settings.slots == static_cast<int>(settings.tuning.slots));
  CHECK(settings.algorithm == nullptr);
}

TEST_CASE("TUTTI_TRANSPORT: the selection as written is what the ranks agree on") {
  for (const auto& [word, allowed] :
       {std::pair{"auto", "shm, ucx, tcp"}, std::pair{"shm", "shm"},
        std::pair{"tcp,shm", "tcp, shm"}, std::pair{"^shm,ucx", "tcp"}}) {
    ScopedEnv set("TUTTI_TRANSPORT", word);
    const Settings settings = Settings::fromConfig();
    CHECK(settings.transport.describe() == allowed);
    CHECK_THAT(settings.agreed(), Contains(std::string(" TUTTI_TRANSPORT=") + word + " "));
  }
}

TEST_CASE("TUTTI_DIRECT_BUFFERS: each choice of the table is the value of that name") {
  CHECK(tableChoices("TUTTI_DIRECT_BUFFERS") == std::vector<std::string>{"any", "registered"});
  for (const auto& [word, value] : {std::pair{"any", DirectBuffers::kAny},
                                    std::pair{"registered", DirectBuffers::kRegistered}}) {
    ScopedEnv set("TUTTI_DIRECT_BUFFERS", word);
    const Settings settings = Settings::fromConfig();
    CHECK(settings.directBuffers == value);
    CHECK(std::string(choiceName(settings.directBuffers)) == word);
  }
}

TEST_CASE("TUTTI_ENGINE_AFFINITY: each choice of the table is the value of that name") {
  CHECK(tableChoices("TUTTI_ENGINE_AFFINITY") ==
        std::vector<std::string>{"auto", "spread", "none"});
  for (const auto& [word, value] :
       {std::pair{"auto", EnginePlacement::kAuto}, std::pair{"spread", EnginePlacement::kSpread},
        std::pair{"none", EnginePlacement::kNone}}) {
    ScopedEnv set("TUTTI_ENGINE_AFFINITY", word);
    const Settings settings = Settings::fromConfig();
    CHECK(settings.enginePlacement == value);
    CHECK(std::string(choiceName(settings.enginePlacement)) == word);
  }
  CHECK(refusal("TUTTI_ENGINE_AFFINITY", "core") ==
        "TUTTI_ENGINE_AFFINITY='core' is not one of auto|spread|none");
}

TEST_CASE("TUTTI_AUTOTUNE: each choice of the table is the value of that name, agreed on") {
  CHECK(tableChoices("TUTTI_AUTOTUNE") == std::vector<std::string>{"auto", "on", "off"});
  for (const auto& [word, value] :
       {std::pair{"auto", AutotuneMode::kAuto}, std::pair{"on", AutotuneMode::kOn},
        std::pair{"off", AutotuneMode::kOff}}) {
    ScopedEnv set("TUTTI_AUTOTUNE", word);
    const Settings settings = Settings::fromConfig();
    CHECK(settings.autotune == value);
    CHECK(std::string(choiceName(settings.autotune)) == word);
    CHECK_THAT(settings.agreed(), Contains(std::string(" TUTTI_AUTOTUNE=") + word + " "));
  }
  CHECK(refusal("TUTTI_AUTOTUNE", "yes") == "TUTTI_AUTOTUNE='yes' is not one of auto|on|off");
}

TEST_CASE("TUTTI_ALGO: each choice is the all-reduce entry of that name, auto none") {
  for (const std::string& word : tableChoices("TUTTI_ALGO")) {
    INFO(word);
    ScopedEnv set("TUTTI_ALGO", word);
    const Settings settings = Settings::fromConfig();
    CHECK(algorithmName(settings) == word);
    CHECK((settings.algorithm == nullptr) == (word == "auto"));
    if (settings.algorithm) CHECK(settings.algorithm->collective == Collective::kAllReduce);
    CHECK_THAT(settings.agreed(), Contains(" TUTTI_ALGO=" + word));
  }
}

TEST_CASE("TUTTI_CHECK_CALLS: 1 checks calls, 0 does not") {
  for (const auto& [word, value] : {std::pair{"0", false}, std::pair{"1", true}}) {
    ScopedEnv set("TUTTI_CHECK_CALLS", word);
    const Settings settings = Settings::fromConfig();
    CHECK(settings.checkCalls == value);
    CHECK_THAT(settings.agreed(), Contains(std::string(" TUTTI_CHECK_CALLS=") + word + " "));
  }
}

TEST_CASE("TUTTI_GPU_PATH and TUTTI_GPU_CHANNELS: what the ranks agree on, bad values named") {
  for (const auto& [word, kernels] : {std::pair{"kernels", true}, std::pair{"staged", false}}) {
    ScopedEnv set("TUTTI_GPU_PATH", word);
    const Settings settings = Settings::fromConfig();
    CHECK(settings.gpuKernels == kernels);
    CHECK_THAT(settings.agreed(), Contains(std::string(" TUTTI_GPU_PATH=") + word + " "));
  }
  {
    ScopedEnv set("TUTTI_GPU_CHANNELS", "3");
    const Settings settings = Settings::fromConfig();
    CHECK(settings.gpuChannels == 3);
    CHECK_THAT(settings.agreed(), Contains(" TUTTI_GPU_CHANNELS=3 "));
  }
  for (const char* bad : {"0", "17", "x"}) {
    ScopedEnv set("TUTTI_GPU_CHANNELS", bad);
    CHECK_THROWS_WITH(Settings::fromConfig(), Contains("TUTTI_GPU_CHANNELS"));
  }
  ScopedEnv set("TUTTI_GPU_PATH", "device");
  CHECK_THROWS_WITH(Settings::fromConfig(), Contains("TUTTI_GPU_PATH"));
}

TEST_CASE("a choice set to nothing is its default") {
  ScopedEnv transport("TUTTI_TRANSPORT", ""), algorithm("TUTTI_ALGO", ""),
      buffers("TUTTI_DIRECT_BUFFERS", ""), checkCalls("TUTTI_CHECK_CALLS", "");
  const Settings settings = Settings::fromConfig();
  CHECK(settings.transport.text() == "auto");
  CHECK(settings.algorithm == nullptr);
  CHECK(settings.directBuffers == DirectBuffers::kAny);
  CHECK_FALSE(settings.checkCalls);
  CHECK_THAT(settings.agreed(), Contains("TUTTI_TRANSPORT=auto TUTTI_ALGO=auto"));
}

TEST_CASE("a word outside a variable's choices is refused, naming the variable and them") {
  CHECK(refusal("TUTTI_TRANSPORT", "udp") ==
        "TUTTI_TRANSPORT='udp': 'udp' is not a transport (known: shm, ucx, tcp)");
  CHECK_THAT(refusal("TUTTI_IB_HCA", "mlx5_0:x"), Contains("TUTTI_IB_HCA"));
  CHECK(refusal("TUTTI_ALGO", "fastest") ==
        "TUTTI_ALGO='fastest' is not one of auto|oneshot|ring|tree|doubling|direct");
  // Names of the table's other collectives' algorithms are not all-reduce algorithms.
  CHECK(refusal("TUTTI_ALGO", "chain") ==
        "TUTTI_ALGO='chain' is not one of auto|oneshot|ring|tree|doubling|direct");
  CHECK(refusal("TUTTI_DIRECT_BUFFERS", "mapped") ==
        "TUTTI_DIRECT_BUFFERS='mapped' is not one of any|registered");
  CHECK(refusal("TUTTI_CHECK_CALLS", "yes") == "TUTTI_CHECK_CALLS='yes' is not one of 0|1");
}

TEST_CASE("TUTTI_TIMEOUT: seconds up to the maximum a communicator's own timeout shares") {
  {
    ScopedEnv set("TUTTI_TIMEOUT", std::to_string(config::kTimeoutMaxSeconds));
    CHECK(Settings::fromConfig().timeout == std::chrono::seconds(config::kTimeoutMaxSeconds));
  }
  CHECK_THAT(refusal("TUTTI_TIMEOUT", std::to_string(config::kTimeoutMaxSeconds + 1)),
             Contains("TUTTI_TIMEOUT=604801 is out of range [1, 604800]"));
  CHECK_THAT(refusal("TUTTI_TIMEOUT", "soon"), Contains("TUTTI_TIMEOUT='soon' is not an integer"));
}

TEST_CASE("allReduceChoice: the table's entry for each choice, kInternal for other names") {
  for (const std::string& word : allReduceChoices()) {
    const Algorithm* algorithm = allReduceChoice(word);
    CHECK((algorithm ? std::string(algorithm->name) : std::string("auto")) == word);
  }
  CHECK_THROWS_MATCHES(allReduceChoice("pairwise"), Error,
                       Catch::Matchers::Predicate<Error>(
                           [](const Error& e) { return e.code() == ErrorCode::kInternal; }));
}
