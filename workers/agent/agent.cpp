// The Agent wires its rooms (see agent.hpp) and owns their threads.
#include "workers/agent/agent.hpp"

#include <random>

#include <fmt/format.h>

#include "core/log.hpp"
#include "workers/agent/claimer.hpp"
#include "workers/agent/completer.hpp"
#include "workers/agent/lease_keeper.hpp"
#include "workers/agent/shared.hpp"
#include "workers/agent/slot_runner.hpp"
#include "workers/agent/work_root.hpp"
#include "workers/command_executor.hpp"
#include "workers/synthetic_executor.hpp"

namespace hpo::workers {
namespace {

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

AgentOptions normalized(AgentOptions o) {
  o.slots = std::max(1, o.slots);
  o.threads_per_slot = std::max(1, o.threads_per_slot);
  o.lease_ms = std::max<std::int64_t>(o.lease_ms, 30);
  o.max_batch = std::max(1, o.max_batch);
  return o;
}

}  // namespace

ExecutorRegistry builtin_executors(const CommandOptions& command) {
  ExecutorRegistry r;
  r[trials::TrialKind::kCommand] = [command] { return std::make_unique<CommandExecutor>(command); };
  r[trials::TrialKind::kSynthetic] = [] { return std::make_unique<SyntheticExecutor>(); };
  return r;
}

Agent::Agent(AgentOptions options, ConnectionFactory connect, ExecutorRegistry executors,
             const GpuInventory* gpus)
    : options_(normalized(std::move(options))), gpus_(gpus), executors_(std::move(executors)) {
  const bool torch = executors_.count(trials::TrialKind::kTorch) > 0;
  shared_ = std::make_unique<agent::Shared>(options_, std::move(connect));
  work_root_ = std::make_unique<agent::WorkRoot>(options_.work_root, options_.name);
  completer_ = std::make_unique<agent::Completer>(*shared_);
  lease_keeper_ = std::make_unique<agent::LeaseKeeper>(*shared_, gpus_, torch);
  claimer_ = std::make_unique<agent::Claimer>(*shared_, torch);
  slot_runner_ =
      std::make_unique<agent::SlotRunner>(*shared_, executors_, *work_root_, *completer_);
}

Agent::~Agent() {
  stop();
}

Status Agent::start() {
  if (started_.load()) return {};
  if (auto st = work_root_->claim(); !st) return st;
  started_ = true;
  shared_->stopping = false;
  shared_->registered = false;
  completer_->reset();
  {
    std::random_device rd;
    lease_keeper_->set_identity(fmt::format("{:08x}{:08x}", rd(), rd()), wall_ms());
  }
  log_info("worker started", {{"worker", options_.name},
                              {"host", options_.host},
                              {"slots", std::to_string(options_.slots)},
                              {"gpus", std::to_string(options_.gpus.size())},
                              {"threads_per_slot", std::to_string(options_.threads_per_slot)},
                              {"lease_ms", std::to_string(options_.lease_ms)}});
  completer_thread_ = std::thread([this] { completer_->run(); });
  threads_.emplace_back([this] { lease_keeper_->run(); });
  threads_.emplace_back([this] { claimer_->run(); });
  for (int i = 0; i < options_.slots; ++i)
    threads_.emplace_back([this, i] { slot_runner_->run(i); });
  return {};
}

void Agent::request_stop() {
  shared_->request_stop();
}

void Agent::drain(const std::function<bool()>& until_stopped) {
  if (!started_.load()) return;
  auto& s = *shared_;
  {
    std::lock_guard lk(s.mu);
    s.draining = true;
    s.heartbeat_now = true;  // gang shares ask their leaders to release at once
    // Trials that checkpoint stop now, keeping their progress for the next attempt.
    for (auto& [id, run] : s.running)
      if (run->checkpoints.load()) run->set_stop(StopReason::kShutdown);
  }
  s.notify_everyone();
  log_info("worker draining",
           {{"worker", options_.name}, {"grace_ms", std::to_string(options_.drain_grace.count())}});
  auto deadline = agent::Clock::now() + options_.drain_grace;
  for (;;) {
    {
      // Gang shares run until their leader stops the gang (asked by the lease
      // keeper). A claim in flight may hand out a trial yet: it is waited for too.
      std::unique_lock lk(s.mu);
      auto idle = [&s] { return !s.claiming && s.running.empty() && s.shares.empty(); };
      if (idle()) break;
      s.cv.wait_for(lk, std::chrono::milliseconds(100), idle);
      if (idle()) break;
    }
    if (agent::Clock::now() >= deadline || (until_stopped && until_stopped())) break;
  }
  stop();
}

void Agent::stop() {
  if (!started_.load()) return;
  request_stop();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  // Every result there will be is with the completer: it sends them (a hard
  // stop does not wait out an outage) and ends.
  completer_->finish();
  if (completer_thread_.joinable()) completer_thread_.join();
  started_ = false;
  shared_->draining = false;
  // Gone from the registry at once: no gang share is placed here meanwhile.
  if (shared_->registered.exchange(false))
    if (auto c = shared_->connect(); c && *c)
      if (auto st = (*c)->workers().remove_worker(options_.name, lease_keeper_->instance()); !st)
        log_warn("worker not deregistered (its entry lapses)",
                 {{"worker", options_.name}, {"error", st.error().message}});
  work_root_->unlock();
  log_info("worker stopped", {{"worker", options_.name}});
}

std::string Agent::fatal_error() const {
  std::lock_guard lk(shared_->mu);
  return shared_->fatal;
}

bool Agent::busy() const {
  std::lock_guard lk(shared_->mu);
  return shared_->claiming || !shared_->running.empty() || !shared_->shares.empty();
}

AgentStats Agent::stats() const {
  std::lock_guard lk(shared_->mu);
  return shared_->stats;
}

}  // namespace hpo::workers
