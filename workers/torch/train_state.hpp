// What a training keeps and hands on besides its loop (trainer.cpp): a model's
// evaluation on a split (loss, accuracy or RMSE, the predictions when kept),
// the serialized model with what prediction needs to read inputs as training
// did, and checkpoints that resume at a batch boundary as if the loop had never
// stopped. Internal to workers/torch; includes LibTorch.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include <torch/torch.h>

#include "core/result.hpp"
#include "workers/torch/trainer.hpp"

namespace hpo::workers::torch_trainer::train_state {

// LibTorch's global generator (weight initialisation, dropout) is seeded,
// saved and restored under this process-wide mutex.
std::mutex& seed_mutex();

struct Eval {
  double loss = 0;
  double accuracy = 0;    // classification
  double rmse = 0;        // regression
  torch::Tensor outputs;  // probabilities or values, CPU, when kept
};

// The model on a split, in batches of `batch` rows, without gradients; the
// outputs (probabilities or values, on the CPU) only when `keep`.
Eval evaluate(torch::nn::Sequential& model, const torch::Tensor& x, const torch::Tensor& y,
              bool classification, std::int64_t batch, bool keep);
// The evaluation as metrics "<prefix>loss" and "<prefix>accuracy" or "<prefix>rmse".
void put_eval(trials::Metrics& m, const std::string& prefix, const Eval& e, bool classification);
// Kept outputs as the prediction matrix of split `s` (its labels and row ids).
PredictionMatrix to_matrix(const Eval& e, const Split& s, bool classification);
// The model (moved to the CPU) with its input shape, class count,
// standardisation and feature selection: the artifact model.pt.
std::string serialize_model(torch::nn::Sequential& model, const PreparedData& data,
                            const TrainOptions& options);

// A checkpoint: everything the loop needs to go on from a batch boundary as
// if it had never stopped — the model's parameters and buffers, the
// optimiser's state, where it was (epoch, next batch, step, the epoch's
// permutation and running loss), and both generators (shuffling, and the
// global one dropout draws from).
struct Resume {
  std::int64_t epoch = 0, batch = 0, step = 0, seen = 0;
  double loss_sum = 0;
  torch::Tensor perm;  // defined when it stopped inside an epoch
};

std::string save_checkpoint(torch::nn::Sequential& model, torch::optim::Optimizer& optimizer,
                            const Resume& at, at::Generator& shuffle);
// kInvalid when the bytes are not a checkpoint of this model and optimiser.
Result<Resume> load_checkpoint(const std::string& bytes, torch::nn::Sequential& model,
                               torch::optim::Optimizer& optimizer, at::Generator& shuffle,
                               const torch::Device& device);

}  // namespace hpo::workers::torch_trainer::train_state
