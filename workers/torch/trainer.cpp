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

namespace hpo::workers::torch_trainer {
namespace {

using Clock = std::chrono::steady_clock;

std::mutex& seed_mutex() {
  static std::mutex mu;
  return mu;
}

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

struct Eval {
  double loss = 0;
  double accuracy = 0;    // classification
  double rmse = 0;        // regression
  torch::Tensor outputs;  // probabilities or values, CPU, when kept
};

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

// The model's dropout layers' generators, in order.
std::vector<at::Generator*> dropout_generators(torch::nn::Sequential& model) {
  std::vector<at::Generator*> out;
  for (const auto& m : model->modules(/*include_self=*/false))
    if (auto* d = m->as<SeededDropoutImpl>()) out.push_back(&d->generator());
  return out;
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

TrainOutput train_impl(const trials::ResolvedTorchConfig& cfg, const PreparedData& data,
                       const TrainOptions& options, Reporter& reporter) {
  TrainOutput result;
  const bool classification = cfg.task == trials::TorchTask::kClassification;
  const bool cuda = options.gpu >= 0 && torch::cuda::is_available();
  ThreadLayout layout(cfg.model, std::max(1, options.threads), cuda);
  const torch::Device device =
      cuda ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(options.gpu))
           : torch::Device(torch::kCPU);

  torch::nn::Sequential model{nullptr};
  {
    std::lock_guard lock(seed_mutex());
    torch::manual_seed(options.seed);
    // Dropout masks: from the trial's seed, a different stream on each data-parallel rank.
    const auto rank = static_cast<std::uint64_t>(options.group ? options.group->config().rank : 0);
    auto built = build_model(cfg.model, data.sample_shape, classification ? data.num_classes : 1,
                             options.seed ^ (0xD1B54A32D192ED03ULL * rank));
    if (!built) {
      result.end = TrainOutput::End::kFailed;
      result.error = built.error().message;
      return result;
    }
    model = *built;
  }
  model->to(device);
  ParallelGroup* const group = options.group;
  const int world = group ? group->config().world : 1;
  const int rank = group ? group->config().rank : 0;
  const bool averaging = group && group->config().average;
  const std::int64_t average_every = group ? std::max(1, group->config().average_every) : 1;
  std::vector<torch::Tensor> state = model->parameters();  // what averaging averages
  for (const auto& b : model->buffers()) state.push_back(b);
  if (group) broadcast_from_root(*group, state);  // one start for every rank
  auto optimizer = make_optimizer(cfg.optimizer, model->parameters());
  std::optional<GradientReducer> reducer;  // allreduce: gradients in buckets during backward
  if (group && !averaging) reducer.emplace(*group, model->parameters());
  double average_s = 0;  // average: time in the parameter averages
  at::Generator shuffle = at::detail::createCPUGenerator(options.seed ^ 0x5DEECE66DULL);
  Resume resume;
  if (!options.resume.empty()) {
    auto loaded = load_checkpoint(options.resume, model, *optimizer, shuffle, device);
    if (!loaded) {
      result.end = TrainOutput::End::kFailed;
      result.error = loaded.error().message;
      return result;
    }
    resume = std::move(*loaded);
    // The optimiser's state comes back with the learning rate it had; this
    // trial's own wins (a PBT exploit goes on from another trial's
    // checkpoint with an explored rate).
    set_learning_rate(*optimizer, cfg.optimizer.lr);
    reporter.log(fmt::format("torch: resuming from a checkpoint at epoch {}, batch {}",
                             resume.epoch + 1, resume.batch + 1));
  }

  const auto x = features_tensor(data.train, data.sample_shape).to(device);
  const auto y = targets_tensor(data.train, classification).to(device);
  const auto xv = features_tensor(data.validation, data.sample_shape).to(device);
  const auto yv = targets_tensor(data.validation, classification).to(device);
  const std::int64_t n = data.train.rows;
  const std::int64_t bs = std::min(cfg.batch_size, n);
  const std::int64_t steps_per_epoch = (n + bs - 1) / bs;
  const bool scheduled =
      cfg.schedule.type != trials::ScheduleType::kConstant || cfg.schedule.warmup_epochs > 0;

  std::int64_t step = resume.step, samples = 0;
  double train_s = 0;
  Eval val;
  SyncFlags pending;  // data-parallel: flags waiting for the next collective
  auto stop_here = [&](const SyncFlags& flags, std::int64_t epoch, std::int64_t b, double lr,
                       float value) {
    if (flags.diverged) {
      std::ostringstream why;
      why << "training diverged: loss is " << value << " at epoch " << epoch + 1 << ", batch "
          << b + 1 << " (learning rate " << lr << ")" << (group ? " on some rank" : "");
      result.end = TrainOutput::End::kDiverged;
      result.error = why.str();
      return true;
    }
    if (flags.stop) {
      result.end = TrainOutput::End::kStopped;
      return true;
    }
    return false;
  };
  BlasProbe probe(layout);
  std::int64_t first_step_unix_ms = 0;  // wall clock: the executor relates it to the claim
  for (std::int64_t epoch = resume.epoch; epoch < cfg.epochs; ++epoch) {
    const auto t0 = Clock::now();
    const bool resumed_inside = epoch == resume.epoch && resume.perm.defined();
    auto perm = resumed_inside ? resume.perm.to(device)
                               : torch::randperm(n, shuffle, torch::kLong).to(device);
    double loss_sum = resumed_inside ? resume.loss_sum : 0;
    std::int64_t seen = resumed_inside ? resume.seen : 0;
    for (std::int64_t b = resumed_inside ? resume.batch : 0; b < steps_per_epoch; ++b) {
      probe.at_step(b);
      pending.stop = pending.stop || reporter.should_stop();
      if (!group && pending.stop) {
        // Drained or preempted: what it did so far is kept for the next attempt.
        if (options.checkpoint && reporter.stop_reason() == StopReason::kShutdown)
          options.checkpoint(save_checkpoint(model, *optimizer,
                                             Resume{epoch, b, step, seen, loss_sum, perm}, shuffle),
                             epoch, b);
        result.end = TrainOutput::End::kStopped;
        return result;
      }
      const std::int64_t start = b * bs, full = std::min(bs, n - start);
      // Every rank skips the same batches (too small to share or to batch-normalise).
      if (full < 2 * world && (cfg.model.batch_norm || full < world)) continue;
      const std::int64_t lo = start + rank * full / world, hi = start + (rank + 1) * full / world;
      const std::int64_t len = hi - lo;
      const auto idx = perm.narrow(0, lo, len);
      const double lr =
          scheduled ? learning_rate(cfg.optimizer, cfg.schedule, step, steps_per_epoch, cfg.epochs)
                    : cfg.optimizer.lr;
      if (scheduled) set_learning_rate(*optimizer, lr);
      if (step == 0) first_step_unix_ms = unix_ms();
      model->zero_grad(/*set_to_none=*/true);
      auto out = model->forward(x.index_select(0, idx));
      auto yb = y.index_select(0, idx);
      auto loss =
          classification ? torch::nn::functional::cross_entropy(out, yb) : torch::mse_loss(out, yb);
      const float value = loss.item<float>();
      pending.diverged = pending.diverged || !std::isfinite(value);
      if (reducer) reducer->prepare(pending);
      if (!pending.diverged) loss.backward();
      if (reducer) pending = reducer->finish();
      if ((!group || !averaging) && stop_here(pending, epoch, b, lr, value)) return result;
      if (!pending.diverged) optimizer->step();
      loss_sum += static_cast<double>(value) * static_cast<double>(len);
      seen += len;
      ++step;
      if (averaging && step % average_every == 0) {
        const auto a0 = Clock::now();
        pending = average_parameters(*group, state, pending);
        average_s += seconds_since(a0);
        if (stop_here(pending, epoch, b, lr, value)) return result;
      }
    }
    if (averaging && step % average_every != 0) {  // evaluate the averaged model
      pending = average_parameters(*group, state, pending);
      if (stop_here(pending, epoch, steps_per_epoch - 1, cfg.optimizer.lr, NAN)) return result;
    }
    train_s += seconds_since(t0);
    samples += seen * world;
    if (rank != 0) continue;  // rank 0 evaluates and reports for the trial
    const bool last = epoch + 1 == cfg.epochs;
    val = evaluate(model, xv, yv, classification, cfg.eval_batch_size,
                   last && options.keep_artifacts);
    trials::Metrics m;
    m["train_loss"] = seen ? loss_sum / static_cast<double>(seen) : 0;
    put_eval(m, "val_", val, classification);
    put_eval(m, "", val, classification);
    m["epoch"] = static_cast<double>(epoch + 1);
    m["lr"] = scheduled
                  ? learning_rate(cfg.optimizer, cfg.schedule, std::max<std::int64_t>(0, step - 1),
                                  steps_per_epoch, cfg.epochs)
                  : cfg.optimizer.lr;
    result.metrics = m;
    if (!std::isfinite(val.loss)) {
      result.end = TrainOutput::End::kDiverged;
      result.error = "training diverged: validation loss is not finite after epoch " +
                     std::to_string(epoch + 1);
      return result;
    }
    if (options.checkpoint && (!last || options.checkpoint_last))
      options.checkpoint(
          save_checkpoint(model, *optimizer, Resume{epoch + 1, 0, step, 0, 0, {}}, shuffle),
          epoch + 1, 0);
    if (!reporter.report(epoch + 1, m) || reporter.should_stop()) {
      pending.stop = true;  // data-parallel: the others hear it in the next collective
      if (!group || last) {
        result.end = TrainOutput::End::kStopped;
        return result;
      }
    }
  }
  if (pending.stop) {
    result.end = TrainOutput::End::kStopped;
    return result;
  }
  if (rank != 0) {  // the model only, to compare ranks
    if (options.keep_artifacts) result.model_bytes = serialize_model(model, data, options);
    return result;
  }
  result.metrics["train_samples_per_s"] = train_s > 0 ? static_cast<double>(samples) / train_s : 0;
  result.metrics["train_time_s"] = train_s;
  if (step > 0) result.metrics["step_ms"] = 1000 * train_s / static_cast<double>(step);
  // Data-parallel: what keeping the ranks in step cost each step on rank 0's critical path.
  if (reducer && reducer->stats().steps > 0) {
    const auto& s = reducer->stats();
    result.metrics["sync_ms_per_step"] =
        1000 * (s.hook_s + s.finish_s) / static_cast<double>(s.steps);
    result.metrics["gradient_buckets"] = static_cast<double>(reducer->buckets());
  } else if (averaging && step > 0) {
    result.metrics["sync_ms_per_step"] = 1000 * average_s / static_cast<double>(step);
  }
  if (first_step_unix_ms)
    result.metrics[kFirstStepUnixMs] = static_cast<double>(first_step_unix_ms);
  if (data.has_test) {
    const auto xt = features_tensor(data.test, data.sample_shape).to(device);
    const auto yt = targets_tensor(data.test, classification).to(device);
    Eval test =
        evaluate(model, xt, yt, classification, cfg.eval_batch_size, options.keep_artifacts);
    put_eval(result.metrics, "test_", test, classification);
    result.has_test = true;
    if (options.keep_artifacts)
      result.test_predictions = to_matrix(test, data.test, classification);
  }
  if (data.has_oob && data.oob.rows > 0 && options.keep_artifacts) {
    const auto xo = features_tensor(data.oob, data.sample_shape).to(device);
    const auto yo = targets_tensor(data.oob, classification).to(device);
    Eval oob = evaluate(model, xo, yo, classification, cfg.eval_batch_size, true);
    result.oob_predictions = to_matrix(oob, data.oob, classification);
    result.has_oob = true;
  }
  if (options.keep_artifacts) {
    result.val_predictions = to_matrix(val, data.validation, classification);
    result.model_bytes = serialize_model(model, data, options);
  }
  return result;
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
