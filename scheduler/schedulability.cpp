#include "scheduler/schedulability.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/log.hpp"
#include "trials/spec.hpp"

namespace hpo::scheduler {

std::string unschedulable_reason(int slots, const std::vector<trials::WorkerInfo>& workers) {
  if (workers.empty()) return "";
  const auto largest =
      std::max_element(workers.begin(), workers.end(),
                       [](const auto& a, const auto& b) { return a.slots < b.slots; });
  if (slots <= largest->slots) return "";
  return fmt::format(
      "each trial needs {} slots (resources.gpus / data_parallel.replicas); the largest of the {} "
      "registered workers ({}) has {}",
      slots, workers.size(), largest->name, largest->slots);
}

SchedulabilityWatch::SchedulabilityWatch(StoreFactory stores, std::chrono::milliseconds period,
                                         std::shared_ptr<trials::SpecCache> specs)
    : specs_(specs ? std::move(specs) : std::make_shared<trials::SpecCache>()),
      periodic_(std::move(stores), period, [this](trials::Store& store) {
        run_once(store.sweeps(), store.workers());
        return false;
      }) {}

SchedulabilityWatch::~SchedulabilityWatch() {
  stop();
}

void SchedulabilityWatch::run_once(trials::SweepStore& sweeps, trials::WorkerRegistry& registry) {
  auto workers = registry.list_workers();
  auto ids = sweeps.active_sweeps();
  if (!workers || !ids) return;  // the store is away: next round
  std::set<std::string> active(ids->begin(), ids->end());
  std::erase_if(slots_, [&](const auto& e) { return !active.count(e.first); });
  for (const auto& id : *ids) {
    auto sweep = sweeps.get_sweep(id);
    if (!sweep) continue;
    auto it = slots_.find(id);
    if (it == slots_.end()) {
      auto spec = specs_->get(id, sweep->spec_json);
      if (!spec) continue;  // the controller fails such a sweep
      it = slots_.emplace(id, (*spec)->trial.slots()).first;
    }
    std::string reason = unschedulable_reason(it->second, *workers);
    if (reason == sweep->unschedulable) continue;
    if (auto st = sweeps.set_unschedulable(id, reason); !st) continue;
    if (reason.empty())
      log_info("sweep schedulable again", {{"sweep", id}});
    else
      log_warn("sweep unschedulable", {{"sweep", id}, {"reason", reason}});
  }
}

void SchedulabilityWatch::start() {
  periodic_.start();
}

void SchedulabilityWatch::stop() {
  periodic_.stop();
}

}  // namespace hpo::scheduler
