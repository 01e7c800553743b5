// The training loop. Per epoch: one seeded permutation, then batches gathered
// with index_select from the whole training tensor (no per-sample copies, no
// DataLoader threads: on a 2-core worker the intra-op threads already use the
// cores), forward, loss, backward, step. The loss is read back once per batch
// — needed anyway to fail fast on NaN — and should_stop() (an atomic load) is
// checked between batches, so a pruned trial stops within one batch.
//
// Data-parallel (options.group, see data_parallel.hpp): every rank draws the
// same permutation and takes its slice of each global batch; gradients (or,
// every H steps, parameters) are averaged with one collective that also carries
// the stop/diverged flags, so all ranks leave the loop at the same step. Only
// rank 0 evaluates, reports and keeps artifacts.
//
// Reproducibility: weight initialisation and dropout use LibTorch's global
// generator, seeded under a process-wide mutex while the model is built;
// shuffling uses a private generator. One trial per process is bit-for-bit
// reproducible on CPU; concurrent slots with dropout share the global generator.
#include "workers/torch/trainer.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include "workers/torch/model.hpp"
#include "workers/torch/sync.hpp"
#include "workers/torch/train_state.hpp"

namespace hpo::workers::torch_trainer {
namespace {

using Clock = std::chrono::steady_clock;
using train_state::Eval;
using train_state::evaluate;
using train_state::load_checkpoint;
using train_state::put_eval;
using train_state::Resume;
using train_state::save_checkpoint;
using train_state::seed_mutex;
using train_state::serialize_model;
using train_state::to_matrix;

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

torch::Tensor features_tensor(const Split& s, const std::vector<std::int64_t>& sample_shape) {
  std::vector<std::int64_t> shape{s.rows};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
  return torch::from_blob(const_cast<float*>(s.x.data()), shape, torch::kFloat);
}

torch::Tensor targets_tensor(const Split& s, bool classification) {
  auto y = torch::from_blob(const_cast<float*>(s.y.data()), {s.rows}, torch::kFloat);
  return classification ? y.to(torch::kLong) : y.view({s.rows, 1});
}

void set_blas_threads(int n) {
  using SetThreads = void (*)(int);
  // OpenBLAS reads OPENBLAS_NUM_THREADS when it is loaded, before main(), so
  // setting the variable now is too late: ask the library itself.
  static const auto fn =
      reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (fn) fn(n);
}

// For a BLAS-heavy layout, every epoch: after kWarm steps, kProbe steps with BLAS's threads,
// kProbe with one, then the rest of the epoch with the faster. Conditions on a shared host
// change over minutes, so each epoch measures again; the probe costs nothing measurable (the
// slower half of 2 * kProbe steps out of hundreds).
class BlasProbe {
 public:
  explicit BlasProbe(ThreadLayout& layout) : layout_(layout), active_(layout.blas_heavy()) {}
  void at_step(std::int64_t b) {
    if (!active_ || b > kWarm + 2 * kProbe) return;
    const auto now = Clock::now();
    if (b == kWarm) {
      layout_.use_blas_threads(true);
    } else if (b == kWarm + kProbe) {
      many_ = now - start_;
      layout_.use_blas_threads(false);
    } else if (b == kWarm + 2 * kProbe) {
      layout_.use_blas_threads(many_ <= now - start_);
    }
    if (b == kWarm || b == kWarm + kProbe) start_ = now;
  }

 private:
  static constexpr std::int64_t kWarm = 4, kProbe = 16;
  ThreadLayout& layout_;
  bool active_;
  Clock::time_point start_;
  Clock::duration many_{};
};

// One training, its state kept across the phases train_impl() runs in turn:
// set_up() (the model, the optimiser, the collectives' state, the resume
// point, the data on the device), run_epochs() (each epoch's batches, then
// rank 0's evaluation and report) and finish() (the final metrics and
// artifacts). A phase that ends the training early returns false with the
// result's end set; the members are declared in the order the steps need
// them, so they are built and torn down as the loop's locals were.
class Training {
 public:
  Training(const trials::ResolvedTorchConfig& cfg, const PreparedData& data,
           const TrainOptions& options, Reporter& reporter)
      : cfg_(cfg),
        data_(data),
        options_(options),
        reporter_(reporter),
        classification_(cfg.task == trials::TorchTask::kClassification),
        cuda_(options.gpu >= 0 && torch::cuda::is_available()),
        layout_(cfg.model, std::max(1, options.threads), cuda_),
        device_(cuda_ ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(options.gpu))
                      : torch::Device(torch::kCPU)),
        group_(options.group),
        world_(group_ ? group_->config().world : 1),
        rank_(group_ ? group_->config().rank : 0),
        averaging_(group_ && group_->config().average),
        average_every_(group_ ? std::max(1, group_->config().average_every) : 1),
        shuffle_(at::detail::createCPUGenerator(options.seed ^ 0x5DEECE66DULL)),
        probe_(layout_) {}

