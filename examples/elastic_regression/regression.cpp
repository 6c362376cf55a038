#include "examples/elastic_regression/regression.hpp"

#include <algorithm>
#include <cstddef>

namespace elastic_example {
namespace {

// splitmix64: a fixed, portable stream, so every rank draws the same sample i.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1) from (seed, sample, coordinate).
double draw(uint64_t seed, int64_t sample, int coordinate) {
  const uint64_t bits = mix(mix(seed ^ mix(static_cast<uint64_t>(sample))) + coordinate);
  return static_cast<double>(bits >> 11) * 0x1p-52 - 1.0;
}

struct Sample {
  double x[kFeatures];
  double y;
};

Sample sample(uint64_t seed, int64_t index) {
  Sample s{};
  s.y = 0.5 + 0.1 * draw(seed, index, kFeatures);  // the true bias, and noise
  for (int j = 0; j < kFeatures; ++j) {
    s.x[j] = draw(seed, index, j);
    s.y += (j + 1) * 0.25 * s.x[j];  // the true weights 0.25, 0.5, ...
  }
  return s;
}

}  // namespace

void shardGradient(const Model& model, uint64_t seed, int64_t step, int rank, int worldSize,
                   Model& gradient) {
  // In place: the Reducer holds the buffers.
  std::fill(gradient.weight.begin(), gradient.weight.end(), 0.0);
  gradient.bias[0] = 0.0;
  for (int i = rank; i < kBatch; i += worldSize) {
    const Sample s = sample(seed, step * kBatch + i);
    double error = model.bias[0] - s.y;
    for (int j = 0; j < kFeatures; ++j) error += model.weight[j] * s.x[j];
    for (int j = 0; j < kFeatures; ++j) gradient.weight[j] += error * s.x[j] / kBatch;
    gradient.bias[0] += error / kBatch;
  }
}

void applyGradient(Model& model, const Model& gradient, double learningRate) {
  for (size_t j = 0; j < model.weight.size(); ++j)
    model.weight[j] -= learningRate * gradient.weight[j];
  model.bias[0] -= learningRate * gradient.bias[0];
}

}  // namespace elastic_example
