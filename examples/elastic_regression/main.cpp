// elastic_regression: data-parallel training that goes on when a rank dies and takes a
// replacement back in, with one command:
//
//   tuttirun --elastic 1 -n 4 ./elastic_regression [--steps S] [--step-ms M] [--seed X]
//
// Every rank computes its shard of each step's batch (samples by global index: rank r of W takes
// those with index % W == r), the bucketing layer's Reducer averages the gradients, every rank
// applies them. When a step fails (a peer died), the survivors shrink past the dead
// (TUTTI_SHRINK_DEAD); under tuttirun --elastic they then grow back to TUTTI_WORLD_SIZE with the
// replacement tuttirun starts, handing it the grow token through $TUTTI_ELASTIC_DIR; otherwise
// they go on with fewer (tuttirun without --elastic stops them after its --grace). Rank 0
// broadcasts the model and the step to redo, and a fresh Reducer averages over the new world. The
// replacement joins with the token and receives that broadcast.
//
// Output: "rank R pid P step S" every 10 steps, one line per recovery, and at the end
// "final rank R step S parameters W1 ... W8 B" (weights, then bias) in hexadecimal floating point
// (%a), exact.
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "bucketing/bucketing.hpp"
#include "examples/elastic_regression/grow_token_file.hpp"
#include "examples/elastic_regression/regression.hpp"
#include "tutti/tutti.hpp"

