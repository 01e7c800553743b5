#include "workers/torch/train_state.hpp"

#include <cmath>
#include <sstream>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>

#include "workers/torch/model.hpp"

namespace hpo::workers::torch_trainer::train_state {
namespace {

// The model's dropout layers' generators, in order.
std::vector<at::Generator*> dropout_generators(torch::nn::Sequential& model) {
  std::vector<at::Generator*> out;
  for (const auto& m : model->modules(/*include_self=*/false))
    if (auto* d = m->as<SeededDropoutImpl>()) out.push_back(&d->generator());
  return out;
}

}  // namespace

std::mutex& seed_mutex() {
  static std::mutex mu;
  return mu;
}

Eval evaluate(torch::nn::Sequential& model, const torch::Tensor& x, const torch::Tensor& y,
              bool classification, std::int64_t batch, bool keep) {
  torch::NoGradGuard no_grad;
  model->eval();
  const std::int64_t n = x.size(0);
  double loss = 0, correct = 0;
  std::vector<torch::Tensor> kept;
  for (std::int64_t s = 0; s < n; s += batch) {
    const std::int64_t len = std::min(batch, n - s);
    auto out = model->forward(x.narrow(0, s, len));
    auto yb = y.narrow(0, s, len);
    if (classification) {
      loss += torch::nn::functional::cross_entropy(
                  out, yb, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                  .item<double>();
      correct += out.argmax(1).eq(yb).sum().item<double>();
      if (keep) kept.push_back(torch::softmax(out, 1).cpu());
    } else {
      loss += (out - yb).pow(2).sum().item<double>();
      if (keep) kept.push_back(out.cpu());
    }
  }
  model->train();
  Eval e;
  e.loss = loss / static_cast<double>(n);
  e.accuracy = correct / static_cast<double>(n);
  e.rmse = std::sqrt(e.loss);
  if (keep) e.outputs = torch::cat(kept).contiguous();
  return e;
}

void put_eval(trials::Metrics& m, const std::string& prefix, const Eval& e, bool classification) {
  m[prefix + "loss"] = e.loss;
  if (classification)
    m[prefix + "accuracy"] = e.accuracy;
  else
    m[prefix + "rmse"] = e.rmse;
}

PredictionMatrix to_matrix(const Eval& e, const Split& s, bool classification) {
  PredictionMatrix m;
  m.regression = !classification;
  m.rows = e.outputs.size(0);
  m.cols = e.outputs.size(1);
  const float* p = e.outputs.data_ptr<float>();
  m.values.assign(p, p + m.rows * m.cols);
  m.labels = s.y;
  m.row_ids = s.row_ids;
  return m;
}

std::string serialize_model(torch::nn::Sequential& model, const PreparedData& data,
                            const TrainOptions& options) {
  torch::serialize::OutputArchive archive;
  model->to(torch::kCPU);
  model->save(archive);
  auto i64 = [](const std::vector<std::int64_t>& v) {
    return torch::tensor(v.empty() ? std::vector<std::int64_t>{} : v, torch::kLong);
  };
  auto f32 = [](const std::vector<float>& v) { return torch::tensor(v, torch::kFloat); };
  archive.write("hpo.sample_shape", i64(data.sample_shape));
  archive.write("hpo.num_classes", torch::tensor({data.num_classes}, torch::kLong));
  archive.write("hpo.mean", f32(data.mean));
  archive.write("hpo.inv_std", f32(data.inv_std));
  archive.write("hpo.feature_index", i64(options.feature_index));
  std::int64_t inputs = options.input_features;
  if (inputs <= 0) {
    inputs = 1;
    for (auto d : data.sample_shape) inputs *= d;
  }
  archive.write("hpo.input_features", torch::tensor({inputs}, torch::kLong));
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

std::string save_checkpoint(torch::nn::Sequential& model, torch::optim::Optimizer& optimizer,
                            const Resume& at, at::Generator& shuffle) {
  torch::serialize::OutputArchive archive, model_archive, optimizer_archive;
  model->save(model_archive);
  optimizer.save(optimizer_archive);
  archive.write("model", model_archive);
  archive.write("optimizer", optimizer_archive);
  archive.write("position", torch::tensor({at.epoch, at.batch, at.step, at.seen}, torch::kLong));
  archive.write("loss_sum", torch::tensor({at.loss_sum}, torch::kDouble));
  if (at.perm.defined()) archive.write("perm", at.perm.to(torch::kCPU));
  archive.write("shuffle_rng", shuffle.get_state());
  const auto dropouts = dropout_generators(model);
  for (std::size_t i = 0; i < dropouts.size(); ++i)
    archive.write("dropout_rng." + std::to_string(i), dropouts[i]->get_state());
  {
    std::lock_guard lock(seed_mutex());
    archive.write("global_rng", at::detail::getDefaultCPUGenerator().get_state());
  }
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

Result<Resume> load_checkpoint(const std::string& bytes, torch::nn::Sequential& model,
                               torch::optim::Optimizer& optimizer, at::Generator& shuffle,
                               const torch::Device& device) {
  try {
    std::istringstream in(bytes);
    torch::serialize::InputArchive archive, model_archive, optimizer_archive;
    archive.load_from(in, device);
    archive.read("model", model_archive);
    model->load(model_archive);
    archive.read("optimizer", optimizer_archive);
    optimizer.load(optimizer_archive);
    torch::Tensor position, loss_sum, rng, global_rng;
    archive.read("position", position);
    archive.read("loss_sum", loss_sum);
    archive.read("shuffle_rng", rng);
    archive.read("global_rng", global_rng);
    position = position.to(torch::kCPU);
    Resume r;
    r.epoch = position[0].item<std::int64_t>();
    r.batch = position[1].item<std::int64_t>();
    r.step = position[2].item<std::int64_t>();
    r.seen = position[3].item<std::int64_t>();
    r.loss_sum = loss_sum.to(torch::kCPU)[0].item<double>();
    if (archive.try_read("perm", r.perm)) r.perm = r.perm.to(torch::kCPU);
    shuffle.set_state(rng.to(torch::kCPU));
    const auto dropouts = dropout_generators(model);
    for (std::size_t i = 0; i < dropouts.size(); ++i) {
      torch::Tensor state;
      archive.read("dropout_rng." + std::to_string(i), state);
      dropouts[i]->set_state(state.to(torch::kCPU));
    }
    {
      std::lock_guard lock(seed_mutex());
      at::Generator global = at::detail::getDefaultCPUGenerator();  // a handle to the one generator
      global.set_state(global_rng.to(torch::kCPU));
    }
    return r;
  } catch (const std::exception& e) {
    return Error::invalid("checkpoint", std::string("does not load into this model: ") + e.what());
  }
}

}  // namespace hpo::workers::torch_trainer::train_state
