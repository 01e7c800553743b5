// ParallelGroup over c10d::ProcessGroupGloo (CPU) or ProcessGroupNCCL (ranks on
// GPUs, in a CUDA LibTorch built with NCCL), and the collectives of sync.hpp.
// Every collective packs what it sends into one flat float buffer (one Gloo
// call per step instead of one per parameter tensor) with the two flags at the
// end; the flags are summed like everything else, so "> 0" means "some rank".
#include "workers/torch/data_parallel.hpp"

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#ifdef USE_C10D_NCCL  // a CUDA LibTorch (workers/torch/CMakeLists.txt defines it there)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "workers/torch/sync.hpp"

namespace hpo::workers::torch_trainer {

struct ParallelGroup::Impl {
  RankConfig config;
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroup> pg;  // Gloo on CPU, NCCL between GPUs
  c10::Device device{c10::kCPU};              // where the collectives' buffers live
};

ParallelGroup::ParallelGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ParallelGroup::~ParallelGroup() = default;
const RankConfig& ParallelGroup::config() const {
  return impl_->config;
}

Result<std::unique_ptr<ParallelGroup>> ParallelGroup::connect(const RankConfig& config) {
  if (config.world < 1 || config.rank < 0 || config.rank >= config.world)
    return Error::internal("data-parallel: bad rank " + std::to_string(config.rank) + " of " +
                           std::to_string(config.world));
  try {
    auto impl = std::make_unique<Impl>();
    impl->config = config;
    impl->store = c10::make_intrusive<c10d::FileStore>(config.store_path, config.world);
    impl->store->setTimeout(config.timeout);
    if (config.gpu >= 0) {
#ifdef USE_C10D_NCCL
      impl->device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(config.gpu));
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = config.timeout;
      impl->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(impl->store, config.rank,
                                                             config.world, options);
      return std::unique_ptr<ParallelGroup>(new ParallelGroup(std::move(impl)));
#endif
      // No NCCL in this LibTorch: Gloo over host memory (the buffers go through the CPU).
    }
    auto options = c10d::ProcessGroupGloo::Options::create(config.timeout);
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    options->threads = 1;
    impl->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, config.rank, config.world,
                                                           options);
    return std::unique_ptr<ParallelGroup>(new ParallelGroup(std::move(impl)));
  } catch (const std::exception& e) {
    return Error::unavailable(std::string("data-parallel: cannot join the group: ") + e.what());
  }
}

namespace {

torch::Tensor flat(const ParallelGroup& group, const std::vector<torch::Tensor>& parts,
                   SyncFlags local) {
  const auto device = group.impl().device;
  std::vector<torch::Tensor> views;
  views.reserve(parts.size() + 1);
  for (const auto& t : parts)
    views.push_back(t.detach().reshape({-1}).to(device, torch::kFloat));
  views.push_back(torch::tensor({local.stop ? 1.0f : 0.0f, local.diverged ? 1.0f : 0.0f})
                      .to(device));
  return torch::cat(views);
}

SyncFlags reduce(ParallelGroup& group, torch::Tensor& buffer) {
  std::vector<torch::Tensor> one{buffer};
  auto work = group.impl().pg->allreduce(one);
  work->wait(group.config().timeout);
  const auto n = buffer.size(0);
  SyncFlags flags;
  flags.stop = buffer[n - 2].item<float>() > 0;
  flags.diverged = buffer[n - 1].item<float>() > 0;
  return flags;
}

// Copies the first elements of `buffer` back into `parts`, scaled by `scale`.
void unflatten(const torch::Tensor& buffer, const std::vector<torch::Tensor>& parts, double scale) {
  torch::NoGradGuard no_grad;
  std::int64_t offset = 0;
  for (const auto& t : parts) {
    const auto n = t.numel();
    t.copy_(buffer.narrow(0, offset, n).view(t.sizes()).mul(scale).to(t.device(), t.dtype()));
    offset += n;
  }
}

}  // namespace

SyncFlags allreduce_gradients(ParallelGroup& group, const std::vector<torch::Tensor>& params,
                              SyncFlags local) {
  std::vector<torch::Tensor> grads;
  grads.reserve(params.size());
  for (const auto& p : params) {
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.grad());
  }
  auto buffer = flat(group, grads, local);
  auto flags = reduce(group, buffer);
  unflatten(buffer, grads, 1.0 / group.config().world);
  return flags;
}

SyncFlags average_parameters(ParallelGroup& group, const std::vector<torch::Tensor>& tensors,
                             SyncFlags local) {
  auto buffer = flat(group, tensors, local);
  auto flags = reduce(group, buffer);
  unflatten(buffer, tensors, 1.0 / group.config().world);
  return flags;
}

void broadcast_from_root(ParallelGroup& group, const std::vector<torch::Tensor>& tensors) {
  auto buffer = flat(group, tensors, {});
  std::vector<torch::Tensor> one{buffer};
  group.impl().pg->broadcast(one)->wait(group.config().timeout);
  unflatten(buffer, tensors, 1.0);
}

}  // namespace hpo::workers::torch_trainer
