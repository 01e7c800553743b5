#include "scheduler/schedulability.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/log.hpp"
#include "trials/spec.hpp"

namespace hpo::scheduler {

std::string unschedulable_reason(const trials::ResourceRequest& request,
                                 const std::vector<trials::WorkerInfo>& workers) {
  if (workers.empty()) return "";
  constexpr std::size_t kNamed = 4;
  std::vector<std::string> why;
  for (const auto& w : workers) {
    std::string r = trials::never_fits(request, trials::idle_offer(w));
    if (r.empty()) return "";
    if (why.size() < kNamed) why.push_back(fmt::format("{}: {}", w.name, r));
  }
  std::string out = fmt::format("none of the {} registered workers can run its trials: {}",
                                workers.size(), fmt::join(why, "; "));
  if (workers.size() > kNamed) out += fmt::format("; and {} more", workers.size() - kNamed);
  return out;
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
  std::erase_if(requests_, [&](const auto& e) { return !active.count(e.first); });
  for (const auto& id : *ids) {
    auto sweep = sweeps.get_sweep(id);
    if (!sweep) continue;
    auto it = requests_.find(id);
    if (it == requests_.end()) {
      auto spec = specs_->get(id, sweep->spec_json);
      if (!spec) continue;  // the controller fails such a sweep
      it = requests_.emplace(id, trials::request_for((*spec)->trial)).first;
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
