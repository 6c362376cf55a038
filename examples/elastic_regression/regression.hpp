// The example's model and data: linear regression, y = w.x + b, on samples generated from their
// global index alone, so that any rank computes any sample and the gradient of a step is the same
// sum whichever world size shares it out.
#pragma once

#include <cstdint>
#include <vector>

namespace elastic_example {

constexpr int kFeatures = 8;
constexpr int kBatch = 64;  // samples per step, over the whole world

struct Model {
  std::vector<double> weight = std::vector<double>(kFeatures, 0.0);
  std::vector<double> bias = std::vector<double>(1, 0.0);
};

// This rank's part of step `step`'s mean-squared-error gradient, written into gradient's
// buffers (they keep their addresses): the sum over the samples
// s*kBatch + i with i % worldSize == rank, divided by the batch. Summed over the world (in any
// order) it is the full batch's gradient, up to rounding.
void shardGradient(const Model& model, uint64_t seed, int64_t step, int rank, int worldSize,
                   Model& gradient);

// One step of gradient descent with the world's gradient.
void applyGradient(Model& model, const Model& gradient, double learningRate);

}  // namespace elastic_example
