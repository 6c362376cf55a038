// tutti-soak: ranks run random collectives for a given time and check every result.
//
//   tutti-soak [--seconds 60] [--ranks 4] [--max-bytes 4M] [--seed 1] [--report-every 10]
//              [--buffers host|registered]
//
// Started by hand it spawns --ranks local ranks of itself (the launch library, as tutti-bench
// --ranks); under tuttirun, mpirun, torchrun or srun each process is one rank. TUTTI_TRANSPORT
// and the other variables choose the transport as usual.
//
// Every rank draws the same sequence from the seed: collective (tutti-bench's table: every one),
// type, operation, root, size (log-uniform up to --max-bytes), in or out of place, and for
// all-reduce the algorithm (tutti_comm_set_algorithm). Inputs are tutti-bench's CheckData
// patterns, whose results are known exactly without tutti; with --buffers registered the buffers
// are tutti_mem_alloc memory, which the direct algorithms map (all-reduce: when drawn, at any
// size; the others from 256 KiB), else ordinary memory, which they copy through the kernel.
// Every element of every result is compared with them. All-reduce results must also be bitwise
// identical on every rank: each rank folds a checksum of its results, and the checksums are
// compared at every control point.
//
// Control points (every 32 calls): one allgather carries each rank's counters, its resident
// memory and rank 0's decision to stop, so that all ranks stop after the same call. Rank 0 prints a
// line every --report-every seconds and a summary: calls, corruptions, private resident memory
// (RssAnon: where a leak shows) first/last/max per rank, first being at the first report, after
// warm-up. Shared memory is reported apart: the FIFOs' pages become resident as they are first
// written, which is growth but not a leak. Exit 1 on any corruption or failed call.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench/buffer.hpp"
#include "bench/check_data.hpp"
#include "bench/collectives.hpp"
#include "bench/options.hpp"
#include "bench/types.hpp"
#include "tools/cli/number_checks.hpp"
#include "tools/launch/launch.hpp"

namespace {

using tutti::bench::CheckData;
using tutti::bench::CollectiveSpec;
using tutti::bench::Layout;

constexpr int kControlEvery = 32;

struct SoakOptions {
  double seconds = 60;
  int ranks = 4;
  size_t maxBytes = 4 << 20;
  uint64_t seed = 1;
  double reportEvery = 10;
  bool registered = false;
};

// What each rank contributes at a control point.
struct Control {
  int64_t stop;         // rank 0's decision
  int64_t calls;        // calls made so far
  int64_t corruptions;  // calls whose result had a wrong element
  int64_t checksum;     // of every all-reduce result so far (equal on every rank)
  int64_t anonKib;      // resident private memory: a leak shows here
  int64_t shmemKib;     // resident shared memory: the shm FIFOs, as their slots are first used
};

bool underLauncher() {
  for (const char* name : {"TUTTI_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"})
    if (std::getenv(name)) return true;
  return false;
}

// A "Name:   1234 kB" line of /proc/self/status, in KiB.
int64_t statusKib(const std::string& name) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(name + ":", 0) == 0) return std::atoll(line.c_str() + name.size() + 1);
  return 0;
}

uint64_t fnv1a(const unsigned char* data, size_t bytes, uint64_t hash) {
  for (size_t i = 0; i < bytes; ++i) hash = (hash ^ data[i]) * 1099511628211ULL;
  return hash;
}

[[noreturn]] void fail(int rank, const std::string& what) {
  std::fprintf(stderr, "tutti-soak: rank %d: %s: %s\n", rank, what.c_str(), tutti_get_last_error());
  std::exit(1);
}

class Soak {
 public:
  Soak(const SoakOptions& options, tuttiComm_t comm)
      : o_(options),
        comm_(comm),
        rng_(options.seed),
        send_(options.maxBytes + 64, options.registered ? "registered" : "host", -1),
        recv_(options.maxBytes + 64, options.registered ? "registered" : "host", -1) {
    tutti_comm_rank(comm, &rank_);
    tutti_comm_size(comm, &n_);
  }