  TrainOutput take_result() { return std::move(result_); }

  // False when the model does not fit the data or the checkpoint to resume
  // from does not load into it.
  bool set_up() {
    {
      std::lock_guard lock(seed_mutex());
      torch::manual_seed(options_.seed);
      // Dropout masks: from the trial's seed, a different stream on each data-parallel rank.
      const auto rank =
          static_cast<std::uint64_t>(options_.group ? options_.group->config().rank : 0);
      auto built =
          build_model(cfg_.model, data_.sample_shape, classification_ ? data_.num_classes : 1,
                      options_.seed ^ (0xD1B54A32D192ED03ULL * rank));
      if (!built) return fail(built.error().message);
      model_ = *built;
    }
    model_->to(device_);
    state_ = model_->parameters();
    for (const auto& b : model_->buffers()) state_.push_back(b);
    if (group_) broadcast_from_root(*group_, state_);  // one start for every rank
    optimizer_ = make_optimizer(cfg_.optimizer, model_->parameters());
    if (group_ && !averaging_) reducer_.emplace(*group_, model_->parameters());
    if (!options_.resume.empty() && !resume_from_checkpoint()) return false;

    x_ = features_tensor(data_.train, data_.sample_shape).to(device_);
    y_ = targets_tensor(data_.train, classification_).to(device_);
    xv_ = features_tensor(data_.validation, data_.sample_shape).to(device_);
    yv_ = targets_tensor(data_.validation, classification_).to(device_);
    n_ = data_.train.rows;
    bs_ = std::min(cfg_.batch_size, n_);
    steps_per_epoch_ = (n_ + bs_ - 1) / bs_;
    scheduled_ =
        cfg_.schedule.type != trials::ScheduleType::kConstant || cfg_.schedule.warmup_epochs > 0;
    step_ = resume_.step;
    return true;
  }

  // False when the training ended inside an epoch (stopped or diverged).
  bool run_epochs() {
    for (std::int64_t epoch = resume_.epoch; epoch < cfg_.epochs; ++epoch) {
      Epoch e;
      if (!train_epoch(epoch, e)) return false;
      if (rank_ != 0) continue;  // rank 0 evaluates and reports for the trial
      if (!end_epoch(epoch, e)) return false;
    }
    return true;
  }

  void finish() {
    if (pending_.stop) {
      result_.end = TrainOutput::End::kStopped;
      return;
    }
    if (rank_ != 0) {  // the model only, to compare ranks
      if (options_.keep_artifacts) result_.model_bytes = serialize_model(model_, data_, options_);
      return;
    }
    put_run_metrics();
    evaluate_final();
  }

 private:
  // Where an epoch is: its permutation and its running loss.
  struct Epoch {
    torch::Tensor perm;
    double loss_sum = 0;
    std::int64_t seen = 0;
  };

  bool fail(const std::string& error) {
    result_.end = TrainOutput::End::kFailed;
    result_.error = error;
    return false;
  }

  bool resume_from_checkpoint() {
    auto loaded = load_checkpoint(options_.resume, model_, *optimizer_, shuffle_, device_);
    if (!loaded) return fail(loaded.error().message);
    resume_ = std::move(*loaded);
    // The optimiser's state comes back with the learning rate it had; this
    // trial's own wins (a PBT exploit goes on from another trial's
    // checkpoint with an explored rate).
    set_learning_rate(*optimizer_, cfg_.optimizer.lr);
    reporter_.log(fmt::format("torch: resuming from a checkpoint at epoch {}, batch {}",
                              resume_.epoch + 1, resume_.batch + 1));
    return true;
  }

