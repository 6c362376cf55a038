// tuttirun: runs N local ranks of a program with the TUTTI_* environment (see tools/launch).
//
//   tuttirun -n N [-p] [--grace S] [--timeout S] [--elastic R] [-x NAME=VALUE]... [--] prog args...
//
// Exit status: 0 when every rank exits 0 (with --elastic: every rank not replaced); the status of
// the failing rank that stopped the job (128+signal when killed); 124 on --timeout; 127 when prog
// cannot be executed; 2 on bad usage.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "tools/cli/number_checks.hpp"
#include "tools/launch/launch.hpp"

namespace {

constexpr int kUsageError = 2;

// CLI11's usage line knows nothing of the trailing command: say it.
class UsageFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return "\nUsage: tuttirun -n N [options] [--] prog [args...]\n";
  }
};

int usageError(const CLI::App& app, const std::string& what) {
  fmt::print(stderr, "tuttirun: {}\n{}", what, app.help());
  return kUsageError;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Runs N local ranks of prog with TUTTI_RANK, TUTTI_WORLD_SIZE, TUTTI_LOCAL_RANK,\n"
      "TUTTI_ADDR, TUTTI_PORT and TUTTI_SECRET set.",
      "tuttirun"};
  app.formatter(std::make_shared<UsageFormatter>());
  app.prefix_command();  // the first positional and everything after it is the rank's command

  tutti::launch::Options options;
  std::vector<std::string> extraEnv;
  app.add_option("-n,--np", options.nranks, "number of ranks")
      ->required()
      ->check(CLI::Range(1, 4096));
  app.add_flag("-p,--prefix", options.prefixOutput, "prefix each output line with \"[rank] \"");
  app.add_option("--grace", options.graceSeconds,
                 "seconds the other ranks get after one fails, before SIGTERM")
      ->capture_default_str()
      ->check(tutti::cli::seconds());
  app.add_option("--timeout", options.timeoutSeconds,
                 "kill the job after this many seconds (0: none)")
      ->capture_default_str()
      ->check(tutti::cli::seconds());
  app.add_option("--elastic", options.elasticReplacements,
                 "replace a failed rank with a fresh process, which joins the survivors' grown\n"
                 "communicator (docs/elastic.md), up to this many times in the job")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](const std::string& value) -> std::string {
            if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos ||
                value.size() > 7 || std::stol(value) > 1'000'000)
              return "expected a number of replacements from 0 to 1000000, got '" + value + "'";
            return "";
          },
          "N", "replacements"));
  app.add_option("-x", extraEnv, "extra environment variable for every rank (repeatable)")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return 0;
  } catch (const CLI::ParseError& e) {
    return usageError(app, e.what());
  }

  std::vector<std::string> command = app.remaining();
  if (!command.empty() && command.front() == "--") {
    command.erase(command.begin());
  } else if (!command.empty() && command.front().size() > 1 && command.front()[0] == '-') {
    return usageError(app, fmt::format("unknown option {}", command.front()));
  }
  if (command.empty()) return usageError(app, "no program to run");
  options.argv = command;

  for (const auto& assignment : extraEnv) {
    auto eq = assignment.find('=');
    if (eq == 0 || eq == std::string::npos) {
      return usageError(app, fmt::format("-x {}: expected NAME=VALUE", assignment));
    }
    const std::string name = assignment.substr(0, eq);
    const auto owned = tutti::launch::launcherVariables();
    if (std::ranges::find(owned, name) != owned.end())
      return usageError(app, fmt::format("-x {}: tuttirun sets it for each rank itself", name));
    options.extraEnv.emplace_back(name, assignment.substr(eq + 1));
  }

  try {
    return tutti::launch::spawnRanks(options).exitCode;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tuttirun: {}\n", e.what());
    return 1;
  }
}