  int run() {
    const auto start = std::chrono::steady_clock::now();
    double nextReport = o_.reportEvery;
    for (;;) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::vector<Control> all = control(elapsed >= o_.seconds);
      if (rank_ == 0 && (elapsed >= nextReport || all[0].stop)) {
        report(all, elapsed);
        nextReport += o_.reportEvery;
      }
      if (all[0].stop) return summary(all, elapsed);
      for (int i = 0; i < kControlEvery; ++i) randomCall();
    }
  }

 private:
  std::vector<Control> control(bool stop) {
    const Control mine{stop,
                       calls_,
                       corruptions_,
                       static_cast<int64_t>(checksum_),
                       statusKib("RssAnon"),
                       statusKib("RssShmem")};
    std::vector<Control> all(static_cast<size_t>(n_));
    if (tutti_allgather(&mine, all.data(), sizeof(Control) / sizeof(int64_t), tuttiInt64, comm_,
                        nullptr) != tuttiSuccess)
      fail(rank_, "the control allgather");
    for (const Control& c : all)
      if (c.checksum != all[0].checksum) ++checksumMismatches_;
    return all;
  }

  void randomCall() {
    const auto table = tutti::bench::collectives();
    const CollectiveSpec& spec = table[rng_() % table.size()];
    const auto dtype = static_cast<tuttiDataType_t>(rng_() % tuttiNumTypes);
    const auto op = spec.reduces ? static_cast<tuttiRedOp_t>(rng_() % tuttiNumOps) : tuttiSum;
    const int root = spec.rooted ? static_cast<int>(rng_() % static_cast<uint64_t>(n_)) : -1;
    const bool inPlace = rng_() % 2 == 0;
    const size_t unit = tutti::bench::typeSize(dtype);
    // Log-uniform from 1 element to the whole buffer, and now and then nothing at all.
    const double maxElems = static_cast<double>(o_.maxBytes / unit);
    const auto elements =
        rng_() % 16 == 0 ? size_t{0}
                         : static_cast<size_t>(std::pow(
                               maxElems, std::uniform_real_distribution<double>(0.0, 1.0)(rng_)));
    const char* algorithm =
        tutti::bench::kAllReduceAlgorithms[rng_() % tutti::bench::kAllReduceAlgorithms.size()]
            .c_str();
    if (std::strcmp(spec.name, "allreduce") == 0 &&
        tutti_comm_set_algorithm(comm_, algorithm) != tuttiSuccess)
      fail(rank_, "tutti_comm_set_algorithm");

    const Layout l = spec.layout(elements, rank_, n_);
    const CheckData data(dtype, op, n_);
    unsigned char* recv = recv_.data();
    unsigned char* input = inPlace ? recv + l.inPlaceSend * unit : send_.data();
    CheckData::fillPoison(recv, l.recvCount * unit);
    if (spec.hasInput(rank_, root)) data.fillInput(input, l.sendCount, rank_);
    const tutti::bench::CallArgs args{
        inPlace ? input : send_.data(), recv, l.count, dtype, op, root, rank_, n_, comm_};
    if (spec.call(args) != tuttiSuccess)
      fail(rank_, fmt::format("call #{}: {}", calls_ + 1, spec.name));
    ++calls_;
    if (!spec.moves) return;
    int64_t wrong = 0;
    for (const auto& e : spec.expected(l, rank_, n_, root, inPlace))
      wrong += data.countWrong(recv + e.offset * unit, e.count, e.firstIndex, e.source);
    if (wrong > 0) {
      ++corruptions_;
      std::fprintf(stderr,
                   "tutti-soak: rank %d: CORRUPTION in call #%lld: %s(count=%zu, %s, %s, root=%d, "
                   "%s, algorithm %s): %lld wrong elements\n",
                   rank_, static_cast<long long>(calls_), spec.name, l.count,
                   tutti::bench::typeName(dtype), tutti::bench::opName(op), root,
                   inPlace ? "in-place" : "out-of-place", algorithm, static_cast<long long>(wrong));
    }
    if (std::strcmp(spec.name, "allreduce") == 0)
      checksum_ = fnv1a(recv, l.recvCount * unit, checksum_);
  }

  void report(const std::vector<Control>& all, double elapsed) {
    if (firstAnon_.empty())
      for (const Control& c : all) firstAnon_.push_back(c.anonKib);
    if (maxAnon_.empty()) maxAnon_.assign(all.size(), 0);
    std::string anon, shmem;
    int64_t corruptions = 0;
    for (size_t r = 0; r < all.size(); ++r) {
      maxAnon_[r] = std::max(maxAnon_[r], all[r].anonKib);
      corruptions += all[r].corruptions;
      anon += fmt::format("{}{}", r ? " " : "", all[r].anonKib);
      shmem += fmt::format("{}{}", r ? " " : "", all[r].shmemKib);
    }
    std::printf(
        "t=%.0fs calls %lld (%.0f/s) corruptions %lld checksum mismatches %lld; resident KiB "
        "per rank: private %s, shm %s\n",
        elapsed, static_cast<long long>(all[0].calls), all[0].calls / elapsed,
        static_cast<long long>(corruptions), static_cast<long long>(checksumMismatches_),
        anon.c_str(), shmem.c_str());
    std::fflush(stdout);
  }

  // Every rank's exit status says whether any rank saw a corruption; rank 0 prints the figures.
  int summary(const std::vector<Control>& all, double elapsed) {
    int64_t corruptions = 0;
    for (const Control& c : all) corruptions += c.corruptions;
    const bool clean = corruptions == 0 && checksumMismatches_ == 0;
    if (rank_ != 0) return clean ? 0 : 1;
    int64_t growth = 0;
    std::string anon;
    for (size_t r = 0; r < all.size(); ++r) {
      growth = std::max(growth, all[r].anonKib - firstAnon_[r]);
      anon += fmt::format("{}rank {} {}/{}/{}", r ? ", " : "", r, firstAnon_[r], all[r].anonKib,
                          maxAnon_[r]);
    }
    std::printf(
        "soak: %d ranks, %.0f s, %lld calls, %lld corruptions, %lld checksum mismatches; private "
        "resident KiB first/last/max: %s; largest growth %lld KiB: %s\n",
        n_, elapsed, static_cast<long long>(all[0].calls), static_cast<long long>(corruptions),
        static_cast<long long>(checksumMismatches_), anon.c_str(), static_cast<long long>(growth),
        clean ? "ok" : "FAILED");
    return clean ? 0 : 1;
  }

  const SoakOptions& o_;
  tuttiComm_t comm_;
  int rank_ = 0;
  int n_ = 1;
  std::mt19937_64 rng_;
  tutti::bench::Buffer send_, recv_;
  int64_t calls_ = 0;
  int64_t corruptions_ = 0;
  int64_t checksumMismatches_ = 0;
  uint64_t checksum_ = 1469598103934665603ULL;
  std::vector<int64_t> firstAnon_, maxAnon_;
};