  // True, with the result's end set, when the flags end the training.
  bool stop_here(const SyncFlags& flags, std::int64_t epoch, std::int64_t b, double lr,
                 float value) {
    if (flags.diverged) {
      std::ostringstream why;
      why << "training diverged: loss is " << value << " at epoch " << epoch + 1 << ", batch "
          << b + 1 << " (learning rate " << lr << ")" << (group_ ? " on some rank" : "");
      result_.end = TrainOutput::End::kDiverged;
      result_.error = why.str();
      return true;
    }
    if (flags.stop) {
      result_.end = TrainOutput::End::kStopped;
      return true;
    }
    return false;
  }

  // Timed without rank 0's evaluation: train_s is the time spent training.
  bool train_epoch(std::int64_t epoch, Epoch& e) {
    const auto t0 = Clock::now();
    const bool resumed_inside = epoch == resume_.epoch && resume_.perm.defined();
    e.perm = resumed_inside ? resume_.perm.to(device_)
                            : torch::randperm(n_, shuffle_, torch::kLong).to(device_);
    e.loss_sum = resumed_inside ? resume_.loss_sum : 0;
    e.seen = resumed_inside ? resume_.seen : 0;
    for (std::int64_t b = resumed_inside ? resume_.batch : 0; b < steps_per_epoch_; ++b)
      if (!train_batch(epoch, b, e)) return false;
    if (averaging_ && step_ % average_every_ != 0) {  // evaluate the averaged model
      pending_ = average_parameters(*group_, state_, pending_);
      if (stop_here(pending_, epoch, steps_per_epoch_ - 1, cfg_.optimizer.lr, NAN)) return false;
    }
    train_s_ += seconds_since(t0);
    samples_ += e.seen * world_;
    return true;
  }

  // This rank's slice of global batch b; false when the training ends at it.
  bool train_batch(std::int64_t epoch, std::int64_t b, Epoch& e) {
    probe_.at_step(b);
    pending_.stop = pending_.stop || reporter_.should_stop();
    if (!group_ && pending_.stop) {
      // Drained or preempted: what it did so far is kept for the next attempt.
      if (options_.checkpoint && checkpoint_stop(reporter_.stop_reason()))
        options_.checkpoint(
            save_checkpoint(model_, *optimizer_,
                            Resume{epoch, b, step_, e.seen, e.loss_sum, e.perm}, shuffle_),
            epoch, b);
      result_.end = TrainOutput::End::kStopped;
      return false;
    }
    const std::int64_t start = b * bs_, full = std::min(bs_, n_ - start);
    // Every rank skips the same batches (too small to share or to batch-normalise).
    if (full < 2 * world_ && (cfg_.model.batch_norm || full < world_)) return true;
    const std::int64_t lo = start + rank_ * full / world_, hi = start + (rank_ + 1) * full / world_;
    const std::int64_t len = hi - lo;
    const auto idx = e.perm.narrow(0, lo, len);
    const double lr = scheduled_ ? learning_rate(cfg_.optimizer, cfg_.schedule, step_,
                                                 steps_per_epoch_, cfg_.epochs)
                                 : cfg_.optimizer.lr;
    if (scheduled_) set_learning_rate(*optimizer_, lr);
    if (step_ == 0) first_step_unix_ms_ = unix_ms();
    model_->zero_grad(/*set_to_none=*/true);
    auto out = model_->forward(x_.index_select(0, idx));
    auto yb = y_.index_select(0, idx);
    auto loss =
        classification_ ? torch::nn::functional::cross_entropy(out, yb) : torch::mse_loss(out, yb);
    const float value = loss.item<float>();
    pending_.diverged = pending_.diverged || !std::isfinite(value);
    if (reducer_) reducer_->prepare(pending_);
    if (!pending_.diverged) loss.backward();
    if (reducer_) pending_ = reducer_->finish();
    if ((!group_ || !averaging_) && stop_here(pending_, epoch, b, lr, value)) return false;
    if (!pending_.diverged) optimizer_->step();
    e.loss_sum += static_cast<double>(value) * static_cast<double>(len);
    e.seen += len;
    ++step_;
    if (averaging_ && step_ % average_every_ == 0) {
      const auto a0 = Clock::now();
      pending_ = average_parameters(*group_, state_, pending_);
      average_s_ += seconds_since(a0);
      if (stop_here(pending_, epoch, b, lr, value)) return false;
    }
    return true;
  }

