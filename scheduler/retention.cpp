#include "scheduler/retention.hpp"

#include <vector>

#include "core/log.hpp"

namespace hpo::scheduler {

Retention::Retention(StoreFactory stores, std::chrono::milliseconds max_age,
                     std::chrono::milliseconds period, Clock clock)
    : max_age_(max_age),
      clock_(std::move(clock)),
      periodic_(std::move(stores), period, [this](trials::Store& store) {
        run_once(store.sweeps());
        return false;
      }) {}

Retention::~Retention() {
  stop();
}

int Retention::run_once(trials::SweepStore& sweeps) {
  if (max_age_.count() <= 0) return 0;
  std::int64_t now = 0;
  if (clock_) {
    now = clock_();
  } else if (auto t = sweeps.now_ms(); t) {
    now = *t;
  } else {
    return 0;  // the store is away: next pass
  }
  const std::int64_t cutoff = now - max_age_.count();
  std::vector<std::string> expired;
  constexpr std::int64_t kPage = 500;
  for (std::int64_t offset = 0;; offset += kPage) {
    auto page = sweeps.list_sweeps(offset, kPage);
    if (!page) return 0;  // the store is away: next pass
    for (const auto& s : *page)
      if (s.state != trials::SweepState::kRunning && s.finished_ms > 0 && s.finished_ms < cutoff)
        expired.push_back(s.id);
    if (static_cast<std::int64_t>(page->size()) < kPage) break;
  }
  int deleted = 0;
  for (const auto& id : expired) {
    if (auto st = sweeps.delete_sweep(id); st) {
      ++deleted;
      log_info("retention: sweep deleted", {{"sweep", id}});
    }
  }
  return deleted;
}

void Retention::start() {
  if (max_age_.count() > 0) periodic_.start();
}

void Retention::stop() {
  periodic_.stop();
}

}  // namespace hpo::scheduler
