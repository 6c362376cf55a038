// tutti-info: what a tutti installation and a tutti job can tell you.
//   tutti-info env               every TUTTI_* variable: default, limits, meaning, value here
//   tutti-info transports        the transports of this build, and which TUTTI_TRANSPORT picks
//                                for ranks on one host and on two
//   tutti-info algorithms        the tuning table in force and where it came from; what auto
//                                runs for an all-reduce at each size from 8 B to 256 MiB, and why
//   tutti-info postmortem DIR    merge the ranks' flight-recorder dumps (TUTTI_DUMP_DIR) and say
//                                which rank is behind and on which operation
// Bad usage or input prints what was wrong and exits 2.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>

#include "base/config.hpp"
#include "base/error.hpp"
#include "runtime/collectives/allreduce_choice.hpp"
#include "runtime/collectives/autotune.hpp"
#include "runtime/settings.hpp"
#include "tools/tutti-info/dumps.hpp"
#include "tools/tutti-info/postmortem.hpp"
#include "transport/registry.hpp"

namespace {

const char* typeName(tutti::config::Type type) {
  switch (type) {
    case tutti::config::Type::kString: return "string";
    case tutti::config::Type::kInt: return "integer";
    case tutti::config::Type::kBytes: return "size";
    case tutti::config::Type::kChoice: return "choice";
  }
  return "";
}

void printEnv() {
  for (const tutti::config::Var& var : tutti::config::table()) {
    std::string limits;
    if (var.type == tutti::config::Type::kChoice) limits = fmt::format(" {}", var.choices);
    if (var.type == tutti::config::Type::kInt || var.type == tutti::config::Type::kBytes)
      limits = fmt::format(" [{}, {}]", var.min, var.max);
    fmt::print("{} ({}{}), default {}\n    {}\n", var.name, typeName(var.type), limits,
               *var.defaultValue ? var.defaultValue : "unset", var.doc);
    if (const char* value = std::getenv(var.name)) fmt::print("    set here: {}\n", value);
  }
}

void printTransports() {
  using namespace tutti::transport;
  for (const TransportKind* kind : transportKinds())
    fmt::print("{:<4} {}{}{}\n", kind->name,
               kind->reaches({"a"}, {"b"}) ? "any two ranks" : "ranks on one host",
               kind->sharesMemory ? ", maps peers' memory (direct algorithms)" : "",
               kind->keepsNotes ? ", keeps departure notes past a process's exit" : "");
  const char* set = std::getenv("TUTTI_TRANSPORT");
  const TransportSelection selection = TransportSelection::parse(set ? set : "");
  auto chosen = [&](const Reach& a, const Reach& b) {
    const TransportKind* kind = selection.choose(a, b);
    return kind ? kind->name : "none: init fails";
  };
  fmt::print("TUTTI_TRANSPORT={} allows {}\n  ranks on one host: {}\n  ranks on two hosts: {}\n",
             selection.text(), selection.describe(), chosen({"a"}, {"a"}), chosen({"a"}, {"b"}));
}

struct AlgorithmsQuery {
  int ranks = 2;
  std::string transport = "shm";
  bool inPlace = false;
  bool registered = false;
};

// The settings a communicator would start with here (TUTTI_TUNING_FILE's table, TUTTI_ALGO),
// and the planner's own decisions for the query's all-reduces.
void printAlgorithms(const AlgorithmsQuery& query) {
  using namespace tutti::runtime;
  Settings settings = Settings::fromConfig();
  settings.planFor(query.ranks);
  fmt::print("tuning table: {}\n", settings.tuningOrigin);
  if (const int section = settings.tuningTable.sectionFor(query.ranks); section != 0)
    fmt::print("  for {} ranks: its [ranks {}] section\n", query.ranks, section);
  else if (!settings.tuningTable.byRanks.empty())
    fmt::print("  for {} ranks: its keys before any section\n", query.ranks);
  for (const TuningKey& key : tuningKeys())
    fmt::print("  {:<32} {:<10} {} ({})\n", key.name, formatTuningValue(settings.tuning, key),
               key.doc, key.unit);
  if (settings.algorithm)
    fmt::print("TUTTI_ALGO={}: every all-reduce runs it, whatever auto would pick below\n",
               settings.algorithm->name);
  else if (autotunes(settings.autotune, query.ranks))
    fmt::print(
        "TUTTI_AUTOTUNE={}: with {} ranks auto runs the pick below on a size's first call, then "
        "every algorithm that can take the size in turn, {} calls each ({} in all at most), and "
        "keeps the one fastest on the slowest rank, the pick below unless another is over 5% "
        "faster (measured again after {} calls)\n",
        choiceName(settings.autotune), query.ranks, SizeTrial::kWarmUps + SizeTrial::kSamples,
        SizeTrial::longestCalls(), SizeTrial::kCallsBetweenTrials);
  else
    fmt::print("TUTTI_AUTOTUNE={}: with {} ranks auto runs the picks below\n",
               choiceName(settings.autotune), query.ranks);
  const bool sharedMemory = query.transport == "shm";
  fmt::print(
      "all-reduce with auto, {} ranks over {}, {}, {} buffers{}:\n", query.ranks, query.transport,
      query.inPlace ? "in place" : "out of place",
      query.registered ? "registered (tutti_mem_alloc)" : "ordinary",
      sharedMemory ? " (ranks on one NUMA node; across nodes the topology lowers shm_gbs)" : "");
  const LinkModel link = linkModelOf(settings.tuning, sharedMemory);
  for (size_t bytes = 8; bytes <= (size_t{256} << 20); bytes *= 2) {
    const AllReduceChoice choice =
        explainAllReduce(settings.tuning, link,
                         {bytes, query.ranks, sharedMemory, query.inPlace, query.registered,
                          settings.directBuffers});
    fmt::print("  {:>5} {:<8} {}\n", formatBytes(bytes), choice.algorithm->name, choice.why);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "tutti-info: the TUTTI_* settings, the planner's table and picks, and post-mortems of failed "
      "or hung jobs",
      "tutti-info"};
  app.require_subcommand(1);
  CLI::App* env = app.add_subcommand("env", "list every TUTTI_* variable and its value here");
  CLI::App* transports = app.add_subcommand(
      "transports", "the transports of this build and which TUTTI_TRANSPORT picks for a pair");
  AlgorithmsQuery query;
  CLI::App* algorithms = app.add_subcommand(
      "algorithms", "the tuning table in force and what auto picks for an all-reduce, and why");
  algorithms->add_option("--ranks", query.ranks, "ranks in the communicator")
      ->check(CLI::Range(2, 1 << 24))
      ->capture_default_str();
  algorithms->add_option("--transport", query.transport, "the ranks' links")
      ->check(CLI::IsMember({"shm", "tcp"}))
      ->capture_default_str();
  algorithms->add_flag("--in-place", query.inPlace, "in-place all-reduces");
  algorithms->add_flag("--registered", query.registered,
                       "outputs from tutti_mem_alloc, which peers map (else ordinary memory)");
  std::string dir;
  CLI::App* postmortem = app.add_subcommand(
      "postmortem", "merge the flight-recorder dumps in DIR (TUTTI_DUMP_DIR) and explain the hang");
  postmortem->add_option("DIR", dir, "directory holding the ranks' tutti-*.json dumps")->required();
  if (argc == 1) {
    std::fputs(app.help().c_str(), stderr);
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return 2;
  }
  try {
    if (*env) printEnv();
    if (*transports) printTransports();
    if (*algorithms) printAlgorithms(query);
    if (*postmortem) fmt::print("{}", tutti::info::postmortem(tutti::info::loadDumps(dir)));
  } catch (const tutti::info::InputError& error) {
    fmt::print(stderr, "tutti-info: {}\n", error.what());
    return 2;
  } catch (const tutti::Error& error) {
    fmt::print(stderr, "tutti-info: {}\n", error.what());
    return 2;
  }
  return 0;
}
