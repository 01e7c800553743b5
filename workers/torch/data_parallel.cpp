// ParallelGroup over c10d::ProcessGroupGloo (CPU) or ProcessGroupNCCL (ranks on
// GPUs, in a CUDA LibTorch built with NCCL), and the collectives of sync.hpp.
// Every collective packs what it sends into one flat float buffer (one Gloo
// call per step instead of one per parameter tensor) with the two flags at the
// end; the flags are summed like everything else, so "> 0" means "some rank".
#include "workers/torch/data_parallel.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL  // a CUDA LibTorch (workers/torch/CMakeLists.txt defines it there)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "workers/torch/shm_allreduce.hpp"
#include "workers/torch/sync.hpp"

namespace hpo::workers::torch_trainer {

struct ParallelGroup::Impl {
  RankConfig config;
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroup> pg;  // Gloo on CPU, NCCL between GPUs
  c10::Device device{c10::kCPU};              // where the collectives' buffers live
  std::unique_ptr<ShmAllreduce> shm;          // CPU ranks' all-reduce, unless transport gloo
};

namespace {

constexpr char kTcpScheme[] = "tcp://";

// Floats per chunk of the shared all-reduce: (world + 1) x 16 MB of file, of which a
// collective touches only what it sends.
constexpr std::size_t kShmCapacity = std::size_t{1} << 22;

// Sums buffer (CPU, float, contiguous) over the ranks through the group's transport.
void sum_on_shm(ShmAllreduce& shm, torch::Tensor& buffer) {
  if (auto st = shm.sum(buffer.data_ptr<float>(), static_cast<std::size_t>(buffer.numel())); !st)
    throw std::runtime_error(st.error().message);
}

}  // namespace

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
    const bool tcp = config.store_path.starts_with(kTcpScheme);
    if (tcp) {
      const std::string where = config.store_path.substr(std::size(kTcpScheme) - 1);
      const auto colon = where.rfind(':');
      if (colon == std::string::npos)
        return Error::invalid("store", "expected tcp://HOST:PORT, got " + config.store_path);
      c10d::TCPStoreOptions o;
      o.port = static_cast<std::uint16_t>(std::stoi(where.substr(colon + 1)));
      o.isServer = config.rank == 0;
      o.numWorkers = static_cast<std::size_t>(config.world);
      o.waitWorkers = false;  // the process group's own rendezvous waits for them
      o.timeout = config.timeout;
      auto store = c10::make_intrusive<c10d::TCPStore>(where.substr(0, colon), o);
      if (config.rank == 0 && config.on_store)
        config.on_store(fmt::format("{}:{}", where.substr(0, colon), store->getPort()));
      impl->store = store;
    } else {
      impl->store = c10::make_intrusive<c10d::FileStore>(config.store_path, config.world);
    }
    impl->store->setTimeout(config.timeout);
    if (config.gpu >= 0) {
#ifdef USE_C10D_NCCL
      impl->device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(config.gpu));
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = config.timeout;
      impl->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(impl->store, config.rank, config.world,
                                                             options);
      return std::unique_ptr<ParallelGroup>(new ParallelGroup(std::move(impl)));
#endif
      // No NCCL in this LibTorch: Gloo over host memory (the buffers go through the CPU).
    }
    auto options = c10d::ProcessGroupGloo::Options::create(config.timeout);
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(
        config.address.empty() ? "127.0.0.1" : config.address));
    options->threads = 1;
    impl->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, config.rank, config.world,
                                                           options);
    // Shared memory joins the ranks of one host; a gang across hosts talks Gloo only.
    if (config.transport != "gloo" && config.world > 1 && !tcp) {
      // Beside the store: the attempt directory, removed with it whatever becomes of the ranks.
      auto shm = ShmAllreduce::open(config.store_path + ".shm", config.rank, config.world,
                                    kShmCapacity, config.timeout);
      if (!shm) return shm.error();
      impl->shm = std::move(*shm);
    }
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
  for (const auto& t : parts) views.push_back(t.detach().reshape({-1}).to(device, torch::kFloat));
  views.push_back(
      torch::tensor({local.stop ? 1.0f : 0.0f, local.diverged ? 1.0f : 0.0f}).to(device));
  return torch::cat(views);
}

