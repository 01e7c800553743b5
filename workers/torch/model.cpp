// Builds the torch::nn::Sequential for a resolved model and the optimiser.
// Shapes are computed arithmetically (no dry-run forward), so a configuration
// that pools a 28×28 image down to nothing fails with a clear message before
// any tensor is allocated.
#include "workers/torch/model.hpp"

#include <cmath>
#include <numbers>
#include <string>

#include "search/rng.hpp"

namespace hpo::workers::torch_trainer {
namespace {

using trials::Activation;

void add_activation(torch::nn::Sequential& seq, Activation a) {
  switch (a) {
    case Activation::kRelu:
      seq->push_back(torch::nn::ReLU());
      break;
    case Activation::kTanh:
      seq->push_back(torch::nn::Tanh());
      break;
    case Activation::kGelu:
      seq->push_back(torch::nn::GELU());
      break;
    case Activation::kLeakyRelu:
      seq->push_back(torch::nn::LeakyReLU());
      break;
    case Activation::kElu:
      seq->push_back(torch::nn::ELU());
      break;
    case Activation::kSilu:
      seq->push_back(torch::nn::SiLU());
      break;
  }
}

// Dropout layer i draws from its own stream of the trial's seed.
std::uint64_t layer_seed(std::uint64_t seed, std::uint64_t layer) {
  return search::splitmix64(seed + 0x9E3779B97F4A7C15ULL * layer);
}

Error model_error(std::string message) {
  return Error{ErrorCode::kInvalidArgument, "model: " + std::move(message), {}};
}

}  // namespace

SeededDropoutImpl::SeededDropoutImpl(double p, std::uint64_t seed)
    : p_(p), generator_(at::detail::createCPUGenerator(seed)) {}

torch::Tensor SeededDropoutImpl::forward(const torch::Tensor& x) {
  if (!is_training() || p_ <= 0) return x;
  if (!x.device().is_cpu()) return torch::dropout(x, p_, /*train=*/true);
  const double keep = 1.0 - p_;
  auto mask = torch::empty_like(x, x.options().requires_grad(false));
  mask.bernoulli_(keep, generator_);
  return x * mask.div_(keep);
}

Result<torch::nn::Sequential> build_model(const trials::ResolvedModel& m,
                                          const std::vector<std::int64_t>& sample_shape,
                                          std::int64_t outputs, std::uint64_t dropout_seed) {
  torch::nn::Sequential seq;
  std::uint64_t dropouts = 0;
  auto dropout = [&] {
    if (m.dropout > 0)
      seq->push_back(SeededDropout(m.dropout, layer_seed(dropout_seed, dropouts++)));
  };
  std::int64_t features = 1;
  for (auto d : sample_shape) features *= d;
  auto dense_stack = [&](std::int64_t in, const std::vector<std::int64_t>& widths) {
    for (auto w : widths) {
      seq->push_back(torch::nn::Linear(in, w));
      if (m.batch_norm && m.type == trials::ModelType::kMlp)
        seq->push_back(torch::nn::BatchNorm1d(w));
      add_activation(seq, m.activation);
      dropout();
      in = w;
    }
    seq->push_back(torch::nn::Linear(in, outputs));
  };
  if (m.type == trials::ModelType::kMlp) {
    seq->push_back(torch::nn::Flatten());
    dense_stack(features, m.layers);
    return seq;
  }
  if (sample_shape.size() != 3)
    return model_error("cnn needs images (channels × height × width), the data has " +
                       std::to_string(features) + " features per row");
  std::int64_t c = sample_shape[0], h = sample_shape[1], w = sample_shape[2];
  const std::int64_t pad = m.same_padding ? m.kernel / 2 : 0;
  auto pool = [&] {
    seq->push_back(torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)));
    h /= 2;
    w /= 2;
  };
  for (auto out : m.channels) {
    seq->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(c, out, m.kernel).padding(pad)));
    h = h + 2 * pad - m.kernel + 1;
    w = w + 2 * pad - m.kernel + 1;
    if (m.batch_norm) seq->push_back(torch::nn::BatchNorm2d(out));
    add_activation(seq, m.activation);
    if (m.pool == trials::PoolMode::kEach) pool();
    c = out;
    if (h < 1 || w < 1)
      return model_error("the conv blocks shrink the " + std::to_string(sample_shape[1]) + "×" +
                         std::to_string(sample_shape[2]) +
                         " images to nothing (fewer blocks, a smaller kernel or padding same)");
  }
  if (m.pool == trials::PoolMode::kLast) pool();
  if (h < 1 || w < 1) return model_error("pooling shrinks the images to nothing");
  dropout();
  seq->push_back(torch::nn::Flatten());
  dense_stack(c * h * w, m.dense);
  return seq;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const trials::ResolvedOptimizer& o,
                                                        std::vector<torch::Tensor> params) {
  using namespace torch::optim;
  switch (o.type) {
    case trials::OptimizerType::kAdam:
      return std::make_unique<Adam>(
          std::move(params),
          AdamOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
    case trials::OptimizerType::kAdamW:
      return std::make_unique<AdamW>(
          std::move(params),
          AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
    case trials::OptimizerType::kSgd:
      break;
  }
  return std::make_unique<SGD>(
      std::move(params),
      SGDOptions(o.lr).momentum(o.momentum).nesterov(o.nesterov).weight_decay(o.weight_decay));
}

double learning_rate(const trials::ResolvedOptimizer& o, const trials::ResolvedSchedule& s,
                     std::int64_t step, std::int64_t steps_per_epoch, std::int64_t epochs) {
  const std::int64_t warmup = s.warmup_epochs * steps_per_epoch;
  if (step < warmup) return o.lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  switch (s.type) {
    case trials::ScheduleType::kConstant:
      return o.lr;
    case trials::ScheduleType::kStep: {
      auto epoch = step / std::max<std::int64_t>(1, steps_per_epoch);
      return o.lr * std::pow(s.gamma, static_cast<double>(epoch / s.step_size));
    }
    case trials::ScheduleType::kCosine: {
      const double total =
          static_cast<double>(std::max<std::int64_t>(1, steps_per_epoch * epochs - warmup));
      const double t = std::min(1.0, static_cast<double>(step - warmup) / total);
      return s.min_lr + (o.lr - s.min_lr) * 0.5 * (1 + std::cos(std::numbers::pi * t));
    }
  }
  return o.lr;
}

void set_learning_rate(torch::optim::Optimizer& opt, double lr) {
  for (auto& group : opt.param_groups()) group.options().set_lr(lr);
}

}  // namespace hpo::workers::torch_trainer
