#include "workers/agent/shared.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "core/backoff.hpp"
#include "core/log.hpp"

namespace hpo::workers::agent {

Shared::Shared(const AgentOptions& o, ConnectionFactory c)
    : options(o),
      connect(std::move(c)),
      slot_cv(std::make_unique<std::condition_variable[]>(static_cast<std::size_t>(o.slots))),
      slots(o.slots, o.gpus),
      inbox(static_cast<std::size_t>(o.slots)) {}

void Shared::request_stop() {
  {
    std::lock_guard lk(mu);
    stopping = true;
  }
  notify_everyone();
}

void Shared::refused(const Error& why) {
  log_error("worker refused", {{"worker", options.name}, {"error", why.message}});
  {
    std::lock_guard lk(mu);
    if (fatal.empty()) fatal = why.message;
  }
  request_stop();
}

void Shared::notify_everyone() {
  cv.notify_all();
  claim_cv.notify_all();
  for (int i = 0; i < options.slots; ++i) slot_cv[static_cast<std::size_t>(i)].notify_all();
}

void Shared::forget(const trials::Trial& trial) {
  bool none_left = false;
  {
    std::lock_guard lk(mu);
    // Only this attempt: once its slot is free the same trial's next attempt
    // may already be claimed here while this one's refusal is on its way.
    auto it = running.find(trial.id);
    if (it != running.end() && it->second->trial.attempt == trial.attempt) running.erase(it);
    none_left = running.empty();
  }
  if (none_left) cv.notify_all();  // drain() waits for running to empty
}

void Shared::free_slots(const std::vector<int>& taken) {
  {
    std::lock_guard lk(mu);
    slots.free(taken);
  }
  claim_cv.notify_one();
}

bool Shared::idle_wait(std::chrono::milliseconds d) {
  std::unique_lock lk(mu);
  cv.wait_for(lk, d, [this] { return stopping.load(); });
  return !stopping.load();
}

Status Shared::retry_through_outage(const std::function<Status()>& op) {
  Status st = op();
  auto give_up = Clock::now() + options.outage_grace;
  Backoff backoff(std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
  ThrottledLog waiting;
  while (!st && st.error().code == ErrorCode::kUnavailable && Clock::now() < give_up) {
    waiting.warn("store unreachable; retrying",
                 {{"worker", options.name}, {"error", st.error().message}});
    // A hard stop (stopping without a drain) gives up at once: the lease
    // expires and the reaper re-queues the trial.
    if (stopping.load() && !draining.load()) break;
    std::this_thread::sleep_for(backoff.next());  // pacing retries of a failed call
    st = op();
  }
  return st;
}

std::unique_ptr<trials::Store> Shared::connect_until_stopped(const char* role) {
  Backoff backoff(std::chrono::milliseconds(100), std::chrono::milliseconds(2000));
  ThrottledLog errors;
  while (!stopping.load()) {
    auto c = connect();
    if (c) return std::move(c.value());
    if (c.error().code == ErrorCode::kUnauthorized) {  // no retry opens it: stop
      refused(c.error());
      break;
    }
    errors.warn("cannot open the store", {{"thread", role}, {"error", c.error().message}});
    if (!idle_wait(backoff.next())) break;
  }
  return nullptr;
}

trials::Offer Shared::offer_locked(bool torch) const {
  trials::Offer o;
  slots.offer(o);
  o.torch = torch;
  o.cuda = options.cuda;
  o.labels = options.labels;
  o.project = options.project;
  double cpus = 0, memory = 0;
  for (const auto& [id, run] : running) {
    cpus += run->request.cpus;
    memory += run->request.memory_gb;
  }
  for (const auto& [key, share] : shares) {
    cpus += share->request.cpus;
    memory += share->request.memory_gb;
  }
  if (options.cpus > 0) {
    o.total_cpus = options.cpus;
    o.cpus = std::max(0.0, options.cpus - cpus);
  }
  if (options.memory_gb > 0) {
    o.total_memory_gb = options.memory_gb;
    o.memory_gb = std::max(0.0, options.memory_gb - memory);
  }
  return o;
}

Result<std::shared_ptr<const trials::SweepSpec>> Shared::spec_for(const trials::Claim& claim) {
  const std::string& sweep_id = claim.trial.sweep_id;
  if (auto hit = specs.find(sweep_id)) return hit;
  if (claim.spec_json.empty())  // a store that does not carry specs in claims
    return Error::unavailable("the claim of " + claim.trial.id + " carries no sweep spec");
  auto spec = specs.get(sweep_id, claim.spec_json);
  if (!spec)
    return Error::invalid("spec", "stored sweep spec does not parse: " + spec.error().message);
  return spec;
}

Result<std::unique_ptr<TrialBox>> Shared::enter_box(const trials::Trial& trial,
                                                    const trials::SweepSpec& spec,
                                                    std::string_view suffix) const {
  if (!options.sandbox) return std::unique_ptr<TrialBox>();
  return options.sandbox->enter(fmt::format("{}-a{}{}", trial.id, trial.attempt, suffix),
                                memory_limit_bytes(spec.trial.memory_gb));
}

std::vector<int> Shared::gpus_of(const std::vector<int>& devices) const {
  std::vector<int> gpus;
  for (int d : devices)
    if (d >= 0 && static_cast<std::size_t>(d) < options.gpus.size()) gpus.push_back(d);
  return gpus;
}

std::vector<std::string> Shared::gpu_ids_of(const std::vector<int>& devices) const {
  std::vector<std::string> ids;
  for (int d : gpus_of(devices)) ids.push_back(options.gpus[static_cast<std::size_t>(d)].id);
  return ids;
}

std::vector<std::string> Shared::gpu_files_of(const std::vector<int>& devices) const {
  std::vector<std::string> files;
  for (int d : gpus_of(devices))
    if (static_cast<std::size_t>(d) < options.gpu_files.size())
      for (const auto& f : options.gpu_files[static_cast<std::size_t>(d)]) files.push_back(f);
  return files;
}

int Shared::threads_for(const std::vector<int>& taken, double cpus) const {
  return std::max(options.threads_per_slot * static_cast<int>(taken.size()),
                  static_cast<int>(std::ceil(cpus)));
}

}  // namespace hpo::workers::agent
