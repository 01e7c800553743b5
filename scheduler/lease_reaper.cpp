#include "scheduler/lease_reaper.hpp"

#include <algorithm>

#include "core/log.hpp"

namespace hpo::scheduler {

namespace {
constexpr int kBatch = 100;  // expired leases handled per store call
}

LeaseReaper::LeaseReaper(StoreFactory stores, std::chrono::milliseconds period)
    : periodic_(std::move(stores), period,
                [outage_ms = std::max<std::int64_t>(
                     2000, 3 * static_cast<std::int64_t>(period.count()))](trials::Store& store) {
                  auto n = store.queue().reap(kBatch, outage_ms);
                  if (!n) {
                    log_warn("reaper: store error", {{"error", n.error().message}});
                    return false;
                  }
                  if (*n > 0)
                    log_info("reaper: expired leases handled", {{"count", std::to_string(*n)}});
                  return *n == kBatch;  // more may be waiting
                }) {}

}  // namespace hpo::scheduler