namespace {

using elastic_example::Model;
using tutti::bucketing::TensorBuffer;

struct Options {
  int64_t steps = 200;
  int stepMs = 0;  // a pause per step, so that a run lasts long enough to watch or disturb
  uint64_t seed = 1;
  double learningRate = 0.05;
};

int64_t parseNumber(const char* flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  const long long value = text ? std::strtoll(text, &end, 10) : -1;
  if (!text || *end != '\0' || end == text || errno != 0 || value < 0)
    throw std::invalid_argument(std::string(flag) + " expects a non-negative integer, got '" +
                                (text ? text : "") + "'");
  return value;
}

Options parseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const char* value = i + 1 < argc ? argv[++i] : nullptr;
    if (flag == "--steps")
      options.steps = parseNumber("--steps", value);
    else if (flag == "--step-ms")
      options.stepMs = static_cast<int>(std::min<int64_t>(parseNumber("--step-ms", value), 60'000));
    else if (flag == "--seed")
      options.seed = static_cast<uint64_t>(parseNumber("--seed", value));
    else
      throw std::invalid_argument("unknown argument '" + flag +
                                  "' (expected --steps S, --step-ms M, --seed X)");
  }
  return options;
}

int envNumber(const char* name) {
  return static_cast<int>(parseNumber(name, std::getenv(name)));
}

// What a replacement needs besides the parameters: the step to do next and how many grows the
// job has seen (it names the next token file). Broadcast with the model.
struct Progress {
  int64_t step = 0;
  int64_t grows = 0;
};

std::vector<TensorBuffer> stateTensors(Model& model, Progress& progress) {
  return {{"weight", {elastic_example::kFeatures}, tuttiFloat64, model.weight.data()},
          {"bias", {1}, tuttiFloat64, model.bias.data()},
          {"progress", {2}, tuttiInt64, &progress}};
}

// Rank 0's model and progress on every rank: after a membership change, the survivors may have
// got one step further than others (a step can complete on some before the death fails it on
// the rest; a completed step's average is the whole world's, so rank 0's state is right).
void syncState(tutti::Comm& comm, Model& model, Progress& progress) {
  const auto tensors = stateTensors(model, progress);
  tutti::bucketing::verifyShapesAcrossRanks(comm.handle(), tensors);
  tutti::bucketing::broadcastFromRank0(comm.handle(), tensors);
}

// The survivors' communicator; in an elastic job grown back to worldSize with the replacement
// tuttirun starts.
tutti::Comm recover(tutti::Comm& comm, int worldSize, const char* elasticDir, Progress& progress) {
  tutti::Comm survivors = comm.shrink({}, TUTTI_SHRINK_DEAD);
  comm = tutti::Comm();  // the shrunk one is retired: release its connections to the dead now
  if (!elasticDir) return survivors;
  ++progress.grows;
  if (survivors.rank() == 0)
    elastic_example::writeGrowToken(
        elastic_example::growTokenPath(elasticDir, static_cast<int>(progress.grows)),
        survivors.growId());
  std::printf("rank %d of %d survivors growing back to %d\n", survivors.rank(), survivors.size(),
              worldSize);
  std::fflush(stdout);
  return survivors.grow(worldSize);
}

std::unique_ptr<tutti::bucketing::Reducer> makeReducer(tutti::Comm& comm, Model& gradient) {
  return std::make_unique<tutti::bucketing::Reducer>(
      comm.handle(),
      std::vector<TensorBuffer>{
          {"weight", {elastic_example::kFeatures}, tuttiFloat64, gradient.weight.data()},
          {"bias", {1}, tuttiFloat64, gradient.bias.data()}});
}

// One synchronised step: the world's gradient in `gradient`. The Reducer divides by the world
// size, so each rank hands it its shard's sum times that size: the average is then the batch's
// gradient whatever the size.
void averagedGradient(tutti::Comm& comm, tutti::bucketing::Reducer& reducer, const Model& model,
                      const Options& options, int64_t step, Model& gradient) {
  elastic_example::shardGradient(model, options.seed, step, comm.rank(), comm.size(), gradient);
  for (double& g : gradient.weight) g *= comm.size();
  gradient.bias[0] *= comm.size();
  reducer.prepareForBackward();
  reducer.markReady(1);  // backward produces the last parameter's gradient first
  reducer.markReady(0);
  reducer.finalize();
}

void printFinal(const tutti::Comm& comm, const Model& model, int64_t step) {
  std::printf("final rank %d step %" PRId64 " parameters", comm.rank(), step);
  for (double w : model.weight) std::printf(" %a", w);
  std::printf(" %a\n", model.bias[0]);
}

int train(const Options& options) {
  const int worldSize = envNumber("TUTTI_WORLD_SIZE");
  const char* elasticDir = std::getenv("TUTTI_ELASTIC_DIR");
  const char* tokenFile = std::getenv("TUTTI_GROW_TOKEN_FILE");
  Model model;
  Progress progress;
  tutti::Comm comm;
  if (tokenFile) {  // a replacement: join the survivors, take their state
    const auto token = elastic_example::awaitGrowToken(tokenFile, std::chrono::seconds(300));
    comm = tutti::Comm::joinGrowing(token, envNumber("TUTTI_RANK"), worldSize);
    syncState(comm, model, progress);
    std::printf("rank %d pid %d joined at step %" PRId64 "\n", comm.rank(), getpid(),
                progress.step);
  } else {
    comm = tutti::Comm::fromEnv();
  }
  Model gradient;
  auto reducer = makeReducer(comm, gradient);
  while (progress.step < options.steps) {
    try {
      averagedGradient(comm, *reducer, model, options, progress.step, gradient);
    } catch (const tutti::CommError& error) {
      std::printf("rank %d: step %" PRId64 " failed (%s); recovering\n", comm.rank(), progress.step,
                  error.what());
      reducer.reset();  // it holds the old communicator
      comm = recover(comm, worldSize, elasticDir, progress);
      syncState(comm, model, progress);
      reducer = makeReducer(comm, gradient);
      std::printf("rank %d of %d resumes at step %" PRId64 "\n", comm.rank(), comm.size(),
                  progress.step);
      continue;
    }
    elastic_example::applyGradient(model, gradient, options.learningRate);
    ++progress.step;
    if (progress.step % 10 == 0)
      std::printf("rank %d pid %d step %" PRId64 "\n", comm.rank(), getpid(), progress.step);
    std::fflush(stdout);
    if (options.stepMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(options.stepMs));
  }
  printFinal(comm, model, progress.step);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return train(parseOptions(argc, argv));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "elastic_regression: %s\n", error.what());
    return 1;
  }
}