SyncFlags reduce(ParallelGroup& group, torch::Tensor& buffer) {
  if (auto& shm = group.impl().shm) {
    sum_on_shm(*shm, buffer);
  } else {
    std::vector<torch::Tensor> one{buffer};
    group.impl().pg->allreduce(one)->wait(group.config().timeout);
  }
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

struct GradientReducer::Impl {
  using Clock = std::chrono::steady_clock;
  ParallelGroup& group;
  std::vector<torch::Tensor> params;
  std::vector<std::size_t> bucket_of;             // per parameter
  std::vector<torch::Tensor> views;               // per parameter: its slice of its bucket, flat
  std::vector<torch::Tensor> buffers;             // per bucket; the last ends with the two flags
  std::vector<std::vector<std::size_t>> members;  // per bucket: its parameters
  std::vector<int> missing;                       // per bucket: gradients not yet copied
  std::vector<char> filled;                       // per parameter, this step
  std::vector<c10::intrusive_ptr<c10d::Work>> works;  // per bucket, this step
  std::size_t next = 0;                               // the next bucket to start
  std::mutex mu;  // hooks run on autograd's thread: the caller's on CPU, a device's on GPU
  std::vector<unsigned> hooks;  // per parameter
  Stats stats;

  Impl(ParallelGroup& g, const std::vector<torch::Tensor>& ps) : group(g), params(ps) {
    const auto device = group.impl().device;
    // Through shared memory nothing overlaps backward: one bucket, two barriers a step.
    const auto cap = group.impl().shm
                         ? std::numeric_limits<std::int64_t>::max()
                         : static_cast<std::int64_t>(std::max(
                               1.0, group.config().bucket_mb * 1024 * 1024 / sizeof(float)));
    // Last parameter first: backward produces the last layers' gradients first.
    std::vector<std::vector<std::size_t>> plan;
    std::int64_t size = 0;
    for (std::size_t i = params.size(); i-- > 0;) {
      const auto n = params[i].numel();
      if (plan.empty() || (size > 0 && size + n > cap)) {
        plan.emplace_back();
        size = 0;
      }
      plan.back().push_back(i);
      size += n;
    }
    if (plan.empty()) plan.emplace_back();  // the flags still travel
    bucket_of.resize(params.size());
    views.resize(params.size());
    for (std::size_t b = 0; b < plan.size(); ++b) {
      std::int64_t total = b + 1 == plan.size() ? 2 : 0;
      for (auto i : plan[b]) total += params[i].numel();
      buffers.push_back(torch::zeros({total}, torch::TensorOptions(device).dtype(torch::kFloat)));
      std::int64_t offset = 0;
      for (auto i : plan[b]) {
        bucket_of[i] = b;
        views[i] = buffers[b].narrow(0, offset, params[i].numel());
        offset += params[i].numel();
      }
    }
    members = std::move(plan);
    missing.assign(members.size(), 0);
    filled.assign(params.size(), 0);
    works.resize(members.size());
  }

  // Gloo and NCCL: the bucket's all-reduce runs in the background from here. Through shared
  // memory the sum takes this rank's CPU, which backward is using: finish() sums then.
  void start(std::size_t b) {
    if (group.impl().shm) return;
    std::vector<torch::Tensor> one{buffers[b]};
    works[b] = group.impl().pg->allreduce(one);
  }
  // Starts every complete bucket whose predecessors have started.
  void start_ready() {
    while (next < members.size() && missing[next] == 0) start(next++);
  }
  void on_grad(std::size_t i, const torch::Tensor& grad) {
    std::lock_guard lock(mu);
    const auto t0 = Clock::now();
    if (!filled[i]) {
      torch::NoGradGuard no_grad;
      views[i].copy_(grad.detach().reshape({-1}));
      filled[i] = 1;
      --missing[bucket_of[i]];
      start_ready();
    }
    stats.hook_s += std::chrono::duration<double>(Clock::now() - t0).count();
  }
};

GradientReducer::GradientReducer(ParallelGroup& group, const std::vector<torch::Tensor>& params)
    : impl_(std::make_unique<Impl>(group, params)) {
  Impl* impl = impl_.get();
  for (std::size_t i = 0; i < params.size(); ++i)
    impl->hooks.push_back(
        params[i].register_hook([impl, i](const torch::Tensor& grad) { impl->on_grad(i, grad); }));
}

GradientReducer::~GradientReducer() {
  for (std::size_t i = 0; i < impl_->params.size(); ++i)
    impl_->params[i].remove_hook(impl_->hooks[i]);
}

void GradientReducer::prepare(SyncFlags local) {
  auto& m = *impl_;
  std::lock_guard lock(m.mu);
  for (std::size_t b = 0; b < m.members.size(); ++b)
    m.missing[b] = static_cast<int>(m.members[b].size());
  std::fill(m.filled.begin(), m.filled.end(), 0);
  m.next = 0;
  auto& last = m.buffers.back();
  const auto n = last.size(0);
  last[n - 2].fill_(local.stop ? 1.0f : 0.0f);
  last[n - 1].fill_(local.diverged ? 1.0f : 0.0f);
  m.start_ready();  // a bucket of parameters without gradients (none) would wait forever
}

SyncFlags GradientReducer::finish() {
  auto& m = *impl_;
  const auto t0 = Impl::Clock::now();
  {
    std::lock_guard lock(m.mu);
    torch::NoGradGuard no_grad;
    // Parameters backward left out (unused, or no backward at all) send zeros.
    for (std::size_t i = 0; i < m.params.size(); ++i)
      if (!m.filled[i]) {
        m.views[i].zero_();
        m.filled[i] = 1;
        --m.missing[m.bucket_of[i]];
      }
    m.start_ready();
  }
  if (auto& shm = m.group.impl().shm) {
    for (auto& b : m.buffers) sum_on_shm(*shm, b);
  } else {
    for (auto& w : m.works) w->wait(m.group.config().timeout);
  }
  const double scale = 1.0 / m.group.config().world;
  auto& last = m.buffers.back();
  const auto n = last.size(0);
  SyncFlags flags;
  flags.stop = last[n - 2].item<float>() > 0;
  flags.diverged = last[n - 1].item<float>() > 0;
  {
    torch::NoGradGuard no_grad;
    for (auto& b : m.buffers) b.mul_(scale);
    for (std::size_t i = 0; i < m.params.size(); ++i) {
      auto g = m.views[i].view(m.params[i].sizes());
      m.params[i].mutable_grad() =
          g.dtype() == m.params[i].dtype() && g.device() == m.params[i].device()
              ? g
              : g.to(m.params[i].device(), m.params[i].dtype());
    }
  }
  m.stats.finish_s += std::chrono::duration<double>(Impl::Clock::now() - t0).count();
  ++m.stats.steps;
  return flags;
}

const GradientReducer::Stats& GradientReducer::stats() const {
  return impl_->stats;
}

std::size_t GradientReducer::buckets() const {
  return impl_->members.size();
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
