// The trainer's models, optimisers and learning-rate schedules as LibTorch
// objects. Internal to workers/torch: this header includes <torch/torch.h>,
// so only the trainer's and the benchmark's .cpp files include it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "core/result.hpp"
#include "trials/spec/recipe/torch_recipe.hpp"

namespace hpo::workers::torch_trainer {

// Dropout drawing its masks from its own generator, so a trial's masks depend on its seed
// only, not on the other trials training in the same process at the same time (the
// global generator that torch::nn::Dropout uses is shared by every slot's thread).
// On CUDA tensors it falls back to torch::dropout (the device's generator).
class SeededDropoutImpl : public torch::nn::Module {
 public:
  SeededDropoutImpl(double p, std::uint64_t seed);
  torch::Tensor forward(const torch::Tensor& x);
  // Its generator (a checkpoint saves and restores its state).
  at::Generator& generator() { return generator_; }

 private:
  double p_;
  at::Generator generator_;
};
TORCH_MODULE(SeededDropout);

// mlp: Flatten, [Linear, BatchNorm1d?, activation, Dropout?] per hidden layer, Linear.
// cnn: [Conv2d, BatchNorm2d?, activation, MaxPool2d(2) when pool=each] per block,
//      MaxPool2d(2) when pool=last, Dropout?, Flatten, [Linear, activation, Dropout?]
//      per dense layer, Linear. `sample_shape` is {features} or {c, h, w}.
Result<torch::nn::Sequential> build_model(const trials::ResolvedModel& model,
                                          const std::vector<std::int64_t>& sample_shape,
                                          std::int64_t outputs, std::uint64_t dropout_seed = 0);

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const trials::ResolvedOptimizer& o,
                                                        std::vector<torch::Tensor> params);

// The learning rate at global step `step` (0-based) of `steps_per_epoch * epochs`.
double learning_rate(const trials::ResolvedOptimizer& o, const trials::ResolvedSchedule& s,
                     std::int64_t step, std::int64_t steps_per_epoch, std::int64_t epochs);

void set_learning_rate(torch::optim::Optimizer& opt, double lr);

}  // namespace hpo::workers::torch_trainer
