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
      }) {
  if (!clock_)
    clock_ = [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
}

Retention::~Retention() {
  stop();
}

int Retention::run_once(trials::SweepStore& sweeps) {
  if (max_age_.count() <= 0) return 0;
  const std::int64_t cutoff = clock_() - max_age_.count();
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