  // Rank 0 after an epoch: evaluation, report, checkpoint. False when the
  // training ends here (diverged, or stopped where no peer has to hear it).
  bool end_epoch(std::int64_t epoch, const Epoch& e) {
    const bool last = epoch + 1 == cfg_.epochs;
    val_ = evaluate(model_, xv_, yv_, classification_, cfg_.eval_batch_size,
                    last && options_.keep_artifacts);
    trials::Metrics m;
    m["train_loss"] = e.seen ? e.loss_sum / static_cast<double>(e.seen) : 0;
    put_eval(m, "val_", val_, classification_);
    put_eval(m, "", val_, classification_);
    m["epoch"] = static_cast<double>(epoch + 1);
    m["lr"] = scheduled_ ? learning_rate(cfg_.optimizer, cfg_.schedule,
                                         std::max<std::int64_t>(0, step_ - 1), steps_per_epoch_,
                                         cfg_.epochs)
                         : cfg_.optimizer.lr;
    result_.metrics = m;
    if (!std::isfinite(val_.loss)) {
      result_.end = TrainOutput::End::kDiverged;
      result_.error = "training diverged: validation loss is not finite after epoch " +
                      std::to_string(epoch + 1);
      return false;
    }
    if (options_.checkpoint && (!last || options_.checkpoint_last))
      options_.checkpoint(
          save_checkpoint(model_, *optimizer_, Resume{epoch + 1, 0, step_, 0, 0, {}}, shuffle_),
          epoch + 1, 0);
    if (!reporter_.report(epoch + 1, m) || reporter_.should_stop()) {
      pending_.stop = true;  // data-parallel: the others hear it in the next collective
      if (!group_ || last) {
        result_.end = TrainOutput::End::kStopped;
        return false;
      }
    }
    return true;
  }

  // Throughput, step time and what synchronisation cost, over the whole run.
  void put_run_metrics() {
    result_.metrics["train_samples_per_s"] =
        train_s_ > 0 ? static_cast<double>(samples_) / train_s_ : 0;
    result_.metrics["train_time_s"] = train_s_;
    if (step_ > 0) result_.metrics["step_ms"] = 1000 * train_s_ / static_cast<double>(step_);
    // Data-parallel: what keeping the ranks in step cost each step on rank 0's critical path.
    if (reducer_ && reducer_->stats().steps > 0) {
      const auto& s = reducer_->stats();
      result_.metrics["sync_ms_per_step"] =
          1000 * (s.hook_s + s.finish_s) / static_cast<double>(s.steps);
      result_.metrics["gradient_buckets"] = static_cast<double>(reducer_->buckets());
    } else if (averaging_ && step_ > 0) {
      result_.metrics["sync_ms_per_step"] = 1000 * average_s_ / static_cast<double>(step_);
    }
    if (first_step_unix_ms_)
      result_.metrics[kFirstStepUnixMs] = static_cast<double>(first_step_unix_ms_);
  }

  // The test and out-of-bag evaluations, and the artifacts rank 0 keeps.
  void evaluate_final() {
    if (data_.has_test) {
      const auto xt = features_tensor(data_.test, data_.sample_shape).to(device_);
      const auto yt = targets_tensor(data_.test, classification_).to(device_);
      Eval test =
          evaluate(model_, xt, yt, classification_, cfg_.eval_batch_size, options_.keep_artifacts);
      put_eval(result_.metrics, "test_", test, classification_);
      result_.has_test = true;
      if (options_.keep_artifacts)
        result_.test_predictions = to_matrix(test, data_.test, classification_);
    }
    if (data_.has_oob && data_.oob.rows > 0 && options_.keep_artifacts) {
      const auto xo = features_tensor(data_.oob, data_.sample_shape).to(device_);
      const auto yo = targets_tensor(data_.oob, classification_).to(device_);
      Eval oob = evaluate(model_, xo, yo, classification_, cfg_.eval_batch_size, true);
      result_.oob_predictions = to_matrix(oob, data_.oob, classification_);
      result_.has_oob = true;
    }
    if (options_.keep_artifacts) {
      result_.val_predictions = to_matrix(val_, data_.validation, classification_);
      result_.model_bytes = serialize_model(model_, data_, options_);
    }
  }

