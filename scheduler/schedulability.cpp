#include "scheduler/schedulability.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/log.hpp"
#include "trials/spec/spec.hpp"

namespace hpo::scheduler {

std::string unschedulable_reason(const trials::ResourceRequest& request,
                                 const std::vector<trials::WorkerInfo>& workers) {
  if (workers.empty()) return "";
  constexpr std::size_t kNamed = 4;
  std::vector<std::string> why;
  for (const auto& w : workers) {
    // For a data-parallel trial: what stops even one rank, named per worker.
    std::string r = trials::never_fits(request.ranks > 1 ? trials::rank_request(request) : request,
                                       trials::idle_offer(w));
    if (r.empty() && request.ranks <= 1) return "";
    if (!r.empty() && why.size() < kNamed) why.push_back(fmt::format("{}: {}", w.name, r));
  }
  if (request.ranks > 1) {
    // A data-parallel trial's ranks may span workers (trials/placement.hpp, "Gangs").
    std::vector<std::pair<std::string, trials::Offer>> pool;
    for (const auto& w : workers) pool.emplace_back(w.name, trials::idle_offer(w));
    std::string gang = trials::gang_never_fits(request, pool);
    if (gang.empty()) return "";
    std::string out = fmt::format("none of the {} registered workers can run its trials: {}",
                                  workers.size(), gang);
    if (!why.empty()) out += fmt::format("; {}", fmt::join(why, "; "));
    return out;
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
      trials::ResourceRequest request = trials::request_for((*spec)->trial);
      request.project = sweep->project;  // a worker bound to another project cannot run it
      it = requests_.emplace(id, std::move(request)).first;
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