int spawnSelf(const SoakOptions& options, int argc, char** argv) {
  tutti::launch::Options launch;
  launch.nranks = options.ranks;
  launch.argv = tutti::bench::argvWithoutRanks(argc, argv);
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n > 0) launch.argv[0] = std::string(path, static_cast<size_t>(n));
  launch.launcherName = "tutti-soak";
  return tutti::launch::spawnRanks(launch).exitCode;
}

}  // namespace

int main(int argc, char** argv) {
  SoakOptions options;
  std::string maxBytes = "4M";
  CLI::App app("tutti-soak: random collectives for a given time, every result checked");
  app.add_option("--seconds", options.seconds, "how long to run")
      ->check(tutti::cli::finiteIn(1e-3, tutti::cli::kMaxSeconds));
  app.add_option("--ranks", options.ranks, "local ranks to spawn (without a launcher)")
      ->check(CLI::Range(1, 64));
  app.add_option("--max-bytes", maxBytes, "largest buffer per rank (K, M, G suffixes)");
  app.add_option("--seed", options.seed, "the sequence of calls (the same on every rank)");
  app.add_option("--report-every", options.reportEvery, "seconds between progress lines")
      ->check(tutti::cli::finiteIn(1e-3, tutti::cli::kMaxSeconds));
  std::string buffers = "host";
  app.add_option("--buffers", buffers,
                 "host: ordinary memory; registered: tutti_mem_alloc memory (direct algorithms)")
      ->check(CLI::IsMember({"host", "registered"}));
  CLI11_PARSE(app, argc, argv);
  const auto parsed = tutti::bench::parseSize(maxBytes);
  if (!parsed || *parsed < 8) {
    std::fprintf(stderr,
                 "tutti-soak: --max-bytes %s is not a size of at least 8 bytes (digits with an "
                 "optional K, M or G)\n",
                 maxBytes.c_str());
    return 2;
  }
  options.maxBytes = *parsed;
  options.registered = buffers == "registered";
  if (!underLauncher()) return spawnSelf(options, argc, argv);

  tuttiComm_t comm = nullptr;
  if (tutti_comm_init_env(&comm) != tuttiSuccess) fail(-1, "tutti_comm_init_env");
  int status = 1;
  try {
    status = Soak(options, comm).run();
  } catch (const std::exception& error) {  // the buffers could not be allocated
    std::fprintf(stderr, "tutti-soak: %s\n", error.what());
  }
  tutti_comm_destroy(comm);
  return status;
}