  const trials::ResolvedTorchConfig& cfg_;
  const PreparedData& data_;
  const TrainOptions& options_;
  Reporter& reporter_;
  TrainOutput result_;
  const bool classification_;
  const bool cuda_;
  ThreadLayout layout_;
  const torch::Device device_;
  torch::nn::Sequential model_{nullptr};
  ParallelGroup* const group_;
  const int world_;
  const int rank_;
  const bool averaging_;
  const std::int64_t average_every_;
  std::vector<torch::Tensor> state_;  // what averaging averages
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::optional<GradientReducer> reducer_;  // allreduce: gradients in buckets during backward
  double average_s_ = 0;                    // average: time in the parameter averages
  at::Generator shuffle_;
  Resume resume_;
  torch::Tensor x_, y_, xv_, yv_;  // training and validation data on the device
  std::int64_t n_ = 0, bs_ = 0, steps_per_epoch_ = 0;
  bool scheduled_ = false;
  std::int64_t step_ = 0, samples_ = 0;
  double train_s_ = 0;
  Eval val_;
  SyncFlags pending_;  // data-parallel: flags waiting for the next collective
  BlasProbe probe_;
  std::int64_t first_step_unix_ms_ = 0;  // wall clock: the executor relates it to the claim
};

TrainOutput train_impl(const trials::ResolvedTorchConfig& cfg, const PreparedData& data,
                       const TrainOptions& options, Reporter& reporter) {
  Training training(cfg, data, options, reporter);
  if (training.set_up() && training.run_epochs()) training.finish();
  return training.take_result();
}

}  // namespace

namespace {

std::mutex& layout_mutex() {
  static std::mutex m;
  return m;
}

// BLAS threads wanted by the trainings running now; OpenBLAS gets more than one
// only while a single training runs in this process.
std::multiset<int>& blas_wants() {
  static std::multiset<int> w;
  return w;
}

int& blas_current() {
  static int current = 0;
  return current;
}

void apply_blas(int n) {
  if (n != blas_current()) set_blas_threads(n);
  blas_current() = n;
}

void apply_blas_wants() {
  apply_blas(blas_wants().size() == 1 ? *blas_wants().begin() : 1);
}

}  // namespace

ThreadLayout::ThreadLayout(const trials::ResolvedModel& model, int threads, bool on_gpu) {
  const bool blas_heavy = !on_gpu && model.type == trials::ModelType::kMlp;
  threads = std::max(1, threads);
  blas_ = blas_heavy ? threads : 1;
  // This thread's OpenMP team size. ATen applies its process-wide count to a thread at the
  // thread's first parallel op; doing that first keeps another slot's count from replacing ours.
  at::internal::lazy_init_num_threads();
  torch::set_num_threads(blas_heavy ? 1 : threads);
  std::lock_guard lock(layout_mutex());
  blas_wants().insert(blas_);
  apply_blas_wants();
}

void ThreadLayout::use_blas_threads(bool many) {
  std::lock_guard lock(layout_mutex());
  if (blas_wants().size() == 1) apply_blas(many ? blas_ : 1);
}

ThreadLayout::~ThreadLayout() {
  std::lock_guard lock(layout_mutex());
  blas_wants().erase(blas_wants().find(blas_));
  apply_blas_wants();
}

const char* to_string(TrainOutput::End end) {
  switch (end) {
    case TrainOutput::End::kCompleted:
      return "completed";
    case TrainOutput::End::kStopped:
      return "stopped";
    case TrainOutput::End::kDiverged:
      return "diverged";
    case TrainOutput::End::kFailed:
      return "failed";
  }
  return "failed";
}

TrainOutput::End end_from_string(std::string_view text) {
  for (auto e :
       {TrainOutput::End::kCompleted, TrainOutput::End::kStopped, TrainOutput::End::kDiverged})
    if (text == to_string(e)) return e;
  return TrainOutput::End::kFailed;
}

TrainOutput train_model(const trials::ResolvedTorchConfig& config, const PreparedData& data,
                        const TrainOptions& options, Reporter& reporter) {
  try {
    return train_impl(config, data, options, reporter);
  } catch (const std::exception& e) {  // c10::Error derives from std::exception
    TrainOutput out;
    out.end = TrainOutput::End::kFailed;
    out.error = std::string("LibTorch: ") + e.what();
    // c10 messages carry a long C++ backtrace; the first lines say what happened.
    if (auto cut = out.error.find("\nException raised from"); cut != std::string::npos)
      out.error.resize(cut);
    return out;
  }
}

bool cuda_available() {
  return torch::cuda::is_available();
}

}  // namespace hpo::workers::torch_trainer
