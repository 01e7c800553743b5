// Retention: deletes ended sweeps once they are older than the configured age
// (--retention-days), with every trial, report, attempt and artifact they own,
// so that a long-lived installation does not grow without bound. Sweeps that
// still run are never touched. Off when the age is zero.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "scheduler/periodic.hpp"
#include "trials/store.hpp"

namespace hpo::scheduler {

class Retention {
 public:
  // ms since the epoch. None (the default): the store's clock (Redis TIME),
  // the one its sweeps' end times were read on, never this host's.
  using Clock = std::function<std::int64_t()>;
  Retention(StoreFactory stores, std::chrono::milliseconds max_age,
            std::chrono::milliseconds period = std::chrono::minutes(1), Clock clock = {});
  ~Retention();
  void start();  // no thread when max_age is zero
  void stop();
  // One pass on the calling thread; returns how many sweeps it deleted.
  int run_once(trials::SweepStore& sweeps);

 private:
  std::chrono::milliseconds max_age_;
  Clock clock_;
  Periodic periodic_;
};

}  // namespace hpo::scheduler
